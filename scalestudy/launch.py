"""Run one (study, point, repeat): start the workload process(es), time them, write the record.

The launcher itself imports only the standard library and this package, so
its own start-up is not charged to the workload. It always writes a record,
for a failed run too (with the reason), and exits 0 when it did: a failed
point is data for the report, not a reason to stop the other points.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

from scalestudy.harness import allocation_mismatches, threads_from_allocation
from scalestudy.records import SCHEMA_VERSION, write_json_atomic

REPO_DIR = Path(__file__).resolve().parents[1]


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def git_commit(repo: Path = REPO_DIR) -> dict:
    """The workflow's commit, and whether tracked files differ from it."""
    try:
        commit = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return {"workflow_commit": None}
    return {"workflow_commit": commit, "workflow_dirty": bool(dirty)}


def worker_processes(
    spec: dict, spec_file: Path, result_dir: Path, environ=os.environ, job: dict | None = None
):
    """Command and environment of each process to start: one `srun` step for all
    ranks inside a Slurm allocation, else one local process per rank."""
    base = [
        sys.executable,
        "-m",
        "scalestudy.worker",
        "--spec",
        str(spec_file),
        "--result-dir",
        str(result_dir),
    ]
    requested = spec["requested"]
    world = requested["tasks_per_node"] * requested["nodes"]
    env = dict(environ, SCALESTUDY_LAUNCH_TIME=repr(time.time()))
    if environ.get("SLURM_JOB_ID"):
        env |= {"MASTER_ADDR": socket.gethostname(), "MASTER_PORT": str(free_port())}
        return [(srun_command(spec, environ, job) + base, env)]
    if requested["nodes"] > 1:
        raise RuntimeError("points with more than one node need a Slurm allocation")
    cpu_sets = local_cpu_sets(requested["threads"], world, sorted(os.sched_getaffinity(0)))
    if world == 1:
        return [(base, pinned(env, cpu_sets, 0))]
    env |= {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port())}
    return [
        (
            base,
            pinned(env, cpu_sets, r)
            | {"RANK": str(r), "LOCAL_RANK": str(r), "WORLD_SIZE": str(world), "NODE_RANK": "0"},
        )
        for r in range(world)
    ]


def local_cpu_sets(threads: int, world: int, available: list[int]) -> list[list[int]] | None:
    """Disjoint CPUs for each local rank, as Slurm's cgroups would give them, so that
    libraries that size their pools from the affinity (XLA, OpenMP runtimes) see the
    point's threads and not the whole machine. None when the machine has too few
    CPUs: the ranks then share them, and the record's received resources say so."""
    if threads * world > len(available):
        return None
    return [available[r * threads : (r + 1) * threads] for r in range(world)]


def pinned(env: dict, cpu_sets: list[list[int]] | None, rank: int) -> dict:
    if cpu_sets is None:
        return env
    return dict(env, SCALESTUDY_CPUS=",".join(map(str, cpu_sets[rank])))


def srun_command(spec: dict, environ=os.environ, job: dict | None = None) -> list[str]:
    """The job step that runs every rank. Snakemake's job step strips SLURM_* from
    the rule's environment, so the geometry is repeated here. --overlap lets the
    step start inside the step the Slurm plugin already runs the rule in; its own
    --time makes Slurm stop a run that is out of time while the launcher lives on
    to record why."""
    requested = spec["requested"]
    cmd = [
        "srun",
        "--overlap",
        "--kill-on-bad-exit=1",
        "--export=ALL",
        f"--nodes={requested['nodes']}",
        f"--ntasks-per-node={requested['tasks_per_node']}",
        # what Slurm granted the job, not what the point asked for: a shortfall
        # then shows up as an allocation mismatch instead of a failed srun
        f"--cpus-per-task={granted_cpus_per_task(job or {}, environ)}",
    ]
    if requested.get("mem_mb"):
        cmd.append(f"--mem={requested['mem_mb']}")
    if requested["gpus_per_node"]:
        cmd.append("--gpus-per-task=1")
    if spec.get("time_limit_min"):
        cmd.append(f"--time={spec['time_limit_min']}")
    return cmd


def granted_cpus_per_task(job: dict, environ=os.environ) -> int:
    value = job.get("CPUs/Task", "")
    return int(value) if value.isdigit() else threads_from_allocation(environ)


def granted_memory_mb(job: dict) -> float | None:
    """Memory per node Slurm granted the job (MinMemoryNode=2000M), if it says."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([KMGT]?)", job.get("MinMemoryNode", ""))
    if not match:
        return None
    scale = {"K": 1 / 1024, "": 1, "M": 1, "G": 1024, "T": 1024**2}[match.group(2)]
    return float(match.group(1)) * scale


SLURM_REASON = re.compile(
    r"(exceeded memory limit|oom[-_ ]kill|DUE TO TIME LIMIT|CANCELLED|PREEMPTED|NODE_FAIL"
    r"|srun: error:.*)",
    re.IGNORECASE,
)


def slurm_reason(stderr_text: str) -> str | None:
    """Slurm's own words on why a step ended, from what srun and slurmstepd printed."""
    for line in stderr_text.splitlines():
        if SLURM_REASON.search(line) and ("slurm" in line.lower() or "srun" in line):
            return "Slurm: " + line.strip()
    return None


def slurm_job_info(environ=os.environ) -> dict:
    """This job as Slurm sees it (`scontrol show job`): what it was granted and when
    it was submitted and started. Empty outside Slurm."""
    job_id = environ.get("SLURM_JOB_ID")
    if not job_id or not shutil.which("scontrol"):
        return {}
    try:
        text = subprocess.run(
            ["scontrol", "show", "job", "-o", job_id],
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    return dict(re.findall(r"(\S+?)=(\S+)", text))


def slurm_job_times(info: dict) -> dict:
    times = {
        "slurm_submit_time": info.get("SubmitTime"),
        "slurm_start_time": info.get("StartTime"),
        "slurm_time_limit": info.get("TimeLimit"),
        "slurm_partition": info.get("Partition"),
    }
    return {k: v for k, v in times.items() if v and v not in ("Unknown", "None")}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def describe_exit(code: int) -> str:
    if code < 0:
        name = signal.Signals(-code).name
        hint = " (out of memory, or the time limit?)" if -code == signal.SIGKILL else ""
        return f"workload killed by {name}{hint}"
    return f"workload exited with status {code} before reporting a result"


class Terminated(Exception):
    pass


def tee(stream, copy, out) -> None:
    """Copy a child's stderr, line by line, to the job's log (live) and to `copy`."""
    for line in iter(stream.readline, b""):
        copy.write(line)
        out.write(line)
        out.flush()
    stream.close()


def run_processes(commands: list[tuple[list, dict]], stderr_path: Path) -> list[int]:
    """Start all ranks, wait for all; stop them all if the launcher is told to stop.
    Their stderr reaches ours as it is written, and `stderr_path` too, where Slurm's
    messages are read from afterwards."""
    with open(stderr_path, "wb") as copy:
        procs = [subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE) for cmd, env in commands]
        readers = [
            threading.Thread(target=tee, args=(p.stderr, copy, sys.stderr.buffer), daemon=True)
            for p in procs
        ]
        for r in readers:
            r.start()

        def stop(signum, _frame):
            for p in procs:
                if p.poll() is None:
                    p.terminate()
            raise Terminated(signal.Signals(signum).name)

        # handlers can only be set from the main thread (tests call launch() from others)
        in_main = threading.current_thread() is threading.main_thread()
        signals = (signal.SIGTERM, signal.SIGINT)
        old = {s: signal.signal(s, stop) for s in signals} if in_main else {}
        try:
            return [p.wait() for p in procs]
        finally:
            for s, handler in old.items():
                signal.signal(s, handler)
            for p in procs:
                if p.poll() is None:
                    p.kill()
            for r in readers:
                r.join(timeout=10)


def read_results(result_dir: Path) -> dict[int, dict]:
    results = {}
    for path in sorted(result_dir.glob("rank*.json")):
        try:
            result = json.loads(path.read_text())
            results[int(result["rank"])] = result
        except (OSError, ValueError, KeyError):
            continue
    return results


def rank_spread(results: dict[int, dict]) -> dict:
    """Slowest and fastest rank's training time: a wide spread means load imbalance
    or a slow node, which the mean would hide."""
    train = {
        rank: sum(p["seconds"] for p in r.get("phases", []) if p["kind"] == "epoch")
        for rank, r in results.items()
    }
    if len(train) < 2:
        return {}
    return {"rank_train_s_min": min(train.values()), "rank_train_s_max": max(train.values())}


def failure_reason(results: dict[int, dict], codes: list[int], stderr_text: str) -> str | None:
    """Why the run failed (None if it did not): Slurm's words first, then the
    workload's own, then how the process ended."""
    slurm = slurm_reason(stderr_text) if any(codes) else None
    if slurm:
        return slurm
    failed = [r for r in results.values() if r.get("status") != "ok"]
    if failed:
        return failed[0].get("reason") or "a rank failed"
    bad = next((c for c in codes if c), 0)
    if bad:
        return describe_exit(bad)
    if not results:
        return "the workload wrote no result"
    return None


def assemble_record(
    spec: dict,
    results: dict[int, dict],
    codes: list[int],
    wall_s: float | None,
    started_at: str,
    rerun_token: str,
    reason: str | None,
    job: dict | None = None,
) -> dict:
    """One record from the ranks' results; rank 0 speaks for the run."""
    head = results.get(0, {})
    received = dict(
        head.get("received")
        or {
            "cpus_usable": 0,
            "threads_given": 0,
            "torch_threads": None,
            "omp_num_threads": None,
        }
    )
    hosts = {r["environment"]["host"] for r in results.values() if r.get("environment")}
    received["nodes"] = len(hosts) or None
    if received.get("mem_limit_mb") is None:
        received["mem_limit_mb"] = granted_memory_mb(job or {})
    mismatches = (
        allocation_mismatches(spec["requested"], received, len(hosts) or None) if results else []
    )
    environment = dict(
        head.get("environment") or {"host": socket.gethostname(), "python": sys.version.split()[0]}
    )
    environment["hosts"] = sorted(hosts)
    environment.update(git_commit())
    environment.update(slurm_job_times(job or {}))
    return {
        "schema_version": SCHEMA_VERSION,
        "study": spec["study"],
        "point": spec["point"],
        "repeat": spec["repeat"],
        "workload": spec["workload"],
        "n": spec["n"],
        "params": spec["params"],
        "status": "failed" if reason else "ok",
        "reason": reason,
        "exit_code": next((c for c in codes if c), 0) if codes else None,
        "wall_s": wall_s,
        "phases": head.get("phases", []),
        "metrics": head.get("metrics", {}) | rank_spread(results),
        "resources": {
            "requested": spec["requested"],
            "received": received,
            "mismatch": bool(mismatches),
            "mismatches": mismatches,
        },
        "environment": environment,
        "started_at": started_at,
        "finished_at": utc_now(),
        "rerun_token": rerun_token,
    }


def launch(spec: dict, record_path: Path, rerun_token: str = "first") -> dict:
    """Run one job of a point and write its record; returns the record."""
    record_path = Path(record_path)
    work = record_path.parent / f".{record_path.stem}.work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    spec_file = work / "spec.json"
    spec_file.write_text(json.dumps(spec))
    stderr_path = work / "stderr.txt"
    job = slurm_job_info()
    started_at = utc_now()
    start = time.perf_counter()
    codes = []
    try:
        codes = run_processes(worker_processes(spec, spec_file, work, job=job), stderr_path)
        reason = None
    except Terminated as e:
        reason = f"terminated by {e}: the job was cancelled or ran out of time"
    except (OSError, RuntimeError) as e:
        reason = f"could not start the workload: {e}"
    wall_s = time.perf_counter() - start
    stderr_text = stderr_path.read_text(errors="replace") if stderr_path.exists() else ""
    results = read_results(work)
    reason = reason or failure_reason(results, codes, stderr_text)
    record = assemble_record(spec, results, codes, wall_s, started_at, rerun_token, reason, job)
    write_json_atomic(record_path, record)
    shutil.rmtree(work, ignore_errors=True)
    return record


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--spec", required=True, help="the run's spec as JSON")
    parser.add_argument("--record", required=True, help="where the record is written")
    parser.add_argument("--rerun-token", default="first")
    args = parser.parse_args(argv)
    record = launch(json.loads(args.spec), Path(args.record), args.rerun_token)
    print(
        f"{record['study']}/{record['point']}/rep{record['repeat']}: {record['status']}"
        + (f" ({record['reason']})" if record["reason"] else "")
        + (f" in {record['wall_s']:.2f} s" if record["wall_s"] is not None else "")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
