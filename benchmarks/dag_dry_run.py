"""How long Snakemake takes to build the DAG of a 1,000-point study (dry run).
Run: .venv/bin/python -m benchmarks.dag_dry_run [--points 1000]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from benchmarks.common import REPO


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--points", type=int, default=1000)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp())
    for part in ("Snakefile", "rules", "scripts", "config"):
        src = REPO / part
        (shutil.copytree if src.is_dir() else shutil.copy2)(src, tmp / part)
    config = {
        "studies": {
            "big": {
                "workload": "mnist_cnn",
                "repeats": 1,
                "scaling": {"axis": "threads", "points": list(range(1, args.points + 1))},
                # points bigger than this machine: a local dry run refuses them
                "oversubscribe": True,
            }
        }
    }
    (tmp / "config" / "config.yaml").write_text(yaml.safe_dump(config))
    snakemake = Path(sys.executable).parent / "snakemake"
    start = time.perf_counter()
    subprocess.run(
        [str(snakemake), "-n", "--cores", "2", "--quiet"], cwd=tmp, check=True, capture_output=True
    )
    elapsed = time.perf_counter() - start
    print(f"dry run of {args.points} points: {elapsed:.2f} s (goal: under 15 s)")
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
