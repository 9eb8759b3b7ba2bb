"""How soon Snakemake sees a finished Slurm job, and the status-check interval that
suits a study, from its earlier records:

    python -m scalestudy.analysis.cluster.polling results/STUDY [results/OTHER ...]

(make slurm-polling)

prints the profile lines to use (profiles/slurm/config.yaml explains them).

The schedule, from the source of snakemake-interface-executor-plugins 9.4 and
snakemake-executor-plugin-slurm 2.8:
- RemoteExecutor._wait_for_jobs (executors/remote.py) sleeps the plugin's
  CommonSettings.init_seconds_before_status_checks once (the Slurm plugin leaves it
  at 0), then loops: check_active_jobs, then RemoteExecutor.sleep(), which sleeps
  next_seconds_between_status_checks (Snakemake's --seconds-between-status-checks
  only until the plugin first sets it, which its first check does).
- Executor.check_active_jobs (snakemake_executor_plugin_slurm/__init__.py) sets that
  interval to --slurm-init-seconds-before-status-checks after a check with no
  active job or one that saw any job end, and otherwise adds 10 s to it, up to 180 s
  (both constants of the code, not settings).
So after a reset the checks come at init, 2*init + 10, 3*init + 30, ... and a job
that ends D seconds after the reset is seen at the first check at or after D. One
job at a time (--jobs 1) is the worst case: with several jobs, any job's end resets
the interval for all. At the end of a run, shutdown() joins the status thread,
which first finishes its current sleep: up to init seconds more.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
from datetime import datetime
from pathlib import Path

# The plugin's growth per check that sees no job end, and its cap (Executor.
# check_active_jobs: `+ 10`, `max_sleep_time = 180`): code, not settings.
GROWTH_S = 10
CAP_S = 180
# The profile keys that decide when a check happens (the rest of the status
# settings, e.g. max-status-checks-per-second, only pace retries within a check).
POLLING_KEYS = ("slurm-init-seconds-before-status-checks", "seconds-between-status-checks")


def check_times(init: int, horizon: float) -> list[int]:
    """Seconds after a reset at which the plugin checks, up to the first at or
    after horizon."""
    times, gap, t = [], init, 0
    while t < horizon:
        t += gap
        times.append(t)
        gap = min(gap + GROWTH_S, CAP_S)
    return times


def seen_at(duration: float, init: int) -> int:
    """When a job that ends `duration` seconds after a reset is seen."""
    return check_times(init, duration)[-1]


def job_durations(runs_csv: Path) -> list[float]:
    """Seconds from submission until each job's last launcher ended (Slurm runs: the
    record's finished_at - slurm_submit_time, the latest of the runs that shared a job,
    as packed repeats do; others: elapsed_s)."""
    durations, jobs = [], {}
    with open(runs_csv, newline="") as f:
        for row in csv.DictReader(f):
            if row.get("slurm_submit_time") and row.get("finished_at"):
                end = datetime.fromisoformat(row["finished_at"])
                submit = datetime.fromisoformat(row["slurm_submit_time"])
                if submit.tzinfo is None:  # Slurm writes local time
                    submit = submit.astimezone()
                seconds = (end - submit).total_seconds()
                job = row.get("slurm_job_id") or f"row {len(jobs)}"
                jobs[job] = max(jobs.get(job, seconds), seconds)
            elif row.get("elapsed_s"):
                durations.append(float(row["elapsed_s"]))
    return list(jobs.values()) + durations


def lost(durations: list[float], init: int, jitter: float) -> tuple[float, list[float]]:
    """Share of the jobs' time lost to polling with one job at a time, and each
    delay: every duration also taken `jitter` shorter and longer (future runs
    vary), plus the final sleep of up to init seconds once per run."""
    steps = [k / 5 - 1 for k in range(11)]  # -1, -0.8, ..., 1
    spread = [d * (1 + s * jitter) for d in durations for s in steps]
    delays = [seen_at(d, init) - d for d in spread]
    return (sum(delays) / len(spread) * len(durations) + init) / sum(durations), delays


def best_init(durations: list[float], jitter: float, most: int) -> int:
    """The interval (whole seconds, 1..most) that loses the least."""
    return min(range(1, most + 1), key=lambda init: (lost(durations, init, jitter)[0], init))


def profile_lines(durations: list[float], jitter: float, most: int, source: str) -> str:
    init = best_init(durations, jitter, most)
    share, delays = lost(durations, init, jitter)
    return "\n".join(
        [
            f"# {source}: {len(durations)} jobs took {min(durations):.0f}-"
            f"{max(durations):.0f} s (median {statistics.median(durations):.0f} s) from",
            "# submission to their end. One job at a time, each is seen "
            f"{statistics.mean(delays):.1f} s after it ends",
            f"# on average (at most {max(delays):.0f} s), and the run ends up to {init} s "
            f"later: {share:.1%} of the jobs' time.",
            f"slurm-init-seconds-before-status-checks: {init}",
            f"seconds-between-status-checks: {init}",
        ]
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("studies", nargs="+", type=Path, help="results/STUDY or its runs.csv")
    parser.add_argument(
        "--jitter", type=float, default=0.02, help="how much a future job may differ (0.02: 2 %%)"
    )
    parser.add_argument(
        "--min-job-age",
        type=int,
        help="with slurm-status-command: squeue, the site's MinJobAge: the "
        "interval stays below a third of it (above that the plugin turns to "
        "sacct)",
    )
    args = parser.parse_args(argv)
    paths = [p / "runs.csv" if p.is_dir() else p for p in args.studies]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        print(f"no runs table: {', '.join(missing)} (run the study first)", file=sys.stderr)
        return 2
    durations = [d for p in paths for d in job_durations(p) if d > 0]
    if not durations:
        print("no finished runs in " + ", ".join(map(str, paths)), file=sys.stderr)
        return 2
    most = CAP_S if args.min_job_age is None else max(1, args.min_job_age // 3)
    print(profile_lines(durations, args.jitter, most, ", ".join(map(str, paths))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
