"""Does the analysis keep up with big studies, and does the report stay small and fast?

Writes 10,000 schema-valid records (50 studies x 10 points x 20 repeats, times
from a USL curve with 5 % noise), then times, in one run:
  aggregate: the workflow's one aggregation (scalestudy.analysis.pipeline): read
             and validate every record, summarise, fit the three models with
             bootstrap uncertainty, recommend, and the report's findings
             (goal: < 10 s for all 50);
  figures:   the figures of every study, as the SVG the report inlines
             (goal: < 40 s for all 50);
both as many studies at a time as profiles/local runs the workflow's own jobs
side by side (each study's is one job), with the CPU seconds of their work;
  report:    the views of analysis.json and summary.csv, and the one HTML report
             rendered from them; its size (goal: < 15 MB) and the time
             headless Chromium takes to load it (goal: < 5 s).
Run: .venv/bin/python -m benchmarks.report_scale [--studies 50 --points 10 --repeats 20]
"""

from __future__ import annotations

import argparse
import copy
import multiprocessing
import os
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path

import numpy as np
import yaml

from benchmarks.common import REPO
from scalestudy.analysis.pipeline import aggregate
from scalestudy.records import write_json_atomic
from scalestudy.report.rendering import write_report
from scalestudy.report.views import study_view
from scalestudy.sections import Analysis
from tests.conftest import study_model

RECORD = {
    "schema_version": 1,
    "workload": "mnist_cnn",
    "params": {},
    "status": "ok",
    "reason": None,
    "exit_code": 0,
    "metrics": {"samples_per_s": 100.0},
    "environment": {"host": "node1", "python": "3.11.7", "torch": "2.14.1"},
    "started_at": "2026-01-01T00:00:00.000+00:00",
    "finished_at": "2026-01-01T00:00:02.500+00:00",
    "rerun_token": "first",
}


def record(study: str, n: int, repeat: int, seconds: float) -> dict:
    r = copy.deepcopy(RECORD)
    r.update(study=study, point=f"t{n}", n=n, repeat=repeat, wall_s=seconds + 1.0)
    # its own times agree (scalestudy.records.self_inconsistency): it ends wall_s later
    end = datetime.fromisoformat(r["started_at"]) + timedelta(seconds=r["wall_s"])
    r["finished_at"] = end.isoformat(timespec="milliseconds")
    r["run_id"] = f"{study}-t{n}-rep{repeat}"  # each run once
    r["phases"] = [
        {"name": "startup", "kind": "startup", "seconds": 1.0},
        {"name": "epoch 1", "kind": "epoch", "seconds": seconds, "samples": 1000},
    ]
    requested = {"threads": n, "tasks_per_node": 1, "nodes": 1, "gpus_per_node": 0}
    r["resources"] = {
        "requested": requested | {"mem_mb": 1000},
        "received": {"cpus_usable": n, "threads_given": n, "torch_threads": n,
                     "omp_num_threads": str(n)},
        "mismatch": False,
        "mismatches": [],
    }  # fmt: skip
    return r


def write_records(root: Path, studies: int, points: int, repeats: int) -> dict[str, list]:
    rng = np.random.default_rng(1)
    paths = {}
    for s in range(studies):
        name = f"study{s:02d}"
        sigma, kappa = rng.uniform(0.02, 0.2), rng.uniform(0, 0.01)
        paths[name] = []
        for n in range(1, points + 1):
            t = 100 * (1 + sigma * (n - 1) + kappa * n * (n - 1)) / n
            for k in range(1, repeats + 1):
                path = root / name / f"t{n}" / f"rep{k}.json"
                write_json_atomic(path, record(name, n, k, t * rng.lognormal(0, 0.05)))
                paths[name].append(path)
    return paths


def side_by_side() -> int:
    """How many of the workflow's own jobs profiles/local runs at once: its timed_runs
    slots (a timed run takes them all, another job one), at most one a CPU."""
    profile = yaml.safe_load((REPO / "profiles" / "local" / "config.yaml").read_text())
    slots = int(dict(r.split("=") for r in profile["resources"])["timed_runs"])
    return min(slots, len(os.sched_getaffinity(0)))


_WORK: dict = {}  # what side_by_side_runs' processes do, inherited when they fork


def _timed(name: str):
    """_WORK[name](), and the CPU seconds it took in this process."""
    start = time.process_time()
    return _WORK[name](), time.process_time() - start


def side_by_side_runs(work: dict) -> tuple[dict, float, float]:
    """name -> work() of every callable, side_by_side() at a time in processes of their
    own (as Snakemake runs jobs); the wall seconds and the CPU seconds of all."""
    _WORK.clear()
    _WORK.update(work)
    start = time.perf_counter()
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(side_by_side(), mp_context=context) as pool:
        done = dict(zip(work, pool.map(_timed, work), strict=True))
    wall = time.perf_counter() - start
    return {k: v for k, (v, _) in done.items()}, wall, sum(cpu for _, cpu in done.values())


def figures_of(result, out: Path):
    from scalestudy.report.plots import write_figures

    return lambda: write_figures(result.summary, result.runs, "threads", out, result.analysis)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--studies", type=int, default=50)
    parser.add_argument("--points", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--no-browser", action="store_true")
    args = parser.parse_args()
    scaling = {"axis": "threads", "device": "cpu", "threads": 1, "devices": 1, "nodes": 1}
    config = {"scaling": scaling, "time": "train", "cost": {"core_weight": 1, "gpu_weight": 2}}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        paths = write_records(root / "records", args.studies, args.points, args.repeats)
        total = sum(len(p) for p in paths.values())
        # the workflow builds every study's model once, when it reads the config
        studies = {name: study_model(config | {"description": name}, name) for name in paths}
        results, aggregate_s, aggregate_cpu = side_by_side_runs(
            {name: partial(aggregate, studies[name], files) for name, files in paths.items()}
        )
        # the report reads analysis.json as aggregation wrote it (loading it is timed
        # with the report)
        written = {name: r.analysis_json() for name, r in results.items()}
        drawn, figures_s, figures_cpu = side_by_side_runs(
            {name: figures_of(r, root / "figures" / name) for name, r in results.items()}
        )
        figures = {name: {f.stem: f for f in files} for name, files in drawn.items()}
        count = sum(len(files) for files in drawn.values())
        start = time.perf_counter()
        views = [
            study_view(Analysis.from_json(written[name]), r.summary, figures[name])
            for name, r in results.items()
        ]
        html = root / "report.html"
        write_report(html, "benchmark", views)
        report_s = time.perf_counter() - start
        size_mb = html.stat().st_size / 2**20
        print(f"{total} records, {args.studies} studies")
        print(f"  {side_by_side()} at a time (CPU seconds of the work in brackets)")
        print(
            f"  aggregate + fit + recommend: {aggregate_s:.2f} s  (goal < 10 s)  "
            f"[{aggregate_cpu:.2f}]"
        )
        print(f"  figures ({count}):          {figures_s:.2f} s  (goal < 40 s)  "
              f"[{figures_cpu:.2f}]")  # fmt: skip
        print(f"  views + render report:       {report_s:.2f} s")
        print(f"  report size:                 {size_mb:.2f} MB  (goal < 15 MB)")
        if not args.no_browser:
            from tests.browser import open_report

            page = open_report(html)
            console = page["console"] or "clean"
            print(f"  Chromium load:               {page['load_s']:.2f} s  (goal < 5 s), "
                  f"{len(page['images'])} images, console {console}")  # fmt: skip


if __name__ == "__main__":
    main()
