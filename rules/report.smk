rule report:
    input:
        **get_report_inputs(),
    output:
        html="results/report.html",
    params:
        studies=STUDIES,
        title=CONFIG["report"]["title"],
    log:
        "logs/report.log",
    localrule: True
    script:
        "../scripts/report.py"
