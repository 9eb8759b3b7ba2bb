"""The user's own command, timed like any workload (config/README.md, "Workload
`command`").

Each process of the point starts the command once (as srun starts a task), with
torchrun's environment (RANK, WORLD_SIZE, MASTER_ADDR ...: the launcher and the
worker set it), so a torch.distributed program joins its group with
init_method="env://". The command runs without a shell; placeholders ({threads},
{devices}, {nodes}, {tasks}, ... and params.values) are substituted into each argument
as text (scalestudy.compute.commandline). Its whole run is one phase, which the phases
it reports of itself (train_s ...) take their share of; figures come from a JSON file
it writes and/or regular expressions over its output. Rank 0's figures speak for the
run.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from scalestudy.compute.commandline import (
    PROGRAM_PHASES,
    command_argv,
    metrics_from_json,
    metrics_from_output,
    substitute,
)
from scalestudy.compute.harness import TRAINING, Phase
from scalestudy.compute.processes import (
    OUTPUT_TAIL_BYTES,
    RUN_TMP,
    OutputTail,
    child_pids,
    die_with_parent,
    pump_aside,
    read_to_end,
    sweep,
    widen_pipe,
)

WORKLOAD = {
    "distributed": True,
    "steps": False,
    "devices": ["cpu", "gpu"],
    "params": {
        "required": ["command"],
        "properties": {
            "command": {
                "description": "list of arguments, or one string; placeholders `{threads}`, "
                "`{devices}` (processes per node), `{nodes}`, `{tasks}` (all processes), "
                "`{gpus}`, `{n}`, `{rank}`, `{local_rank}`, `{study}`, `{point}`, "
                "`{repeat}`, `{run_dir}` (a private folder, removed afterwards) and your own "
                "from `values`; write `{{` and `}}` for literal braces. Unknown placeholders "
                "are refused before any job runs",
                "oneOf": [
                    {"type": "string", "minLength": 1},
                    {"type": "array", "minItems": 1, "items": {"type": ["string", "number"]}},
                ],
            },
            "values": {
                "description": "your own placeholders, e.g. `{label: resnet50}`",
                "type": "object",
                "additionalProperties": {"type": ["string", "number", "boolean"]},
                "default": {},
            },
            "env": {
                "description": "extra environment variables (placeholders allowed)",
                "type": "object",
                "additionalProperties": {"type": "string"},
                "default": {},
            },
            "workdir": {
                "description": "where the command runs; unset: the workflow folder",
                "type": "string",
            },
            "metrics_json": {
                "description": "a file the command writes with one JSON object of "
                '`name: number`, e.g. `"{run_dir}/metrics.json"`; a non-number fails the run',
                "type": "string",
            },
            "metrics_regex": {
                "description": "`name: pattern` with one group (or a group named `value`) "
                "around a number in the output; the last match is the metric, and with "
                "several matches `NAME_median` and `NAME_count` too. A pattern that never "
                "matches fails the run with that reason. `train_s`, `epoch_s`, `data_s`, "
                "`eval_s` and `startup_s` are your program's own phases (see above)",
                "type": "object",
                "additionalProperties": {"type": "string", "minLength": 1},
                "default": {},
            },
            "samples": {
                "description": "samples one run processes: gives samples/s over the program's "
                "own training time where it reports it, else over its whole run",
                "type": "number",
                "exclusiveMinimum": 0,
            },
        },
    },
}


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


def direct_output() -> tuple[int, int] | None:
    """The launcher's pipes when it reads the program's output itself (local runs): the
    one the program writes to, and the one the output's tail comes back on. Taken out
    of the environment, so that the program does not see them."""
    out = os.environ.pop("SCALESTUDY_OUTPUT_FD", None)
    tail = os.environ.pop("SCALESTUDY_TAIL_FD", None)
    os.environ.pop("SCALESTUDY_DIRECT_OUTPUT", None)
    return None if out is None or tail is None else (int(out), int(tail))


def run_command(
    argv: list[str], env: dict, cwd: str | None, direct: tuple[int, int] | None = None
) -> tuple[int, str, float]:
    """Run without a shell; return its exit status, the tail of its output and its
    run time (start to exit). Its output goes to the job log as it is written, through
    a wide pipe read in blocks (scalestudy.compute.processes.pump: a chatty program must not
    wait for us): the launcher's own pipe when it gave one (`direct`, see
    direct_output), which hands the tail back once the output ended, else ours, passed
    on to our stderr. The tail is kept for the metric patterns and the failure message.
    The program dies with this process (parent-death signal) and stays in the run's
    process group, so the launcher can stop all of it. The run ends when the program
    does: what it left running (in the background, detached) is killed then, so that
    it neither outlives the run nor holds its output open (this process adopts what
    detaches: scalestudy.compute.worker)."""
    earlier = set(child_pids(os.getpid()))
    start = time.perf_counter()
    try:
        proc = subprocess.Popen(
            argv,
            env=env,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=direct[0] if direct else subprocess.PIPE,
            stderr=subprocess.STDOUT,
            preexec_fn=die_with_parent,  # noqa: PLW1509 - the worker runs no threads here
        )
    except FileNotFoundError:
        raise RuntimeError(f"command not found: {argv[0]!r}") from None
    except PermissionError:
        raise RuntimeError(f"command not executable: {argv[0]!r}") from None
    finally:
        if direct:
            # the program (and what it starts) then holds the pipe's only writing end:
            # the launcher sees the output end when the program's ends
            os.close(direct[0])
    if direct:
        code = proc.wait()
        seconds = time.perf_counter() - start
        sweep(earlier)
        tail = read_to_end(direct[1])[-OUTPUT_TAIL_BYTES:]
        return code, tail.decode(errors="replace"), seconds
    ended = {}

    def wait() -> None:
        ended["code"] = proc.wait()
        ended["at"] = time.perf_counter()  # the program's end, not the end of reading
        sweep(earlier)

    waiter = threading.Thread(target=wait, daemon=True)
    waiter.start()
    widen_pipe(proc.stdout.fileno())
    sink = OutputTail(sys.stderr.buffer)
    pump_aside(os.dup(proc.stdout.fileno()), sink)
    proc.stdout.close()
    waiter.join()
    return ended["code"], sink.text(), ended["at"] - start


def reported_figures(params: dict, values: dict, output: str) -> tuple[dict, dict]:
    """The program's metrics and its own phases (commandline.PROGRAM_PHASES), from its
    JSON file and its output; a phase given by both is refused."""
    metrics, phases = {}, {}
    if params.get("metrics_json"):
        path = Path(substitute(params["metrics_json"], values))
        if not path.is_absolute() and params.get("workdir"):
            path = Path(params["workdir"]) / path
        if not path.is_file():
            raise RuntimeError(f"params.metrics_json: the command wrote no {path}")
        metrics = metrics_from_json(path.read_text(), str(path))
        phases = {k: [metrics.pop(k)] for k in PROGRAM_PHASES if k in metrics}
    found, in_output = metrics_from_output(output, params.get("metrics_regex", {}))
    if twice := sorted(set(phases) & set(in_output)):
        raise RuntimeError(f"phase {twice[0]}: reported in params.metrics_json and in the output")
    return metrics | found, phases | in_output


# A program's own phases may add up to its run's time and no more, but for the rounding
# of the figures it prints: this much over (seconds, and a share of the run) is refused.
PHASES_SLACK_S, PHASES_SLACK = 0.05, 0.01


def own_phases(ctx, whole: Phase, reported: dict[str, list[float]]) -> float:
    """The program's own phases (name -> seconds, PROGRAM_PHASES), each a phase of the
    run in place of as much of the command's whole run, which keeps the rest. Returns
    the seconds samples per second are counted over: the program's training where it
    reports it, else its whole run. A program that reports more than it ran is refused."""
    if "train_s" in reported and "epoch_s" in reported:
        raise RuntimeError("the program reports train_s and epoch_s: report its training once")
    own = [
        Phase(name.removesuffix("_s") + (f" {i}" if name == "epoch_s" else ""), kind, seconds)
        for name, kind in PROGRAM_PHASES.items()
        for i, seconds in enumerate(reported.get(name, []), start=1)
    ]
    total = sum(p.seconds for p in own)
    if total > whole.seconds * (1 + PHASES_SLACK) + PHASES_SLACK_S:
        raise RuntimeError(
            f"the program reports {total:.3f} s of phases ({', '.join(reported)}) in a run "
            f"of {whole.seconds:.3f} s"
        )
    if own:
        ctx.phases.remove(whole)
        ctx.phases += [*own, Phase("command (rest)", "other", max(0.0, whole.seconds - total))]
    training = sum(p.seconds for p in own if p.kind in TRAINING)
    return training or whole.seconds


def private_run_dir(rank: int) -> Path:
    """{run_dir}: a folder of this rank's in the run's temporary folder, which its
    launcher removes after the run, killed or not (RUN_TMP; without a launcher, a
    fresh one)."""
    run_tmp = Path(os.environ.get(RUN_TMP) or tempfile.mkdtemp(prefix="scalestudy-run-"))
    run_tmp.mkdir(mode=0o700, exist_ok=True)  # by the first rank of the node
    run_dir = run_tmp / f"rank{rank}"
    run_dir.mkdir(mode=0o700)
    return run_dir


def run(params: dict, ctx) -> None:
    direct = direct_output()
    run_dir = private_run_dir(ctx.rank)
    try:
        values = placeholder_values(params, ctx, run_dir)
        argv = [substitute(a, values) for a in command_argv(params["command"])]
        extra_env = params.get("env", {})
        env = dict(os.environ) | {k: substitute(v, values) for k, v in extra_env.items()}
        cwd = params.get("workdir")
        # the whole run, until the program ended (not until its output was read); its
        # own phases, where it reports them, take their share of it (own_phases)
        with ctx.phase("command", kind="other") as whole:
            code, output, seconds = run_command(argv, env, cwd, direct)
        whole.seconds = seconds
        if code != 0:
            last = next((line for line in reversed(output.splitlines()) if line.strip()), "")
            raise RuntimeError(f"command exited with status {code}: {last.strip()[:300]}")
        # rank 0's figures speak for the run (the others' output holds none, often)
        metrics, phases = reported_figures(params, values, output) if ctx.rank == 0 else ({}, {})
        for name, value in metrics.items():
            ctx.metric(name, value)
        timed_s = own_phases(ctx, whole, phases)
        if params.get("samples"):
            ctx.metric("samples_per_s", params["samples"] / timed_s)
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
        with contextlib.suppress(OSError):  # the last rank of the node
            run_dir.parent.rmdir()
