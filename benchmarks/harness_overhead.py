"""What the harness costs: the MNIST workload through the launcher (worker process,
phase timers, environment and allocation capture, record writing) against the same
training loop in a bare process that does none of it.
Both are whole processes timed from start to exit, alternated round by round.
Run: .venv/bin/python -m benchmarks.harness_overhead [--batches 100 --rounds 5]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.common import DATA_DIR, alternate, fashion_root
from scalestudy.compute.launch import launch

BARE = """
import sys, torch
from scalestudy.compute.data import load_prepared
from workloads.mnist_cnn import Net, train_epoch, evaluate
torch.set_num_threads(1)
torch.manual_seed(1)
root, batches = sys.argv[1], int(sys.argv[2])
tx, ty = load_prepared(root, "train")
vx, vy = load_prepared(root, "test")
model = Net()
opt = torch.optim.Adadelta(model.parameters(), lr=1.0)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.7)
train_epoch(model, opt, tx, ty, 64, batches, torch.Generator().manual_seed(1), "cpu")
sched.step()
evaluate(model, vx, vy, 1000, 2, "cpu")
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--batches", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    root = fashion_root()
    os.environ["OMP_NUM_THREADS"] = "1"
    params = {
        "dataset": "fashion_mnist",
        "epochs": 1,
        "batch_size": 64,
        "test_batch_size": 1000,
        "max_batches": args.batches,
        "max_test_batches": 2,
        "lr": 1.0,
        "gamma": 0.7,
        "seed": 1,
    }
    spec = {
        "study": "bench",
        "point": "t1",
        "repeat": 1,
        "workload": "mnist_cnn",
        "n": 1,
        "params": params,
        "data_dir": str(DATA_DIR),
        "requested": {
            "threads": 1,
            "tasks_per_node": 1,
            "nodes": 1,
            "gpus_per_node": 0,
            "mem_mb": 2000,
        },
    }
    out = Path(tempfile.mkdtemp()) / "rep1.json"
    medians = alternate(
        {
            "bare": lambda: subprocess.run(
                [sys.executable, "-c", BARE, str(root), str(args.batches)], check=True
            ),
            "harness": lambda: launch(spec, out),
        },
        args.rounds,
    )
    ratio = medians["harness"] / medians["bare"]
    print(f"{args.batches} batches, 1 thread, median of {args.rounds} alternating rounds")
    print(f"bare process {medians['bare']:.3f} s, through the harness {medians['harness']:.3f} s")
    print(f"harness / bare = {ratio:.4f} (goal: at most 1.02)")


if __name__ == "__main__":
    main()
