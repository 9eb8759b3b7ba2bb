"""A report of 50 studies stays small and opens quickly in real Chromium."""

import pytest

from benchmarks.report_scale import write_records
from scalestudy.analysis.pipeline import aggregate
from scalestudy.report.plots import write_figures
from scalestudy.report.rendering import write_report
from scalestudy.report.views import study_view
from scalestudy.sections import FIGURES, part
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
def test_fifty_study_report_is_under_15_mb_and_shows_every_figure(tmp_path):
    # how fast Chromium loads it: benchmarks/report_scale.py (a timed assert here
    # fails on a busy or slow machine, not on a fault: 5.1-6.0 s there on 2026-11-26)
    paths = write_records(tmp_path / "records", studies=50, points=8, repeats=3)
    views, figures = [], None
    for name, files in paths.items():
        study = study_model(STUDY, name)
        result = aggregate(study, files)
        analysis = result.analysis_as_read()
        if figures is None:  # real figures of one study, shown for every study
            write_figures(result.summary, result.runs, "threads", tmp_path / "fig", analysis)
            figures = {f.stem: f for f in (tmp_path / "fig").glob("*.svg")}
        views.append(study_view(analysis, result.summary, figures))
    html = tmp_path / "report.html"
    write_report(html, "fifty studies", views)
    assert html.stat().st_size < 15 * 2**20
    page = open_report(html)
    assert page["console"] == [] and len(page["studies"]) == 50
    assert len(page["images"]) == 300 and all(i["ok"] for i in page["images"])


def test_each_figure_is_drawn_once_as_svg_and_one_not_shown_is_a_note(tmp_path):
    # 300 figures took 157 s, each written as SVG and PNG (nothing read the PNGs), and
    # a figure the report does not show (no grid, baseline or energy) drawn in full
    paths = write_records(tmp_path / "records", studies=1, points=3, repeats=2)
    ((name, files),) = paths.items()
    result = aggregate(study_model(STUDY, name), files)
    out = tmp_path / "figures"
    written = write_figures(result.summary, result.runs, "threads", out, result.analysis)
    assert sorted(written) == sorted(out.iterdir()) == sorted(out / f"{f}.svg" for f in FIGURES)
    for figure in ("layouts", "baseline", "energy"):
        note = (out / f"{figure}.svg").read_text()
        assert (
            part(figure, "figure").NOTHING in note
            and "Matplotlib" not in note
            and note.startswith("<svg")
        )
    assert "Matplotlib" in (out / "speedup.svg").read_text()
