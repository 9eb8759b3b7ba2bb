"""An adaptive study through the real workflow: a budget below round 1 refused before
any job, rounds as Snakemake checkpoints, their report section, a rerun that does
nothing, a deleted record redone, and a raised limit that continues from what exists."""

import json
import sys

import pandas as pd
import pytest

PY = sys.executable
# a command whose time halves with its threads, and whose odd repeats take 1.5x as long:
# its speedup's interval stays about +-38 %, so that the step 1 -> 2 (a gain of about 1
# per core) stays undecided against a threshold of 1, and rounds add repeats (up to
# max_repeats) whatever the machine's own noise
PROGRAM = (
    "import sys, time; n, k = map(int, sys.argv[1:]); time.sleep(0.4 / n * (1.5 if k % 2 else 1))"
)


def adaptive_study(**adaptive) -> dict:
    return {
        "workload": "command",
        "params": {"command": [PY, "-c", PROGRAM, "{threads}", "{repeat}"]},
        "scaling": {"axis": "threads", "points": [1, 2]},
        # the command's own run: the harness's start-up would dilute the speedup
        "time": "train",
        "resources": {"mem_mb": 500, "runtime": 1},
        "budget_su": 1,
        "include_shared": True,  # other tests may run beside this one; not under test here
        "recommend": {"min_marginal_speedup": 1.0},
        # the step decides the rounds here (a CI target beyond max_repeats gets no runs)
        "adaptive": {"target_ci": 0.99, "first_repeats": 2} | adaptive,
    }


def plans(workflow) -> list[dict]:
    """The study's round plans, up to the one that stops it (a later file can be left
    from plans made before a change of the config)."""
    folder, found = workflow.root / "results" / "a" / "rounds", []
    while not found or not found[-1]["stop"]:
        found.append(json.loads((folder / f"round{len(found) + 1}.json").read_text()))
    return found


def run_ids(workflow) -> dict[str, str]:
    runs = workflow.root / "results" / "a" / "runs"
    return {
        f"{p.parent.name}/{p.stem}": json.loads(p.read_text())["run_id"]
        for p in runs.glob("*/rep*.json")
    }


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
    assert "raise <code>adaptive.max_repeats</code>" in report

    # nothing to do again; a deleted record is run again, and only it
    again = workflow.snakemake("--profile", "profiles/local")
    assert "Nothing to be done" in again.output
    (workflow.root / "results" / "a" / "runs" / "t2" / "rep3.json").unlink()
    workflow.snakemake("--profile", "profiles/local")
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

    # a lowered limit remakes the plans smaller, but drops no measured run
    workflow.write_config({"studies": {"a": adaptive_study(max_repeats=4)}})
    workflow.snakemake("--profile", "profiles/local")
    assert plans(workflow)[-1]["totals"] == {"t1": 4, "t2": 4}
    assert run_ids(workflow) == now
    assert list(pd.read_csv(workflow.root / "results" / "a" / "summary.csv")["repeats"]) == [6, 6]
