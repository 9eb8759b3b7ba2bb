rule plot_study:
    input:
        summary="results/{study}/summary.csv",
        runs="results/{study}/runs.csv",
        analysis="results/{study}/analysis.json",
        code=CODE["plots"],
    output:
        figures=expand(
            "results/{{study}}/figures/{figure}.{ext}",
            figure=FIGURES,
            ext=["svg", "png"],
        ),
    log:
        "logs/{study}/plot.log",
    localrule: True
    params:
        axis=get_scaling_axis,
        out_dir=get_figures_dir,
    script:
        "../scripts/plot.py"
