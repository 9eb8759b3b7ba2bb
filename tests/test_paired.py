"""Issue 36, item 4: a paired comparison (studies.<name>.compare). Variants a and b run
interleaved at each point, each pair's order drawn from a seed; the analysis gives each
point's ratio b/a from its pairs with a t interval on the log differences, and the
regression check's verdict (stats/verdicts.py)."""

import copy
import json
import math
import os
import shutil
import sys

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from scalestudy.analysis.stats.verdicts import pooled_log_variance, verdicts
from scalestudy.compute.launch import interpreter, worker_processes
from scalestudy.records import schema_errors
from scalestudy.sections.paired.produce import paired_ratios, pairs_of
from scalestudy.study.errors import ConfigError
from scalestudy.study.run_spec import paired_order, previous_paired_run, run_spec
from scalestudy.study.validation import checked_config
from tests.conftest import NOT_JUDGED_ON_SHARED_CPUS, REPO, checked_study
from tests.test_report_questions import first_row, lines
from tests.test_studies import SCHEMA

SLEEP = "import sys, time; time.sleep(float(sys.argv[1]))"


def paired_study(**overrides) -> dict:
    """Two delays of a command: b sleeps longer than a, at threads 1 and 2."""
    study = {
        "workload": "command",
        "params": {"command": [sys.executable, "-c", SLEEP, "{delay}"], "values": {"delay": 0.1}},
        "scaling": {"axis": "threads", "points": [1, 2]},
        "repeats": 3,
        "resources": {"mem_mb": 500, "runtime": 2},
        "compare": {"a": {}, "b": {"params": {"values": {"delay": 0.2}}}, "order_seed": 7},
    }
    return study | overrides


def problems(study: dict) -> list[str]:
    with pytest.raises(ConfigError) as info:
        checked_config({"studies": {"s": copy.deepcopy(study)}}, SCHEMA, REPO)
    return info.value.problems


# --- the interval and the verdict ------------------------------------------------------


def paired_ratio(a, b, tolerance):
    """b/a at a study's one point."""
    (found,) = paired_ratios([(a, b)], [1], tolerance)
    return found


def test_the_paired_interval_is_student_t_on_the_log_differences():
    a = np.array([1.00, 1.30, 0.80, 1.10])
    b = a * np.array([1.10, 1.13, 1.08, 1.12])
    found = paired_ratio(a, b, tolerance=0.05)
    diffs = np.log(b) - np.log(a)
    reference = stats.ttest_1samp(diffs, 0).confidence_interval(0.95)
    assert found.pairs == 4
    assert found.ratio == pytest.approx(math.exp(diffs.mean()))
    assert (found.ci_lo, found.ci_hi) == pytest.approx(
        (math.exp(reference.low), math.exp(reference.high))
    )
    # the allocations' spread (a from 0.8 to 1.3) cancels: the interval is a few percent
    assert found.verdict == "slower"
    assert found.words == "slower by 11% [7%, 14%]"


def test_pairing_removes_the_noise_a_pair_shares_where_unpaired_runs_cannot_tell():
    """Each job's speed varies by 15 % (shared by its pair), each run by 1 %: a 4 %
    slowdown is called from 5 pairs, where Welch's test on the same runs sees nothing."""
    rng = np.random.default_rng(3)
    job = np.exp(rng.normal(0, 0.15, 5))
    a = job * np.exp(rng.normal(0, 0.01, 5))
    b = 1.04 * job * np.exp(rng.normal(0, 0.01, 5))
    assert paired_ratio(a, b, tolerance=0.02).verdict == "slower"
    assert stats.ttest_ind(np.log(a), np.log(b), equal_var=False).pvalue > 0.05


def test_the_verdicts_in_the_reports_words():
    a = np.ones(5)
    faster = paired_ratio(a, a * np.array([0.80, 0.82, 0.78, 0.81, 0.79]), 0.05)
    assert faster.verdict == "faster" and faster.words.startswith("faster by 20% [")
    same = paired_ratio(a, a * np.array([1.03, 0.97, 1.08, 1.01, 1.04]), 0.05)
    assert (same.verdict, same.more_pairs) == ("same", None)
    # a "same" states its power, as the baseline check's does
    assert same.words == (
        "no change beyond 5% (a 10% slowdown would have been called with probability 0.98, "
        "a 10% speedup 0.93)"
    )
    unsure = paired_ratio(a[:3], a[:3] * np.array([1.03, 0.97, 1.08]), 0.05)
    assert unsure.verdict == "undecided"
    assert unsure.words == f"undecided: {unsure.more_pairs} more pairs would decide it"
    one = paired_ratio(a[:1], a[:1] * 1.5, 0.05)
    assert (one.verdict, one.ci_lo, one.ratio) == ("undecided", None, pytest.approx(1.5))
    assert one.words == "undecided: no variance to judge by (one pair a point, or identical times)"
    assert paired_ratio(a[:0], a[:0], 0.05).pairs == 0


def test_the_points_share_one_variance_and_one_verdict_rule_with_the_baseline_check():
    """Each point's log differences are judged by verdicts.py against their variance
    pooled over the points, the other side's runs infinite; a point without pairs is
    undecided and judged by nothing."""
    a = np.ones(3)
    at_1, at_2 = np.array([1.06, 0.95, 1.10]), np.array([1.20, 1.21, 1.19])
    found = paired_ratios([(a, a * at_1), (a, a * at_2), (a[:0], a[:0])], [1, 2, 4], 0.05)
    variance, df = pooled_log_variance([at_1, at_2])
    expected = verdicts(
        [np.log(at_1).mean(), np.log(at_2).mean()], [3, 3], [math.inf] * 2,
        variance, df, np.log([1, 2]), 0.05, unit="pair",
    )["points"]  # fmt: skip
    for got, want in zip(found, expected, strict=False):
        assert (got.ratio, got.ci_lo, got.ci_hi) == (want["ratio"], want["lo"], want["hi"])
        assert (got.verdict, got.words, got.more_pairs) == (
            want["verdict"], want["text"], want["more_runs"],
        )  # fmt: skip
    assert found[2].pairs == 0 and found[2].verdict == "undecided"


def test_an_estimate_inside_the_tolerance_is_never_called_a_change():
    """The tolerance applies to the estimate: a 2 % change, however sure, is not a 5 % one."""
    a = np.ones(8)
    b = a * np.array([1.02, 1.021, 1.019, 1.02, 1.02, 1.021, 1.019, 1.02])
    found = paired_ratio(a, b, 0.05)
    assert found.verdict == "same"


def test_pairs_are_a_and_b_of_one_repeat_both_successful_one_after_the_other():
    rows = [
        ("a", 1, 1, "ok", 1.0, "08:01"),
        ("b", 1, 1, "ok", 1.2, "08:02"),
        ("b", 1, 2, "failed", None, "08:03"),
        ("a", 1, 2, "ok", 2.0, "08:04"),
        # run again alone, later: b's rep3 is no longer next to a's
        ("a", 1, 3, "ok", 2.0, "08:05"),
        ("b", 1, 4, "ok", 2.2, "08:06"),
        ("a", 1, 4, "ok", 2.0, "08:07"),
        ("b", 1, 3, "ok", 2.0, "09:00"),
        # a series split by provenance is still its variant
        ("a [GPU model=x]", 2, 1, "ok", 3.0, "08:01"),
        ("b [GPU model=x]", 2, 1, "ok", 3.3, "08:02"),
    ]
    columns = ["series", "n", "repeat", "status", "wall_s", "started_at"]
    pairs = pairs_of(pd.DataFrame(rows, columns=columns), "wall_s")
    assert pairs.to_dict("records") == [
        {"n": 1, "repeat": 1, "a": 1.0, "b": 1.2},
        {"n": 1, "repeat": 4, "a": 2.0, "b": 2.2},
        {"n": 2, "repeat": 1, "a": 3.0, "b": 3.3},
    ]
    # the fault probe: a run on shared CPUs (not usable) measured its pair; it still
    # stands between its neighbours, so a's rep2 does not pair with b's rep4
    runs = pd.DataFrame(rows, columns=columns)
    usable = runs.drop(index=[0, 5])  # a's rep1 disturbed, b's rep4 disturbed
    pairs = pairs_of(runs, "wall_s", usable)
    assert pairs.to_dict("records") == [{"n": 2, "repeat": 1, "a": 3.0, "b": 3.3}]


# --- the order of the runs -------------------------------------------------------------


def test_each_pair_runs_next_to_each_other_in_an_order_drawn_from_the_seed():
    study = checked_study(paired_study(repeats=6))
    order = paired_order(study, 1)
    assert len(order) == 12
    for k in range(6):
        assert {order[2 * k], order[2 * k + 1]} == {("a", k + 1), ("b", k + 1)}
    firsts = [order[2 * k][0] for k in range(6)]
    assert set(firsts) == {"a", "b"}  # drawn, not always a first
    assert paired_order(checked_study(paired_study(repeats=6)), 1) == order
    other_seed = paired_study(repeats=6)
    other_seed["compare"] = other_seed["compare"] | {"order_seed": 8}
    seven, eight = checked_study(paired_study(repeats=6)), checked_study(other_seed)
    assert [paired_order(seven, n) for n in (1, 2)] != [paired_order(eight, n) for n in (1, 2)]
    # more repeats later leave the first pairs where they were
    assert paired_order(checked_study(paired_study(repeats=8)), 1)[:12] == order


def test_each_run_waits_for_the_one_before_it_and_its_record_says_its_place():
    study = checked_study(paired_study())
    order = paired_order(study, 2)
    assert previous_paired_run(study, 2, *order[0]) is None
    for before, run in zip(order, order[1:], strict=False):
        assert previous_paired_run(study, 2, *run) == before
    spec = run_spec(study, 2, order[3][1], order[3][0])
    assert spec["compare"] == {"seed": 7, "position": 4}
    assert spec["point"] == f"{order[3][0]}-t2"
    assert spec["params"]["values"]["delay"] == (0.1 if order[3][0] == "a" else 0.2)
    plain = checked_study({k: v for k, v in paired_study().items() if k != "compare"})
    assert "compare" not in run_spec(plain, 2, 1) and previous_paired_run(plain, 2, "", 1) is None


def test_a_variant_runs_in_its_own_interpreter_or_container(tmp_path):
    python = tmp_path / "bin" / "python"
    python.parent.mkdir()
    python.write_text("")
    study = paired_study()
    image = tmp_path / "bench.sif"
    image.write_text("")
    study["compare"]["a"] = {"python": str(python)}
    study["compare"]["b"] = {"container": str(image)}
    model = checked_study(study)
    a, b = run_spec(model, 1, 1, "a"), run_spec(model, 1, 1, "b")
    assert interpreter(a) == [str(python)]
    assert interpreter(b) == ["apptainer", "exec", str(image), "python3"]
    assert interpreter({}) == [sys.executable]
    ((argv, _),) = worker_processes(a, tmp_path / "spec.json", tmp_path, environ={})
    assert argv[:3] == [str(python), "-m", "scalestudy.compute.worker"]


def test_a_record_keeps_its_place_in_the_order(tmp_path):
    from tests.test_records import good_record

    record = good_record() | {"compare": {"seed": 7, "position": 3}}
    assert not schema_errors(record)
    assert schema_errors(record | {"compare": {"seed": 7}})


# --- the config ------------------------------------------------------------------------


def test_a_comparison_with_series_adaptive_or_one_repeat_is_refused_naming_the_key(tmp_path):
    with_series = paired_study(series={"x": {}})
    assert any(
        p.startswith("config key studies.s.compare: its variants a and b are the study's series")
        for p in problems(with_series)
    )
    adaptive = paired_study(adaptive={}, budget_su=1)
    assert any("studies.s.compare: runs every pair" in p for p in problems(adaptive))
    one = problems(paired_study(repeats=1))
    assert any("studies.s.compare: needs repeats of at least 2" in p for p in one)
    missing = paired_study()
    missing["compare"]["b"] = {"python": str(tmp_path / "nowhere")}
    assert f"config key studies.s.compare.b.python: no such file: {tmp_path / 'nowhere'}" in (
        problems(missing)
    )


@pytest.mark.skipif(shutil.which("apptainer") is not None, reason="apptainer is installed here")
def test_a_variants_container_is_checked_before_any_job_and_same_variants_are_said(workflow):
    # the fault probe: a missing `container:` image was not checked (a missing `python:`
    # was), and every run failed with "No such file or directory: 'apptainer'"; variants
    # a and b that run the same got no word
    missing = paired_study()
    missing["compare"]["b"] = {"container": "nowhere.sif"}
    assert "config key studies.s.compare.b.container: no such file: nowhere.sif" in (
        problems(missing)
    )
    assert checked_study(paired_study(compare={"a": {}, "b": {"container": "docker://x"}}))
    (workflow.root / "bench.sif").write_text("")
    boxed = paired_study()
    boxed["compare"]["b"] = {"container": "bench.sif"}
    same = paired_study(compare={"a": {"description": "one"}, "b": {"description": "two"}})
    workflow.write_config({"studies": {"s": boxed, "same": same}})
    # this machine has no apptainer: stopped before any job, in a dry run too
    dry = workflow.snakemake("--profile", "profiles/local", "-n", check=False)
    assert dry.returncode != 0, dry.output
    needs = "studies.s.compare.b.container: its runs need apptainer, which is not installed here"
    assert needs in dry.output
    assert not (workflow.root / "results").exists()
    assert "studies.same.compare: variants a and b run the same params" in dry.output
    assert "studies.s.compare: variants" not in dry.output


def test_a_variants_unknown_key_or_bad_params_are_refused_naming_the_key():
    typo = paired_study()
    typo["compare"]["b"] = {"parms": {}}
    assert any("studies.s.compare.b" in p and "parms" in p for p in problems(typo))
    bad = paired_study()
    bad["compare"]["a"] = {"params": {"metrics_regex": 3}}
    assert any(p.startswith("config key studies.s.compare.a.") for p in problems(bad))
    no_b = paired_study()
    del no_b["compare"]["b"]
    assert any("studies.s.compare" in p and "'b' is a required" in p for p in problems(no_b))


def test_the_variants_are_the_studys_series_a_and_b_with_their_params():
    study = checked_study(paired_study())
    assert study.series_names == ["a", "b"]
    assert study.for_series("b").params["values"] == {"delay": 0.2}
    assert study.for_series("a").params["values"] == {"delay": 0.1}


# --- the workflow ----------------------------------------------------------------------


@pytest.mark.slow
def test_a_paired_study_runs_its_pairs_interleaved_and_reports_the_ratio(workflow):
    """On the local profile: a sleeps 0.05 s, b 2 s, three pairs at one point. The runs
    go in the drawn order, one after another; analysis.json and the report give b/a."""
    study = paired_study(scaling={"axis": "threads", "points": [1]})
    study["params"]["values"] = {"delay": 0.05}
    study["compare"]["b"] = {"params": {"values": {"delay": 2.0}}}
    workflow.write_config({"studies": {"ab": study | NOT_JUDGED_ON_SHARED_CPUS}})
    workflow.snakemake("--profile", "profiles/local")

    runs = workflow.root / "results" / "ab" / "runs"
    records = [json.loads(p.read_text()) for p in runs.glob("*-t1/rep*.json")]
    assert len(records) == 6 and all(r["status"] == "ok" for r in records)
    in_time = sorted(records, key=lambda r: r["started_at"])
    assert [r["compare"]["position"] for r in in_time] == [1, 2, 3, 4, 5, 6]
    drawn = paired_order(checked_study(study), 1)
    assert [(r["series"], r["repeat"]) for r in in_time] == drawn
    for earlier, later in zip(in_time, in_time[1:], strict=False):
        assert earlier["finished_at"] <= later["started_at"]  # one after another

    found = json.loads((workflow.root / "results" / "ab" / "analysis.json").read_text())
    (point,) = found["paired"]["points"]
    assert point["point"] == "t1" and point["pairs"] == 3
    assert point["ci_lo"] < point["ratio"] < point["ci_hi"] and point["ratio"] > 1.5
    assert point["verdict"] == "slower" and point["words"].startswith("slower by ")
    html = (workflow.root / "results" / "report.html").read_text()
    assert "Paired comparison: b against a" in html
    ci = f"{point['ratio']:.3f} [{point['ci_lo']:.3f}, {point['ci_hi']:.3f}]"
    assert f"<td>{ci}</td>" in html and point["words"] in html
    # the first table answers its question first: b slower than a, decided
    assert lines(html, "ab") == [("a or b", "yes")]
    assert f"a or b : b against a: {point['words']}. Decided." in first_row(html, "ab")
    # the fault probe: a run redone (its record newer) made every later run of the
    # chain outdated, and run again, losing what they had measured
    first = runs / f"{drawn[0][0]}-t1" / f"rep{drawn[0][1]}.json"
    os.utime(first)
    dry = workflow.snakemake("--profile", "profiles/local", "-n")
    assert "run_point" not in dry.output, dry.output[-3000:]


def test_a_comparisons_job_asks_for_all_its_runs_time_within_the_partitions_limit():
    from scalestudy.study.points import point_for
    from scalestudy.study.resources import job_runtime, runtime_problems, slurm_resources

    study = checked_study(paired_study())
    point = point_for(study, 1, "a")
    one = slurm_resources(point, study)["runtime"]
    assert job_runtime(study, point) == one * 3 * 2  # a's and b's 3 repeats
    assert runtime_problems(study, [point], one * 6, "sinfo") == []
    (problem,) = runtime_problems(study, [point], one * 6 - 1, "sinfo")
    assert problem.startswith(f"studies.s.compare: point a-t1 runs a's and b's 3 repeats of {one}")


def test_a_paired_study_gets_no_second_unpaired_verdict_on_a_against_b():
    # the fault probe: the series comparison (an unpaired test of the same runs) also
    # judged a against b, and could contradict the paired verdict
    from scalestudy.analysis.stats.predictions import compare_all_series

    rows = [(s, n, r, "ok", t * (1.3 if s == "b" else 1.0))
            for s in ("a", "b") for n, t in ((1, 2.0), (2, 1.0)) for r in (1, 2, 3)]  # fmt: skip
    runs = pd.DataFrame(rows, columns=["series", "n", "repeat", "status", "wall_s"])
    paired = checked_study(paired_study(), "s")
    plain = {k: v for k, v in paired_study().items() if k != "compare"}
    unpaired = checked_study(plain | {"series": {"a": {}, "b": {}}}, "s")
    assert compare_all_series(runs, paired) == []
    assert len(compare_all_series(runs, unpaired)) == 1
