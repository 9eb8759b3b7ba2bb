rule plot_study:
    input:
        summary="results/{study}/summary.csv",
        runs="results/{study}/runs.csv",
        analysis="results/{study}/analysis.json",
        code=script_code("plot"),
    output:
        # SVG only, the format our report inlines; in Snakemake's report too
        figures=[
            report(
                f"results/{{study}}/figures/{figure}.svg",
                caption="../report/figures.rst",
                category="{study}",
                subcategory="Figures",
                labels={"study": "{study}", "figure": figure},
            )
            for figure in FIGURES
        ],
    log:
        "logs/{study}/plot.log",
    localrule: True
    params:
        axis=get_scaling_axis,
        out_dir=get_figures_dir,
    script:
        "../scripts/plot.py"
