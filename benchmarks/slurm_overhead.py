"""Orchestration overhead on the local test cluster: N jobs of a command study that
sleeps SECONDS, run one at a time (--jobs 1) through the Slurm executor plugin with
the status-check settings of profiles/slurm (the test overlay's squeue and partition
kept, its own polling keys dropped). Prints total / sum of the runs' own wall times
and, per job, where the rest went: queue wait, start-up in the job, the job's end,
the polling delay (Slurm has ended the job -> Snakemake logs it finished) and the
next submission. Needs root (it starts tests/slurm/cluster.sh).

  .venv/bin/python -m benchmarks.slurm_overhead --seconds 20            # 4 jobs
  .venv/bin/python -m benchmarks.slurm_overhead --seconds 120 --count 3
  ... --polling old      the test overlay's 2 s (what this benchmark used before)
  ... --init 13          another slurm-init-seconds-before-status-checks
  ... --pack             the repeats packed into one job (submission.pack_repeats);
                         pick --init for the job's whole length (make slurm-polling)

Measured (2026-11-23, test cluster, quiet machine): 20-s runs, 4 jobs 1.62 before
packing; packed with --init 1: 4 repeats 1.332, 6 repeats 1.302; 120-s runs, 3 packed
with --init 3: 1.088. What is left is Snakemake's start in the job (~5 s), each
member's own start in it (~3 s: the jobstep executor starts a Snakemake per member),
and the plugin's status interval, which grows by 10 s per check that sees no job end
(hard-coded in the plugin), so a long job is seen up to one interval late; at the
end, Snakemake's shutdown waits out the status loop's current sleep (up to --init).
Later the same day, with scipy.stats no longer imported when the workflow is parsed:
packed members start 2.4 s apart instead of 3.2 s (6 repeats, --init 1: 1.296 against
1.298 in the same hour, the polling delay differing by 2.6 s); 8 packed repeats with
the --init that scalestudy.analysis.cluster.polling picks for them (8): 1.270 (1.317 before,
with --init 9); 4 unpacked jobs, --init 10: 1.614.

Times: Snakemake's log lines are stamped as they arrive; Slurm's job ends are
sampled with squeue every 0.25 s (so they are up to 0.25 s late); Slurm's own submit
and start times have 1 s resolution.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import fields
from datetime import datetime
from pathlib import Path

import yaml

from benchmarks.common import REPO
from scalestudy.analysis.cluster.polling import POLLING_KEYS, best_init, check_times

CLUSTER = REPO / "tests" / "slurm" / "cluster.sh"
SUBMITTED = re.compile(r"Job (\S+) has been submitted with SLURM jobid (\d+)")
FINISHED = re.compile(r"Finished jobid: (\d+)")
CHECK = re.compile(r"Checking the status of \d+ active jobs|No active jobs; skipping")


def epoch(text: str) -> float:
    """Seconds since the epoch of an ISO time: Slurm's are local and naive (read as
    local time), the launcher's carry their zone."""
    return datetime.fromisoformat(text).timestamp()


class Stamped:
    """Snakemake's output, each line with the time it arrived."""

    def __init__(self, proc: subprocess.Popen):
        self.lines: list[tuple[float, str]] = []
        self.thread = threading.Thread(target=self.read, args=(proc,), daemon=True)
        self.thread.start()

    def read(self, proc):
        for line in proc.stdout:
            self.lines.append((time.time(), line.rstrip("\n")))

    def times(self, pattern: re.Pattern) -> list[tuple[float, re.Match]]:
        return [(t, m) for t, line in self.lines if (m := pattern.search(line))]


class JobEnds:
    """When squeue first shows each job ended (COMPLETED or another final state: what
    the plugin's squeue query waits for; COMPLETING is not yet)."""

    def __init__(self, period: float = 0.25):
        self.ends: dict[str, float] = {}
        self.stop = threading.Event()
        self.period = period
        self.thread = threading.Thread(target=self.sample, daemon=True)
        self.thread.start()

    def sample(self):
        while not self.stop.wait(self.period):
            out = subprocess.run(
                ["squeue", "-h", "-t", "all", "-o", "%i|%T"],
                capture_output=True,
                text=True,
                check=False,
            ).stdout
            now = time.time()
            for line in out.splitlines():
                job, _, state = line.partition("|")
                if state not in ("PENDING", "CONFIGURING", "RUNNING", "COMPLETING"):
                    self.ends.setdefault(job, now)


def overlay(tmp: Path, polling: str, init: int | None) -> Path:
    """The test overlay profile, with or without its own polling settings."""
    settings = yaml.safe_load((REPO / "tests" / "slurm" / "profile" / "config.yaml").read_text())
    if polling == "profile":
        for key in POLLING_KEYS:
            settings.pop(key, None)
    if init is not None:
        settings["slurm-init-seconds-before-status-checks"] = init
        settings["seconds-between-status-checks"] = init
    folder = tmp / "overlay"
    folder.mkdir()
    (folder / "config.yaml").write_text(yaml.safe_dump(settings))
    return folder


def plugin_default() -> int:
    """The plugin's own slurm-init-seconds-before-status-checks."""
    from snakemake_executor_plugin_slurm import ExecutorSettings

    field = next(
        f for f in fields(ExecutorSettings) if f.name == "init_seconds_before_status_checks"
    )
    return field.default


def effective(tmp: Path, over: Path) -> dict:
    merged = {}
    for profile in (tmp / "profiles" / "slurm", over):
        merged.update(yaml.safe_load((profile / "config.yaml").read_text()))
    return {key: merged.get(key) for key in POLLING_KEYS}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=20, help="length of each job's run")
    parser.add_argument("--count", type=int, help="jobs (default: 4 up to 60 s, else 3)")
    parser.add_argument("--polling", choices=("profile", "old"), default="profile")
    parser.add_argument("--init", type=int, help="slurm-init-seconds-before-status-checks")
    parser.add_argument("--keep-cluster", action="store_true")
    parser.add_argument(
        "--pack", action="store_true", help="submission.pack_repeats: the repeats in one job"
    )
    args = parser.parse_args()
    count = args.count or (4 if args.seconds <= 60 else 3)
    subprocess.run(["bash", str(CLUSTER), "start"], check=True)
    tmp = Path(tempfile.mkdtemp())
    try:
        for part in ("Snakefile", "rules", "scripts", "config", "profiles"):
            src = REPO / part
            (shutil.copytree if src.is_dir() else shutil.copy2)(src, tmp / part)
        study = {
            "workload": "command",
            "params": {"command": ["sleep", f"{args.seconds:g}"]},
            "scaling": {"axis": "threads", "points": [1]},
            "repeats": count,
            "resources": {"mem_mb": 200, "runtime": math.ceil(args.seconds / 60) + 1},
        }
        if args.pack:
            study["submission"] = {"pack_repeats": True}
        (tmp / "config" / "config.yaml").write_text(yaml.safe_dump({"studies": {"bench": study}}))
        over = overlay(tmp, args.polling, args.init)
        settings = effective(tmp, over)
        snakemake = [str(Path(sys.executable).parent / "snakemake")]
        profiles = ["--profile", "profiles/slurm", "--profile", str(over)]
        records = [f"results/bench/runs/t1/rep{k}.json" for k in range(1, count + 1)]
        ends = JobEnds()
        start = time.time()
        proc = subprocess.Popen(
            snakemake + profiles + ["--jobs", "1", "--verbose"] + records,
            cwd=tmp,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        log = Stamped(proc)
        proc.wait()
        end = time.time()
        log.thread.join()
        ends.stop.set()
        ends.thread.join()
        if proc.returncode:
            print("\n".join(line for _, line in log.lines[-40:]))
            for job_log in sorted((tmp / ".snakemake" / "slurm_logs").rglob("*.log")):
                print(f"----- {job_log.name}:", *job_log.read_text().splitlines()[-15:], sep="\n")
            raise SystemExit(f"snakemake failed ({proc.returncode})")
        if args.pack:
            report_packed(args, count, settings, tmp, records, log, ends.ends, start, end)
        else:
            report(args, count, settings, tmp, records, log, ends.ends, start, end)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        if not args.keep_cluster:
            subprocess.run(["bash", str(CLUSTER), "stop"], check=False)


def report(args, count, settings, tmp, records, log, slurm_end, start, end) -> None:
    total = end - start
    submitted = {m[2]: (t, m[1]) for t, m in log.times(SUBMITTED)}  # slurm id -> (t, job)
    finished = {m[1]: t for t, m in log.times(FINISHED)}  # snakemake job -> t
    checks = [t for t, _ in log.times(CHECK)]
    rows = []
    for path in records:
        rec = json.loads((tmp / path).read_text())
        env = rec["environment"]
        slurm_id = str(env["slurm_job_id"])
        t_submit, job = submitted[slurm_id]
        rows.append(
            {
                "job": slurm_id,
                "submit": t_submit,
                "queue": epoch(env["slurm_start_time"]) - epoch(env["slurm_submit_time"]),
                "startup": epoch(rec["started_at"]) - epoch(env["slurm_start_time"]),
                "workload": rec["wall_s"],
                "job_end": slurm_end[slurm_id] - epoch(rec["started_at"]) - rec["wall_s"],
                "polling": finished[job] - slurm_end[slurm_id],
                "seen": finished[job],
                "duration": slurm_end[slurm_id] - t_submit,
            }
        )
    rows.sort(key=lambda r: r["submit"])
    for row, after in zip(rows, rows[1:] + [None], strict=True):
        row["next_submit"] = after["submit"] - row["seen"] if after else None
    walls = [r["workload"] for r in rows]
    own = sum(walls)
    print(
        f"{count} jobs of `sleep {args.seconds:g}`, --jobs 1, polling "
        + ", ".join(f"{k}={v}" for k, v in settings.items() if v is not None)
    )
    print(
        f"total {total:.1f} s, runs' own wall times "
        f"{' + '.join(f'{w:.1f}' for w in walls)} = {own:.1f} s: "
        f"total / runs = {total / own:.3f}"
    )
    print(
        f"  workflow start to first submission {rows[0]['submit'] - start:.1f} s, "
        f"last job seen to the end of snakemake {end - rows[-1]['seen']:.1f} s "
        "(shutdown waits out the status loop's current sleep)"
    )
    cols = ("queue", "startup", "workload", "job_end", "polling", "next_submit")
    print(
        "  job   queue  start-up  workload  job end  polling  next submit"
        "   (seconds; job end: workload end -> Slurm ends the job)"
    )
    for r in rows:
        cells = [f"{r[c]:8.1f}" if r[c] is not None else "       -" for c in cols]
        print(f"  {r['job']:>4} " + " ".join(cells))
    means = [sum(r[c] for r in rows if r[c] is not None) / len(rows) for c in cols[:-1]]
    gaps = [r["next_submit"] for r in rows if r["next_submit"] is not None]
    means.append(sum(gaps) / len(gaps) if gaps else 0.0)
    print("  mean " + " ".join(f"{m:8.1f}" for m in means))
    init = settings["slurm-init-seconds-before-status-checks"] or plugin_default()
    if checks:
        gaps_s = [b - a for a, b in zip(checks, checks[1:], strict=False)]
        print(f"  status checks at intervals of {', '.join(f'{g:.0f}' for g in gaps_s)} s")
        durations = [r["duration"] for r in rows]
        schedule = ", ".join(f"{t:g}" for t in check_times(init, max(durations) + 60))
        ended = ", ".join(f"{d:.1f}" for d in durations)
        print(
            f"  the plugin's schedule after a reset (init={init}): checks at {schedule} s; "
            f"jobs ended {ended} s after their submission"
        )
        print(
            f"  analysis.polling's interval for these jobs: {best_init(durations, 0.02, 180)}"
            " (--jitter 0.02)"
        )


def report_packed(args, count, settings, tmp, records, log, slurm_end, start, end) -> None:
    """One job ran every repeat, one after another: where its time went."""
    total = end - start
    recs = sorted((json.loads((tmp / p).read_text()) for p in records),
                  key=lambda r: epoch(r["started_at"]))  # fmt: skip
    jobs = {str(r["environment"]["slurm_job_id"]) for r in recs}
    walls = [r["wall_s"] for r in recs]
    own = sum(walls)
    env = recs[0]["environment"]
    (slurm_id,) = jobs
    seen = min(t for t, _ in log.times(FINISHED) if t >= slurm_end[slurm_id])
    pairs = zip(recs, recs[1:], strict=False)
    gaps = [epoch(b["started_at"]) - epoch(a["finished_at"]) for a, b in pairs]
    print(f"{count} repeats of `sleep {args.seconds:g}` packed into {len(jobs)} Slurm job, "
          + ", ".join(f"{k}={v}" for k, v in settings.items() if v is not None))  # fmt: skip
    print(f"total {total:.1f} s, runs' own wall times {' + '.join(f'{w:.1f}' for w in walls)}"
          f" = {own:.1f} s: total / runs = {total / own:.3f}")  # fmt: skip
    submitted = next(t for t, m in log.times(SUBMITTED) if m[2] == slurm_id)
    print(
        f"  workflow start to submission {submitted - start:.1f} s, queue "
        f"{epoch(env['slurm_start_time']) - epoch(env['slurm_submit_time']):.1f} s, start-up "
        f"{epoch(recs[0]['started_at']) - epoch(env['slurm_start_time']):.1f} s, between runs "
        f"{' + '.join(f'{g:.1f}' for g in gaps)} s, job end "
        f"{slurm_end[slurm_id] - epoch(recs[-1]['finished_at']):.1f} s, polling "
        f"{seen - slurm_end[slurm_id]:.1f} s, to the end of snakemake {end - seen:.1f} s"
    )


if __name__ == "__main__":
    main()
