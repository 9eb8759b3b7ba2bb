"""A rule's code inputs follow the code its script imports (scalestudy/code_inputs.py):
a changed partial, threshold or producer re-makes what it affects, and nothing else,
through the workflow's own rerun (no --forcerun)."""

import re
import shutil
from pathlib import Path

import pytest

from scalestudy.analysis.pipeline import MADE_FIRST
from scalestudy.code_inputs import code_inputs
from scalestudy.sections import SECTIONS
from tests.conftest import REPO

PACKAGE = REPO / "scalestudy"
MEASURED = {
    "measured": "config/examples/rtx2080ti_autoencoder_ddp.csv",
    "scaling": {"axis": "devices", "device": "gpu"},
}


def of(script: str) -> set[str]:
    """The package's files a script's rule declares, relative to the package."""
    return {str(Path(f).relative_to(PACKAGE)) for f in code_inputs(REPO / "scripts" / script)}


def test_each_rule_declares_what_its_script_imports_and_the_files_they_name():
    # the fault probe: a hand-written list left out scalestudy/sections/** and
    # thresholds.py, so a marker added to every partial never reached the report, and
    # cluster_facts depended on all of analysis/ (any analysis edit asked Slurm again)
    partials = {f"sections/{name}/partial.html.j2" for name in SECTIONS}
    # a section a shared step makes has no producer (pipeline.MADE_FIRST): the step is its
    # producer here (series: predictions; time to result: result_time; the requests'
    # decisions/request.py is the cluster facts' too, checked below)
    producers = {f"sections/{name}/produce.py" for name in SECTIONS if name not in MADE_FIRST}
    producers |= {"analysis/stats/predictions.py", "analysis/cluster/result_time.py"}
    views = {f"sections/{name}/view.py" for name in SECTIONS}
    report, aggregate, cluster, plot = (
        of("report.py"),
        of("aggregate.py"),
        of("cluster.py"),
        of("plot.py"),
    )
    assert partials | views | {"report/templates/report.html.j2", "thresholds.py"} <= report
    assert not producers & report and "report/templates/plan.html.j2" not in report
    assert producers | {"thresholds.py", "schemas/record.schema.json"} <= aggregate
    assert not (partials | views) & aggregate
    assert {"analysis/decisions/request.py", "slurm.py", "analysis/tables.py"} <= cluster
    # the request code alone: no producer, findings, model fit, pipeline or adaptive round
    others = {
        "analysis/pipeline.py",
        "analysis/findings.py",
        "analysis/stats/models.py",
        "analysis/decisions/adaptive.py",
        "analysis/stats/predictions.py",
    }
    assert not (producers | others) & cluster, sorted((producers | others) & cluster)
    assert "report/plots.py" in plot and not partials & plot
    # a package's __init__ runs when one of its modules is imported
    assert {"__init__.py", "analysis/__init__.py", "sections/__init__.py"} <= aggregate
    assert "report/templates/plan.html.j2" in of("plan.py")


def jobs(dry) -> dict[str, int]:
    """Rule -> jobs of a dry run's job stats (without the target rule `all`)."""
    table = dry.stdout.split("Job stats:")[1].split("total")[0]
    found = dict(re.findall(r"^(\w+)\s+(\d+)$", table, re.M))
    return {rule: int(count) for rule, count in found.items() if rule not in ("all", "job")}


@pytest.mark.slow
def test_a_changed_partial_threshold_or_producer_remakes_exactly_what_it_affects(
    workflow, monkeypatch
):
    # the workflow's own copy of the package, edited as a user's upgrade would change it
    shutil.copytree(
        PACKAGE, workflow.root / "scalestudy", ignore=shutil.ignore_patterns("__pycache__")
    )
    monkeypatch.setenv("PYTHONPATH", str(workflow.root))
    copy = workflow.root / "scalestudy"
    workflow.write_config({"studies": {"published": MEASURED}})
    workflow.snakemake("--profile", "profiles/local")
    assert "Nothing to be done" in workflow.snakemake("--profile", "profiles/local", "-n").output

    def changed(path: str, old: str, new: str) -> dict[str, int]:
        text = (copy / path).read_text()
        assert old in text, path
        (copy / path).write_text(text.replace(old, new, 1))
        return jobs(workflow.snakemake("--profile", "profiles/local", "-n"))

    # a partial: the report only, and the marker reaches it through the rerun
    marker = '<p class="marker">a partial of this version</p>'
    partial = "sections/series/partial.html.j2"
    assert changed(
        partial, "{% for m in v.models %}\n", "{% for m in v.models %}\n" + marker + "\n"
    ) == {"report": 1}
    workflow.snakemake("--profile", "profiles/local")
    assert marker in (workflow.root / "results" / "report.html").read_text()
    # a producer: aggregation again and what reads it (the check that every study has
    # an answer reads the analyses); Slurm is not asked again
    assert changed("sections/energy/produce.py", '"""', '"""A producer of this version. ') == {
        "aggregate_study": 1,
        "plot_study": 1,
        "report": 1,
        "check_answers": 1,
    }
    workflow.snakemake("--profile", "profiles/local")
    # a threshold: every rule whose code reads it (the request code's tables judge a
    # point's spread by it, so the cluster facts are gathered again too)
    assert changed(
        "thresholds.py",
        "Z_LIMIT, MIN_DEVIATION = 0.10, 3.5, 0.05",
        "Z_LIMIT, MIN_DEVIATION = 0.10, 3.6, 0.05",
    ) == {
        "cluster_facts": 1,
        "aggregate_study": 1,
        "plot_study": 1,
        "report": 1,
        "check_answers": 1,
    }
