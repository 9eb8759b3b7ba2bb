"""An adaptive study through the real workflow: a budget below round 1 refused before
any job, rounds as Snakemake checkpoints, their report section, a rerun that does
nothing, a deleted record redone, a raised limit that continues from what exists, and
a study over many candidates that runs only those that decide its answer."""

import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import replace

import pandas as pd
import pytest

from scalestudy.analysis.cost.plan import round_plan
from tests.conftest import REPO, copy_of_the_workflow, study_model
from tests.test_report_questions import first_row, lines
from tests.test_workflow import planned_runs

PY = sys.executable
# a command whose training time (its own report of it) halves with its threads, and
# whose odd repeats take 3x as long: its speedup's interval stays wide (a factor of 3 or
# more at 4 runs), so that the step 1 -> 2 (a gain of about 1 per core) stays undecided
# against a threshold of 1, and rounds add repeats (up to max_repeats) whatever the
# machine's own noise
TRAINS = (
    "import sys, time; t = time.perf_counter(); {}; "
    "print('train_s=%.4f' % (time.perf_counter() - t))"
)
PROGRAM = TRAINS.format("n, k = map(int, sys.argv[1:]); time.sleep(0.4 / n * (3 if k % 2 else 1))")
# the program's own training time, as it prints it (time: train rests on it)
OWN_TRAINING = {"train_s": r"train_s=([0-9.]+)"}


def adaptive_study(**adaptive) -> dict:
    return {
        "workload": "command",
        "params": {
            "command": [PY, "-c", PROGRAM, "{threads}", "{repeat}"],
            "metrics_regex": OWN_TRAINING,
        },
        "scaling": {"axis": "threads", "points": [1, 2]},
        # the program's own training: start-ups would dilute the speedup
        "time": "train",
        "resources": {"mem_mb": 500, "runtime": 1},
        "budget_su": 1,
        "include_shared": True,  # other tests may run beside this one; not under test here
        "recommend": {"min_marginal_speedup": 1.0},
        # the step decides the rounds here (a CI target beyond max_repeats gets no runs)
        "adaptive": {"target_ci": 0.99, "first_repeats": 2} | adaptive,
    }


def plans(workflow) -> list[dict]:
    """The study's round plans, every one that ran (a round that stopped the study under
    an earlier config is followed by those planned under a later one)."""
    folder, found = workflow.root / "results" / "a" / "rounds", []
    while (folder / f"round{len(found) + 1}.json").exists():
        found.append(json.loads((folder / f"round{len(found) + 1}.json").read_text()))
    assert found[-1]["stop"], found[-1]
    return found


def run_ids(workflow) -> dict[str, str]:
    runs = workflow.root / "results" / "a" / "runs"
    return {
        f"{p.parent.name}/{p.stem}": json.loads(p.read_text())["run_id"]
        for p in runs.glob("*/rep*.json")
    }


def test_a_runs_time_limit_follows_its_rounds_budget_limit(workflow):
    # a round near the budget's edge gives the runs it adds at N = 2 a limit of 15 s:
    # the launcher stops them there (the spec's limit) and their job asks for its minute
    # with the slack, not the study's 10 minutes
    study = adaptive_study() | {"resources": {"mem_mb": 500, "runtime": 10}}
    workflow.write_config({"studies": {"a": study}})
    plan = replace(round_plan(study_model(study, "a"), 1, None), time_limits_min={"t2": 0.25})
    (workflow.root / "results" / "a" / "rounds").mkdir(parents=True)
    plan.dump(workflow.root / "results" / "a" / "rounds" / "round1.json")
    records = ["results/a/runs/t1/rep1.json", "results/a/runs/t2/rep1.json"]
    dry = workflow.snakemake("--profile", "profiles/local", "-n", "-p", *records)
    output = dry.stdout + dry.stderr
    jobs = {m[0]: m for m in re.findall(r"point=(t\d), repeat=1.*?runtime=(\d+)", output, re.S)}
    assert {point: int(runtime) for point, runtime in jobs.values()} == {"t1": 12, "t2": 3}, output
    limits = re.findall(r'"time_limit_min": ([\d.]+)', output)
    assert sorted(map(float, limits)) == [0.25, 10.0], output


@pytest.mark.slow
def test_a_run_is_stopped_at_its_rounds_budget_limit_and_says_so(workflow):
    # a run of 30 s whose round gives it 0.01 min (0.6 s) of what the budget has left:
    # the launcher stops it there, through the real workflow, and its record names the
    # budget (the report's failed runs and the study's spent SU come from the record)
    study = adaptive_study() | {
        "params": {
            "command": [PY, "-c", TRAINS.format("time.sleep(30)")],
            "metrics_regex": OWN_TRAINING,
        },
        "resources": {"mem_mb": 500, "runtime": 10},
    }
    workflow.write_config({"studies": {"a": study}})
    plan = replace(round_plan(study_model(study, "a"), 1, None), time_limits_min={"t2": 0.01})
    (workflow.root / "results" / "a" / "rounds").mkdir(parents=True)
    plan.dump(workflow.root / "results" / "a" / "rounds" / "round1.json")
    workflow.snakemake("--profile", "profiles/local", "results/a/runs/t2/rep1.json")
    record = json.loads((workflow.root / "results" / "a" / "runs" / "t2" / "rep1.json").read_text())
    assert record["status"] == "failed"
    assert record["reason"] == "budget limit (0.01 min) exceeded", record["reason"]
    assert record["wall_s"] < 10, record["wall_s"]


def test_a_profiling_job_asks_for_its_points_runtime(workflow):
    # a profiling job has no repeat: the runtime resource that looks up a run's round
    # failed on it (AttributeError: no repeat), and every profiled study with it
    study = {"workload": "spiral_mlp", "scaling": {"axis": "threads", "points": [1, 2]},
             "resources": {"mem_mb": 500, "runtime": 10},
             "profile": {"enabled": True, "point": 2, "steps": 3}}  # fmt: skip
    workflow.write_config({"studies": {"a": study}})
    dry = workflow.snakemake("--profile", "profiles/local", "-n", "-p", "results/a/profile/t2.json")
    assert re.search(r"rule profile_point:.*?runtime=12", dry.stdout + dry.stderr, re.S), dry.output


@pytest.mark.slow
def test_an_adaptive_study_runs_in_rounds_and_continues_from_what_exists(workflow):
    # round 1 (2 runs on 1 and on 2 cores, priced at their 1-min limit: 0.1 SU) is
    # above this budget: refused before any job
    workflow.write_config({"studies": {"a": adaptive_study() | {"budget_su": 0.05}}})
    refused = workflow.snakemake("--profile", "profiles/local", check=False)
    assert refused.returncode != 0
    assert "studies.a.budget_su: round 1 of the adaptive study is estimated at 0.1 SU" in (
        refused.output
    )
    assert not (workflow.root / "results" / "a" / "runs").exists()

    workflow.write_config({"studies": {"a": adaptive_study(max_repeats=4)}})
    workflow.snakemake("--profile", "profiles/local")
    rounds = plans(workflow)
    # round 1: 2 runs each; each later round adds runs (at most doubling), until the
    # last judges the runs and stops at max_repeats
    assert rounds[0]["totals"] == {"t1": 2, "t2": 2} and rounds[0]["stop"] is None
    for before, after in zip(rounds, rounds[1:], strict=False):
        assert after["totals"] == {p: before["totals"][p] + after["added"].get(p, 0)
                                   for p in before["totals"]}  # fmt: skip
        assert all(k <= before["totals"][p] for p, k in after["added"].items())
    assert all(p["added"] for p in rounds[:-1]) and rounds[-1]["added"] == {}
    assert rounds[-1]["totals"] == {"t1": 4, "t2": 4}
    assert rounds[-1]["stop"]["reason"] == "limits"
    assert "max_repeats = 4" in rounds[-1]["stop"]["text"]
    first = run_ids(workflow)
    assert sorted(first) == [f"t{n}/rep{k}" for n in (1, 2) for k in range(1, 5)]

    analysis = json.loads((workflow.root / "results" / "a" / "analysis.json").read_text())
    found = analysis["findings"]["adaptive"]
    assert found["stop"]["reason"] == "limits" and not found["decided"]
    assert found["later_runs"] >= 1  # usable runs of round 2, drawn apart in the figure
    assert analysis["findings"]["answers"][0]["decided"] is False
    report = (workflow.root / "results" / "report.html").read_text()
    assert "<h3>Rounds</h3>" in report and "Stopped at the limits, not decided" in report
    assert "2 at N = 1, 2 at N = 2" in report  # round 1
    # the report's first line says what would decide it: the round a raise plans
    change = rounds[-1]["to_decide"]
    assert change["key"] == "adaptive.max_repeats" and change["value"] > 4 and change["added"]
    top = report.split("</h1>", 1)[1].lstrip()
    assert top.startswith('<p class="warn not-decided">Not decided: <a href="#study-a">a</a>.')
    assert f"set <code>adaptive.max_repeats: {change['value']}</code> in study" in top
    # and the first table's line of its question, not decided, says the same
    assert lines(report, "a") == [("how many", "no")]
    assert f"Not decided: set adaptive.max_repeats: {change['value']} in study a" in (
        first_row(report, "a")
    )

    # nothing to do again; a deleted record is run again, and only it
    again = workflow.snakemake("--profile", "profiles/local")
    assert "Nothing to be done" in again.output
    folder = workflow.root / "results" / "a" / "rounds"
    history = {p.name: p.read_bytes() for p in folder.glob("round*.json")}
    (workflow.root / "results" / "a" / "runs" / "t2" / "rep3.json").unlink()
    workflow.snakemake("--profile", "profiles/local")
    assert {p.name: p.read_bytes() for p in folder.glob("round*.json")} == history
    redone = run_ids(workflow)
    assert redone["t2/rep3"] != first["t2/rep3"]
    assert {k: v for k, v in redone.items() if k != "t2/rep3"} == {
        k: v for k, v in first.items() if k != "t2/rep3"
    }

    # a raised limit continues from what exists: nothing finished is redone
    workflow.write_config({"studies": {"a": adaptive_study(max_repeats=6)}})
    workflow.snakemake("--profile", "profiles/local")
    rounds = plans(workflow)
    assert rounds[-1]["totals"] == {"t1": 6, "t2": 6}
    assert rounds[-1]["stop"]["reason"] == "limits"
    now = run_ids(workflow)
    assert {k: now[k] for k in redone} == redone
    assert len(now) == 12

    # a lowered limit keeps the rounds that ran (history), plans one that adds nothing,
    # and drops no measured run
    history = plans(workflow)
    workflow.write_config({"studies": {"a": adaptive_study(max_repeats=4)}})
    workflow.snakemake("--profile", "profiles/local")
    rounds = plans(workflow)
    assert rounds[: len(history)] == history and len(rounds) == len(history) + 1
    assert rounds[-1]["added"] == {} and rounds[-1]["totals"] == {"t1": 6, "t2": 6}
    assert run_ids(workflow) == now
    assert list(pd.read_csv(workflow.root / "results" / "a" / "summary.csv")["repeats"]) == [6, 6]


# Amdahl with a 13.5 % serial share over 2 s, the interpreter's start-up adding ~15 %
# to it: speedups about 1, 1.74, 2.8, 3.8, 4.7, 5.3, 5.6 at N = 1 ... 64; gains per
# unit 0.74, 0.51, 0.26, 0.12, 0.035, 0.01. Against 0.08, the answer is 16, decided by
# the steps 8 -> 16 and 16 -> 32 alone
AMDAHL = TRAINS.format("n = int(sys.argv[1]); time.sleep(2.0 * (0.135 + 0.865 / n))")


@pytest.mark.slow
def test_an_adaptive_study_runs_only_the_candidates_that_decide_its_answer(workflow):
    study = {
        "workload": "command",
        "params": {"command": [PY, "-c", AMDAHL, "{n}"], "metrics_regex": OWN_TRAINING},
        "scaling": {"axis": "threads", "points": [1, 2, 4, 8, 16, 32, 64]},
        "time": "train",
        "resources": {"mem_mb": 500, "runtime": 1},
        "budget_su": 30,
        # the command sleeps whatever it is given: run on the 2 cores there are
        "oversubscribe": True,
        "include_mismatched": True,
        "include_shared": True,
        "recommend": {"min_marginal_speedup": 0.08},
        "adaptive": {"target_ci": 0.5},
    }
    workflow.write_config({"studies": {"a": study}})
    workflow.snakemake("--profile", "profiles/local")
    rounds = plans(workflow)
    assert rounds[0]["totals"] == {"t1": 3, "t2": 3}
    # round 2 jumps to where the fitted law puts the answer, and the one after it
    assert set(rounds[1]["added"]) in ({"t16", "t32"}, {"t8", "t16"}), rounds[1]["why"]
    assert "the Amdahl law fitted to the speedups' lower CI ends" in rounds[1]["why"]["t16"]
    assert rounds[-1]["stop"]["reason"] == "decided", rounds[-1]["stop"]
    assert rounds[-1]["stop"]["text"].startswith("ask for N = 16")
    # the steps into and out of 16 join neighbours; 4 and 64 never ran
    measured = {p.name for p in (workflow.root / "results" / "a" / "runs").iterdir()}
    assert measured == {"t1", "t2", "t8", "t16", "t32"}
    analysis = json.loads((workflow.root / "results" / "a" / "analysis.json").read_text())
    answer = analysis["findings"]["answers"][0]
    assert answer["worth_n"] == 16 and answer["decided"] is True
    report = (workflow.root / "results" / "report.html").read_text()
    assert "Stopped: the answer is decided:</strong> ask for N = " in report
    if "t32" in rounds[1]["added"]:  # (the usual jump) a later round filled 8, saying why
        assert any("does the step 8->16 pay?" in w for r in rounds for w in r["why"].values())
        assert "does the step 8-&gt;16 pay?" in report


@pytest.mark.slow
def test_a_stopped_study_with_failed_runs_runs_nothing_on_a_rerun(workflow):
    # the fault probe's study stopped with its N = 2 runs all killed at their limit; a
    # plain rerun started them again, each another minute and another charge
    fails_at_2 = TRAINS.format("n = int(sys.argv[1]); time.sleep(0.2); n == 2 and sys.exit(1)")
    study = adaptive_study(max_repeats=2)
    study["params"]["command"] = [PY, "-c", fails_at_2, "{threads}"]
    workflow.write_config({"studies": {"a": study}})
    workflow.snakemake("--profile", "profiles/local")
    assert plans(workflow)[-1]["stop"] is not None
    failed = json.loads((workflow.root / "results/a/runs/t2/rep1.json").read_text())
    assert failed["status"] == "failed"
    first = run_ids(workflow)
    assert sorted(first) == ["t1/rep1", "t1/rep2", "t2/rep1", "t2/rep2"]

    dry = workflow.snakemake("--profile", "profiles/local", "-n")
    assert planned_runs(dry) == set(), dry.output
    again = workflow.snakemake("--profile", "profiles/local")
    assert "Nothing to be done" in again.output
    assert run_ids(workflow) == first

    # retried on request: redo moves the failed records aside, and they run again
    redo = subprocess.run([PY, "-m", "scalestudy.redo", "a", "--point", "t2"], cwd=workflow.root,
                          capture_output=True, text=True)  # fmt: skip
    assert redo.returncode == 0, redo.stderr
    assert planned_runs(workflow.snakemake("--profile", "profiles/local", "-n")) == {
        ("a", "t2", "1"),
        ("a", "t2", "2"),
    }


@pytest.mark.slow
def test_the_rounds_are_history_a_changed_config_plans_new_ones(workflow):
    # the fault probe changed a stopped study's config: Snakemake saw "Params have
    # changed", planned every round again, and the report told a history that never ran
    workflow.write_config({"studies": {"a": adaptive_study(max_repeats=2)}})
    workflow.snakemake("--profile", "profiles/local")
    folder = workflow.root / "results" / "a" / "rounds"
    history = {p.name: p.read_bytes() for p in folder.glob("round*.json")}
    before = plans(workflow)
    assert before[-1]["stop"]["reason"] == "limits"
    first = run_ids(workflow)

    workflow.write_config({"studies": {"a": adaptive_study(max_repeats=3, max_rounds=9)}})
    workflow.snakemake("--profile", "profiles/local")
    assert {name: (folder / name).read_bytes() for name in history} == history
    after = plans(workflow)
    assert after[: len(before)] == before and len(after) > len(before)
    new = after[len(before)]
    assert new["config_fingerprint"] != before[-1]["config_fingerprint"]
    assert new["totals"]["t1"] >= 2 and after[-1]["totals"] == {"t1": 3, "t2": 3}
    now = run_ids(workflow)
    assert {k: now[k] for k in first} == first and len(now) == 6
    report = (workflow.root / "results" / "report.html").read_text()
    assert "The study&#39;s config changed between rounds" in report or (
        "The study's config changed between rounds" in report
    )
    assert f"round {new['round']} on was planned under config" in report

    # running again does nothing
    again = workflow.snakemake("--profile", "profiles/local")
    assert "Nothing to be done" in again.output


def as_the_earlier_contract_wrote_them(results) -> None:
    """Results as the contract was before versions (up to 90acaa5): round plans (and
    their copies) without the keys added since, analyses without a version and without a
    section added since, cluster facts without a version."""
    added = ("price_basis", "time_limits_min", "config", "config_fingerprint", "version")
    for path in results.glob("*/rounds/*round*.json"):
        plan = json.loads(path.read_text())
        path.write_text(json.dumps({k: v for k, v in plan.items() if k not in added}, indent=1))
    for path in [*results.glob("*/analysis.json"), *results.glob("*/cluster.json")]:
        data = json.loads(path.read_text())
        data.pop("version")
        data.pop("paired", None)
        path.write_text(json.dumps(data, indent=1))


@pytest.mark.slow
@pytest.mark.parametrize("results_are", ["newer than the code", "older than the code"])
def test_results_of_the_earlier_contract_are_read_or_made_again_whatever_their_times(
    workflow, tmp_path, monkeypatch, results_are
):
    # the fault probe: an adaptive study's results made by an earlier version, copied into
    # a fresh clone, stopped every study while Snakemake built its jobs ("missing key
    # 'RoundPlan.price_basis' ... aggregate the study again", which could not be done);
    # with the code newer than the results, the rounds were planned again silently
    from scalestudy.contract import VERSION

    config = {"studies": {"a": adaptive_study(max_repeats=2)}}
    workflow.write_config(config)
    workflow.snakemake("--profile", "profiles/local")
    measured = run_ids(workflow)
    earlier = workflow.root / "results"
    as_the_earlier_contract_wrote_them(earlier)
    rounds = {p.name: p.read_bytes() for p in (earlier / "a" / "rounds").glob("*round*.json")}
    # a fresh clone (no .snakemake, its own package) with those results copied into it,
    # then the results or the code made a month older
    (tmp_path / "clone").mkdir()
    clone = copy_of_the_workflow(tmp_path / "clone")
    shutil.copytree(REPO / "scalestudy", clone.root / "scalestudy")
    monkeypatch.setenv("PYTHONPATH", str(clone.root))
    shutil.copytree(earlier, clone.root / "results")
    older = "results" if results_are == "older than the code" else "scalestudy"
    month_ago = time.time() - 30 * 86400
    for path in (clone.root / older).rglob("*"):
        os.utime(path, (month_ago, month_ago))
    clone.write_config(config)
    run = clone.snakemake("--profile", "profiles/local")
    assert "Traceback" not in run.output and "InputFunctionException" not in run.output
    assert "results/a/analysis.json: of contract version 1" in run.output  # said, made again
    # nothing measured again, the rounds read as they are, the analysis of today's version
    assert run_ids(clone) == measured
    folder = clone.root / "results" / "a"
    assert {p.name: p.read_bytes() for p in (folder / "rounds").glob("*round*.json")} == rounds
    assert json.loads((folder / "analysis.json").read_text())["version"] == VERSION
    assert "Rounds" in (clone.root / "results" / "report.html").read_text()
    assert "Nothing to be done" in clone.snakemake("--profile", "profiles/local").output


# a GPU series' times measured elsewhere (a published table, here: no GPU), tight, about
# a quarter of the CPU's 2 threads' median training time
GPU_TIMES = "N,repeat,time_s\n1,1,0.100\n1,2,0.102\n1,3,0.098\n"


def cpu_against_gpu(**adaptive) -> dict:
    """An adaptive study of a CPU series run here (adaptive_study's program: its odd runs
    take 3x as long, so 2 runs a point leave the GPU verdict's intervals open and 4 close
    them) beside a GPU series measured elsewhere: its rounds settle the GPU verdict."""
    study = adaptive_study(**adaptive)
    gpu = {"measured": "gpu.csv", "scaling": {"points": [1], "device": "gpu"}}
    return study | {"series": {"cpu": {}, "gpu": gpu}, "recommend": {}}


@pytest.mark.slow
def test_a_cpu_against_gpu_study_spends_its_rounds_on_the_verdict_and_stops_decided(workflow):
    (workflow.root / "gpu.csv").write_text(GPU_TIMES)
    workflow.write_config({"studies": {"a": cpu_against_gpu(max_repeats=6)}})
    workflow.snakemake("--profile", "profiles/local")
    rounds = plans(workflow)
    # round 1: every CPU point (the GPU's times are measured: no job)
    assert rounds[0]["totals"] == {"cpu-t1": 2, "cpu-t2": 2} and rounds[0]["stop"] is None
    # round 2: the verdict is open; repeats at the fastest CPU point (the time to beat) and
    # the cheapest (the SU per result to beat), doubling them, each saying why
    # later rounds: the verdict is open; repeats at the fastest CPU point (the time to
    # beat) and the cheapest (the SU per result to beat), at most doubling, saying why
    assert rounds[1]["added"], rounds[1]
    for before, after in zip(rounds, rounds[1:-1], strict=False):
        assert after["added"] and set(after["added"]) <= {"cpu-t1", "cpu-t2"}
        assert all(k <= before["totals"][p] for p, k in after["added"].items())
        for why in after["why"].values():
            assert why.startswith("the GPU verdict, not decided: gpu-t1 is "), why
            assert "as fast as cpu-t" in why and "would likely decide it" in why
    # then it stops, decided: the GPU is worth it
    assert rounds[-1]["added"] == {} and rounds[-1]["stop"]["reason"] == "decided"
    assert rounds[-1]["stop"]["text"].startswith("use the GPU: gpu-t1 is "), rounds[-1]["stop"]
    totals = rounds[-1]["totals"]
    assert sorted(run_ids(workflow)) == sorted(
        f"{p}/rep{k}" for p, total in totals.items() for k in range(1, total + 1)
    )
    analysis = json.loads((workflow.root / "results" / "a" / "analysis.json").read_text())
    found = analysis["findings"]["adaptive"]
    assert found["decided"] and found["question"] == "CPU or GPU"
    (size,) = analysis["gpu_verdict"]["sizes"]
    assert size["verdict"] == "worth" and size["speedup"]["lo"] > 1 > size["su_ratio"]["hi"]
    # the measured GPU times cost the study nothing: what it spent is its CPU runs'
    cpu_su = sum(
        json.loads(p.read_text())["wall_s"] * int(p.parent.name[-1]) / 3600
        for p in (workflow.root / "results" / "a" / "runs").glob("*/rep*.json")
    )
    assert found["spent_su"] == pytest.approx(cpu_su, rel=0.05)
    report = (workflow.root / "results" / "report.html").read_text()
    assert lines(report, "a")[0] == ("CPU or GPU", "yes")
    assert "CPU or GPU : Use the GPU (series gpu): " in first_row(report, "a")
    assert "2 at cpu-t1, 2 at cpu-t2" in report  # round 1, by point label
    assert "Nothing to be done" in workflow.snakemake("--profile", "profiles/local").output
