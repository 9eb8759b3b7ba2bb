"""References (`expect:`) and `make check`, archives and history (docs/baselines.md):
synthetic records through the real pipeline."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime

import pytest

from scalestudy.analysis.archive import archive
from scalestudy.analysis.history import history, table_text
from scalestudy.analysis.pipeline import aggregate
from scalestudy.analysis.references import check
from scalestudy.report.rendering import render
from scalestudy.report.views import study_view
from tests.conftest import REPO, checked_study, study_model
from tests.test_baseline import STUDY, measure

OUT = {"runs": "runs.csv", "summary": "summary.csv", "analysis": "analysis.json"}


def aggregated(root, expect, **how):
    """results/s of a study with these expectations, measured and aggregated."""
    study = study_model(STUDY | {"expect": expect})
    folder = root / "results" / "s"
    aggregate(study, measure(root, **how)).write({k: folder / v for k, v in OUT.items()})
    return folder


def test_make_check_fails_on_a_broken_expectation_and_passes_otherwise(tmp_path):
    # the program's speedup at N = 4 is 10 / 4 = 2.5, its efficiency 0.62
    kept = aggregated(
        tmp_path / "a", {"speedup": {"4": [2.2, None]}, "efficiency": {"2": [0.7, 1]}}
    )
    broken = aggregated(tmp_path / "b", {"speedup": {"4": [3.5, None], "8": [5, None]}})
    assert check([kept]) == 0
    assert check([broken]) == 1
    out = subprocess.run(
        [sys.executable, "-m", "scalestudy.analysis.references", str(kept), str(broken)],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert out.returncode == 1
    assert "s: broken: speedup at N = 4 expected at least 3.5: measured 2.5" in out.stdout
    assert "s: broken: speedup at N = 8 expected at least 5: not measured" in out.stdout
    assert "s: 2 expectation(s) kept" in out.stdout


def test_the_make_target_names_the_broken_expectation(tmp_path):
    aggregated(tmp_path, {"speedup": {"4": [3.5, None]}})
    (tmp_path / "Makefile").symlink_to(REPO / "Makefile")
    out = subprocess.run(
        ["make", "-s", "check", f"VENV={sys.prefix}"], cwd=tmp_path, capture_output=True, text=True
    )
    assert out.returncode != 0
    assert "s: broken: speedup at N = 4 expected at least 3.5" in out.stdout


@pytest.mark.parametrize(
    "expect, problem",
    [
        ({"speedup": {"8": [0, None]}}, "expect.speedup.8.0: 0 is less than or equal to"),
        ({"speedup": {"8": [6, 5]}}, "expect.speedup.8: the lower bound 6 is above the upper"),
        ({"speedups": {"8": [5, None]}}, "expect"),
    ],
)
def test_a_reference_of_zero_or_bounds_upside_down_are_refused(expect, problem):
    from scalestudy.study.errors import ConfigError

    with pytest.raises(ConfigError) as e:
        checked_study(STUDY | {"expect": expect})
    assert problem in str(e.value)


def test_archives_never_overwrite_and_history_marks_the_step(tmp_path):
    study = study_model(STUDY)
    results = tmp_path / "results" / "s"
    when = [datetime(2026, 1, d, tzinfo=UTC) for d in (1, 2, 3)]
    for day, slower in zip(when, ({}, {}, {2: 1.3}), strict=True):
        paths = measure(tmp_path / str(day.day), slower=slower, seed=day.day)
        aggregate(study, paths).write({k: results / v for k, v in OUT.items()})
        kept = archive("s", tmp_path, now=day)
        assert (kept / "runs.csv").is_file() and kept.name.startswith(f"202601{day.day:02}")
    with pytest.raises(SystemExit, match="never overwritten"):
        archive("s", tmp_path, now=when[-1])
    rows = history("s", 0.05, tmp_path)
    assert [r["name"] for r in rows][-1] == "now" and len(rows) == 4
    assert rows[1]["changes"] == {} and rows[2]["changes"] == {("", 2): "slower"}
    text = table_text(rows)
    assert "^slower" in text.splitlines()[3] and text.count("^slower") == 1
    # the report's history: the archives and the runs now, the step marked
    now = aggregate(
        study,
        measure(tmp_path / "4", slower={2: 1.3}, seed=4),
        archives=sorted((tmp_path / "archive" / "s").iterdir()),
    )
    entries = now.analysis_as_read().section("history")
    assert [e.name[:8] for e in entries] == ["20260101", "20260102", "20260103", "now"]
    assert [p.change for p in entries[2].points] == ["none", "slower", "none"]
    assert [p.change for p in entries[3].points] == ["none", "none", "none"]
    html = render("t", [study_view(now.analysis_as_read(), now.summary, {})])
    assert "<h3>History</h3>" in html and "(slower)</td>" in html
    # `baseline: last` is the newest archive
    from scalestudy.study.baseline import baseline_dir

    last = study_model(STUDY | {"baseline": "last"})
    assert baseline_dir(last, tmp_path).name.startswith("20260103")
