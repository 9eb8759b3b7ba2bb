"""How long Snakemake takes to build the DAG of a big study (dry run): a study of
1,000 points, and a grid of 5,000 cells (50 series of 100 layouts each).
Run: .venv/bin/python -m benchmarks.dag_dry_run [--points 1000] [--lines 50 --along 100]
"""

from __future__ import annotations

import argparse
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from benchmarks.common import REPO


def plain_study(points: int) -> dict:
    return {
        "workload": "mnist_cnn",
        "repeats": 1,
        "scaling": {"axis": "threads", "points": list(range(1, points + 1))},
        # points bigger than this machine: a local dry run refuses them
        "oversubscribe": True,
    }


def grid_study(lines: int, along: int) -> dict:
    """A grid of lines x along cells (processes per node x threads), every one a job."""
    return {
        "workload": "spiral_mlp",
        "repeats": 1,
        "scaling": {
            "axis": "cores",
            "grid": {
                "processes_per_node": list(range(1, lines + 1)),
                "threads": list(range(1, along + 1)),
            },
            "max_cells": lines * along,
        },
        "oversubscribe": True,
    }


def dry_run(study: dict) -> tuple[float, float, int]:
    """Seconds of `snakemake -n` of a workflow with this one study, its CPU seconds (on
    a shared machine the wall time counts the others' load), and its run jobs."""
    tmp = Path(tempfile.mkdtemp())
    try:
        for part in ("Snakefile", "rules", "scripts", "config"):
            src = REPO / part
            (shutil.copytree if src.is_dir() else shutil.copy2)(src, tmp / part)
        (tmp / "config" / "config.yaml").write_text(yaml.safe_dump({"studies": {"big": study}}))
        snakemake = Path(sys.executable).parent / "snakemake"
        cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        proc = subprocess.run(
            [str(snakemake), "-n", "--cores", "2"], cwd=tmp, capture_output=True, text=True
        )
        elapsed = time.perf_counter() - start
        used = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu_s = used.ru_utime + used.ru_stime - cpu.ru_utime - cpu.ru_stime
        if proc.returncode != 0:
            sys.exit(f"the dry run failed:\n{proc.stdout}{proc.stderr}")
    finally:
        shutil.rmtree(tmp)
    jobs = re.search(r"run_point\s+(\d+)", proc.stdout)
    return elapsed, cpu_s, int(jobs.group(1)) if jobs else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--points", type=int, default=1000)
    parser.add_argument("--lines", type=int, default=50)
    parser.add_argument("--along", type=int, default=100)
    args = parser.parse_args()
    cases = {
        f"{args.points} points": (plain_study(args.points), 15),
        f"a {args.lines * args.along}-cell grid": (grid_study(args.lines, args.along), 30),
    }
    for name, (study, goal) in cases.items():
        seconds, cpu_s, jobs = dry_run(study)
        print(f"dry run of {name}: {seconds:.2f} s (CPU {cpu_s:.2f} s), {jobs} run jobs "
              f"(goal: under {goal} s)")  # fmt: skip


if __name__ == "__main__":
    main()
