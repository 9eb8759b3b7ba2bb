"""Does the analysis keep up with big studies, and does the report stay small and fast?

Writes 10,000 schema-valid records (50 studies x 10 points x 20 repeats, times
from a USL curve with 5 % noise), then times, in one run:
  aggregate: the workflow's one aggregation (scalestudy.analysis.pipeline): read
             and validate every record, summarise, fit the three models with
             bootstrap uncertainty, recommend, and the report's findings
             (goal: < 10 s for all 50);
  figures:   the six figures of every study (reported, no goal);
  report:    the views of analysis.json and summary.csv, and the one HTML report
             rendered from them; its size (goal: < 15 MB) and the time
             headless Chromium takes to load it (goal: < 5 s).
Run: .venv/bin/python -m benchmarks.report_scale [--studies 50 --points 10 --repeats 20]
"""

from __future__ import annotations

import argparse
import copy
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np

from scalestudy.analysis.pipeline import aggregate
from scalestudy.contract import Analysis
from scalestudy.records import write_json_atomic
from scalestudy.report.rendering import write_report
from scalestudy.report.views import study_view
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
        start = time.perf_counter()
        results = {name: aggregate(studies[name], files) for name, files in paths.items()}
        aggregate_s = time.perf_counter() - start
        # the report reads analysis.json as aggregation wrote it (loading it is timed
        # with the report)
        written = {name: r.analysis_json() for name, r in results.items()}
        from scalestudy.report.plots import write_figures

        start = time.perf_counter()
        figures = {}
        for name, r in results.items():
            out = root / "figures" / name
            write_figures(r.summary, r.runs, "threads", out, r.analysis)
            figures[name] = {f.stem: f for f in out.glob("*.svg")}
        figures_s = time.perf_counter() - start
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
        print(f"  aggregate + fit + recommend: {aggregate_s:.2f} s  (goal < 10 s)")
        print(f"  figures ({args.studies} x 6):        {figures_s:.2f} s")
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
