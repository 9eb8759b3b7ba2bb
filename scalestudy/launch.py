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
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

from scalestudy.harness import allocation_mismatches
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


def worker_processes(spec: dict, spec_file: Path, result_dir: Path) -> list[tuple[list, dict]]:
    """Command and environment of each local rank (one process per task)."""
    base = [
        sys.executable,
        "-m",
        "scalestudy.worker",
        "--spec",
        str(spec_file),
        "--result-dir",
        str(result_dir),
    ]
    world = spec["requested"]["tasks_per_node"] * spec["requested"]["nodes"]
    if spec["requested"]["nodes"] > 1:
        raise RuntimeError("points with more than one node need a Slurm allocation")
    env = dict(os.environ, SCALESTUDY_LAUNCH_TIME=repr(time.time()))
    if world == 1:
        return [(base, env)]
    port = free_port()
    return [
        (
            base,
            dict(
                env,
                RANK=str(r),
                LOCAL_RANK=str(r),
                WORLD_SIZE=str(world),
                MASTER_ADDR="127.0.0.1",
                MASTER_PORT=str(port),
            ),
        )
        for r in range(world)
    ]


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


def run_processes(commands: list[tuple[list, dict]]) -> list[int]:
    """Start all ranks, wait for all; stop them all if the launcher is told to stop."""
    procs = [subprocess.Popen(cmd, env=env) for cmd, env in commands]

    def stop(signum, _frame):
        for p in procs:
            if p.poll() is None:
                p.terminate()
        raise Terminated(signal.Signals(signum).name)

    # handlers can only be set from the main thread (tests call launch() from others)
    in_main = threading.current_thread() is threading.main_thread()
    old = {s: signal.signal(s, stop) for s in (signal.SIGTERM, signal.SIGINT)} if in_main else {}
    try:
        return [p.wait() for p in procs]
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
        for p in procs:
            if p.poll() is None:
                p.kill()


def read_results(result_dir: Path) -> dict[int, dict]:
    results = {}
    for path in sorted(result_dir.glob("rank*.json")):
        try:
            result = json.loads(path.read_text())
            results[int(result["rank"])] = result
        except (OSError, ValueError, KeyError):
            continue
    return results


def assemble_record(
    spec: dict,
    results: dict[int, dict],
    codes: list[int],
    wall_s: float,
    started_at: str,
    rerun_token: str,
    terminated: str | None = None,
) -> dict:
    """One record from the ranks' results; rank 0 speaks for the run."""
    head = results.get(0, {})
    status, reason = head.get("status", "failed"), head.get("reason")
    failed = [r for r in results.values() if r.get("status") != "ok"]
    if terminated:
        status, reason = "failed", f"terminated by {terminated}: cancelled or out of time"
    elif failed:
        status, reason = "failed", failed[0].get("reason") or "a rank failed"
    elif len(results) < len(codes) or any(codes):
        bad = next((c for c in codes if c), 0)
        status, reason = "failed", describe_exit(bad) if bad else "a rank wrote no result"
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
    mismatches = (
        allocation_mismatches(spec["requested"], received, len(hosts) or None) if results else []
    )
    environment = dict(
        head.get("environment") or {"host": socket.gethostname(), "python": sys.version.split()[0]}
    )
    environment["hosts"] = sorted(hosts)
    environment.update(git_commit())
    return {
        "schema_version": SCHEMA_VERSION,
        "study": spec["study"],
        "point": spec["point"],
        "repeat": spec["repeat"],
        "workload": spec["workload"],
        "n": spec["n"],
        "params": spec["params"],
        "status": status,
        "reason": reason if status != "ok" else None,
        "exit_code": next((c for c in codes if c), 0) if codes else None,
        "wall_s": wall_s,
        "phases": head.get("phases", []),
        "metrics": head.get("metrics", {}),
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
    record_path = Path(record_path)
    work = record_path.parent / f".{record_path.stem}.work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    spec_file = work / "spec.json"
    spec_file.write_text(json.dumps(spec))
    started_at = utc_now()
    start = time.perf_counter()
    codes, terminated = [], None
    try:
        codes = run_processes(worker_processes(spec, spec_file, work))
    except Terminated as e:
        terminated = str(e)
    except (OSError, RuntimeError) as e:
        record = assemble_record(spec, {}, [], None, started_at, rerun_token)
        record["reason"] = f"could not start the workload: {e}"
        write_json_atomic(record_path, record)
        shutil.rmtree(work, ignore_errors=True)
        return record
    wall_s = time.perf_counter() - start
    record = assemble_record(
        spec, read_results(work), codes, wall_s, started_at, rerun_token, terminated
    )
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
