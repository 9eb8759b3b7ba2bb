"""References (`expect:`) and `make check`, archives and history (docs/baselines.md):
synthetic records through the real pipeline."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from datetime import UTC, datetime

import numpy as np
import pytest
import yaml

from scalestudy.analysis.pipeline import aggregate
from scalestudy.report.rendering import render
from scalestudy.report.views import study_view
from scalestudy.sections.history.produce import history, steps, table_text
from scalestudy.sections.references.produce import check
from scalestudy.study.archives import archive
from tests.conftest import REPO, checked_study, make, study_model
from tests.test_baseline import STUDY, measure

OUT = {"runs": "runs.csv", "summary": "summary.csv", "analysis": "analysis.json"}


def aggregated(root, expect, **how):
    """results/s of a study with these expectations, measured and aggregated."""
    study = study_model(STUDY | {"expect": expect})
    folder = root / "results" / "s"
    aggregate(study, measure(root, **how)).write({k: folder / v for k, v in OUT.items()})
    return folder


def configured(root, **studies):
    """root/config/config.yaml naming these studies (the names `make check` takes)."""
    (root / "config").mkdir(parents=True, exist_ok=True)
    (root / "config" / "config.yaml").write_text(yaml.safe_dump({"studies": studies}))


def make_check(root, *args):
    (root / "Makefile").symlink_to(REPO / "Makefile")
    return make(root, "check", *args)


def test_make_check_fails_on_a_broken_expectation_and_passes_otherwise(tmp_path):
    # the program's speedup at N = 4 is 10 / 4 = 2.5, its efficiency 0.62
    expect = {"speedup": {"4": [2.2, None]}, "efficiency": {"2": [0.7, 1]}}
    kept = aggregated(tmp_path / "a", expect)
    broken = aggregated(tmp_path / "b", {"speedup": {"4": [3.5, None], "8": [5, None]}})
    assert check([kept]) == 0
    assert check([broken]) == 1
    configured(tmp_path / "b", s=STUDY | {"expect": {"speedup": {"4": [3.5, None]}}})
    out = subprocess.run(
        [sys.executable, "-m", "scalestudy.sections.references.produce"],
        capture_output=True,
        text=True,
        cwd=tmp_path / "b",
    )
    assert out.returncode == 1
    assert "s: broken: speedup at N = 4 expected at least 3.5: measured 2.5" in out.stdout
    assert "s: broken: speedup at N = 8 expected at least 5: not measured" in out.stdout
    configured(tmp_path / "a", s=STUDY | {"expect": expect})
    assert "s: 2 expectation(s) kept" in make_check(tmp_path / "a").stdout


def test_make_check_checks_every_configured_study_and_names_the_others(tmp_path):
    # the fault probe: a configured study with `expect:` and no analysis was skipped
    # (exit 0), and a folder of a study no longer in the config was checked
    expect = {"speedup": {"4": [2.2, None]}}
    aggregated(tmp_path, expect)
    old = tmp_path / "results" / "old"
    shutil.copytree(tmp_path / "results" / "s", old)
    configured(tmp_path, s=STUDY | {"expect": expect}, t=STUDY | {"expect": expect}, u=STUDY)
    out = make_check(tmp_path)
    assert out.returncode != 0, out.stdout
    lines = out.stdout.splitlines()
    assert "old: not a study of config/config.yaml: not checked" in lines
    assert "s: 1 expectation(s) kept" in lines
    assert any(line.startswith("t: broken: no analysis to check (") for line in lines)
    assert not any(line.startswith("u:") for line in lines)  # states none, has none
    one = subprocess.run(
        [sys.executable, "-m", "scalestudy.sections.references.produce", "s"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert one.returncode == 0 and "s: 1 expectation(s) kept" in one.stdout
    path = subprocess.run(
        [sys.executable, "-m", "scalestudy.sections.references.produce", "results/old"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert path.returncode != 0
    assert "check: no study named 'results/old' in config/config.yaml" in path.stderr


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
    from scalestudy.study.archives import baseline_dir

    last = study_model(STUDY | {"baseline": "last"})
    assert baseline_dir(last, tmp_path).name.startswith("20260103")


def test_the_history_table_says_what_differs_in_the_fingerprint():
    times = {("", 1): np.array([10.0, 10.1, 9.9])}
    rows = steps([("then", times, {"pytorch": "2.4.0"}), ("now", times, {"pytorch": "2.5"})], 0.05)
    assert table_text(rows).endswith("\nnow: pytorch 2.4.0 -> 2.5")


def test_archives_made_at_once_are_refused_cleanly_and_readable_as_the_umask_allows(
    tmp_path, monkeypatch
):
    # the fault probe: three `make archive` at once gave one clean refusal and one
    # `OSError: Directory not empty` traceback; archives were mode 0700
    study = study_model(STUDY)
    results = tmp_path / "results" / "s"
    aggregate(study, measure(tmp_path, seed=1)).write({k: results / v for k, v in OUT.items()})
    when = datetime(2026, 1, 1, tzinfo=UTC)
    copytree, others = shutil.copytree, []

    def another_archive_ends_first(*args, **kwargs):
        if not others:
            others.append("started")
            others.append(archive("s", tmp_path, now=when))
        return copytree(*args, **kwargs)

    monkeypatch.setattr(shutil, "copytree", another_archive_ends_first)
    umask = os.umask(0o022)
    try:
        with pytest.raises(SystemExit, match="exists already.*made by another archive"):
            archive("s", tmp_path, now=when)
    finally:
        os.umask(umask)
    made = others[1]
    assert list((tmp_path / "archive" / "s").iterdir()) == [made]  # no copy left beside it
    assert made.stat().st_mode & 0o777 == 0o755
    assert (made / "runs").stat().st_mode & 0o777 == 0o755


def test_a_study_whose_runs_csv_is_cut_short_is_not_archived(tmp_path):
    # an archive is a later baseline: refused here rather than before a later run
    from tests.test_baseline import cut_runs_csv

    results = tmp_path / "results" / "s"
    aggregate(study_model(STUDY), measure(tmp_path, seed=1)).write(
        {k: results / v for k, v in OUT.items()}
    )
    line = cut_runs_csv(results, 43)
    with pytest.raises(SystemExit, match=f"archive: .*runs.csv: line {line}: 43 fields"):
        archive("s", tmp_path)
    assert not (tmp_path / "archive").exists()
