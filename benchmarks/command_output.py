"""What a chatty program's output costs its timing: a `command` study of a program that
prints 1 M short lines, against the same program with its output sent to /dev/null
("quiet") and, for reference, to a file in /dev/shm ("file": the cheapest real place
output can go). All run through the launcher (worker, capped log, record), in
alternating rounds; the figure is the program's timed phase ("command"). Goal: the
chatty run's median within 5 % of the quiet one's (the fault probe: 17.0 s against
0.96 s before output was read in blocks).

"pipe" is the floor that any reader of a pipe can reach: the program started directly,
its output through a bare pipe as wide as ours, drained by splice() into /dev/null
(no copy to user space) with the same nap. On the 2-core VM of development even that
costs 1.15-1.26x the /dev/null time (the kernel's own page-by-page pipe writes), so
the 5 % goal is checked against it too ("chatty / pipe").

With --unbuffered the program makes one write per line: then every write is a system
call, which /dev/null alone makes free; a file costs as much as our pipe or more, so
that case is compared with "file" too.

Beside the wall times, the program reports its own CPU time and how often it waited
(voluntary context switches: a write that found the pipe full). On a machine shared
with other work these move much less than wall time does. Writing to a file costs the
program no less CPU than writing to a pipe here, and far more line by line (its CPU
time against /dev/null's: buffered 1.15-1.35x for a file, 1.0-1.35x for a pipe;
unbuffered 1.6-1.9x against 1.05-1.15x), which is why output is not sent to a file.
Run: .venv/bin/python -m benchmarks.command_output [--lines 1000000 --rounds 5 --unbuffered]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from scalestudy.compute import processes
from scalestudy.compute.launch import launch

# The same program either way: quiet only points its stdout at /dev/null. Buffered (as
# Python and C write to a pipe by default), or with --unbuffered one write per line:
# the hardest case, where every write is a system call that /dev/null alone makes free.
PROGRAM = """
import json, os, resource, sys
if sys.argv[2] == "quiet":
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
elif sys.argv[2] == "file":
    os.dup2(os.open(sys.argv[3], os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 1)
line = "epoch 1 step %d loss 0.123456 accuracy 0.987654 lr 0.001 samples/s 12345.6\\n"
for i in range(int(sys.argv[1])):
    sys.stdout.write(line % i)
sys.stdout.flush()
use = resource.getrusage(resource.RUSAGE_SELF)
with open(sys.argv[4], "w") as f:
    json.dump(dict(cpu_s=use.ru_utime + use.ru_stime, waits=use.ru_nvcsw), f)  # no braces
"""


def spec(lines: int, mode: str, file: str, usage: str) -> dict:
    return {
        "study": "bench",
        "point": "t1",
        "repeat": 1,
        "workload": "command",
        "n": 1,
        "series": "",
        "params": {
            "command": [sys.executable, "-c", PROGRAM, str(lines), mode, file, usage],
            "values": {},
            "env": {},
            "metrics_regex": {},
        },
        "requested": {"threads": 1, "tasks_per_node": 1, "nodes": 1, "gpus_per_node": 0,
                      "mem_mb": 4000},
        "time_limit_min": 30,
        "data_dir": "data",
    }  # fmt: skip


def command_seconds(record: dict) -> float:
    assert record["status"] == "ok", record["reason"]
    return next(p["seconds"] for p in record["phases"] if p["name"] == "command")


def bare_pipe_seconds(lines: int, usage: str) -> float:
    """The program's run time with its output through a bare wide pipe, drained with
    splice() into /dev/null: the least any reader of a pipe can cost it."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", PROGRAM, str(lines), "chatty", "", usage], stdout=subprocess.PIPE
    )
    processes.widen_pipe(proc.stdout.fileno())
    with open(os.devnull, "wb") as null:
        last = time.monotonic()
        while n := os.splice(proc.stdout.fileno(), null.fileno(), processes.BLOCK):
            now = time.monotonic()
            if nap := processes.nap_s(n, now - last):
                time.sleep(nap)
            last = now
    proc.wait()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--unbuffered", action="store_true", help="one write per line")
    parser.add_argument("--log-limit-mb", type=float, default=64, help="the log's cap")
    args = parser.parse_args()
    os.environ.pop("PYTHONUNBUFFERED", None)
    if args.unbuffered:
        os.environ["PYTHONUNBUFFERED"] = "1"
    modes = ("chatty", "quiet", "file", "pipe")
    times: dict[str, list[float]] = {mode: [] for mode in modes}
    uses: dict[str, list[dict]] = {mode: [] for mode in modes}
    with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryDirectory(dir="/dev/shm") as shm:
        usage = f"{tmp}/usage.json"
        for k in range(args.rounds):
            for mode in modes if k % 2 == 0 else reversed(modes):
                if mode == "pipe":
                    times[mode].append(bare_pipe_seconds(args.lines, usage))
                else:
                    record = launch(
                        spec(args.lines, mode, f"{shm}/out.txt", usage),
                        Path(tmp) / mode / f"rep{k + 1}.json",
                        log_path=Path(tmp) / f"{mode}{k}.log",
                        log_limit_mb=args.log_limit_mb,
                    )
                    times[mode].append(command_seconds(record))
                uses[mode].append(json.loads(Path(usage).read_text()))
    for mode, ts in times.items():
        cpu = statistics.median(u["cpu_s"] for u in uses[mode])
        waits = statistics.median(u["waits"] for u in uses[mode])
        print(
            f"{mode:7s} median {statistics.median(ts):.3f} s  runs {[round(t, 3) for t in ts]}"
            f"  program CPU {cpu:.3f} s, waits {waits:g}"
        )
    kind = "unbuffered" if args.unbuffered else "buffered"
    for other in ("quiet", "file", "pipe"):
        ratios = [c / q for c, q in zip(times["chatty"], times[other], strict=True)]
        ratio = statistics.median(times["chatty"]) / statistics.median(times[other])
        cpu = [c["cpu_s"] / q["cpu_s"] for c, q in zip(uses["chatty"], uses[other], strict=True)]
        print(
            f"chatty / {other}: {ratio:.3f}"
            + (" (goal <= 1.05)" if other in ("quiet", "pipe") else "")
            + f"; per round {min(ratios):.3f}-{max(ratios):.3f}, median "
            f"{statistics.median(ratios):.3f}; program CPU {statistics.median(cpu):.3f}; "
            f"{args.lines:,} lines, {kind}"
        )


if __name__ == "__main__":
    main()
