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
        page=records.values_file([CONFIG["report"]["title"], NOT_IN_CONFIG]),
    script:
        "../scripts/report.py"


# A study whose base case failed in every run has no answer: the workflow then ends
# non-zero, after the report is written, naming it (scripts/check_answers.py).
rule check_answers:
    input:
        # after the report (an order: what it says does not change the check)
        report=ancient("results/report.html"),
        analyses=get_report_inputs()["analyses"],
        code=script_code("check_answers"),
    output:
        "results/answered.txt",
    log:
        "logs/check_answers.log",
    localrule: True
    script:
        "../scripts/check_answers.py"
