"""How far sbatch --test-only's predicted start is from the real one, on the local test
cluster: a sequence of jobs of mixed shapes (one CPU, a whole node, both nodes) that
fill the two nodes, each asked with --test-only just before it is submitted with the
same options; afterwards each job's real start from sacct. Prints, per job, the
predicted wait and the real one, and the median and 90th percentile of the error
(real start minus predicted start, and its absolute value). --test-only sees only the
running jobs, not the pending ones before it: where jobs queue, it predicts too early.
Needs root (it starts tests/slurm/cluster.sh unless --keep-cluster finds it up).

  .venv/bin/python -m benchmarks.queue_prediction                 # 10 jobs
  .venv/bin/python -m benchmarks.queue_prediction --jobs 16 --gap 3
  ... --tight      every time limit 1 minute, sleeps at most 50 s: limits closer to
                   the run times

Measured (2026-11-25, test cluster, Slurm 22.05.8, 10 jobs 2 s apart): error median
-184 s, 90th percentile -53 s (absolute: 184 s, 315 s); --tight: -104 s and +1 s
(absolute: 104 s, 191 s). The predictions came late: Slurm took every job ahead,
pending ones included here, to run to its time limit, and these ended well before.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import time
from datetime import datetime

import numpy as np

from benchmarks.common import REPO
from scalestudy.analysis.cluster.queue import parse_test_only

CLUSTER = REPO / "tests" / "slurm" / "cluster.sh"
# (name, sbatch options, seconds of sleep): short jobs that fill the two nodes in turn
SHAPES = [
    ("1 cpu", ["-N1", "-n1", "-c1", "-t", "2"], 40),
    ("node", ["-N1", "--exclusive", "-t", "2"], 30),
    ("2 nodes", ["-N2", "--exclusive", "-t", "2"], 20),
    ("1 cpu", ["-N1", "-n1", "-c1", "-t", "2"], 60),
    ("node", ["-N1", "--exclusive", "-t", "1"], 25),
]


def sbatch(options: list[str], seconds: int, test_only: bool) -> subprocess.CompletedProcess:
    command = ["sbatch", "--parsable", "-p", "debug", "-o", "/dev/null", *options,
               "--wrap", f"sleep {seconds}"]  # fmt: skip
    if test_only:
        command.insert(1, "--test-only")
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


def real_starts(ids: list[str]) -> dict[str, datetime]:
    """Each job's Start as sacct has it (Slurm's local time, 1-s resolution)."""
    out = subprocess.run(
        ["sacct", "-n", "-P", "-X", "-j", ",".join(ids), "--format=JobID,Start"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    starts = {}
    for line in out.splitlines():
        job, _, start = line.partition("|")
        try:
            starts[job] = datetime.fromisoformat(start)
        except ValueError:
            continue
    return starts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10)
    parser.add_argument("--gap", type=float, default=2.0, help="seconds between submissions")
    parser.add_argument("--keep-cluster", action="store_true", help="leave it running")
    parser.add_argument("--tight", action="store_true", help="1-minute limits, sleeps <= 50 s")
    args = parser.parse_args()
    subprocess.run(["bash", str(CLUSTER), "start"], check=True, timeout=600)
    rows = []
    try:
        for k in range(args.jobs):
            name, options, seconds = SHAPES[k % len(SHAPES)]
            if args.tight:  # the limit just above the sleep: -t is the option's last pair
                options, seconds = [*options[:-1], "1"], min(seconds, 50)
            asked = datetime.now().replace(microsecond=0)
            probe = sbatch(options, seconds, test_only=True)
            found = parse_test_only(probe.stderr + probe.stdout)
            job = sbatch(options, seconds, test_only=False).stdout.strip().split(";")[0]
            rows.append({"job": job, "shape": name, "asked": asked,
                         "predicted": found and found["start_time"]})  # fmt: skip
            time.sleep(args.gap)
        ids = [r["job"] for r in rows]
        while True:  # until every job has started (sacct knows its Start)
            starts = real_starts(ids)
            if len(starts) == len(ids):
                break
            time.sleep(5)
    finally:
        if not args.keep_cluster:
            subprocess.run(["bash", str(CLUSTER), "stop"], check=False, timeout=120)
    errors = []
    print(f"{'job':>6} {'shape':>8} {'predicted wait':>15} {'real wait':>10} {'error':>7}")
    for r in rows:
        start = starts[r["job"]]
        if r["predicted"] is None:
            print(f"{r['job']:>6} {r['shape']:>8} {'(no prediction)':>15}")
            continue
        error = (start - r["predicted"]).total_seconds()
        errors.append(error)
        predicted = (r["predicted"] - r["asked"]).total_seconds()
        real = (start - r["asked"]).total_seconds()
        print(f"{r['job']:>6} {r['shape']:>8} {predicted:>15.0f} {real:>10.0f} {error:>7.0f}")
    e = np.array(errors)
    print(f"{len(e)} jobs; error = real start - predicted start (s): median {np.median(e):.0f}, "
          f"90th percentile {np.percentile(e, 90):.0f}; absolute: median "
          f"{np.median(abs(e)):.0f}, 90th percentile {np.percentile(abs(e), 90):.0f}")  # fmt: skip
    print("options:", *(shlex.join(s[1]) + f" sleep {s[2]}" for s in SHAPES), sep="\n  ")


if __name__ == "__main__":
    main()
