"""The workload process: import, apply the allocation, run the workload, report.

Started by scalestudy.compute.launch (one per rank); writes one result file that the
launcher turns into the run's record.
"""

import argparse
import importlib
import json
import os
import sys
import time
import traceback
from pathlib import Path

from scalestudy.compute import harness
from scalestudy.compute.energy import RankEnergy, gpus_of
from scalestudy.compute.harness import Context, Phase, threads_from_allocation
from scalestudy.compute.processes import CpuWatch, adopt_orphans, die_with_parent
from scalestudy.compute.profiling import profiled
from scalestudy.compute.tracker import finish_tracker, start_tracker
from scalestudy.records import jsonable, write_json_atomic


def select_device(torch, spec: dict, local_rank: int):
    if torch is None:  # the command finds its GPUs itself (CUDA_VISIBLE_DEVICES)
        return "cuda" if spec["requested"]["gpus_per_node"] else "cpu"
    if spec["requested"]["gpus_per_node"] > 0:
        if not torch.cuda.is_available():
            raise RuntimeError("the point asks for a GPU but CUDA sees none")
        return torch.device("cuda", local_rank % torch.cuda.device_count())
    return torch.device("cpu")


def run_workload(spec: dict, launch_time: float) -> dict:
    """Run one rank of the workload; return its result (never raises)."""
    status, reason = "ok", None
    os.environ.update(harness.rank_environment(spec["requested"]["tasks_per_node"]))
    # what the process was started with; workloads (Lightning) may change os.environ
    started_env = dict(os.environ)
    rank = int(os.environ["RANK"])
    ctx = torch = tracker = energy = None
    try:
        # your own command needs no torch in this process: its import would only
        # add seconds to every run's start-up
        if spec["workload"] != "command":
            import torch

            torch.set_num_threads(threads_from_allocation())
        workload = importlib.import_module(f"workloads.{spec['workload']}")
        ctx = Context(
            params=spec["params"],
            data_dir=Path(spec["data_dir"]),
            threads=torch.get_num_threads() if torch else threads_from_allocation(),
            rank=rank,
            world_size=int(os.environ.get("WORLD_SIZE", "1")),
            local_rank=int(os.environ["LOCAL_RANK"]),
            local_world_size=spec["requested"]["tasks_per_node"],
            node_rank=int(os.environ["NODE_RANK"]),
            point={k: spec[k] for k in ("study", "point", "repeat", "n")} | spec["requested"],
        )
        ctx.device = select_device(torch, spec, ctx.local_rank)
        # start-up: interpreter, imports and device set-up, from the launcher's clock
        tracker = start_tracker(spec, rank)
        ctx.phases.append(Phase("startup", "startup", max(0.0, time.time() - launch_time)))
        # counters read at the start and end of the workload's run and of each phase;
        # one reader of the node's packages per node (its first rank)
        meter = RankEnergy(gpus_of(ctx.device, torch), node_reader=ctx.local_rank == 0)
        with meter, profiled(ctx, spec):
            ctx.energy_reader = meter.read  # each phase's energy too
            workload.run(spec["params"], ctx)
        energy = meter.result
    except BaseException as e:  # a failed run still reports why
        status = "failed"
        reason = f"{type(e).__name__}: {e}".strip()
        traceback.print_exc()
    phases = [p.as_dict() for p in ctx.phases] if ctx else []
    metrics = jsonable(ctx.metrics if ctx else {})  # JSON has no NaN: unknown is null
    if ctx is not None and ctx.training_started_at is not None:
        # from the launcher's clock, as the startup phase: what benchmarks/startup_floor.py
        # sets against the floor (the interpreter, torch's import and the data's bytes)
        metrics["launch_to_training_s"] = ctx.training_started_at - launch_time
    finish_tracker(tracker, phases, metrics, status)
    return {
        "rank": rank,
        "status": status,
        "reason": reason,
        "phases": phases,
        "metrics": metrics | {"peak_rss_mb": harness.peak_rss_mb()},
        "received": harness.received_resources(torch, started_env),
        "environment": harness.environment(torch) | ({"tracker": "comet"} if tracker else {}),
        "energy": energy,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--spec", required=True, help="JSON file with the run's spec")
    parser.add_argument("--result-dir", required=True, help="where rank K writes rankK.json")
    args = parser.parse_args(argv)
    # die with the launcher (or srun's task launcher), so no rank outlives the run, and
    # keep what the workload starts in this tree, however it detaches
    die_with_parent()
    adopt_orphans()
    # local runs: the CPUs the launcher chose, before any library sizes its pools
    if os.environ.get("SCALESTUDY_CPUS"):
        own = {int(c) for c in os.environ["SCALESTUDY_CPUS"].split(",")}
        # the launcher's other CPUs, where the harness may pass the output on
        aside = os.sched_getaffinity(0) - own
        os.environ["SCALESTUDY_HARNESS_CPUS"] = ",".join(map(str, sorted(aside)))
        os.sched_setaffinity(0, own)
    watch = CpuWatch()
    spec = json.loads(Path(args.spec).read_text())
    launch_time = float(os.environ.get("SCALESTUDY_LAUNCH_TIME", time.time()))
    result = run_workload(spec, launch_time)
    result["usage"] = watch.stop()
    write_json_atomic(Path(args.result_dir) / f"rank{result['rank']}.json", result)
    return 0 if result["status"] == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
