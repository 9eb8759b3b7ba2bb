rule plot_study:
    input:
        summary="results/{study}/summary.csv",
        runs="results/{study}/runs.csv",
        analysis="results/{study}/analysis.json",
        code=CODE["plots"],
    output:
        # the SVGs in Snakemake's report (the PNGs are the same figures)
        figures=[
            report(
                f"results/{{study}}/figures/{figure}.svg",
                caption="../report/figures.rst",
                category="{study}",
                subcategory="Figures",
                labels={"study": "{study}", "figure": figure},
            )
            for figure in FIGURES
        ]
        + expand("results/{{study}}/figures/{figure}.png", figure=FIGURES),
    log:
        "logs/{study}/plot.log",
    localrule: True
    params:
        axis=get_scaling_axis,
        out_dir=get_figures_dir,
    script:
        "../scripts/plot.py"
