"""Faults a careful user provokes, through the real workflow: records moved, corrupted or
deleted by hand, a run past its time limit, a point bigger than the machine."""

import json
import os
import shutil
import subprocess
import sys
import time

import pandas as pd
import pytest

from scalestudy.study.startup_checks import visible_gpus
from tests.conftest import NOT_JUDGED_ON_SHARED_CPUS
from tests.test_workflow import MEASURED, planned_runs

PY = sys.executable
# a run whose time follows its N, and that hangs at N = 4
PROGRAM = "import sys, time; n = int(sys.argv[1]); time.sleep(600 if n == 4 else 0.6 / n)"


def command_study(points, **extra) -> dict:
    return (
        {
            "workload": "command",
            "params": {"command": [PY, "-c", PROGRAM, "{n}"]},
            "scaling": {"axis": "threads", "points": points},
            "repeats": 2,
        }
        | NOT_JUDGED_ON_SHARED_CPUS
        | extra
    )  # other tests run beside these; not under test here


# where only the study's aggregation is checked, its figures and the report are not made
SUMMARY = "results/c/summary.csv"


def summary(workflow) -> pd.DataFrame:
    return pd.read_csv(workflow.root / "results" / "c" / "summary.csv").set_index("point")


@pytest.mark.slow
@pytest.mark.waits
def test_moved_corrupted_and_deleted_records_are_redone_every_time(workflow):
    workflow.write_config({"studies": {"c": command_study([1, 2])}})
    workflow.snakemake("--profile", "profiles/local", SUMMARY)
    runs = workflow.root / "results" / "c" / "runs"
    before = summary(workflow)
    assert before.loc["t1", "repeats_ok"] == 2 and before.loc["t2", "repeats_ok"] == 2

    # a record copied over another: the run is redone, not counted twice
    shutil.copy(runs / "t2" / "rep2.json", runs / "t1" / "rep1.json")
    dry = workflow.snakemake("--profile", "profiles/local", "-n", SUMMARY)
    assert planned_runs(dry) == {("c", "t1", "1")}
    assert "is not the run its path names" in dry.output
    workflow.snakemake("--profile", "profiles/local", SUMMARY)
    after = summary(workflow)
    assert after.loc["t1", "repeats_ok"] == 2 and after.loc["t2", "repeats_ok"] == 2
    assert json.loads((runs / "t1" / "rep1.json").read_text())["point"] == "t1"

    # corrupted twice: redone both times
    for _ in range(2):
        (runs / "t2" / "rep1.json").write_text('{"truncated": ')
        assert planned_runs(workflow.snakemake("--profile", "profiles/local", "-n", SUMMARY)) == {
            ("c", "t2", "1")
        }
        workflow.snakemake("--profile", "profiles/local", SUMMARY)
        assert json.loads((runs / "t2" / "rep1.json").read_text())["status"] == "ok"

    # deleted: the run and the study's aggregation run again (for the whole workflow's
    # targets: Snakemake alone plans no run for a deleted record whose summary is there)
    (runs / "t1" / "rep2.json").unlink()
    dry = workflow.snakemake("--profile", "profiles/local", "-n")
    assert planned_runs(dry) == {("c", "t1", "2")} and "aggregate_study" in dry.output
    workflow.snakemake("--profile", "profiles/local")
    assert (runs / "t1" / "rep2.json").is_file()
    assert summary(workflow).loc["t1", "repeats_ok"] == 2

    # the refused records were kept aside, each with its reason, not overwritten
    discarded = workflow.root / "results/c/discarded"
    kept = sorted(p.read_text() for p in discarded.rglob("t2/rep1.json"))
    assert kept == ['{"truncated": '] * 2 and len(list(discarded.rglob("t1/rep1.json"))) == 1

    # redoing a point keeps what was measured: its records are moved aside, not deleted
    redo = subprocess.run(
        [PY, "-m", "scalestudy.redo", "c", "--point", "t2"],
        cwd=workflow.root,
        capture_output=True,
        text=True,
    )
    assert redo.returncode == 0 and "moved 2 record(s)" in redo.stdout, redo.stderr
    assert len(list(discarded.rglob("t2/rep*.json"))) == 2 + 2
    dry = workflow.snakemake("--profile", "profiles/local", "-n")
    assert planned_runs(dry) == {("c", "t2", "1"), ("c", "t2", "2")}


@pytest.mark.slow
@pytest.mark.waits
def test_a_refused_record_is_kept_in_discarded_with_its_reason_not_overwritten(workflow):
    workflow.write_config({"studies": {"c": command_study([1, 2], repeats=1)}})
    workflow.snakemake("--profile", "profiles/local", SUMMARY)
    runs = workflow.root / "results" / "c" / "runs"
    future = json.loads((runs / "t1" / "rep1.json").read_text()) | {"schema_version": 99}
    (runs / "t1" / "rep1.json").write_text(json.dumps(future))
    unknown = json.loads((runs / "t2" / "rep1.json").read_text()) | {"gpu_clock": 1}
    (runs / "t2" / "rep1.json").write_text(json.dumps(unknown))
    dry = workflow.snakemake("--profile", "profiles/local", "-n", SUMMARY)
    assert planned_runs(dry) == {("c", "t1", "1"), ("c", "t2", "1")}
    assert "the record kept in results/c/discarded/ first" in dry.output
    assert not (workflow.root / "results" / "c" / "discarded").exists()  # -n moves nothing

    real = workflow.snakemake("--profile", "profiles/local", SUMMARY)
    assert "kept 2 refused record(s) in results/c/discarded/" in real.output
    (aside,) = (workflow.root / "results" / "c" / "discarded").iterdir()
    assert json.loads((aside / "t1" / "rep1.json").read_text()) == future
    assert json.loads((aside / "t2" / "rep1.json").read_text()) == unknown
    why = dict(line.split(": ", 1) for line in (aside / "why.txt").read_text().splitlines())
    assert "schema_version" in why["t1/rep1.json"] and "gpu_clock" in why["t2/rep1.json"]
    for point in ("t1", "t2"):  # measured again
        assert json.loads((runs / point / "rep1.json").read_text())["schema_version"] == 1


@pytest.mark.slow
@pytest.mark.waits
def test_a_record_whose_own_times_deny_its_wall_time_is_measured_again(workflow):
    # the fault probe's edit: a 1-s run given wall_s 1e6 reached the headline ("speedup
    # 914385.87"), and 1e308 stopped the plot step with a matplotlib traceback
    workflow.write_config({"studies": {"c": command_study([1, 2], repeats=1)}})
    workflow.snakemake("--profile", "profiles/local", SUMMARY)
    path = workflow.root / "results" / "c" / "runs" / "t2" / "rep1.json"
    for wall_s, figure in ((1e6, "1000000"), (1e308, "1e+308")):
        path.write_text(json.dumps(json.loads(path.read_text()) | {"wall_s": wall_s}))
        dry = workflow.snakemake("--profile", "profiles/local", "-n", SUMMARY)
        assert planned_runs(dry) == {("c", "t2", "1")}
        assert (
            f"{path.relative_to(workflow.root)}: wall_s {figure} s is longer than its "
            in dry.output
        )
        workflow.snakemake("--profile", "profiles/local", SUMMARY)
        assert json.loads(path.read_text())["wall_s"] < 10
        table = summary(workflow)
        assert table.loc["t2", "repeats_ok"] == 1 and 0.5 < table.loc["t2", "speedup"] < 5
        assert figure not in (workflow.root / "results" / "c" / "analysis.json").read_text()


@pytest.mark.slow
@pytest.mark.waits
def test_a_local_run_past_its_time_limit_is_stopped_and_the_rest_reach_the_report(workflow):
    study = command_study([1, 4], repeats=1, resources={"runtime": 1}, oversubscribe=True)
    workflow.write_config({"studies": {"c": study}})
    workflow.snakemake("--profile", "profiles/local", timeout=400)
    record = json.loads((workflow.root / "results/c/runs/t4/rep1.json").read_text())
    assert record["status"] == "failed" and record["reason"] == "time limit (1 min) exceeded"
    assert 60 <= record["wall_s"] < 90
    table = summary(workflow)
    assert table.loc["t1", "status"] == "ok"
    assert table.loc["t4", "status"] == "failed: time limit (1 min) exceeded"
    html = (workflow.root / "results" / "report.html").read_text()
    assert "time limit (1 min) exceeded" in html


def test_an_adaptive_study_is_refused_points_whose_runs_here_would_never_count(workflow):
    # oversubscribed, t4's runs are allocation mismatches, left out of the answer: the
    # rounds asked for them again and again ("only 0 usable runs at N = 4")
    cpus = len(os.sched_getaffinity(0))
    study = command_study(
        [1, 2 * cpus], oversubscribe=True, budget_su=5, adaptive={}, resources={"runtime": 1}
    )
    workflow.write_config({"studies": {"c": study}})
    proc = workflow.snakemake("--profile", "profiles/local", check=False)
    assert proc.returncode != 0
    assert (
        f"studies.c: points t{2 * cpus} of this adaptive study need more CPUs than this "
        f"machine lets the workflow use ({cpus}). Their runs would all be allocation "
        "mismatches" in proc.output
    ), proc.output
    assert "include_mismatched: true" in proc.output
    assert not (workflow.root / "results").exists()
    # letting them count runs it
    study["include_mismatched"] = True
    workflow.write_config({"studies": {"c": study}})
    dry = workflow.snakemake("--profile", "profiles/local", "-n")
    assert "adaptive_round" in dry.output


def gpu_study() -> dict:
    return {"workload": "linear_solve", "params": {"systems": 4, "size": 16, "backend": "torch"},
            "scaling": {"points": [1], "device": "gpu"}, "repeats": 1}  # fmt: skip


@pytest.mark.skipif(visible_gpus() > 0, reason="the GPU point would run here")
def test_points_bigger_than_the_machine_are_refused_before_any_job_and_by_a_dry_run(workflow):
    # a grid up to 32 CPUs (30 runs) and a GPU point on a machine without a GPU: a dry
    # run planned all of it, and the GPU point ran, flagged only afterwards
    cpus = len(os.sched_getaffinity(0))
    grid = [n for n in (1, 2, 4, 8, 16, 32) if n <= cpus] + [2 * cpus, 32]
    studies = {"c": command_study(sorted(set(grid)), repeats=5), "g": gpu_study()}
    workflow.write_config({"studies": studies})
    for args in ([], ["-n"], ["results/plan.html"]):
        proc = workflow.snakemake("--profile", "profiles/local", *args, check=False)
        assert proc.returncode != 0, args
        # every problem at once, in one message
        assert "Found 2 problems before any job; no job was run" in proc.output, args
        assert f"studies.c: point t{2 * cpus} needs {2 * cpus} CPUs" in proc.output
        assert "studies.c: point t32 needs 32 CPUs" in proc.output
        assert "studies.g: point t1 needs 1 GPU, and this machine has no GPU" in proc.output
        assert "oversubscribe: true" in proc.output
        assert not (workflow.root / "results").exists()
    # on Slurm the nodes decide: a dry run for its executor plans every run
    dry = workflow.snakemake("--executor", "slurm", "--jobs", "1", "-n")
    assert ("c", "t32", "5") in planned_runs(dry) and ("g", "t1", "1") in planned_runs(dry)
    # opting in plans it here too, to run flagged
    studies["c"]["oversubscribe"] = studies["g"]["oversubscribe"] = True
    workflow.write_config({"studies": studies})
    dry = workflow.snakemake("--profile", "profiles/local", "-n")
    assert ("c", "t32", "5") in planned_runs(dry) and ("g", "t1", "1") in planned_runs(dry)


@pytest.mark.skipif(visible_gpus() > 0, reason="the GPU point would run here")
def test_an_adaptive_study_among_the_selected_hides_no_other_studys_problem(workflow):
    # Snakemake plans nothing past an adaptive round's checkpoint until it has run: a dry
    # run listed the round alone, and study g's GPU point went unsaid (and unchecked)
    adaptive = command_study([1, 2], budget_su=5, adaptive={}, resources={"runtime": 1})
    workflow.write_config({"only": ["a", "g"], "studies": {"a": adaptive, "g": gpu_study()}})
    for args in (["-n"], []):
        proc = workflow.snakemake("--profile", "profiles/local", *args, check=False)
        assert proc.returncode != 0, args
        assert "studies.g: point t1 needs 1 GPU, and this machine has no GPU" in proc.output
        assert not (workflow.root / "results").exists()


@pytest.mark.slow
def test_a_renamed_studys_old_folder_is_named_by_a_dry_run_and_the_report(workflow):
    # results/old/ of a study since renamed: no hint, and `make check` still read it
    old = workflow.root / "results" / "old"
    old.mkdir(parents=True)
    (old / "analysis.json").write_text("{}")
    (workflow.root / "results" / "stray").mkdir()  # no study's results: not named
    workflow.write_config({"studies": {"published": MEASURED}})
    said = "Not in the config: kept, not shown: results/old/ (the results of a study"
    assert said in workflow.snakemake("--profile", "profiles/local", "-n").output
    workflow.snakemake("--profile", "profiles/local")
    html = (workflow.root / "results" / "report.html").read_text()
    assert "Not in the config: kept, not shown: <code>results/old/</code>" in html
    assert "stray" not in html and (old / "analysis.json").read_text() == "{}"


@pytest.mark.slow
def test_a_broken_cluster_json_is_named_and_made_again_never_left_to_block(workflow):
    # the fault probe: cluster.json cut short gave a JSONDecodeError naming no file,
    # Snakemake then deleted summary.csv and analysis.json, and every later run failed the
    # same way, the file never made again; `[1, 2]` in it gave "list indices must be
    # integers"
    workflow.write_config({"studies": {"published": MEASURED}})
    workflow.snakemake("--profile", "profiles/local", "results/published/summary.csv")
    facts = workflow.root / "results" / "published" / "cluster.json"
    good = facts.read_text()
    for broken, said in (
        (good[: len(good) // 2], "results/published/cluster.json: line "),
        ("[1, 2]\n", "results/published/cluster.json: holds a list, not an object: made again"),
        (
            good.replace('"queue": "local"', '"queue": 5'),
            "results/published/cluster.json: key queue: 5 is not one of ['local', 'slurm']",
        ),
    ):
        facts.write_text(broken)
        run = workflow.snakemake("--profile", "profiles/local", "results/published/summary.csv")
        assert said in run.output and "Traceback" not in run.output, run.output
        assert json.loads(facts.read_text())["queue"] == "local"
        assert (workflow.root / "results" / "published" / "analysis.json").exists()
    again = workflow.snakemake("--profile", "profiles/local", "results/published/summary.csv")
    assert "Nothing to be done" in again.output


@pytest.mark.slow
def test_after_a_kill_of_snakemake_its_runs_stop_and_the_next_start_says_how_to_go_on(workflow):
    # the fault probe: the runs and scripts a `kill -9` of Snakemake left kept going, and
    # the next start needed --unlock, said only in Snakemake's words
    from scalestudy.snakemake_internals import processes_in
    from tests.conftest import BIN

    go = workflow.root / "go"  # until it exists, the run hangs
    program = f"import os, time; time.sleep(0.1 if os.path.exists({str(go)!r}) else 600)"
    study = command_study([1], repeats=1, resources={"mem_mb": 500, "runtime": 15})
    study["params"]["command"] = [PY, "-c", program]
    workflow.write_config({"studies": {"k": study}})
    env = dict(os.environ, PATH=f"{BIN}:{os.environ['PATH']}")
    first = subprocess.Popen(
        [str(BIN / "snakemake"), "--profile", "profiles/local"],
        cwd=workflow.root,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    claim = workflow.root / "results" / "k" / "runs" / "t1" / ".rep1.work" / ".claim"
    for _ in range(600):  # its run is running once its launcher claimed it
        if claim.exists():
            break
        time.sleep(0.2)

    def launchers() -> list[int]:
        found = processes_in(workflow.root)
        return [pid for pid, argv in found if any("compute.launch" in a for a in argv)]

    first.kill()
    first.wait()
    assert launchers(), "the killed Snakemake's run should still be running"
    again = workflow.snakemake("--profile", "profiles/local", check=False)
    assert again.returncode != 0  # Snakemake's own refusal of the locked folder follows
    said = [line for line in again.output.splitlines() if "without cleaning up" in line]
    assert said == [
        "A Snakemake of this folder ended without cleaning up (killed?) and left its locks "
        "(.snakemake/locks) and its jobs still running (k/t1/rep1: now stopped): run "
        "`snakemake --unlock`, then run again; what was measured is kept"
    ]
    for _ in range(50):
        if not launchers():
            break
        time.sleep(0.1)
    assert (
        not launchers()
        and not (workflow.root / "results" / "k" / "runs" / "t1" / "rep1.json").exists()
    )
    # as said: unlock, then run again; the stopped run runs again
    go.write_text("")
    workflow.snakemake("--unlock")
    workflow.snakemake("--profile", "profiles/local")
    record = json.loads((workflow.root / "results" / "k" / "runs" / "t1" / "rep1.json").read_text())
    assert record["status"] == "ok"
