rule plot_study:
    input:
        summary="results/{study}/summary.csv",
        runs="results/{study}/runs.csv",
        analysis="results/{study}/analysis.json",
        code=CODE["plots"],
    output:
        # SVG only: the format the report inlines
        figures=expand("results/{{study}}/figures/{figure}.svg", figure=FIGURES),
    log:
        "logs/{study}/plot.log",
    localrule: True
    params:
        axis=get_scaling_axis,
        out_dir=get_figures_dir,
    script:
        "../scripts/plot.py"
