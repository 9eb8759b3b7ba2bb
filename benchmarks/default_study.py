"""Does the default study decide? `make report`'s study (config/config.yaml) run end to
end several times, each from a fresh results folder (a temporary copy of the workflow;
the data set prepared once, in data/, and shared: no download), with `--hog` beside a
CPU hog on the last core (a busy loop at nice 19, as a user's other program would
be). Prints, for each run, decided or not and why, its rounds, each point's train
times and CV, and the wall time of the workflow (set-up excluded: the virtual
environment and the data set exist before it starts); then the share decided.
`--simulate K` instead plays the study's rounds offline K times (the adaptive rules
as the workflow applies them, on drawn times; see simulate).

Run: .venv/bin/python -m benchmarks.default_study [--runs 10] [--hog [own-session]] [--keep]
     .venv/bin/python -m benchmarks.default_study --simulate 300 [--config PATH]

The goal (issue 37): decided in >= 9 of 10 quiet runs and >= 7 of 10 with the hog,
each under 5 minutes. Figures are only worth reporting from a machine nobody else
loads.

Simulated (2026-11-27, 300 studies each; hiccups of 0.7-2.5 s in 15 % / 30 % of the
runs at N = 2; of 1-4 s in 15 % / 30 %), before the indifference zone (recommend.
indifference): the default (40 batches, 3 first runs, target 10 %, max_repeats 8,
max_rounds 4) decided 59 / 26 / 55 / 22 %: one slow run among 3 made the CI target
look out of reach at max_repeats (adaptive.half_width_at_max_repeats), and round 1
was the last; 80 batches, 4 first runs, target 15 %, max_repeats 6, max_rounds 3
decided 99.7 / 100 / 84 / 70 %, in 203-207 s median (runs and rounds). With the zone
(an unreachable CI target no longer keeps a clear step undecided) the default as it is
decides 100 / 100 / 99.7 / 99.7 % in 116-118 s median, 120-218 s p90, so it stays as
it is: the larger study would double its time for nothing (the report's aggregation,
figures and page come on top of these times).

Measured quiet (2026-11-27, 12:44-13:01 UTC, nothing else running on the machine):
`--runs 10` decided 10 of 10, each "ask for N = 2" (speedup 1.64-1.77), in 88-172 s
(8 in round 1, 2 in round 2); one (t2 CV 12.1 %) decided on its step with the CI target
out of reach. A fresh clone's `make report` then: decided, 3:27 with set-up.
Then `--runs 3 --hog` (stopped after 2): neither decided, 293 s and 298 s, at max_rounds;
t1's runs clean (8.4-9.2 s), every t2 run on shared CPUs (21-24 s against 5 s quiet) and
left out, so N = 2 has no usable run: beside a hog on the other core the goal of 7 in 10
cannot be met without using runs the workflow must flag.

Since a run's processes stay in the user's session (compute/processes.py: a session of
their own was a scheduling group of its own, beside which the nice-19 hog took a full
share), 2026-11-27 15:00 UTC, nothing else running: `--hog` (same session), 3 runs, none
decided (152-158 s): t2 5.1-7.1 s against 5.0 s quiet, every one flagged (others used
0.40-0.50 of its 2 CPUs, the time the run leaves idle; the run used 1.49-1.59); `--hog
own-session`, 1 run, not decided (311 s): t2 22.8-23.6 s, every one flagged. Each report's
first line: "Not decided: mnist_threads. To decide it, stop the other programs that used
its CPUs (runs left out of the answer for it: 8 at N = 2), then run make redo
STUDY=mnist_threads, then make report: ...".

Measured here (2026-11-27, a machine shared with other engineers: load 3-12, so not
the quiet figures the goal asks for), at 80 batches and 4 first runs: 2 runs, neither
decided, 371 s and 1261 s: the runs at 2 threads were flagged "shared CPUs" (others
took more than 10 % of their 2 CPUs) and left out, while t1's were clean (CV 3.4 %,
18.1-19.6 s). With
--hog, a 2-thread run's epochs took 23 s against 5 s (the nice-19 hog still took 0.99
of its 2 cores: others_cores), every one flagged: beside a hog on the other core the
2-thread point cannot be measured, whatever the study's size.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

import pandas as pd
import yaml

from benchmarks.common import DATA_DIR, REPO, fashion_root
from scalestudy.analysis.decisions.adaptive import RoundPlan
from scalestudy.analysis.tables import TIME_COLUMNS
from scalestudy.model import SCHEMA_FILE
from scalestudy.study.validation import checked_config, study_models

WORKFLOW_PARTS = ["Snakefile", "rules", "scripts", "config", "profiles", "workloads", "report"]
GOAL_S = 300
HOGS = ("same-session", "own-session")


@contextlib.contextmanager
def cpu_hog(where: str | None):
    """A busy loop on the last CPU at nice 19 while the block runs (none if not `where`):
    started from the study's terminal ("same-session"), or as from another terminal
    ("own-session": a session of its own, so a scheduling group of its own where the
    kernel groups by session, which its nice value does not lower)."""
    if not where:
        yield None
        return
    cpu = max(os.sched_getaffinity(0))
    hog = subprocess.Popen(
        ["nice", "-n", "19", "taskset", "-c", str(cpu), sys.executable, "-c", "while True: pass"],
        start_new_session=where == "own-session",
    )
    try:
        yield cpu
    finally:
        hog.terminate()
        hog.wait()


def fresh_copy() -> Path:
    """A temporary copy of the workflow that reads the prepared data set in place."""
    root = Path(tempfile.mkdtemp(prefix="default-study-"))
    for part in WORKFLOW_PARTS:
        src = REPO / part
        (shutil.copytree if src.is_dir() else shutil.copy2)(src, root / part)
    (root / "data").symlink_to(DATA_DIR)
    return root


def run_once(root: Path) -> tuple[float, subprocess.CompletedProcess]:
    snakemake = Path(sys.executable).parent / "snakemake"
    env = dict(os.environ, PYTHONPATH=str(REPO), PATH=f"{snakemake.parent}:{os.environ['PATH']}")
    start = time.perf_counter()
    proc = subprocess.run(
        [str(snakemake), "--profile", "profiles/local"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
    )
    return time.perf_counter() - start, proc


def report(root: Path) -> str:
    path = root / "results" / "report.html"
    return path.read_text() if path.exists() else ""


def adaptive_studies(root: Path) -> list[str]:
    return sorted(p.parent.name for p in root.glob("results/*/rounds"))


def describe(root: Path, study: str) -> dict:
    """What one adaptive study's rounds and runs came to."""
    folder = root / "results" / study
    plans = [RoundPlan.load(p) for p in sorted(folder.glob("rounds/round*.json"),
                                               key=lambda p: int(p.stem[5:]))]  # fmt: skip
    last = plans[-1]
    runs = pd.read_csv(folder / "runs.csv")
    config = yaml.safe_load((root / "config" / "config.yaml").read_text())
    # the schema fills in the defaults (the time basis among them)
    checked = checked_config(config, root / SCHEMA_FILE, root)
    column = TIME_COLUMNS[study_models(checked)[study].time]
    points = {}
    for point, group in runs.groupby("point"):
        times = pd.to_numeric(group[column], errors="coerce")
        ok = group["status"] == "ok"
        shared = group["disturbed"].astype(object).fillna("") != ""
        points[point] = {
            "times": [round(float(t), 2) for t in times],
            "flags": [
                ("" if o else "x") + ("s" if s else "") for o, s in zip(ok, shared, strict=True)
            ],
            "cv": float(times[ok].std() / times[ok].mean()) if ok.sum() > 1 else float("nan"),
        }
    return {
        "decided": last.stop.reason == "decided",
        "stop": asdict(last.stop),
        "rounds": [{"round": p.round, "added": p.added} for p in plans if p.added],
        "points": points,
    }


# --simulate: the shipped study's rounds offline (scalestudy.analysis.decisions.adaptive,
# as the workflow plans them), on drawn train times: seconds per training batch at 1 and
# 2 threads on this machine (the fastest runs seen on 2026-11-27, a shared machine: 5.3 s
# for 2 x 40 batches at 2 threads, 18.3 s for 2 x 80 at 1), 2 % noise (a guess: no
# quiet machine to measure it on), and now and then a hiccup of a few seconds
# (another program's burst) that a longer run dilutes. Each run also costs its start-up,
# data and evaluation (~7 s), each round the workflow's planning (~15 s, a guess).
SECONDS_PER_BATCH = {1: 0.115, 2: 0.066}
RUN_OVERHEAD_S, ROUND_OVERHEAD_S = 7.0, 15.0


def simulate(
    studies: int, hiccup_share: float, hiccup_s: tuple[float, float], config: Path, seed: int = 1
):
    """(share decided, median and p90 seconds of runs and rounds) of the default study
    as `config` has it."""
    import numpy as np

    from scalestudy.analysis.decisions.adaptive import Rules, next_round
    from scalestudy.study.validation import checked_config, study_models

    shipped = yaml.safe_load(config.read_text())
    schema = REPO / "config" / "schema" / "config.schema.yaml"
    study = study_models(checked_config(shipped, schema, REPO))["mnist_threads"]
    rules = Rules.of(study)
    params = study.params
    batches = params["max_batches"] * params["epochs"]
    train = {n: SECONDS_PER_BATCH[n] * batches for n in (1, 2)}
    rng = np.random.default_rng(seed)
    decided, walls = 0, []
    for _ in range(studies):
        times, runs = {1: [], 2: []}, {}
        for round_no in range(1, 100):
            samples = {n: np.array(t) for n, t in times.items() if t}
            plan = next_round(round_no, [1, 2], 1, runs, samples, {1: 0.01, 2: 0.01}, 0.0, rules)
            if plan["stop"]:
                break
            for n, k in plan["added"].items():
                hit = rng.random(k) < hiccup_share * (1 if n == 2 else 1 / 3)
                drawn = train[n] * rng.lognormal(0, 0.02, k) + hit * rng.uniform(*hiccup_s, k)
                times[n] += list(drawn)
                runs[n] = runs.get(n, 0) + k
        decided += plan["stop"]["reason"] == "decided"
        run_s = sum(sum(t) + RUN_OVERHEAD_S * len(t) for t in times.values())
        walls.append(run_s + ROUND_OVERHEAD_S * round_no)
    return decided / studies, float(np.median(walls)), float(np.percentile(walls, 90))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--hog", nargs="?", const="same-session", choices=HOGS,
                        help="a CPU hog on the last core, nice 19 (cpu_hog)")  # fmt: skip
    parser.add_argument("--keep", action="store_true", help="keep each run's folder")
    parser.add_argument("--simulate", type=int, metavar="STUDIES", default=0,
                        help="instead, simulate this many studies offline")  # fmt: skip
    parser.add_argument("--config", type=Path, default=REPO / "config" / "config.yaml",
                        help="the config whose mnist_threads --simulate takes")  # fmt: skip
    args = parser.parse_args()
    if args.simulate:
        for share, hiccup in [(0.15, (0.7, 2.5)), (0.3, (0.7, 2.5)), (0.15, (1.0, 4.0)),
                              (0.3, (1.0, 4.0))]:  # fmt: skip
            found, median, p90 = simulate(args.simulate, share, hiccup, args.config)
            print(f"hiccups of {hiccup[0]}-{hiccup[1]} s in {100 * share:.0f} % of the runs at "
                  f"N = 2 (a third as many at N = 1): decided {100 * found:.1f} %; runs and "
                  f"rounds {median:.0f} s median, {p90:.0f} s p90")  # fmt: skip
        return
    fashion_root()  # set-up, not timed: the data set is prepared once
    decided, walls = 0, []
    for k in range(1, args.runs + 1):
        root = fresh_copy()
        try:
            with cpu_hog(args.hog):
                wall, proc = run_once(root)
            walls.append(wall)
            if proc.returncode != 0:
                print(f"run {k}: the workflow failed ({proc.returncode}) after {wall:.0f} s:\n"
                      f"{proc.stderr[-3000:]}")  # fmt: skip
                continue
            for study in adaptive_studies(root):
                found = describe(root, study)
                decided += found["decided"] and study == "mnist_threads"
                verdict = (
                    "decided" if found["decided"] else f"NOT decided ({found['stop']['reason']})"
                )
                print(f"run {k}: {study}: {verdict} in {wall:.0f} s: {found['stop']['text']}")
                for r in found["rounds"]:
                    print(f"    round {r['round']} added {r['added']}")
                for point, p in found["points"].items():
                    marks = " ".join(f"{t}{f}" for t, f in zip(p["times"], p["flags"], strict=True))
                    print(f"    {point}: CV {100 * p['cv']:.1f} %; times (s) {marks}")
            if not_decided := re.search(r'<p class="warn not-decided">(.*?)</p>', report(root)):
                print(f"    first line: {re.sub(r'<[^>]+>', '', not_decided.group(1))}")
        finally:
            if args.keep:
                print(f"    kept in {root}")
            else:
                shutil.rmtree(root, ignore_errors=True)
        sys.stdout.flush()
    over = sum(w > GOAL_S for w in walls)
    print(f"decided {decided} of {args.runs} ({f'hog: {args.hog}' if args.hog else 'quiet'}); "
          f"wall {min(walls):.0f}-{max(walls):.0f} s, {over} over {GOAL_S} s "
          "(times: x failed or unusable, s on shared CPUs)")  # fmt: skip


if __name__ == "__main__":
    main()
