"""When a plan's jobs would start (scalestudy.analysis.cluster.queue): sbatch --test-only's line
read on Slurm before and since 25.05, one call per shape of job, and what the plan says
when Slurm refuses a shape, cannot be asked, or prints a line that does not read. Slurm's
answers are asked as the plan's rule asks them (scalestudy.slurm.gather, a stand-in for
subprocess.run answering), then read as data."""

import json
import os
import subprocess
import tempfile
from dataclasses import replace
from datetime import datetime, timedelta
from html import unescape
from pathlib import Path

import pytest

from scalestudy.analysis.cluster.queue import (
    LOCAL,
    TEST_ONLY,
    UNREADABLE,
    parse_test_only,
    predict,
    read_prediction,
)
from scalestudy.analysis.cost.plan import study_plan
from scalestudy.report.rendering import environment
from scalestudy.slurm import gather, local_facts, probe_command, probe_commands
from tests.conftest import study_model

NOW = datetime(2024, 5, 1, 9, 0, 0)
BEFORE_25_05 = (
    "sbatch: Job 3 to start at 2024-05-01T10:00:00 using 64 processors on nodes n[01-02] "
    "in partition gpu"
)
SINCE_25_05 = (
    "sbatch: Job 3 to start at 2024-05-01T10:00:00 a using 64 processors on nodes n[01-02] "
    "in partition gpu"
)
ON_CLUSTER = (
    "sbatch: Job 3 to start at 2024-05-01T10:00:00 on cluster c1 a using 64 processors on "
    "nodes n[01-02] in partition gpu"
)


@pytest.mark.parametrize(
    "line",
    [
        BEFORE_25_05,
        SINCE_25_05,
        ON_CLUSTER,
        ON_CLUSTER.replace(" a using", " using"),
        SINCE_25_05.replace(" a using", " on cluster c1 using"),
    ],  # fmt: skip
)
def test_the_line_reads_before_and_since_slurm_25_05(line):
    found = parse_test_only(line)
    assert found["start_time"] == datetime(2024, 5, 1, 10, 0, 0)
    assert (found["job"], found["cpus"], found["nodes"], found["partition"]) == (
        3, 64, "n[01-02]", "gpu"
    )  # fmt: skip
    assert found["cluster"] == ("c1" if "cluster" in line else None)
    assert read_prediction(0, line, NOW) == {
        "predicted_start": "2024-05-01T10:00:00",
        "predicted_wait_s": 3600.0,
        "start_basis": TEST_ONLY,
        "queue_note": None,
    }


def test_a_start_in_the_past_is_no_wait_and_a_line_that_does_not_read_is_shown_raw():
    assert read_prediction(0, BEFORE_25_05, datetime(2024, 5, 1, 10, 0, 5))["predicted_wait_s"] == 0
    odd = "sbatch: Job 3 to start at soon using 1 processors on nodes n1 in partition p"
    for text in (odd, "sbatch: something else entirely", ""):
        found = read_prediction(0, text, NOW)
        assert found["predicted_start"] is None and found["start_basis"] is None
        assert found["queue_note"].startswith(f"{UNREADABLE}: ")
    assert read_prediction(0, odd, NOW)["queue_note"] == f"{UNREADABLE}: {odd}"
    refused = read_prediction(
        1, "sbatch: error: Batch job submission failed: Node count specification invalid", NOW
    )
    assert refused["queue_note"] == (
        "Slurm refused this job: sbatch: error: Batch job submission failed: Node count "
        "specification invalid"
    )


def test_the_command_is_the_slurm_plugins_own_with_test_only():
    study = study_model({"workload": "command", "params": {"command": ["true"]},
                         "scaling": {"axis": "nodes", "points": [2], "threads": 3},
                         "resources": {"mem_mb": 1000, "runtime": 10}})  # fmt: skip
    (row,) = study_plan(study).rows
    command = probe_command(row.slurm_resources, {"slurm_partition": "debug",
                                                         "qos": None})  # fmt: skip
    assert command[0] == "sbatch" and command[-2:] == ["--test-only", "--wrap=true"]
    for part in ("--nodes=2", "--ntasks=2", "--cpus-per-task=3", "-t", "12"):
        assert part in command
    assert command[command.index("-p") + 1] == "debug"
    assert command[command.index("--mem") + 1] == "1512"
    assert not any(part.startswith("--qos") for part in command)
    gpus = study_model({"workload": "command", "params": {"command": ["true"]},
                        "scaling": {"axis": "gpus", "device": "gpu", "points": [2],
                                    "threads": 1}})  # fmt: skip
    (row,) = study_plan(gpus).rows
    assert "--gpus=2" in probe_command(row.slurm_resources, {})


def asked(made: list, site: dict, run, history_days: int | None = None) -> tuple:
    """The plans with their starts and plan.json (queue.predict), Slurm asked as
    scripts/plan.py asks it."""
    shapes = [row.slurm_resources for plan in made for row in plan.rows]
    commands = lambda _: probe_commands(shapes, site)  # noqa: E731
    return predict(made, gather(site, history_days, [], commands, run=run, now=NOW))


class Sbatch:
    """A stand-in for subprocess.run: sbatch --test-only's answer per --nodes."""

    def __init__(self, answers: dict[str, tuple[int, str]] | Exception):
        self.answers, self.commands = answers, []

    def __call__(self, command, **kwargs):
        self.commands.append(command)
        if isinstance(self.answers, Exception):
            raise self.answers
        nodes = next(part for part in command if part.startswith("--nodes="))
        code, err = self.answers[nodes]
        return subprocess.CompletedProcess(command, code, "", err)


def plans():
    a = study_model({"workload": "command", "params": {"command": ["true"]},
                     "scaling": {"axis": "nodes", "points": [1, 2]}, "repeats": 2},
                    "a")  # fmt: skip
    b = study_model({"workload": "command", "params": {"command": ["true"]},
                     "scaling": {"axis": "nodes", "points": [1, 3]}, "repeats": 1,
                     "submission": {"pack_repeats": True}}, "b")  # fmt: skip
    return [study_plan(a), study_plan(b)]


def test_one_call_per_shape_and_a_refused_shape_says_why_in_its_row():
    made = plans()
    sbatch = Sbatch({
        "--nodes=1": (0, BEFORE_25_05.replace("10:00:00", "09:00:00")),
        "--nodes=2": (0, SINCE_25_05),
        "--nodes=3": (1, "sbatch: error: Batch job submission failed: Node count "
                         "specification invalid"),
    })  # fmt: skip
    made, queue = asked(made, {"slurm_partition": "debug"}, sbatch)
    found = plan_json(queue)
    # a's n1 and b's n1 are the same job (same resources): asked once; so 3 calls
    assert found["calls"] == len(sbatch.commands) == 3 and found["note"] is None
    assert "not a bound either way" in found["bound"]
    a, b = found["studies"]
    seen = [(j["point"], j["nodes"], j["predicted_wait_s"], j["start_basis"]) for j in a["jobs"]]
    assert seen == [
        ("n1", 1, 0.0, TEST_ONLY), ("n1", 1, 0.0, TEST_ONLY),
        ("n2", 2, 3600.0, TEST_ONLY), ("n2", 2, 3600.0, TEST_ONLY),
    ]  # fmt: skip
    assert a["jobs"][0]["layout"] == {"nodes": 1, "tasks_per_node": 1, "threads": 1,
                                      "gpus_per_node": 0}  # fmt: skip
    n3 = b["jobs"][1]
    assert n3["predicted_start"] is None and n3["predicted_wait_s"] is None
    assert "Node count specification invalid" in n3["queue_note"]
    json.dumps(found)  # machine-readable as it is
    html = render(made, queue)
    assert "Node count specification invalid" in html and "2024-05-01T10:00:00" in html
    assert "not a bound either way" in html


def test_each_planned_job_is_priced_as_submitted_with_its_price_basis():
    """plan.json's jobs: on Slurm one per shared job (a comparison's a and b at one N),
    its time and SU those of all its runs, and what the prices are based on."""
    import pandas as pd

    paired = study_model({"workload": "command", "params": {"command": ["true"]},
                          "scaling": {"axis": "threads", "points": [1, 2]}, "repeats": 2,
                          "resources": {"runtime": 10},
                          "compare": {"a": {}, "b": {"params": {"values": {"x": 2}}}}},
                         "p")  # fmt: skip
    # both t1 measured; b's t2 too: a's t2 is priced from its t1
    runs = pd.DataFrame({"point": ["a-t1", "b-t1", "b-t2"], "status": ["ok"] * 3,
                         "wall_s": [60.0, 70.0, 40.0]})  # fmt: skip
    made = [study_plan(paired, runs)]
    on_slurm, queue = asked(made, {}, Sbatch({"--nodes=1": (0, SINCE_25_05)}))
    found = plan_json(queue)
    (study,) = found["studies"]
    assert [(j["point"], j["runs"]) for j in study["jobs"]] == [
        ("a-t1, b-t1", 4), ("a-t2, b-t2", 4),
    ]  # fmt: skip
    rows = {r.point.label: r for r in made[0].rows}
    t1, t2 = study["jobs"]
    assert t1["seconds"] == 2 * 60 + 2 * 70
    assert t1["su"] == pytest.approx(2 * rows["a-t1"].su_per_job + 2 * rows["b-t1"].su_per_job)
    assert (t1["price_basis"], t1["price_from_n"]) == ("median of 1 earlier run", 1)
    assert t2["price_basis"] == (f"a-t2: {rows['a-t2'].price_basis}; b-t2: median of 1 earlier run")
    assert t2["price_from_n"] == {"a-t2": 1, "b-t2": 2}
    # locally each run is a job of its own, its price its row's
    local = plan_json(predict(on_slurm, local_facts())[1])["studies"][0]["jobs"]
    assert len(local) == 8 and local[0]["point"] == "a-t1" and local[0]["runs"] == 1
    assert (local[0]["price_basis"], local[0]["price_from_n"]) == (
        rows["a-t1"].price_basis, 1,
    )  # fmt: skip
    # predict changes no row in place: plans asked of Slurm, then locally, keep no
    # --test-only command of the first asking (the rows were dicts added to, and did)
    assert all(job["sbatch_test_only"] is None for job in local)
    assert all(row.start is None for row in made[0].rows)


def test_slurm_out_of_reach_is_one_note_and_locally_every_wait_is_0():
    for cause, words in [
        (FileNotFoundError("sbatch"), "sbatch is not installed here"),
        (Sbatch({f"--nodes={n}": (1, "sbatch: error: Batch job submission failed: Unable "
                                     "to contact slurm controller (connect failure)")
                 for n in (1, 2, 3)}), "Unable to contact slurm controller"),
    ]:  # fmt: skip
        sbatch = cause if isinstance(cause, Sbatch) else Sbatch(cause)
        made = plans()
        made, queue = asked(made, {}, sbatch)
        found = plan_json(queue)
        assert len(sbatch.commands) == 1  # not once per shape
        assert words in found["note"] and found["bound"] is None
        jobs = [j for s in found["studies"] for j in s["jobs"]]
        assert all(j["predicted_wait_s"] is None and j["queue_note"] is None for j in jobs)
        assert words in render(made, queue)
    made = plans()
    made, queue = predict(made, local_facts())
    local = plan_json(queue)
    assert local["calls"] == 0 and local["note"] is None
    jobs = [j for s in local["studies"] for j in s["jobs"]]
    # locally a packed study's repeats are jobs of their own
    assert len(jobs) == 6 and {(j["predicted_wait_s"], j["start_basis"]) for j in jobs} == {
        (0.0, LOCAL)
    }
    assert "Locally there is no queue" in render(made, queue)


def plan_json(queue) -> dict:
    """plan.json as Forecast.dump writes it."""
    with tempfile.TemporaryDirectory() as folder:
        queue.dump(path := Path(folder) / "plan.json")
        return json.loads(path.read_text())


def render(made, queue) -> str:
    return (
        environment()
        .get_template("plan.html.j2")
        .render(title="t", plans=made, generated="", queue=queue)
    )


# what `sacct -a -X -n -P --format=JobID,NNodes,ReqTRES,Partition,Timelimit,Eligible,Start,
# Elapsed,State` prints: two 1-node jobs of 1 CPU and 7 minutes, one on GPUs, one
# elsewhere, one pending, one still running
HISTORY = """\
11|1|billing=1,cpu=1,mem=1012M,node=1|debug|00:07:00|2024-05-01T08:00:00|2024-05-01T08:00:10|00:03:30|COMPLETED
12|1|billing=1,cpu=1,mem=1012M,node=1|debug|00:07:00|2024-05-01T08:00:00|2024-05-01T08:01:40|00:07:01|TIMEOUT
13|1|billing=1,cpu=1,mem=1012M,node=1|debug|00:07:00|2024-05-01T08:00:00|2024-05-01T08:00:00|00:01:24|FAILED
14|1|billing=3,cpu=1,gres/gpu=2,mem=1G,node=1|debug|00:07:00|2024-05-01T08:00:00|2024-05-01T09:00:00|00:02:00|RUNNING
15|1|billing=1,cpu=1,mem=1012M,node=1|other|00:07:00|2024-05-01T08:00:00|2024-05-01T10:00:00|00:00:42|CANCELLED
16|2|billing=2,cpu=2,node=2|debug|00:07:00|2024-05-01T08:00:00|Unknown|00:00:00|PENDING
garbage
"""


def test_past_waits_by_shape_from_sacct():
    from scalestudy.analysis.cluster.queue import job_shape, parse_history, past_waits

    jobs = parse_history(HISTORY)
    assert len(jobs) == 5  # the pending job and the garbage are left out
    assert jobs[3] == {"nodes": 1, "gpus": 2, "cpus": 1, "partition": "debug", "minutes": 7,
                       "wait_s": 3600.0, "eligible": "2024-05-01T08:00:00",
                       "run_to_limit": None}  # fmt: skip
    # run time over time limit of the jobs that ended (an overrun capped at 1)
    assert [j["run_to_limit"] for j in jobs] == [0.5, 1.0, 0.2, None, 0.1]
    (n1, _) = plans()[0].rows
    n1 = replace(n1, slurm_resources=n1.slurm_resources | {"runtime": 7})
    found = past_waits(jobs, job_shape(n1, "debug"))
    assert found["history_jobs"] == 3 and found["history_wait_median_s"] == 10.0
    assert found["history_wait_p90_s"] == pytest.approx(82.0)  # 10 % of the way 10 -> 100
    # no partition given (the default): any partition's jobs of the shape
    assert past_waits(jobs, job_shape(n1, None))["history_jobs"] == 4
    # 3 jobs: too few for a bound, the largest wait stands beside it
    assert found["history_wait_bound_s"] is None and found["history_wait_max_s"] == 100.0
    assert (found["history_bound_covered"], found["history_bound_tested"]) == (0, 0)
    assert past_waits(jobs, job_shape(replace(n1, point=replace(n1.point, nodes=3)), "debug")) == {}


class SacctToo(Sbatch):
    def __init__(self, answers, history):
        super().__init__(answers)
        self.history = history

    def __call__(self, command, **kwargs):
        if command[0] == "sacct":
            self.commands.append(command)
            return subprocess.CompletedProcess(command, *self.history)
        return super().__call__(command, **kwargs)


def test_past_waits_stand_beside_the_bound_and_without_accounting_a_note():
    answers = {f"--nodes={n}": (0, SINCE_25_05) for n in (1, 2, 3)}
    made = plans()
    sbatch = SacctToo(answers, (0, HISTORY, ""))
    made, queue = asked(made, {}, sbatch, history_days=30)
    found = plan_json(queue)
    sacct = [c for c in sbatch.commands if c[0] == "sacct"]
    assert len(sacct) == 1 and "now-30days" in sacct[0]  # one call for the whole plan
    assert found["history_note"] is None and found["history_days"] == 30
    html = render(made, queue)
    assert "past waits (s)" in html and "none of this shape" in html
    made = plans()
    off = SacctToo(answers, (1, "", "sacct: error: Slurm accounting storage is disabled"))
    made, queue = asked(made, {}, off, history_days=30)
    found = plan_json(queue)
    assert found["history_note"] == (
        "no past waits: sacct was not available (sacct: error: Slurm accounting storage is "
        "disabled)"
    )
    assert all(j["history_jobs"] == 0 for s in found["studies"] for j in s["jobs"])
    html = render(made, queue)
    assert found["history_note"] in html and found["history"] is False
    assert "past waits (s)" not in html and "none of this shape" not in html


def test_a_job_the_slurm_plugin_would_not_submit_says_so_in_its_row():
    made = plans()
    row = made[0].rows[0]
    refused = replace(row, slurm_resources=row.slurm_resources | {"mpi": "srun", "tasks": 1})
    made[0] = replace(made[0], rows=[refused, *made[0].rows[1:]])  # refused by the plugin
    sbatch = Sbatch({f"--nodes={n}": (0, SINCE_25_05) for n in (1, 2, 3)})
    made, queue = asked(made, {}, sbatch)
    found = plan_json(queue)
    first = found["studies"][0]["jobs"][0]
    assert first["queue_note"].startswith("the Slurm plugin would not submit this job: ")
    assert "'tasks' must be greater than 1" in first["queue_note"]
    assert found["studies"][0]["jobs"][2]["start_basis"] == TEST_ONLY


def test_a_hung_slurm_command_costs_its_timeout_and_the_facts_say_what_is_unknown():
    """Each command Slurm is asked has a timeout (scalestudy.slurm.ask): a hung sacct
    costs that, and the facts say it could not answer, which the analysis words."""
    import sys
    import time

    from scalestudy.analysis.cluster.queue import past_jobs
    from scalestudy.analysis.decisions.request import read_accounting
    from scalestudy.slurm import ask

    start = time.perf_counter()
    hung = ask([sys.executable, "-c", "import time; time.sleep(60)"], timeout=0.5)
    assert time.perf_counter() - start < 30  # not the minute it would hang
    assert hung["returncode"] is None and hung["error"].endswith("did not answer within 0.5 s")
    hung["command"][0] = "sacct"
    hung["error"] = hung["error"].replace(sys.executable, "sacct")
    jobs, note = read_accounting(hung)
    assert jobs == {} and note == (
        "sacct did not answer within 0.5 s: CPU and memory use are the runs' own figures"
    )
    facts = replace(local_facts(), history=hung)
    assert past_jobs(facts) == ([], "no past waits: sacct did not answer within 0.5 s")
    # a shape asked of a hung sbatch: one note, and no later command is asked
    made = plans()
    commands = []

    def slow(command, **kwargs):  # as subprocess.run says it of a hung command
        commands.append(command)
        raise subprocess.TimeoutExpired(command, kwargs["timeout"])

    made, queue = asked(made, {}, slow)

    found = plan_json(queue)
    assert len(commands) == 1 and "did not answer within 60 s" in found["note"]


def test_a_slow_sacct_on_path_is_timed_out_once_and_the_rest_of_the_plan_stands(
    tmp_path, monkeypatch
):
    """Issue 37, bad input: a sacct that does not answer (a stand-in first on PATH that
    sleeps), asked by real subprocesses as cluster_facts asks: it costs one timeout (the
    history is not asked again after the accounting timed out), the plan says it knows
    no past waits and why, and sbatch --test-only's starts stand, said to be uncorrected."""
    import time

    import scalestudy.slurm
    from scalestudy.analysis.cluster.queue import UNCORRECTED

    folder, calls = tmp_path / "bin", tmp_path / "sacct.calls"
    folder.mkdir()
    for tool, body in [("sacct", f"echo asked >> {calls}\nexec sleep 60"),
                       ("sbatch", f"echo '{SINCE_25_05}' >&2")]:  # fmt: skip
        (folder / tool).write_text(f"#!/bin/sh\n{body}\n")
        (folder / tool).chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}:{os.environ['PATH']}")
    monkeypatch.setattr(scalestudy.slurm, "TIMEOUT_S", 1)
    made = plans()
    shapes = [row.slurm_resources for plan in made for row in plan.rows]
    start = time.perf_counter()
    facts = gather({}, 30, ["41"], lambda _: probe_commands(shapes, {}), now=NOW)
    assert time.perf_counter() - start < 30  # not the minute each sacct would sleep
    assert calls.read_text().split() == ["asked"]
    made, queue = predict(made, facts)
    found = plan_json(queue)
    assert (
        found["history_note"] == "no past waits: sacct did not answer within 1 s (not asked again)"
    )
    assert found["note"] is None and found["correction_note"] == UNCORRECTED
    jobs = [j for s in found["studies"] for j in s["jobs"]]
    assert {(j["predicted_wait_s"], j["corrected_wait_s"], j["history_jobs"]) for j in jobs} == {
        (3600.0, None, 0)
    }
    html = render(made, queue)
    assert found["history_note"] in html and "2024-05-01T10:00:00" in html


# --- the bound on past waits, its backtest, and --test-only's correction (issue 37) ------


def sacct_lines(shape: dict, waits: list[float], ran: str = "00:00:30") -> str:
    """sacct's lines of past jobs of `shape`, queued a minute apart, that waited `waits`
    and ran `ran` each."""
    lines = []
    for k, wait in enumerate(waits):
        queued = datetime(2024, 4, 1) + timedelta(minutes=k)
        start = queued + timedelta(seconds=wait)
        lines.append(
            f"{k}|{shape['nodes']}|cpu={shape['cpus']},node={shape['nodes']}|debug|"
            f"{timedelta(minutes=shape['minutes'])}|{queued.isoformat()}|"
            f"{start.isoformat()}|{ran}|COMPLETED"
        )
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("n", [29, 50, 100])
def test_the_bound_is_the_least_rank_scipy_gives_95_percent_over_the_p90(n):
    from scipy.stats import binom

    from scalestudy.analysis.cluster.queue import bound_rank, p90_bound

    least = min(k for k in range(1, n + 1) if binom.cdf(k - 1, n, 0.9) >= 0.95)
    assert bound_rank(n) == least
    assert binom.cdf(least - 2, n, 0.9) < 0.95  # one rank lower would not do
    assert p90_bound([float(w) for w in reversed(range(1, n + 1))]) == float(least)
    assert {29: 29, 50: 49, 100: 96}[n] == least  # at 29 jobs: the largest


def test_too_little_history_for_a_bound_under_29_jobs_the_largest_wait_beside_it():
    from scalestudy.analysis.cluster.queue import (
        BOUND_MIN_JOBS,
        bound_rank,
        job_shape,
        parse_history,
    )
    from scalestudy.analysis.cluster.queue import past_waits as waits_of

    assert BOUND_MIN_JOBS == 29 and [bound_rank(n) for n in range(29)] == [None] * 29
    made = plans()
    shape = job_shape(made[0].rows[0], "debug")
    few = waits_of(parse_history(sacct_lines(shape, [10.0 * k for k in range(28)])), shape)
    assert few["history_jobs"] == 28 and few["history_wait_bound_s"] is None
    assert few["history_wait_max_s"] == 270.0
    enough = waits_of(parse_history(sacct_lines(shape, [10.0 * k for k in range(29)])), shape)
    assert enough["history_wait_bound_s"] == 280.0 == enough["history_wait_max_s"]
    # the plan says it in the shape's row
    answers = {f"--nodes={n}": (0, SINCE_25_05) for n in (1, 2, 3)}
    made, queue = asked(made, {}, SacctToo(answers, (0, sacct_lines(shape, [5.0] * 28), "")), 30)
    found = plan_json(queue)
    assert found["studies"][0]["jobs"][0]["history_wait_bound_s"] is None
    html = render(made, queue)
    assert "too little history for a bound</span> (largest 5;" in html
    assert "No shape in the history has enough jobs to backtest the bound" in html
    # 31 jobs: the plan states the backtested coverage, over the history and per row
    made = plans()
    waits = [float(w) for w in range(1, 30)] + [30.0, 5.0]
    made, queue = asked(made, {}, SacctToo(answers, (0, sacct_lines(shape, waits), "")), 30)
    found = plan_json(queue)
    assert found["coverage"] == {"covered": 1, "tested": 2, "coverage": 0.5}
    html = render(made, queue)
    assert "1 of 2 (50 %) were under it" in html and "15, 30 (31; backtest 1 of 2)" in html
    # ... of the bound alone; what time to result uses is said, with its measured coverage
    assert "against the bound alone of the waits of its shape before it" in html
    assert (
        "the top of a job's wait the bound on past waits, raised to the wait sbatch "
        "--test-only predicts (corrected where it can be) where that is longer: on the test "
        "cluster that held for 100 of 102 jobs (98.0 %), the bound alone for 81 (79.4 %;"
    ) in unescape(html)


def test_the_backtest_counts_each_wait_under_the_bound_of_those_before_it():
    import numpy as np

    from scalestudy.analysis.cluster.queue import backtest, history_coverage, parse_history

    # 29 waits 1..29 s, then 30 s (above all before it), then 5 s (under the largest)
    assert backtest([float(w) for w in range(1, 30)] + [30.0, 5.0]) == (1, 2)
    assert backtest([1.0] * 28) == (0, 0)  # never enough before a wait for a bound
    # a synthetic steady queue: 400 exponential waits; the 95 % bound on the p90
    # covers at least 90 % of the later ones
    waits = list(np.random.default_rng(37).exponential(120.0, 400))
    covered, tested = backtest(waits)
    assert tested == 400 - 29 and 0.9 <= covered / tested < 1.0 and type(covered) is int
    # over a history of two shapes, each in time order (the list is not)
    one = {"nodes": 1, "cpus": 1, "minutes": 5}
    two = {"nodes": 2, "cpus": 4, "minutes": 5}
    lines = sacct_lines(one, [float(w) for w in range(1, 30)] + [30.0, 5.0])
    lines += sacct_lines(two, [1.0] * 40)
    jobs = parse_history("\n".join(reversed(lines.splitlines())))
    assert history_coverage(jobs) == {"covered": 12, "tested": 13, "coverage": 12 / 13}


def test_a_queue_busier_than_its_history_is_covered_by_the_wait_predicted_now():
    """The bound assumes the queue as busy as in its history: a run of long jobs ahead
    (as in the last third of benchmarks/queue_prediction.py --bound) makes later waits
    exceed it, which --test-only's wait, predicted for each job, sees; the top wait
    (top_wait, time to result's too) is the larger of the two."""
    from scalestudy.analysis.cluster.queue import backtest, top_wait
    from scalestudy.analysis.cluster.result_time import chosen_wait

    calm, busy = [0.0, 1.0, 1.0, 3.0] * 8, [12.0, 23.0, 29.0, 34.0, 4.0]
    now = [None] * len(calm) + [30.0, 40.0, 70.0, 84.0, 0.0]  # --test-only's, corrected
    assert backtest(calm + busy) == (len(calm) - 29 + 1, len(calm) - 29 + 5)
    assert backtest(calm + busy, now) == (len(calm) - 29 + 5, len(calm) - 29 + 5)
    assert (top_wait(30.0, 3.0), top_wait(0.0, 3.0), top_wait(None, 3.0)) == (30.0, 3.0, 3.0)
    assert top_wait(30.0, None) == 30.0 and top_wait(None, None) is None
    asked = {"wait_now_s": 100.0, "wait_now_corrected_s": 40.0, "history_jobs": 40,
             "history_wait_median_s": 1.0, "history_wait_bound_s": 3.0}  # fmt: skip
    assert chosen_wait(asked, "slurm", 30) == {"wait_s": 40.0, "wait_hi_s": 40.0, "basis": "now"}
    asked["wait_now_corrected_s"] = 0.0
    assert chosen_wait(asked, "slurm", 30) == {"wait_s": 1.0, "wait_hi_s": 3.0, "basis": "typical"}


def test_test_only_start_is_corrected_by_past_jobs_run_time_to_limit_or_said_not_to_be():
    from scalestudy.analysis.cluster.queue import UNCORRECTED, corrected, job_shape

    ratio = {"ratio": 0.25, "jobs": 4}
    assert corrected(300.0, NOW, ratio) == {
        "corrected_wait_s": 75.0, "corrected_start": "2024-05-01T09:01:15"
    }  # fmt: skip
    assert corrected(300.0, NOW, None) == {"corrected_wait_s": None, "corrected_start": None}
    made = plans()
    shape = job_shape(made[0].rows[0], "debug") | {"minutes": 2}
    answers = {f"--nodes={n}": (0, SINCE_25_05) for n in (1, 2, 3)}
    # past jobs ran 30 s of their 2-minute limits: a quarter
    history = (0, sacct_lines(shape, [5.0] * 4), "")
    made, queue = asked(made, {}, SacctToo(answers, history), history_days=30)
    found = plan_json(queue)
    assert found["run_to_limit"] == {"ratio": 0.25, "jobs": 4}
    job = found["studies"][0]["jobs"][0]
    assert (job["predicted_wait_s"], job["corrected_wait_s"]) == (3600.0, 900.0)
    assert job["corrected_start"] == "2024-05-01T09:15:00"
    assert "corrected 900" in render(made, queue)
    # no history (sacct down): each start is said to be uncorrected, the rest stands
    made = plans()
    down = SacctToo(answers, (1, "", "sacct: error: Slurm accounting storage is disabled"))
    made, queue = asked(made, {}, down, history_days=30)
    found = plan_json(queue)
    assert found["correction_note"] == UNCORRECTED and found["run_to_limit"] is None
    job = found["studies"][0]["jobs"][0]
    assert job["predicted_wait_s"] == 3600.0 and job["corrected_wait_s"] is None
    assert "starts are uncorrected: no past job" in render(made, queue)


def test_the_queue_benchmark_s_jobs_and_figures_without_a_cluster():
    """benchmarks/queue_prediction.py runs on the test cluster only (the coordinator's);
    its jobs and its figures are pure."""
    from benchmarks.queue_prediction import BOUND_JOBS, BOUND_LIMITS, summarize, varied_jobs

    jobs = varied_jobs(BOUND_JOBS)
    per_shape = {name: sum(j[0] == name for j in jobs) for name, _, _ in jobs}
    # each shape's jobs past the first 29 are backtested: at least 100 in all
    assert sum(n - 29 for n in per_shape.values()) >= 100 and len(per_shape) == len(BOUND_LIMITS)
    assert all(5 <= sleep < 0.9 * int(o[-1]) * 60 for _, o, sleep in jobs)
    t = lambda s: NOW + timedelta(seconds=s)  # noqa: E731
    rows = [{"job": str(k), "shape": "1 min", "asked": NOW, "predicted": t(100),
             "ratio": {"ratio": 0.5, "jobs": 9}} for k in range(31)]  # fmt: skip
    rows[0] |= {"predicted": None}
    rows[1] |= {"ratio": None}
    # waits 1..29 s, then 30 s (above all before it) and 5 s; each starts at NOW + 60 s
    real = {r["job"]: (t(60 - w), t(60)) for r, w in zip(rows, [*range(1, 30), 30, 5], strict=True)}
    found = summarize(rows, real)
    assert (found["covered"], found["tested"]) == (1, 2)
    # raised to the wait predicted for each job (corrected: 50 s), the 30-s wait is under
    assert found["covered_top"] == 2
    assert found["errors"][:3] == [None, -40.0, -40.0]
    # corrected: a start 50 s after asking, which came 10 s late; uncorrected: none
    assert found["corrected_errors"][:3] == [None, None, 10.0]
