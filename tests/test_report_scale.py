"""A report of 50 studies stays small and opens quickly in real Chromium."""

import pytest

from benchmarks.report_scale import write_records
from scalestudy.analysis.findings import analysis_of, study_findings
from scalestudy.analysis.predictions import study_predictions
from scalestudy.analysis.tables import runs_from_records, summarise
from scalestudy.contract import Analysis
from scalestudy.report.plots import write_figures
from scalestudy.report.rendering import write_report
from scalestudy.report.views import study_view
from tests.browser import open_report
from tests.conftest import study_model
from tests.test_workflow import needs_chromium

STUDY = {
    "scaling": {"axis": "threads", "device": "cpu", "threads": 1, "devices": 1, "nodes": 1},
    "time": "train",
    "cost": {"core_weight": 1, "gpu_weight": 2},
}


@pytest.mark.slow
@needs_chromium
def test_fifty_study_report_is_under_15_mb_and_opens_in_5_s(tmp_path):
    paths = write_records(tmp_path / "records", studies=50, points=8, repeats=3)
    views, figures = [], None
    for name, files in paths.items():
        study = study_model(STUDY, name)
        runs = runs_from_records(files).assign(series="")
        summary = summarise(runs, study)
        analysis = study_predictions(summary, runs, study)
        analysis["findings"] = study_findings(study, summary, runs, analysis)
        analysis = Analysis.from_json(analysis_of(analysis).to_json())  # as analysis.json
        if figures is None:  # real figures of one study, shown for every study
            write_figures(summary, runs, "threads", tmp_path / "fig", analysis)
            figures = {f.stem: f for f in (tmp_path / "fig").glob("*.svg")}
        views.append(study_view(analysis, summary, figures))
    html = tmp_path / "report.html"
    write_report(html, "fifty studies", views)
    assert html.stat().st_size < 15 * 2**20
    page = open_report(html)
    assert page["console"] == [] and len(page["studies"]) == 50
    assert len(page["images"]) == 300 and all(i["ok"] for i in page["images"])
    assert page["load_s"] < 5
