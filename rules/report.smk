rule report:
    input:
        **get_report_inputs(),
        code=script_code("report"),
    output:
        html=report(
            "results/report.html", caption="../report/report.rst", category="Report"
        ),
    log:
        "logs/report.log",
    localrule: True
    params:
        title=CONFIG["report"]["title"],
        not_in_config=NOT_IN_CONFIG,
    script:
        "../scripts/report.py"
