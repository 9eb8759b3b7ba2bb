"""Real Slurm: a two-node cluster on this machine (tests/slurm/cluster.sh), the real
Snakemake Slurm executor plugin, and the workflow through profiles/slurm."""

import contextlib
import itertools
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import time

import pandas as pd
import pytest

from tests.conftest import FASHION_DIR, REPO, copy_of_the_workflow, tiny_mnist_study
from tests.test_workflow import planned_runs

CLUSTER = REPO / "tests" / "slurm" / "cluster.sh"
PROFILES = ("--profile", "profiles/slurm", "--profile", str(REPO / "tests" / "slurm" / "profile"))

pytestmark = [
    pytest.mark.slow,
    pytest.mark.slurm,
    pytest.mark.skipif(
        os.geteuid() != 0 or shutil.which("apt-get") is None,
        reason="the test cluster is installed and started as root",
    ),
    pytest.mark.skipif(not FASHION_DIR.is_dir(), reason="dataset-fashion-mnist missing"),
]


@pytest.fixture(scope="module")
def cluster():
    subprocess.run(["bash", str(CLUSTER), "start"], check=True, timeout=600)
    yield
    subprocess.run(["bash", str(CLUSTER), "stop"], check=False, timeout=120)


def limits():
    return {"cpus_per_node": os.cpu_count(), "nodes": 2}


@contextlib.contextmanager
def one_node_held():
    """One node held by a job of a 5-minute limit (started before this yields), for
    the predictions of issue 28; cancelled on the way out."""
    held = subprocess.run(
        ["sbatch", "--parsable", "--exclusive", "-N1", "-t", "5", "-o", "/dev/null",
         "--wrap", "sleep 300"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    try:
        for _ in range(100):  # until the scheduler has started it
            state = subprocess.run(["squeue", "-h", "-j", held, "-o", "%T"],
                                   capture_output=True, text=True).stdout.strip()  # fmt: skip
            if state == "RUNNING":
                break
            time.sleep(0.2)
        assert state == "RUNNING"
        yield held
    finally:
        subprocess.run(["scancel", held], check=False)


def record(workflow, study, point, repeat=1):
    path = workflow.root / "results" / study / "runs" / point / f"rep{repeat}.json"
    return json.loads(path.read_text())


def test_thread_and_node_studies_run_through_the_slurm_plugin(cluster, workflow):
    threads = tiny_mnist_study(repeats=1)
    nodes = {
        "workload": "spiral_mlp",
        "params": {"epochs": 2},
        "scaling": {"axis": "nodes", "points": [1, 2], "threads": 1},
        "repeats": 1,
        "resources": {"mem_mb": 1500, "runtime": 5},
    }
    workflow.write_config(
        {"partition_limits": limits(), "studies": {"threads": threads, "ddp_nodes": nodes}}
    )
    start = time.perf_counter()
    workflow.snakemake(*PROFILES)
    print(f"two studies, 4 Slurm jobs: {time.perf_counter() - start:.1f} s")

    for study, point in [
        ("threads", "t1"),
        ("threads", "t2"),
        ("ddp_nodes", "n1"),
        ("ddp_nodes", "n2"),
    ]:
        rec = record(workflow, study, point)
        env, res = rec["environment"], rec["resources"]
        assert rec["status"] == "ok", rec["reason"]
        assert env["slurm_job_id"].isdigit() and env["slurm_nodelist"]
        assert env["slurm_submit_time"] and env["slurm_start_time"]
        assert res["mismatch"] is False, res["mismatches"]
        assert res["received"]["mem_limit_mb"] >= rec["resources"]["requested"]["mem_mb"]
    t2 = record(workflow, "threads", "t2")["resources"]["received"]
    assert t2["cpus_usable"] == 2 and t2["torch_threads"] == 2
    n2 = record(workflow, "ddp_nodes", "n2")
    assert n2["resources"]["received"]["world_size"] == 2
    assert n2["environment"]["hosts"] == ["node1", "node2"]
    assert n2["metrics"]["rank_train_s_max"] >= n2["metrics"]["rank_train_s_min"] > 0
    # memory on Slurm: each rank's peak (PyTorch alone holds over 100 MB), each node's
    # (one rank each), and the largest node's for --mem
    usage = n2["resources"]["usage"]
    assert len(usage["rank_peak_rss_mb"]) == 2 and min(usage["rank_peak_rss_mb"]) > 100
    assert sorted(usage["node_peak_rss_mb"]) == sorted(usage["rank_peak_rss_mb"])
    assert usage["peak_rss_mb"] == max(usage["node_peak_rss_mb"])

    html = (workflow.root / "results" / "report.html").read_text()
    assert "Queue wait and run time of each Slurm job" in html
    assert "Hosts node1, node2 are one physical machine" in html
    assert re.search(r"core-hours, [0-9.]+ GPU-hours, <strong>[0-9.]+ SU", html)
    # the request per point: a 2-node point asks for its 2 nodes; the cluster keeps
    # accounting (slurmdbd), so sacct's TotalCPU and MaxRSS stand beside the runs' own
    found = json.loads((workflow.root / "results" / "ddp_nodes" / "analysis.json").read_text())
    n2 = next(r for r in found["requests"]["points"] if r["point"] == "n2")
    assert "#SBATCH --nodes=2" in n2["sbatch"] and n2["mem_mb"] and n2["cpu_busy"] is not None
    assert found["requests"]["accounting_note"] is None
    # two ranks of PyTorch: sacct's peak is at least one rank's own (torch alone > 100 MB),
    # and its CPU share a fraction
    assert n2["sacct_peak_mem_mb"] > 100 and 0 < n2["sacct_cpu_busy"] <= 1.05
    assert "What to ask for, per point" in html and "CPUs busy (sacct)" in html
    assert "sacct was not available" not in html
    # Issue 28, item 4: time to result. Slurm asked again (the study's cluster facts,
    # rules/cluster.smk; aggregation follows as they changed) with one node held (a job
    # of a 5-minute limit): the 1-node request starts now on the other node, the 2-node one
    # not before the held job's limit, and each result adds that wait to the run time.
    with one_node_held():
        start = time.perf_counter()
        workflow.snakemake(*PROFILES, "--forcerun", "results/ddp_nodes/cluster.json",
                           "results/report.html")  # fmt: skip
        print(f"aggregation and report again, Slurm asked: {time.perf_counter() - start:.1f} s")
    found = json.loads((workflow.root / "results" / "ddp_nodes" / "analysis.json").read_text())
    times = found["time_to_result"]
    assert times["queue"] == "slurm" and times["note"] is None and times["calls"] == 2
    n1, n2 = ({p["point"]: p for p in times["points"]}[k] for k in ("n1", "n2"))
    assert n1["wait_now_s"] < 30 and n2["wait_now_s"] >= 300 - 60
    # n1's shape may have enough past jobs here (other tests', benchmarks') to be typical
    assert n1["basis"] in ("now", "typical") and n2["basis"] == "now"
    for p in (n1, n2):
        assert p["result_s"] == pytest.approx(p["wait_s"] + p["run_s"])
        assert p["result_lo_s"] <= p["result_s"] <= p["result_hi_s"]
    assert times["earliest"][0]["point"] == "n1"
    html = (workflow.root / "results" / "report.html").read_text()
    assert "<th>result expected in</th>" in html and "A queue changes by the minute" in html
    assert f"(wait now {n2['wait_s']:.0f} s)</td>" in html


@pytest.fixture(scope="module")
def mixed(cluster, tmp_path_factory):
    """One invocation for the scenarios that need neither node to itself, so that their
    jobs run while one job waits out its one-minute time limit (Slurm checks limits
    every 30 s or so: the floor of this fixture): a job killed for time, one for memory,
    a packed point whose repeats are each killed for memory, a job handed fewer CPUs
    than its threads, packed GPU repeats, and a run that goes well."""
    # far more than its minute; it needs no data, so it is submitted first
    slow = {
        "workload": "command",
        "params": {"command": ["sleep", "600"]},
        "scaling": {"axis": "threads", "points": [1]},
        "repeats": 1,
        "resources": {"mem_mb": 500, "runtime": 1},
    }
    hungry = tiny_mnist_study(repeats=1)
    hungry["scaling"]["points"] = [1]
    hungry["resources"] = {"mem_mb": 250, "runtime": 5}  # torch alone needs more
    hungry_packed = hungry | {"repeats": 2, "submission": {"pack_repeats": True}}
    fine = {
        "workload": "spiral_mlp",
        "params": {"epochs": 1},
        "scaling": {"axis": "threads", "points": [1]},
        "repeats": 1,
    }
    short = tiny_mnist_study(repeats=1)
    short["scaling"]["points"] = [2]
    # each run 1.5 s: long enough for the accounting's 1-s samples to see its step's memory
    gpus = {
        "workload": "command",
        "params": {"command": ["sleep", "1.5"]},
        "scaling": {"axis": "gpus", "device": "gpu", "points": [1, 2], "threads": 1},
        "repeats": 2,
        "resources": {"mem_mb": 500, "runtime": 2},
        "submission": {"pack_repeats": True},
    }
    studies = {"slow": slow, "hungry": hungry, "hungry_packed": hungry_packed, "fine": fine,
               "short": short, "gpus": gpus}  # fmt: skip
    workflow = copy_of_the_workflow(tmp_path_factory.mktemp("mixed"))
    workflow.write_config({"partition_limits": limits() | {"gpus_per_node": 2}, "studies": studies})
    # A site override that hands every job one CPU: short's point runs two threads on it
    # (every other point asks for one CPU per process anyway). Three jobs at once: the
    # slow one holds a CPU of one node while the others pass.
    # The slow job first (Snakemake's own order varies), so that its minute overlaps
    # the others' jobs rather than following them.
    proc = workflow.snakemake(
        *PROFILES, "--set-resources", "run_point:cpus_per_task=1", "--jobs", "3",
        "--prioritize", "results/slow/runs/t1/rep1.json", timeout=900, check=False,
    )  # fmt: skip
    # three studies whose only point fails in every run: said, after the report
    assert proc.returncode != 0 and (workflow.root / "results" / "report.html").exists()
    for study in ("slow", "hungry", "hungry_packed"):
        assert f"{study}: no answer: every run of the base case t1 failed" in proc.output
    return workflow, proc


def submissions(proc, study: str) -> list[str]:
    """The Slurm job ids the plugin gave a study's run_point jobs, from its log of its
    submissions (a packed point's log folder is named after its group)."""
    folder = rf"(?:group_pack-{study}-[^/]+|rule_run_point/{study}_[^/]+)"
    return re.findall(
        rf"submitted with SLURM jobid (\d+) \(log: \S*/slurm_logs/{folder}/", proc.output
    )


def test_a_job_given_fewer_cpus_than_threads_is_flagged(mixed):
    workflow, _ = mixed
    rec = record(workflow, "short", "t2")
    assert rec["status"] == "ok"
    assert rec["resources"]["mismatch"] is True
    assert "cpus: asked for 2, only 1 usable (affinity)" in rec["resources"]["mismatches"]
    summary = pd.read_csv(workflow.root / "results" / "short" / "summary.csv")
    status = summary.loc[0, "status"]
    assert status.startswith("allocation mismatch:") and "only 1 usable" in status
    assert "allocation mismatch" in (workflow.root / "results" / "report.html").read_text()


def test_time_and_memory_kills_are_failed_points_and_only_they_rerun(mixed):
    workflow, _ = mixed
    timed_out = record(workflow, "slow", "t1")
    assert timed_out["status"] == "failed"
    assert timed_out["reason"].startswith("Slurm: ") and "TIME LIMIT" in timed_out["reason"]
    oom = record(workflow, "hungry", "t1")
    assert oom["status"] == "failed"
    assert oom["reason"].startswith("Slurm: ") and "exceeded memory limit" in oom["reason"]
    assert record(workflow, "fine", "t1")["status"] == "ok"
    html = (workflow.root / "results" / "report.html").read_text()
    assert "TIME LIMIT" in html and "exceeded memory limit" in html

    dry = workflow.snakemake(*PROFILES, "-n")
    assert planned_runs(dry) == {
        ("slow", "t1", "1"), ("hungry", "t1", "1"),
        ("hungry_packed", "t1", "1"), ("hungry_packed", "t1", "2"),
    }  # fmt: skip


def test_each_run_sees_the_gpus_slurm_gave_it_packed_or_not(mixed):
    """Issue 14: GPUs under packing. The test cluster's nodes have two stand-in GPUs
    each (tests/slurm/cluster.sh: no CUDA, but Slurm schedules them and sets
    CUDA_VISIBLE_DEVICES as it would for real ones). A command study on 1 and 2 GPUs
    (one process per GPU), its repeats packed: each run is its own srun step, each of
    its processes sees the one GPU it asked for, the record says which, and none is
    flagged as short of GPUs. Before, a 2-GPU point was refused by sbatch
    (--ntasks-per-gpu beside --ntasks-per-node), and a command's runs were flagged
    "0 visible" (only torch counted GPUs)."""
    workflow, proc = mixed
    assert len(submissions(proc, "gpus")) == 2
    for point, n in (("g1", 1), ("g2", 2)):
        runs = [record(workflow, "gpus", point, k) for k in (1, 2)]
        assert runs[0]["environment"]["slurm_job_id"] == runs[1]["environment"]["slurm_job_id"]
        for rec in runs:
            received = rec["resources"]["received"]
            assert rec["status"] == "ok", rec["reason"]
            assert received["cuda_visible_devices"] in ("0", "1"), received
            assert received["gpus_visible"] == 1
            assert rec["resources"]["mismatch"] is False, rec["resources"]["mismatches"]
            assert received["world_size"] == n


def test_sacct_figures_are_real_accounting_per_job_and_per_srun_step(mixed):
    """Issue 28, item 1: the request table's sacct columns from the test cluster's real
    accounting (slurmdbd): a job of its own is read as a whole (TotalCPU over Elapsed x
    AllocCPUS, MaxRSS), a packed run by its own srun step (JOB.STEP), and each agrees
    with what sacct itself prints for it."""
    from scalestudy.analysis.decisions.request import read_accounting, slurm_megabytes
    from scalestudy.slurm import accounting_command, ask, slurm_seconds

    workflow, _ = mixed
    fine = record(workflow, "fine", "t1")["environment"]["slurm_job_id"]
    packed = record(workflow, "gpus", "g1", 2)
    step = f"{packed['environment']['slurm_job_id']}.{packed['environment']['slurm_step_id']}"
    asked = ask(accounting_command([fine, packed["environment"]["slurm_job_id"]]))
    jobs, note = read_accounting(asked)
    assert note is None
    assert jobs[fine]["cpu_s"] > 0 and jobs[fine]["elapsed_s"] > 0 and jobs[fine]["cpus"] >= 1
    assert jobs[fine]["peak_mem_mb"] > 50  # spiral_mlp imports torch
    # sacct gives whole seconds: the 1.5-s step reads 1 or 2
    assert jobs[step]["elapsed_s"] >= 1 and jobs[step]["peak_mem_mb"] > 0
    # the same figures straight from sacct
    out = subprocess.run(
        ["sacct", "-n", "-P", "-j", step, "--format=JobID,TotalCPU,MaxRSS"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    (line,) = [x for x in out.splitlines() if x.startswith(step + "|")]
    assert jobs[step]["cpu_s"] == slurm_seconds(line.split("|")[1])
    assert jobs[step]["peak_mem_mb"] == slurm_megabytes(line.split("|")[2])
    # issue 29: the cluster gathers no energy (acct_gather_energy/none): sacct answers its
    # ConsumedEnergyRaw column all the same, and each run says why Slurm gave none
    no_energy = "no counter: Slurm accounting gathered no energy"
    assert jobs[fine]["energy"]["joules"] is None
    assert jobs[fine]["energy"]["not_measured"].startswith(no_energy)
    runs = pd.read_csv(workflow.root / "results" / "fine" / "runs.csv")
    assert f"Slurm: {no_energy}" in runs.loc[0, "energy_why"] and pd.isna(runs.loc[0, "energy_j"])
    found = json.loads((workflow.root / "results" / "fine" / "analysis.json").read_text())
    (point,) = found["requests"]["points"]
    assert found["requests"]["accounting_note"] is None
    assert point["sacct_peak_mem_mb"] == jobs[fine]["peak_mem_mb"]
    assert 0 < point["sacct_cpu_busy"] <= 1.05


def test_a_packed_run_that_fails_leaves_its_record_and_the_next_one_still_runs(mixed):
    """Each packed run is its own srun step with its own memory limit: Slurm stops the
    first repeat for memory, the launcher records why, and the job goes on to the next."""
    workflow, proc = mixed
    assert len(submissions(proc, "hungry_packed")) == 1
    first, second = (record(workflow, "hungry_packed", "t1", k) for k in (1, 2))
    for rec in (first, second):
        assert rec["status"] == "failed"
        assert "exceeded memory limit" in rec["reason"]
    assert first["environment"]["slurm_job_id"] == second["environment"]["slurm_job_id"]


def test_processes_packed_and_spread_over_the_two_nodes(cluster, workflow):
    """Issue 12: one study of 1, 2 and 4 processes packed 2 per node, and the same
    totals spread one per node (up to the cluster's 2 nodes), compared as series."""
    study = {
        "workload": "spiral_mlp",
        "params": {"epochs": 2},
        "scaling": {"axis": "processes", "points": [1, 2]},
        "series": {
            "packed": {"scaling": {"per_node": 2, "points": [1, 2, 4]}},
            "spread": {"scaling": {"placement": "spread"}},
        },
        "repeats": 1,
        # two processes of PyTorch on one node hold about 1.3 GB
        "resources": {"mem_mb": 3000, "runtime": 5},
        # the two nodes are one machine: a rank sees the other node's as other processes
        "include_shared": True,
    }
    workflow.write_config({"partition_limits": limits(), "studies": {"place": study}})
    workflow.snakemake(*PROFILES)
    for point, hosts in [("packed-p2", ["node1"]), ("packed-p4-n2", ["node1", "node2"]),
                         ("spread-p2-n2", ["node1", "node2"])]:  # fmt: skip
        rec = record(workflow, "place", point)
        assert rec["status"] == "ok", rec["reason"]
        assert rec["resources"]["mismatch"] is False, rec["resources"]["mismatches"]
        if len(hosts) > 1:
            assert rec["environment"]["hosts"] == hosts
        else:
            assert len(rec["environment"]["hosts"]) == 1
    assert record(workflow, "place", "packed-p4-n2")["resources"]["received"]["tasks_per_node"] == 2
    analysis = json.loads((workflow.root / "results" / "place" / "analysis.json").read_text())
    (comparison,) = analysis["comparisons"]
    assert (comparison["a"], comparison["b"]) == ("packed", "spread")
    assert {t["n"] for t in analysis["layouts"]["totals"]} == {1, 2}


def shape(value, prefix=""):
    """The keys of a record, nested ones as a.b (lists of any length count as one)."""
    if not isinstance(value, dict):
        return set()
    keys = set()
    for key, sub in value.items():
        keys |= {prefix + key} | shape(sub, f"{prefix}{key}.")
    return keys


def test_packed_repeats_share_one_job_per_point_on_nodes_of_their_own(cluster, workflow):
    """Issue 14, item 4: a 2-point x 3-repeat study packed (submission.pack_repeats) is
    2 submissions; its repeats run one after another in their job, each its own srun
    step and record; exclusive nodes reach sbatch; the report says who shared a job."""
    packed = {
        "workload": "spiral_mlp",
        "params": {"epochs": 1},
        "scaling": {"axis": "threads", "points": [1, 2]},
        "repeats": 3,
        "resources": {"mem_mb": 1500, "runtime": 5},
        "submission": {"pack_repeats": True, "exclusive": True},
    }
    plain = packed | {"scaling": {"axis": "threads", "points": [1]}, "repeats": 1}
    plain.pop("submission")
    workflow.write_config(
        {"partition_limits": limits(), "studies": {"packed": packed, "plain": plain}}
    )

    # Without the profile's settings for it packing is refused before any job.
    refused = workflow.snakemake(*PROFILES, "--group-components", "pack=2", check=False)
    assert refused.returncode != 0
    assert (
        "studies.packed.submission.pack_repeats packs 3 runs in one job, and Snakemake puts 2 in "
        "one job" in refused.output
    )
    assert "submitted with SLURM jobid" not in refused.output
    refused = workflow.snakemake(*PROFILES, "--resources", "timed_runs=2", check=False)
    assert refused.returncode != 0
    assert "needs one timed run at a time in a job (--resources timed_runs=1" in refused.output
    assert "submitted with SLURM jobid" not in refused.output
    # nor may a packed job outlast its partition's time limit, as Slurm itself gives it
    subprocess.run(["scontrol", "update", "PartitionName=debug", "MaxTime=20"], check=True)
    try:
        refused = workflow.snakemake(*PROFILES, check=False)
    finally:
        subprocess.run(
            ["scontrol", "update", "PartitionName=debug", "MaxTime=INFINITE"], check=True
        )
    assert refused.returncode != 0
    assert (
        "studies.packed.submission.pack_repeats: point t1 packs 3 repeats of 7 minutes into one "
        "job of 21 minutes, the partition allows 20 (partition debug's MaxTime, from sinfo)"
    ) in refused.output
    assert "submitted with SLURM jobid" not in refused.output

    proc = workflow.snakemake(*PROFILES)
    # the plugin's own log of its submissions: one per packed point, one for the plain run
    submitted = dict(
        (folder, job)
        for job, folder in re.findall(
            r"has been submitted with SLURM jobid (\d+) \(log: \S*/slurm_logs/([^/]+)/", proc.output
        )
    )
    assert sorted(submitted) == [
        "group_pack-packed-t1_run_point",
        "group_pack-packed-t2_run_point",
        "rule_run_point",
    ]
    for point, threads in [("t1", 1), ("t2", 2)]:
        runs = [record(workflow, "packed", point, k) for k in (1, 2, 3)]
        for rec in runs:
            env, res = rec["environment"], rec["resources"]
            assert rec["status"] == "ok", rec["reason"]
            assert env["slurm_job_id"] == submitted[f"group_pack-packed-{point}_run_point"]
            # the job asks for one run's CPUs and three runs' time (3 x (5 + 2) minutes)
            assert env["slurm_time_limit"] == "00:21:00"
            assert env["slurm_oversubscribe"] == "NO"  # --exclusive
            assert res["mismatch"] is False, res["mismatches"]
            assert res["received"]["cpus_usable"] == threads
            # no GPUs here: none visible to any run (each srun step is given its own)
            assert "cuda_visible_devices" in res["received"]
            assert res["received"]["cuda_visible_devices"] is None
        # each run its own srun step, one after another, never at once
        assert len({rec["environment"]["slurm_step_id"] for rec in runs}) == 3
        spans = sorted((r["started_at"], r["finished_at"]) for r in runs)
        assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans))
    # the records are the same shape as a run submitted alone
    alone = record(workflow, "plain", "t1")
    assert alone["environment"]["slurm_oversubscribe"] != "NO"
    assert shape(record(workflow, "packed", "t2", 2)) == shape(alone)

    found = json.loads((workflow.root / "results" / "packed" / "analysis.json").read_text())
    assert found["jobs"]["allocations"] == {
        "runs": 6, "jobs": 2, "shared_jobs": 2, "exclusive": "all"
    }  # fmt: skip
    html = (workflow.root / "results" / "report.html").read_text()
    assert "6 runs in 2 Slurm jobs: 2 jobs ran several runs (packed repeats)" in html
    assert "Every job had its nodes to itself (--exclusive)." in html
    assert "t1/rep2, t1/rep3" in html


def test_a_paired_study_runs_both_variants_in_one_job_per_point(cluster, workflow):
    """Issue 36, item 4: a comparison (compare: a sleeps 0.5 s, b 1 s) at 2 points of 2
    pairs is 2 submissions; each holds both variants' 4 runs, each its own srun step,
    one after another in the drawn order; sacct knows each step; the report pairs them."""
    # it times its own sleep: the whole run's time adds the launcher's start, seconds
    # on a busy machine, and a ratio of 1.2 was seen where 2 was slept
    sleeps = "import sys, time; t = time.perf_counter(); time.sleep(float(sys.argv[1])); "
    sleeps += "print('train_s=%.4f' % (time.perf_counter() - t))"
    paired = {
        "workload": "command",
        "params": {
            "command": [sys.executable, "-c", sleeps, "{delay}"],
            "values": {"delay": 0.5},
            "metrics_regex": {"train_s": r"train_s=([0-9.]+)"},
        },
        "time": "train",
        "scaling": {"axis": "threads", "points": [1, 2]},
        "repeats": 2,
        "resources": {"mem_mb": 500, "runtime": 2},
        "compare": {"a": {}, "b": {"params": {"values": {"delay": 1.0}}}},
        # the two nodes share this machine's cores and run both points' jobs at once:
        # every run is on shared CPUs, which the paired ratio otherwise leaves out
        "include_shared": True,
    }
    workflow.write_config({"partition_limits": limits(), "studies": {"paired": paired}})
    start = time.perf_counter()
    proc = workflow.snakemake(*PROFILES)
    print(f"a paired study, 2 points x 2 pairs: {time.perf_counter() - start:.1f} s")
    submitted = submissions(proc, "paired")
    assert len(submitted) == 2
    for n in (1, 2):
        runs = [record(workflow, "paired", f"{v}-t{n}", k) for v in "ab" for k in (1, 2)]
        (job,) = {rec["environment"]["slurm_job_id"] for rec in runs}
        assert job in submitted
        assert all(rec["status"] == "ok" for rec in runs), [rec["reason"] for rec in runs]
        in_time = sorted(runs, key=lambda rec: rec["started_at"])
        assert [rec["compare"]["position"] for rec in in_time] == [1, 2, 3, 4]
        assert {in_time[0]["repeat"], in_time[1]["repeat"]} == {1}  # each pair together
        assert all(a["finished_at"] <= b["started_at"] for a, b in itertools.pairwise(in_time))
        steps = {f"{job}.{rec['environment']['slurm_step_id']}" for rec in runs}
        assert len(steps) == 4
        out = subprocess.run(["sacct", "-n", "-P", "-j", job, "--format=JobID,State"],
                             capture_output=True, text=True, check=True).stdout  # fmt: skip
        assert steps <= {line.split("|")[0] for line in out.splitlines()}
    found = json.loads((workflow.root / "results" / "paired" / "analysis.json").read_text())
    assert [(p["point"], p["pairs"]) for p in found["paired"]["points"]] == [("t1", 2), ("t2", 2)]
    assert all(p["ratio"] > 1.2 for p in found["paired"]["points"])
    html = (workflow.root / "results" / "report.html").read_text()
    assert "Paired comparison: b against a" in html


def test_an_adaptive_study_runs_its_rounds_on_slurm_one_job_per_point_and_round(cluster, workflow):
    """Issue 16: an adaptive study's rounds on Slurm. Each round's runs are submitted
    together when its plan is made, the repeats of a point packed into one job; the
    round plans are local rules, and the next round waits for the last job."""
    from tests.test_adaptive_workflow import adaptive_study, plans, run_ids

    study = adaptive_study(max_repeats=4) | {
        "resources": {"mem_mb": 500, "runtime": 2},
        "submission": {"pack_repeats": True},
    }
    workflow.write_config({"partition_limits": limits(), "studies": {"a": study}})
    proc = workflow.snakemake(*PROFILES)
    rounds = plans(workflow)
    assert rounds[-1]["stop"]["reason"] == "limits" and rounds[-1]["totals"] == {"t1": 4, "t2": 4}
    assert "localcheckpoint adaptive_round" in proc.output
    jobs = {}
    for point in ("t1", "t2"):
        for k in range(1, 5):
            rec = record(workflow, "a", point, k)
            assert rec["status"] == "ok", rec["reason"]
            added_in = next(p["round"] for p in rounds if p["totals"].get(point, 0) >= k)
            jobs.setdefault((point, added_in), set()).add(rec["environment"]["slurm_job_id"])
    # one Slurm job per point and round, and as many submissions as that
    assert all(len(ids) == 1 for ids in jobs.values()), jobs
    submitted = re.findall(r"has been submitted with SLURM jobid (\d+)", proc.output)
    assert sorted(submitted) == sorted(next(iter(ids)) for ids in jobs.values())
    assert len(run_ids(workflow)) == 8
    again = workflow.snakemake(*PROFILES)
    assert "Nothing to be done" in again.output


def test_the_plan_predicts_each_jobs_start_from_slurm_with_one_node_held(cluster, workflow):
    """Issue 28, item 2: `snakemake results/plan.html` on Slurm asks sbatch --test-only,
    through the plugin's own submit command, when each shape of job would start. With
    one node held by a job of a 5-minute limit, a 1-node job starts now on the other, a
    2-node one not before the held job's limit, and a 3-node one (the cluster has 2)
    is refused in its own row while the plan still renders."""
    study = {
        "workload": "command",
        "params": {"command": ["true"]},
        "scaling": {"axis": "nodes", "points": [1, 2, 3], "threads": 1},
        "repeats": 2,
        "resources": {"mem_mb": 500, "runtime": 5},
    }
    workflow.write_config({"studies": {"q": study}})
    # history (issue 28, item 3): two past jobs of n1's shape (1 node, 1 CPU, 7 minutes)
    for _ in range(2):
        subprocess.run(
            ["sbatch", "-N1", "-n1", "-c1", "-t", "7", "--mem", "500", "-o", "/dev/null",
             "--wrap", "true"],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
    with one_node_held():
        start = time.perf_counter()
        workflow.snakemake(*PROFILES, "results/plan.html")
        print(f"the plan on Slurm: {time.perf_counter() - start:.1f} s")
    found = json.loads((workflow.root / "results" / "plan.json").read_text())
    assert found["queue"] == "slurm" and found["note"] is None
    assert found["calls"] == 3  # one per shape, not per job
    (q,) = found["studies"]
    jobs = {}
    for job in q["jobs"]:
        jobs.setdefault(job["point"], []).append(job)
    assert {p: len(j) for p, j in jobs.items()} == {"n1": 2, "n2": 2, "n3": 2}
    n1, n2, n3 = jobs["n1"][0], jobs["n2"][0], jobs["n3"][0]
    assert n1["start_basis"] == n2["start_basis"] == "sbatch --test-only"
    assert n1["layout"] == {"nodes": 1, "tasks_per_node": 1, "threads": 1, "gpus_per_node": 0}
    assert "-p debug" in n1["sbatch_test_only"] and "--nodes=2" in n2["sbatch_test_only"]
    assert n1["predicted_wait_s"] < 30
    # the held job started at most a few seconds before the plan asked: its 5 minutes
    assert n2["predicted_wait_s"] >= 300 - 60
    assert n3["predicted_wait_s"] is None and n3["start_basis"] is None
    assert n3["queue_note"].startswith("Slurm refused this job: ")
    assert "Requested node configuration is not available" in n3["queue_note"]
    html = (workflow.root / "results" / "plan.html").read_text()
    assert "not a bound either way" in html and "Requested node configuration" in html
    assert n2["predicted_start"] in html
    # beside the bound, the waits of past jobs of the shape, from the cluster's sacct
    assert found["history_days"] == 30 and found["history_note"] is None
    assert n1["history_jobs"] >= 2 and n1["history_wait_median_s"] is not None
    assert n1["history_wait_p90_s"] >= n1["history_wait_median_s"]
    assert "past waits (s)" in html


# the shape of the bound's jobs: 1 node, 1 CPU, a time limit no other test's job has
BOUND_MINUTES = 11


def waits_of_jobs_submitted(count: int, seed: int) -> list[float]:
    """Submit `count` one-CPU jobs of BOUND_MINUTES, a second apart, each sleeping 1 to
    4 s (the two nodes' CPUs busy most of the time, jobs queueing now and then), and
    their waits (sacct's Start minus Eligible) once all have started, in order."""
    from benchmarks.queue_prediction import real_starts

    rng = random.Random(seed)
    ids = []
    for _ in range(count):
        ids.append(subprocess.run(
            ["sbatch", "--parsable", "-N1", "-n1", "-c1", "-t", str(BOUND_MINUTES),
             "--mem", "100", "-o", "/dev/null", "--wrap", f"sleep {rng.randint(1, 4)}"],
            capture_output=True, text=True, check=True,
        ).stdout.strip().split(";")[0])  # fmt: skip
        time.sleep(1)
    for _ in range(150):  # until sacct knows every job's start
        starts = real_starts(ids)
        if len(starts) == len(ids):
            return [(start - eligible).total_seconds() for eligible, start in map(starts.get, ids)]
        time.sleep(2)
    raise AssertionError(f"{len(ids) - len(starts)} of {len(ids)} jobs did not start in 5 min")


def test_the_plans_bound_on_past_waits_covers_the_waits_of_jobs_submitted_after_it(
    cluster, workflow
):
    """Issue 37: 40 past jobs of a shape, then the plan on Slurm: the 95 % upper bound on
    the p90 of their waits (sacct), backtested; then 20 more jobs submitted the same way.
    At least 90 % of their waits lie under it, as a p90 bound promises: allowing the
    misses 90 % coverage still gives with probability 95 % (Binomial(20, 0.1): at most
    4), so that a bound that holds fails it rarely (0.3 % at its nominal 95 % coverage)."""
    from scalestudy.analysis.cluster.queue import p90_bound
    from scalestudy.study.resources import TIME_SLACK_MIN

    past = waits_of_jobs_submitted(40, seed=1)
    study = {
        "workload": "command",
        "params": {"command": ["true"]},
        "scaling": {"axis": "nodes", "points": [1], "threads": 1},
        "repeats": 1,
        "resources": {"mem_mb": 100, "runtime": BOUND_MINUTES - TIME_SLACK_MIN},
    }
    workflow.write_config({"studies": {"b": study}})
    workflow.snakemake(*PROFILES, "results/plan.html")
    found = json.loads((workflow.root / "results" / "plan.json").read_text())
    ((job,),) = [s["jobs"] for s in found["studies"]]
    assert f"-t {BOUND_MINUTES}" in job["sbatch_test_only"]
    assert job["history_jobs"] == 40 and job["history_wait_max_s"] == max(past)
    bound = job["history_wait_bound_s"]
    assert bound == p90_bound(past)  # the waits the plan read are the jobs' own
    assert job["history_bound_tested"] == 40 - 29
    later = waits_of_jobs_submitted(20, seed=2)
    misses = sum(wait > bound for wait in later)
    print(f"bound {bound:.0f} s over 40 past waits (median {statistics.median(past):.0f} s, "
          f"largest {max(past):.0f} s); later waits up to {max(later):.0f} s: "
          f"{20 - misses} of 20 under it; backtest {job['history_bound_covered']} of "
          f"{job['history_bound_tested']}")  # fmt: skip
    assert misses <= 4, (past, later)


def test_without_accounting_the_plan_says_it_knows_no_past_waits_and_the_rest_stands(
    cluster, workflow
):
    """Issue 37, bad input: Slurm without accounting (the cluster started with
    SCALESTUDY_SLURM_ACCOUNTING=0, as on sites with none): sacct cannot answer, the plan
    says it knows no past waits and why, and that --test-only's starts are uncorrected;
    the starts stand. The cluster starts again with accounting after (its history gone,
    as after any stop)."""
    from scalestudy.analysis.cluster.queue import TEST_ONLY, UNCORRECTED

    study = {
        "workload": "command",
        "params": {"command": ["true"]},
        "scaling": {"axis": "nodes", "points": [1, 2], "threads": 1},
        "repeats": 1,
        "resources": {"mem_mb": 100, "runtime": 5},
    }
    workflow.write_config({"studies": {"q": study}})
    subprocess.run(["bash", str(CLUSTER), "stop"], check=True, timeout=120)
    try:
        subprocess.run(["bash", str(CLUSTER), "start"], check=True, timeout=600,
                       env=os.environ | {"SCALESTUDY_SLURM_ACCOUNTING": "0"})  # fmt: skip
        workflow.snakemake(*PROFILES, "results/plan.html")
    finally:
        subprocess.run(["bash", str(CLUSTER), "stop"], check=False, timeout=120)
        subprocess.run(["bash", str(CLUSTER), "start"], check=True, timeout=600)
    found = json.loads((workflow.root / "results" / "plan.json").read_text())
    print(found["history_note"])
    assert found["note"] is None and found["history"] is False
    assert found["history_note"].startswith("no past waits: sacct was not available (")
    assert found["correction_note"] == UNCORRECTED and found["run_to_limit"] is None
    jobs = found["studies"][0]["jobs"]
    assert [j["start_basis"] for j in jobs] == [TEST_ONLY, TEST_ONLY]
    assert all(j["predicted_wait_s"] < 30 and j["history_jobs"] == 0 for j in jobs)
    html = (workflow.root / "results" / "plan.html").read_text()
    assert "no past waits: sacct was not available" in html
    assert "starts are uncorrected: no past job" in html
