rule plot_study:
    input:
        summary="results/{study}/summary.csv",
        runs="results/{study}/runs.csv",
    output:
        figures=expand(
            "results/{{study}}/figures/{figure}.{ext}", figure=FIGURES, ext=["svg", "png"]
        ),
    params:
        axis=lambda wildcards: STUDIES[wildcards.study]["scaling"]["axis"],
        out_dir=lambda wildcards: f"results/{wildcards.study}/figures",
    log:
        "logs/{study}/plot.log",
    localrule: True
    script:
        "../scripts/plot.py"
