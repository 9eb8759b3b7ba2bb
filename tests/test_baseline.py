"""Baselines (`baseline:`, scalestudy/sections/baseline/produce.py): a study against an earlier
run of it, built from synthetic records through the real pipeline."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from scalestudy.analysis.pipeline import aggregate
from scalestudy.records import write_json_atomic
from scalestudy.report.rendering import render
from scalestudy.report.views import study_view
from tests.conftest import study_model
from tests.test_records import good_record

POINTS = {"t1": 1, "t2": 2, "t4": 4}
ENV = {
    "host": "node1",
    "python": "3.11.7",
    "torch": "2.4.0",
    "cuda": "12.1",
    "cpu_model": "Xeon",
    "workflow_commit": "abc123",
}
STUDY = {
    "workload": "mnist_cnn",
    "scaling": {"axis": "threads", "points": [1, 2, 4]},
    "repeats": 5,
    "time": "wall",
}


def program_times(
    n: int, slower: dict, seed: int, repeats: int = 5, noise: float = 0.02
) -> list[float]:
    """A program with a serial part: 10 s at N = 1, with 2 % noise; `slower` scales N."""
    rng = np.random.default_rng(seed * 100 + n)
    t = (2.0 + 8.0 / n) * slower.get(n, 1.0)
    return list(t * (1 + noise * rng.standard_normal(repeats)))


def measure(root, slower=None, seed=0, env=None, repeats=5, noise=0.02) -> list:
    """The study's records under root/results/s/runs, as the workflow lays them out."""
    paths = []
    start = datetime(2026, 1, 1, tzinfo=UTC)
    for point, n in POINTS.items():
        times = program_times(n, slower or {}, seed, repeats, noise)
        for k, wall in enumerate(times, start=1):
            record = good_record(
                point=point,
                n=n,
                repeat=k,
                wall_s=wall,
                run_id=f"run-{seed}-{point}-rep{k}",
                phases=[
                    {"name": "startup", "kind": "startup", "seconds": 0.1 * wall},
                    {"name": "epoch 1", "kind": "epoch", "seconds": 0.8 * wall},
                ],
                environment=env or ENV,
                started_at=start.isoformat(),
                finished_at=(start + timedelta(seconds=wall)).isoformat(),
            )
            path = root / "results" / "s" / "runs" / point / f"rep{k}.json"
            write_json_atomic(path, record)
            paths.append(path)
    return paths


def baseline_folder(tmp_path, study, **how):
    """An earlier run of the study, aggregated, its results folder copied elsewhere."""
    folder = tmp_path / "kept"
    result = aggregate(study, measure(tmp_path / "then", **how))
    result.write(
        {
            k: folder / f"{k}.{ext}"
            for k, ext in [("runs", "csv"), ("summary", "csv"), ("analysis", "json")]
        }
    )
    return folder


def test_a_point_30_percent_slower_is_called_and_the_others_are_not(tmp_path):
    study = study_model(STUDY | {"baseline": "kept"})
    folder = baseline_folder(tmp_path, study, seed=1)
    now = aggregate(study, measure(tmp_path / "now", slower={2: 1.3}, seed=2), baseline=folder)
    found = json.loads(now.baseline_json())
    changes = {p["n"]: p["change"] for p in found["points"]}
    assert changes == {1: "none", 2: "slower", 4: "none"}
    slow = next(p for p in found["points"] if p["n"] == 2)
    assert 1.2 < slow["ratio"] < 1.4 and slow["lo"] > 1
    assert "N = 2: slower by 28% [24%, 32%]" in found["said"]
    assert found["verdicts"][0]["verdict"] == "slower"
    assert found["curves"][0]["differ"]
    view = study_view(now.analysis_as_read(), now.summary, {})
    html = render("t", [view])
    assert "Against the baseline" in html and "N = 2: slower by 28% [24%, 32%]" in html
    assert re.search(r"<td>2</td>.*<td class=\"bad\">slower</td>", html)
    assert "<strong>differs</strong> from the baseline" in html


def test_the_same_program_twice_calls_no_change(tmp_path):
    study = study_model(STUDY | {"baseline": "kept"})
    folder = baseline_folder(tmp_path, study, seed=3)
    now = aggregate(study, measure(tmp_path / "now", seed=4), baseline=folder)
    found = json.loads(now.baseline_json())
    assert {p["change"] for p in found["points"]} == {"none"}
    assert not found["curves"][0]["differ"]
    assert {p["verdict"] for p in found["points"]} == {"same"}
    assert found["said"][0] == (
        "the curve: no change beyond 5% over the curve (a 10% slowdown at every point "
        "would have been called with probability above 0.99, a 10% speedup above 0.99)"
    )
    assert found["answers"][0]["unchanged"]
    assert found["answers"][0]["text"].startswith("unchanged: ask for")
    assert found["fingerprint"]["differences"] == []


def test_a_new_pytorch_is_said_and_points_in_one_only_are_listed(tmp_path):
    study = study_model(STUDY | {"baseline": "kept"})
    folder = baseline_folder(tmp_path, study, seed=5)
    paths = measure(tmp_path / "now", seed=6, env=ENV | {"torch": "2.5.1"})
    paths = [p for p in paths if p.parent.name != "t4"]
    found = json.loads(aggregate(study, paths, baseline=folder).baseline_json())
    assert found["fingerprint"]["differences"] == [
        {"key": "pytorch", "baseline": "2.4.0", "now": "2.5.1"}
    ]
    assert found["only_baseline"] == [4] and found["only_now"] == []


def test_a_baseline_without_a_fingerprint_is_compared_with_a_note(tmp_path):
    study = study_model(STUDY | {"baseline": "kept"})
    folder = baseline_folder(tmp_path, study, seed=7)
    old = json.loads((folder / "analysis.json").read_text())
    # as an analysis made before fingerprints (and versions) holds it
    del old["findings"]["fingerprint"], old["version"]
    (folder / "analysis.json").write_text(json.dumps(old))
    found = json.loads(
        aggregate(study, measure(tmp_path / "now", seed=8), baseline=folder).baseline_json()
    )
    assert "unknown" in found["fingerprint"]["note"]
    assert len(found["points"]) == 3


def test_the_fingerprint_is_on_every_analysis(tmp_path):
    study = study_model(STUDY)
    result = aggregate(study, measure(tmp_path, seed=9))
    fp = result.analysis_as_read().findings.fingerprint
    assert fp["pytorch"] == "2.4.0" and fp["workflow commit"] == "abc123"
    assert fp["nodes"] == "1" and fp["workload"] == "mnist_cnn"
    assert json.loads(result.baseline_json()) is None  # no baseline: null


@pytest.mark.parametrize(
    "change, problem",
    [
        ({"baseline": "nowhere"}, "studies.s.baseline: no such folder"),
        ({"baseline": "last"}, "studies.s.baseline: `last`, but the study has no archive"),
        ({"baseline": "empty"}, "holds no records"),
    ],
)
def test_a_bad_baseline_is_refused_naming_the_key(tmp_path, change, problem):
    from scalestudy.study.archives import baseline_problems

    (tmp_path / "empty").mkdir()
    study = study_model(STUDY | change)
    found = baseline_problems(study, tmp_path)
    assert len(found) == 1 and problem in found[0]


def test_another_studys_baseline_is_refused_unless_meant(tmp_path):
    from scalestudy.study.archives import baseline_problems

    study = study_model(STUDY | {"baseline": "kept"})
    baseline_folder(tmp_path, study_model(STUDY | {"params": {"epochs": 3}}), seed=1)
    (problem,) = baseline_problems(study, tmp_path)
    assert "is another study: its params {'epochs': 3}" in problem
    assert "baseline_across: true" in problem
    across = study_model(STUDY | {"baseline": "kept", "baseline_across": True})
    assert baseline_problems(across, tmp_path) == []


def test_the_driver_version_is_read_from_the_kernel_module(monkeypatch):
    from scalestudy.compute import harness

    line = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 2023"
    monkeypatch.setattr(harness, "_read", lambda path: line)
    assert harness.gpu_driver() == "535.104.05"
    monkeypatch.setattr(harness, "_read", lambda path: None)
    assert harness.gpu_driver() is None


def test_both_speedup_curves_are_drawn(tmp_path):
    from scalestudy.report.plots import write_figures

    study = study_model(STUDY | {"baseline": "kept"})
    folder = baseline_folder(tmp_path, study, seed=1)
    now = aggregate(study, measure(tmp_path / "now", slower={2: 1.3}, seed=2), baseline=folder)
    figures = write_figures(
        now.summary, now.runs, "threads", tmp_path / "fig", now.analysis_as_read()
    )
    svg = next(p for p in figures if p.name == "baseline.svg").read_text()
    assert "baseline" in svg and "now" in svg


def test_the_config_check_names_a_bad_baseline_before_any_job(tmp_path):
    from scalestudy.study.errors import ConfigError
    from tests.conftest import checked_study

    study = {
        "workload": "command",
        "params": {"command": "true"},
        "scaling": {"axis": "threads", "points": [1, 2]},
        "baseline": "no/such/folder",
    }
    with pytest.raises(ConfigError) as e:
        checked_study(study)
    assert "config key studies.s.baseline: no such folder" in str(e.value)


def test_the_answer_then_and_now_is_said_and_a_faster_point_called(tmp_path):
    # then: N = 4 pays (speedup 2.5 against 1.67 at N = 2); now N = 4 is 60 % slower
    # (speedup 1.56: the answer falls to 2) and N = 2 30 % faster
    study = study_model(STUDY | {"baseline": "kept"})
    folder = baseline_folder(tmp_path, study, seed=11)
    paths = measure(tmp_path / "now", slower={4: 1.6, 2: 0.7}, seed=12)
    found = json.loads(aggregate(study, paths, baseline=folder).baseline_json())
    assert {p["n"]: p["change"] for p in found["points"]} == {1: "none", 2: "faster", 4: "slower"}
    (answer,) = found["answers"]
    assert (answer["was_n"], answer["now_n"], answer["unchanged"]) == (4, 2, False)
    assert answer["text"].startswith("was: ask for 4 threads (")
    assert "; now: ask for 2 threads (" in answer["text"]


def test_an_adaptive_study_measures_more_where_the_comparison_is_undecided(tmp_path):
    from scalestudy.analysis.cost.plan import round_plan
    from scalestudy.analysis.tables import read_runs

    # the answer decided on a 20 % interval (4 % noise leaves it wide)
    settle = {"settle_baseline": True, "target_ci": 0.2}
    adaptive = STUDY | {"adaptive": settle, "budget_su": 100, "baseline": "kept"}
    study = study_model(adaptive)
    # 4 % noise, 4 runs a side: no point has the power to say "same" (a 10 % slowdown
    # at one point alone called 0.63 of the time); N = 2 was 4 % slower then
    runs = read_runs(study, measure(tmp_path / "now", seed=30, repeats=4, noise=0.04))
    kept = read_runs(
        study, measure(tmp_path / "then", seed=31, slower={2: 1.04}, repeats=4, noise=0.04)
    )
    alone = round_plan(study, 2, runs)
    assert alone.stop.reason == "decided" and alone.added == {}
    plan = round_plan(study, 2, runs, kept)
    # the runs that would decide each point, up to max_repeats (6)
    assert plan.stop is None and plan.added == {"t1": 2, "t2": 2, "t4": 2}
    assert plan.why["t2"].startswith("the comparison with the baseline is undecided at N = 2")
    assert plan.why["t2"].endswith("6 more runs would decide it")
    # 2 % noise: every point "same" with its power said: nothing to add
    settled = read_runs(study, measure(tmp_path / "quiet", seed=26, repeats=4))
    kept_quiet = read_runs(study, measure(tmp_path / "q", seed=27, slower={2: 1.04}, repeats=4))
    assert round_plan(study, 2, settled, kept_quiet).stop.reason == "decided"
    # only where the study asks for it (adaptive.settle_baseline, default false), within
    # max_repeats and the budget
    plain = study_model(adaptive | {"adaptive": {"target_ci": 0.2}})
    assert round_plan(plain, 2, runs, kept).stop.reason == "decided"
    at_most = study_model(adaptive | {"adaptive": settle | {"max_repeats": 4}})
    assert round_plan(at_most, 2, runs, kept).stop.reason == "decided"
    poor = study_model(adaptive | {"budget_su": 0.024})  # 0.022 spent; 2 runs cost 0.006
    assert round_plan(poor, 2, runs, kept).stop.reason == "decided"


def cut_runs_csv(folder, fields: int) -> int:
    """Cut the baseline's runs.csv inside its last row, after `fields` fields (as a copy
    stopped half-way leaves it); the row's line number."""
    path = folder / "runs.csv"
    lines = path.read_text().splitlines()
    lines[-1] = ",".join(lines[-1].split(",")[:fields])
    path.write_text("\n".join(lines))
    return len(lines)


def test_a_baseline_cut_short_is_refused_before_any_job_naming_file_and_line(tmp_path):
    # the fault probe: a runs.csv cut mid-row was used silently (a row of 43 of its 79
    # fields counted as a run), a cut analysis.json refused only at aggregation
    from scalestudy.records import RecordError
    from scalestudy.study.archives import baseline_problems

    study = study_model(STUDY | {"baseline": "kept"})
    folder = baseline_folder(tmp_path, study, seed=1)
    header = (folder / "runs.csv").read_text().splitlines()[0].count(",") + 1
    line = cut_runs_csv(folder, 43)
    (problem,) = baseline_problems(study, tmp_path)
    assert problem.startswith(f"studies.s.baseline: {folder / 'runs.csv'}: line {line}: ")
    assert f"43 fields, the header has {header}: the file is cut short" in problem
    # aggregation reads it with the same loader: never a short row taken as a run
    with pytest.raises(RecordError, match=f"runs.csv: line {line}: 43 fields"):
        aggregate(study, measure(tmp_path / "now", seed=2), baseline=folder)
    # cut inside its last value: as many fields, another number; the newline is missing
    folder = baseline_folder(tmp_path, study, seed=1)
    text = (folder / "runs.csv").read_text()
    (folder / "runs.csv").write_text(text[:-2])
    (problem,) = baseline_problems(study, tmp_path)
    assert f"runs.csv: line {line}: ends without its newline" in problem

    folder = baseline_folder(tmp_path, study, seed=1)  # whole again
    text = (folder / "analysis.json").read_text()
    (folder / "analysis.json").write_text(text[: len(text) // 2])
    (problem,) = baseline_problems(study, tmp_path)
    assert re.match(
        r"studies.s.baseline: \S+analysis.json: line \d+, column \d+: not JSON", problem
    )


def test_a_broken_archive_is_refused_before_any_job(tmp_path):
    # aggregation reads every archive (the report's history): one cut short would stop
    # it after the runs
    from scalestudy.study.archives import archive_problems

    study = study_model(STUDY)
    kept = baseline_folder(tmp_path, study, seed=1)
    archived = tmp_path / "archive" / "s" / "20260101T000000Z-unknown"
    archived.parent.mkdir(parents=True)
    kept.rename(archived)
    assert archive_problems(study, tmp_path) == []
    line = cut_runs_csv(archived, 5)
    (problem,) = archive_problems(study, tmp_path)
    assert problem.startswith("studies.s: an archive of it, read for its history, is broken: ")
    assert f"{archived / 'runs.csv'}: line {line}: 5 fields" in problem
    # the newest archive as the baseline: said once, as the baseline
    last = study_model(STUDY | {"baseline": "last"})
    assert archive_problems(last, tmp_path) == []


def test_runs_added_for_the_comparison_count_once_in_the_round_s_totals():
    # the fault probe: the runs next_round had added to a point were counted again when
    # settle_baseline added more there (totals 3 + 2 + 2 + extra instead of 3 + 2 + extra)
    from scalestudy.analysis.cost.plan import runs_for_comparison

    settle = {"settle_baseline": True, "target_ci": 0.2, "max_repeats": 12}
    study = study_model(STUDY | {"adaptive": settle, "budget_su": 100, "baseline": "kept"})
    rng = np.random.default_rng(5)  # undecided at every N: more runs are added at N = 4
    now = {("", n): 10 / n * rng.lognormal(0, 0.05, 3) for n in (1, 2, 4)}
    was = {("", n): 10 / n * rng.lognormal(0, 0.05, 3) for n in (1, 2, 4)}
    before = {1: 3, 2: 3, 4: 3}
    plan = {"round": 2, "totals": {1: 3, 2: 3, 4: 5}, "added": {4: 2}, "why": {4: "a step"},
            "round_su": 0.0, "spent_su": 0.0, "stop": None}  # fmt: skip
    settled = runs_for_comparison(plan, now, was, study, {1: 1e-3, 2: 1e-3, 4: 1e-3})
    assert settled["added"][4] > plan["added"][4], (
        "nothing added at N = 4: the probe proves nothing"
    )
    assert settled["totals"] == {n: before[n] + settled["added"].get(n, 0) for n in before}
