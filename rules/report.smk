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
        # the title and the folders of studies the config no longer names
        page=paths.values_file([CONFIG["report"]["title"], NOT_IN_CONFIG]),
    script:
        "../scripts/report.py"
