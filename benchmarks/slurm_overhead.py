"""Orchestration overhead on the local test cluster: a 4-job study (2 points x 2
repeats of the MNIST CNN, about 15-20 s each) run one job at a time through the
Slurm executor plugin. Prints total wall time / sum of the runs' own wall times,
and the overhead per job. Needs root (it starts tests/slurm/cluster.sh).
Run: .venv/bin/python -m benchmarks.slurm_overhead [--batches 100]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import yaml

from benchmarks.common import REPO


def seconds(a: str, b: str) -> float:
    """b - a for ISO times from Slurm (local, naive) and the launcher (UTC); the
    test machine runs on UTC, so the two clocks agree."""
    return (
        datetime.fromisoformat(b).replace(tzinfo=None)
        - datetime.fromisoformat(a).replace(tzinfo=None)
    ).total_seconds()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--batches", type=int, default=100)
    parser.add_argument("--keep-cluster", action="store_true")
    args = parser.parse_args()
    cluster = REPO / "tests" / "slurm" / "cluster.sh"
    subprocess.run(["bash", str(cluster), "start"], check=True)
    tmp = Path(tempfile.mkdtemp())
    try:
        for part in ("Snakefile", "rules", "scripts", "config", "profiles"):
            src = REPO / part
            (shutil.copytree if src.is_dir() else shutil.copy2)(src, tmp / part)
        study = {
            "workload": "mnist_cnn",
            "repeats": 2,
            "params": {
                "dataset": "fashion_mnist",
                "epochs": 1,
                "max_batches": args.batches,
                "max_test_batches": 1,
            },
            "scaling": {"axis": "threads", "points": [1, 2]},
            "resources": {"mem_mb": 2000, "runtime": 10},
        }
        (tmp / "config" / "config.yaml").write_text(yaml.safe_dump({"studies": {"bench": study}}))
        snakemake = [str(Path(sys.executable).parent / "snakemake")]
        profiles = [
            "--profile",
            "profiles/slurm",
            "--profile",
            str(REPO / "tests" / "slurm" / "profile"),
        ]
        # data preparation is local and not part of the runs: do it first
        subprocess.run(
            snakemake + ["--cores", "1", "data/fashion_mnist/ready.json"],
            cwd=tmp,
            check=True,
            capture_output=True,
        )
        records = [f"results/bench/runs/t{n}/rep{k}.json" for n in (1, 2) for k in (1, 2)]
        start = time.perf_counter()
        subprocess.run(
            snakemake + profiles + ["--jobs", "1"] + records,
            cwd=tmp,
            check=True,
            capture_output=True,
        )
        total = time.perf_counter() - start
        recs = [json.loads((tmp / r).read_text()) for r in records]
        walls = [r["wall_s"] for r in recs]
        own = sum(walls)
        print(
            f"4 jobs, one at a time: total {total:.1f} s, runs' own wall times "
            f"{' + '.join(f'{w:.1f}' for w in walls)} = {own:.1f} s"
        )
        print(
            f"total / runs = {total / own:.2f} (goal: at most 1.3); "
            f"overhead {(total - own) / len(walls):.1f} s per job"
        )
        queue = [
            seconds(r["environment"]["slurm_submit_time"], r["environment"]["slurm_start_time"])
            for r in recs
        ]
        step = [seconds(r["environment"]["slurm_start_time"], r["started_at"]) for r in recs]
        rest = (total - own - sum(queue) - sum(step)) / len(recs)
        print(
            f"per job: queue wait {sum(queue) / len(recs):.1f} s; job start to launcher "
            f"(Snakemake's job step parsing the workflow) {sum(step) / len(recs):.1f} s; "
            f"the rest (submission, status polling until the end is seen) {rest:.1f} s"
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        if not args.keep_cluster:
            subprocess.run(["bash", str(cluster), "stop"], check=False)


if __name__ == "__main__":
    main()
