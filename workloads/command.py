"""The user's own command, timed like any workload.

Each process of the point starts the command once (as srun starts a task),
with RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT set, so a
torch.distributed program joins its group with init_method="env://". The
command runs without a shell; placeholders ({threads}, {devices}, {nodes},
{tasks}, ... and params.values) are substituted into each argument as text
(scalestudy.commandline). Its whole run is the timed phase; figures come from
a JSON file it writes and/or regular expressions over its output. Rank 0's
figures speak for the run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from scalestudy.commandline import (
    command_argv,
    metrics_from_json,
    metrics_from_output,
    substitute,
)

# Output kept for the regexes: the tail, so a chatty command cannot exhaust memory.
OUTPUT_KEEP_CHARS = 8_000_000


def placeholder_values(params: dict, ctx, run_dir: Path) -> dict:
    point = ctx.point
    return params.get("values", {}) | {
        "threads": ctx.threads,
        "devices": point.get("tasks_per_node", ctx.local_world_size),
        "nodes": point.get("nodes", 1),
        "tasks": ctx.world_size,
        "gpus": point.get("gpus_per_node", 0) * point.get("nodes", 1),
        "n": point.get("n", ""),
        "rank": ctx.rank,
        "local_rank": ctx.local_rank,
        "study": point.get("study", ""),
        "point": point.get("point", ""),
        "repeat": point.get("repeat", ""),
        "run_dir": run_dir,
    }


def run_command(argv: list[str], env: dict, cwd: str | None) -> tuple[int, str]:
    """Run without a shell; its output goes to the job log as written and is kept
    for the metric patterns."""
    try:
        proc = subprocess.Popen(
            argv, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
    except FileNotFoundError:
        raise RuntimeError(f"command not found: {argv[0]!r}") from None
    except PermissionError:
        raise RuntimeError(f"command not executable: {argv[0]!r}") from None
    kept: list[str] = []
    size = 0
    for raw in iter(proc.stdout.readline, b""):
        sys.stderr.buffer.write(raw)
        sys.stderr.flush()
        line = raw.decode(errors="replace")
        kept.append(line)
        size += len(line)
        while size > OUTPUT_KEEP_CHARS and len(kept) > 1:
            size -= len(kept.pop(0))
    proc.stdout.close()
    return proc.wait(), "".join(kept)


def run(params: dict, ctx) -> None:
    run_dir = Path(tempfile.mkdtemp(prefix="scalestudy-run-"))
    try:
        values = placeholder_values(params, ctx, run_dir)
        argv = [substitute(a, values) for a in command_argv(params["command"])]
        extra_env = params.get("env", {})
        env = dict(os.environ) | {k: substitute(v, values) for k, v in extra_env.items()}
        cwd = params.get("workdir")
        with ctx.phase("command", kind="epoch") as phase:
            code, output = run_command(argv, env, cwd)
        if code != 0:
            last = next((line for line in reversed(output.splitlines()) if line.strip()), "")
            raise RuntimeError(f"command exited with status {code}: {last.strip()[:300]}")
        if params.get("samples"):
            phase.samples = int(params["samples"])
            ctx.metric("samples_per_s", params["samples"] / phase.seconds)
        if ctx.rank != 0:
            return
        metrics = {}
        if params.get("metrics_json"):
            path = Path(substitute(params["metrics_json"], values))
            if not path.is_absolute() and cwd:
                path = Path(cwd) / path
            if not path.is_file():
                raise RuntimeError(f"params.metrics_json: the command wrote no {path}")
            metrics |= metrics_from_json(path.read_text(), str(path))
        metrics |= metrics_from_output(output, params.get("metrics_regex", {}))
        for name, value in metrics.items():
            ctx.metric(name, value)
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
