"""A workload's start-up against its floor, side by side in one run.

The workload: a real run through the launcher and worker; its time from process start to
its first timed step is the record's launch_to_training_s (the launcher's clock at the
workers' start to the first epoch phase of rank 0, which a process group's rendezvous
makes wait for every rank). The floor: as many processes as the run has, each
`python -c "import torch"` plus reading the bytes the workload reads (the prepared tensor
files; the spiral MLP generates its data), timed from their start to the last one's end
of reading, each pinned to the CPUs the launcher gives its rank. A second floor imports
torch._dynamo too, which torch's optimizers and DDP import on first use. Each round runs
every candidate, in an order that flips every round; the floors hold the machine's
timed-run lock, as runs do, so that no other timed run overlaps them either. Prints the
median of each and the ratios; the goal (issue 37): at most 1.3 for the MNIST CNN and
the spiral MLP at 2 processes.
Run: .venv/bin/python -m benchmarks.startup_floor [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import DATA_DIR, REPO, fashion_root
from scalestudy.compute import ledger
from scalestudy.compute.data import PREPARED_FILES
from scalestudy.compute.launch import launch, local_cpu_sets
from scalestudy.study.run_spec import run_spec
from scalestudy.study.validation import checked_config, study_models

# the floor's process: the interpreter, the imports, the data's bytes; then its clock.
# Pinned to the CPUs the launcher gives the run's rank (local_cpu_sets), as a run is.
FLOOR = """
import importlib, os, sys, time
os.sched_setaffinity(0, {int(c) for c in sys.argv[1].split(",")})
for module in sys.argv[2].split(","):
    importlib.import_module(module)
for name in sys.argv[3:]:
    with open(name, "rb") as f:
        while f.read(1 << 24):
            pass
print(repr(time.time()))
"""
# the floor, and the floor of a torch program that trains with an optimizer:
# torch's optimizers and DDP import torch._dynamo (workloads/mnist_cnn.py says so too)
FLOORS = {"floor": "torch", "floor with torch._dynamo": "torch,torch._dynamo"}

# name -> (study config, N, files the workload reads); small runs: only start-up counts
CASES = {
    "mnist_cnn, 1 process": (
        {
            "workload": "mnist_cnn",
            "params": {"dataset": "fashion_mnist", "max_batches": 1, "max_test_batches": 1},
            "scaling": {"axis": "threads", "points": [1]},
        },
        1,
        [DATA_DIR / "fashion_mnist" / name for name in PREPARED_FILES.values()],
    ),
    "spiral_mlp, 2 processes": (
        {
            "workload": "spiral_mlp",
            "params": {"epochs": 1, "samples": 1000},
            "scaling": {"axis": "devices", "points": [2]},
        },
        2,
        [],
    ),
}


def spec_of(study: dict, n: int) -> dict:
    config = {"data_dir": str(DATA_DIR), "studies": {"bench": study}}
    checked = checked_config(config, REPO / "config" / "schema" / "config.schema.yaml", REPO)
    return run_spec(study_models(checked)["bench"], n, 1, data_dir=str(DATA_DIR))


def floor_s(processes: int, modules: str, files: list[Path]) -> float:
    available = sorted(os.sched_getaffinity(0))
    # as the launcher: disjoint CPUs where there are enough, else all of them shared
    cpu_sets = local_cpu_sets(1, processes, available) or [available] * processes
    with ledger.timed_run_lock():
        start = time.time()
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", FLOOR, ",".join(map(str, cpus)), modules, *map(str, files)],
                stdout=subprocess.PIPE,
                text=True,
            )
            for cpus in cpu_sets
        ]
        ends = [float(p.communicate()[0]) for p in procs]
    if any(p.returncode for p in procs):
        raise RuntimeError("a floor process failed")
    return max(ends) - start


def workload_s(spec: dict) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        record = launch(spec, Path(tmp) / "rep1.json")
    if record["status"] != "ok":
        raise RuntimeError(f"{spec['workload']}: {record['reason']}")
    return record["metrics"]["launch_to_training_s"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    fashion_root()
    os.environ["OMP_NUM_THREADS"] = "1"
    candidates = {}
    for name, (study, n, files) in CASES.items():
        spec = spec_of(study, n)
        for floor, modules in FLOORS.items():
            candidates[(name, floor)] = lambda n=n, m=modules, files=files: floor_s(n, m, files)
        candidates[(name, "workload")] = lambda spec=spec: workload_s(spec)
    times = {key: [] for key in candidates}
    order = list(candidates)
    for k in range(args.rounds):
        for key in order if k % 2 == 0 else reversed(order):
            times[key].append(candidates[key]())
    print(
        f"median of {args.rounds} alternating rounds, 1 thread per process, {os.cpu_count()} CPUs"
    )
    for name in CASES:
        run = statistics.median(times[(name, "workload")])
        print(f"{name}: process start to first timed step {run:.2f} s")
        for floor in FLOORS:
            seconds = statistics.median(times[(name, floor)])
            print(f"  {floor}: {seconds:.2f} s, ratio {run / seconds:.2f}")
    print("goal (issue 37): ratio to the floor at most 1.3")


if __name__ == "__main__":
    main()
