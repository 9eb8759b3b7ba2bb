"""Does aggregating a big CSV of times measured elsewhere stay within memory and time?

Writes a measured CSV (N,time_s; N from 1 to 10, times from a curve with 5 % noise) of
each size, and aggregates it as the workflow does (scalestudy.analysis.pipeline: read,
summarise, fit, the findings, then runs.csv, summary.csv and analysis.json written),
each in a process of its own, whose peak memory is its own maximum resident set (from
wait4) and whose time is its whole run, imports included. The same is done with the
package as it was at an earlier commit (default 90acaa5, where each line was made into
a record of its own), side by side in one run. Goals at 10^6 lines: a peak under 1 GB
and under 60 s here.

On this 2-core machine, quiet (2026-11-28, --before-max 1000000):
        lines | before MB      s |  now MB      s |  memory   time  (before / now)
        10000 |       202    3.1 |     196    2.5 |    1.0x   1.2x
       100000 |       467   10.5 |     191    4.4 |    2.4x   2.4x
      1000000 |      3324   90.2 |     630   27.5 |    5.3x   3.3x
(the fault probe's own CSV of 10^6 lines took 15.1 GB and 133 s before). Now the
memory grows with the runs table itself (about 0.5 KB a line), and most of the time
is writing runs.csv.

Run: .venv/bin/python -m benchmarks.measured_rows [--sizes 10000 100000 1000000]
     [--before 90acaa5] [--before-max 1000000]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks.common import REPO

# The aggregation as scripts/aggregate.py makes it, in the package on PYTHONPATH.
CHILD = """
import sys
from pathlib import Path
from scalestudy.analysis.pipeline import aggregate
from scalestudy.study.validation import checked_config, study_models

schema, csv, out = sys.argv[1:]
config = {"studies": {"m": {"measured": csv, "scaling": {"axis": "devices", "device": "gpu"}}}}
study = study_models(checked_config(config, schema, Path.cwd()))["m"]
result = aggregate(study, [csv])
result.write({name: Path(out) / f"{name}.{kind}" for name, kind in
              (("runs", "csv"), ("summary", "csv"), ("analysis", "json"))})
"""


def write_csv(path: Path, lines: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    n = np.arange(lines) % 10 + 1
    times = 171.0 / np.minimum(n, 6) ** 0.7 * rng.lognormal(0.0, 0.05, lines)
    pd.DataFrame({"N": n, "time_s": times}).to_csv(path, index=False)


def run(package: Path, csv: Path, out: Path) -> tuple[float, float]:
    """(peak resident MB, seconds) of one aggregation with the package in `package`."""
    out.mkdir(parents=True, exist_ok=True)
    schema = package / "config" / "schema" / "config.schema.yaml"
    env = dict(os.environ, PYTHONPATH=str(package))
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(schema), str(csv), str(out)],
        cwd=package,
        env=env,
        stderr=subprocess.DEVNULL,
    )
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"aggregation of {csv} with {package} failed")
    return usage.ru_maxrss / 1024, seconds


def earlier_package(commit: str, into: Path) -> Path:
    """The workflow's package and config schema as they were at `commit`."""
    archive = subprocess.run(
        ["git", "archive", commit, "scalestudy", "config", "workloads"],
        cwd=REPO,
        capture_output=True,
        check=True,
    )
    into.mkdir()
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--before", default="90acaa5", help="the earlier commit")
    parser.add_argument("--before-max", type=int, default=1_000_000)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        before = earlier_package(args.before, tmp / "before")
        print(
            f"{'lines':>9} | {'before MB':>9} {'s':>6} | {'now MB':>7} {'s':>6} | "
            f"{'memory':>7} {'time':>6}  (before / now)"
        )
        for lines in args.sizes:
            csv = tmp / f"times-{lines}.csv"
            write_csv(csv, lines)
            now_mb, now_s = run(REPO, csv, tmp / "now")
            if lines <= args.before_max:
                was_mb, was_s = run(before, csv, tmp / "was")
                was = f"{was_mb:9.0f} {was_s:6.1f}"
                ratio = f"{was_mb / now_mb:6.1f}x {was_s / now_s:5.1f}x"
            else:
                was, ratio = f"{'(not run)':>16}", ""
            print(f"{lines:9d} | {was} | {now_mb:7.0f} {now_s:6.1f} | {ratio}", flush=True)


if __name__ == "__main__":
    main()
