"""The run's processes: kept together, stopped together, measured, and heard without
being held back (how, and why: docs/measuring.md, the bullets on a run's processes and
its output). Standard library only: this runs on compute nodes, before and around the
workload.
"""

import contextlib
import ctypes
import fcntl
import os
import resource
import select
import signal
import subprocess
import threading
import time
from pathlib import Path

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
F_SETPIPE_SZ = 1031
# Pipes of 1 MB, read 1 MB at a time: a program writing many small lines then rarely
# finds the pipe full or wakes its reader, and runs as fast as with its output sent to
# /dev/null (benchmarks/command_output.py: 64 KB pipes read in 64 KB blocks were
# 5.7x slower than /dev/null for 1 M unbuffered lines).
PIPE_BYTES = BLOCK = 1 << 20
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PAGE_MB = os.sysconf("SC_PAGE_SIZE") / 2**20


def prctl(option: int, value: int) -> None:
    """Linux's prctl; a no-op where it is missing."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)


def die_with_parent(sig: int = signal.SIGKILL) -> None:
    """Ask Linux to send `sig` to this process when its parent ends (preexec_fn of a
    child, or called by a process itself)."""
    prctl(PR_SET_PDEATHSIG, sig)


def adopt_orphans(on: bool = True) -> None:
    """Make this process a child subreaper (Linux 3.4): its descendants whose parent
    ends are re-parented to it, not to init, so `sweep` still finds them."""
    prctl(PR_SET_CHILD_SUBREAPER, int(on))


def child_pids(pid: int) -> list[int]:
    """The children of a process (of any of its threads); none once it has ended."""
    found = []
    try:
        for task in os.scandir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task.name}/children", "rb") as f:
                found.extend(int(c) for c in f.read().split())
    except (OSError, ValueError):
        pass  # ended meanwhile
    return found


def sweep(keep: set[int] = frozenset(), timeout_s: float = 5.0) -> None:
    """SIGKILL and reap every descendant of this process, but the children in `keep`
    and their own. Run by a subreaper (adopt_orphans) after its run's program ended, it
    ends what the program left behind. Costs two small /proc reads when nothing is
    left; gives up after timeout_s on a process that will not die (uninterruptible)."""
    me = os.getpid()
    deadline = time.monotonic() + timeout_s
    while True:
        direct = [pid for pid in child_pids(me) if pid not in keep]
        found, todo = [], list(direct)
        while todo:
            found.append(todo.pop())
            todo.extend(child_pids(found[-1]))
        if not found or time.monotonic() > deadline:
            return
        for pid in found:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        # ours to reap; the others are re-parented to us when their parents die
        for pid in direct:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
        time.sleep(0.001)


def start_alone() -> None:
    """preexec_fn of a run's process: its own process group, and death with its
    parent."""
    os.setpgid(0, 0)
    die_with_parent()


# The run's temporary folder ({run_dir} of each rank is in it), in the environment of
# the run's processes: its name, unique to the run, also marks them.
RUN_TMP = "SCALESTUDY_RUN_TMP"

# The reaper: a tiny process that outlives nothing but the launcher. When the launcher
# ends without cleaning up (kill -9), Linux sends the reaper SIGTERM (its parent-death
# signal) and it kills the run's process groups and every process marked with the run's
# folder (a program's own children, which no parent-death signal reaches, re-parented
# to init once the launcher is gone), and removes that folder.
REAPER = """
import os, shutil, signal, sys
groups = []
run_tmp = os.environ["SCALESTUDY_RUN_TMP"]
mark = ("SCALESTUDY_RUN_TMP=" + run_tmp).encode() + bytes(1)
def marked():
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/" + pid + "/environ", "rb") as f:
                if mark in f.read() and int(pid) != os.getpid():
                    yield int(pid)
        except OSError:
            pass  # ended, or another user's
def reap(*_):
    for kill, ids in ((os.killpg, groups), (os.kill, marked())):  # the groups first
        for i in ids:
            try:
                kill(i, signal.SIGKILL)
            except OSError:
                pass
    shutil.rmtree(run_tmp, ignore_errors=True)
    os._exit(0)
signal.signal(signal.SIGTERM, reap)
if os.getppid() != int(os.environ["SCALESTUDY_LAUNCHER_PID"]):
    reap()  # the launcher ended before the death signal was armed
groups = [int(g) for g in sys.stdin.readline().split()]
while True:
    signal.pause()
"""


def start_reaper(run_tmp: Path):
    """Start the reaper (see REAPER) before the run's processes, so that its own
    start-up does not fall in their run; tell it their groups on its stdin, one line.
    Kill it with SIGKILL when the run ended and the launcher cleaned up itself."""
    import sys

    return subprocess.Popen(
        [sys.executable, "-S", "-c", REAPER],
        env={"SCALESTUDY_LAUNCHER_PID": str(os.getpid()), RUN_TMP: str(run_tmp)},
        stdin=subprocess.PIPE,
        preexec_fn=lambda: die_with_parent(signal.SIGTERM),  # noqa: PLW1509
    )


def signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


class ExitWatch:
    """Wakes when one of a run's processes ends, so that the run's time ends with them:
    sleeping between looks added up to a look's interval to every run's wall time.
    Through a pidfd per process where the kernel has them (Linux 5.3), else through
    Popen.wait's own polling (at most 50 ms apart)."""

    def __init__(self, procs: list[subprocess.Popen]):
        self.procs = procs
        self.fds: list[int] = []
        self.poller = select.poll() if hasattr(os, "pidfd_open") else None
        for proc in procs if self.poller else ():
            try:
                self.fds.append(os.pidfd_open(proc.pid))
            except ProcessLookupError:
                continue  # ended and reaped already
            except OSError:  # no pidfds on this kernel
                self.close()
                self.poller = None
                break
            self.poller.register(self.fds[-1], select.POLLIN)

    def running(self) -> bool:
        return any(p.poll() is None for p in self.procs)

    def wait(self, timeout_s: float) -> None:
        """Until another process has ended, or timeout_s."""
        if self.poller is None:  # StopIteration: none is running
            with contextlib.suppress(subprocess.TimeoutExpired, StopIteration):
                next(p for p in self.procs if p.poll() is None).wait(timeout_s)
            return
        for fd, _ in self.poller.poll(timeout_s * 1000):
            self.poller.unregister(fd)  # ended: readable from now on

    def close(self) -> None:
        for fd in self.fds:
            os.close(fd)
        self.fds = []


def tree_rss_mb(roots: list[int]) -> float:
    """Resident memory of these processes and all their descendants. Only their own
    /proc entries are read (statm, and each thread's children): reading every
    process's /proc/PID/stat twice a second slowed a 1-thread MNIST run by 5 %
    (benchmarks/harness_overhead.py: 1.04 against 0.95 without)."""
    pages, todo, seen = 0, list(roots), set()
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        try:
            with open(f"/proc/{pid}/statm", "rb") as f:
                pages += int(f.read().split()[1])
        except (OSError, ValueError, IndexError):
            continue  # ended meanwhile
        todo.extend(child_pids(pid))
    return pages * PAGE_MB


def largest_child_mb() -> float:
    """The peak resident memory of the largest process this one has waited for (theirs
    included): getrusage's figure, exact however short the peak, but no sum."""
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # KiB on Linux


def cpu_busy_ticks(cpus: set[int]) -> int:
    """Busy clock ticks (all but idle and iowait) of these CPUs since boot."""
    busy = 0
    with open("/proc/stat", "rb") as f:
        for line in f:
            if not line.startswith(b"cpu") or line[3:4] == b" ":
                continue
            name, *values = line.split()
            if int(name[3:]) in cpus:
                user, nice, system, _idle, _iowait, irq, softirq, steal = map(int, values[:8])
                busy += user + nice + system + irq + softirq + steal
    return busy


class CpuWatch:
    """CPU use of this process (and the children it waits for) against the busy time of
    the CPUs it may use, from start() to stop()."""

    def __init__(self):
        self.cpus = set(os.sched_getaffinity(0))
        self.t0 = time.monotonic()
        self.own0 = self._own()
        self.busy0 = self._busy()

    @staticmethod
    def _own() -> float:
        me = resource.getrusage(resource.RUSAGE_SELF)
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime - aside_cpu_s

    def _busy(self) -> float | None:
        try:
            return cpu_busy_ticks(self.cpus) / CLOCK_TICKS
        except (OSError, ValueError):
            return None

    def stop(self) -> dict:
        busy = self._busy()
        return {
            "cpus": sorted(self.cpus),
            "window_s": time.monotonic() - self.t0,
            "cpu_time_s": self._own() - self.own0,
            "busy_s": None if busy is None or self.busy0 is None else busy - self.busy0,
        }


def combine_usage(per_rank: list[dict]) -> dict:
    """One run's CPU use from its ranks' watches. Ranks that watched the same CPUs of
    one host (unpinned ranks) share their busy time: counted once, against the sum of
    their own CPU time."""
    if not per_rank:
        return {}
    groups: dict[tuple, dict] = {}
    for u in per_rank:
        key = (u.get("host"), tuple(u["cpus"]))
        g = groups.setdefault(key, {"own": 0.0, "busy": u["busy_s"], "cpus": len(u["cpus"])})
        g["own"] += u["cpu_time_s"]
    window = max(u["window_s"] for u in per_rank)
    own = sum(g["own"] for g in groups.values())
    known = [g for g in groups.values() if g["busy"] is not None]
    others = sum(max(0.0, g["busy"] - g["own"]) for g in known) if known else None
    return {
        "cpu_time_s": own,
        "window_s": window,
        "cores_used": own / window if window > 0 else None,
        "cpus_watched": sum(g["cpus"] for g in groups.values()),
        "others_cpu_s": others,
        "others_cores": None if others is None or window <= 0 else others / window,
    }


class CappedLog:
    """A log file that keeps at most `limit` bytes of a run's output: the first half as
    it is written (live), then only the latest half, written at the end after a line
    saying how much was cut. The last `recent` bytes are also kept in memory, for
    reading Slurm's words on why a step ended."""

    def __init__(self, path: str | Path | None, limit: int, recent: int = 1 << 18):
        self.file = open(path, "ab") if path else None  # noqa: SIM115 - closed in close()
        self.limit, self.head_left, self.tail_limit = limit, limit - limit // 2, limit // 2
        self.tail, self.cut, self.recent, self.recent_limit = bytearray(), 0, bytearray(), recent
        self.lock = threading.Lock()  # one reader thread per process writes here

    def write(self, data: bytes) -> None:
        with self.lock:
            self._write(data)

    def _write(self, data: bytes) -> None:
        self.recent += data
        if len(self.recent) > 2 * self.recent_limit:
            del self.recent[: len(self.recent) - self.recent_limit]
        if self.file is None:
            return
        if self.head_left > 0:
            head = data[: self.head_left]
            self.file.write(head)
            self.file.flush()
            self.head_left -= len(head)
            data = data[len(head) :]
            if self.head_left == 0 and data:
                self.file.write(
                    f"\n[scalestudy: this log keeps {self.limit / 2**20:g} MB of the run's "
                    "output: its first half above, its last half at the end]\n".encode()
                )
                self.file.flush()
        if data:
            self.tail += data
            if len(self.tail) > 2 * self.tail_limit:
                drop = len(self.tail) - self.tail_limit
                self.cut += drop
                del self.tail[:drop]

    def note(self, text: str) -> None:
        """A line of the launcher's own (never cut)."""
        with self.lock:
            if self.file is not None:
                self.file.write(text.encode() + b"\n")
                self.file.flush()

    def recent_text(self) -> str:
        return self.recent[-self.recent_limit :].decode(errors="replace")

    def close(self) -> None:
        if self.file is None:
            return
        drop = max(0, len(self.tail) - self.tail_limit)
        self.cut += drop
        if self.cut:
            self.file.write(f"\n[scalestudy: {self.cut} bytes of output cut here]\n".encode())
        self.file.write(self.tail[drop:])
        self.file.close()
        self.file = None


# The tail of a program's output that its worker reads the metric patterns and the
# failure message from; bounded, so a chatty program cannot exhaust memory.
OUTPUT_TAIL_BYTES = 8_000_000


class OutputTail:
    """Passes output on to `out` (flushed when it can be) and keeps its last `keep` bytes."""

    def __init__(self, out, keep: int = OUTPUT_TAIL_BYTES):
        self.out, self.keep, self.tail = out, keep, bytearray()
        self.flush = getattr(out, "flush", None)

    def write(self, data: bytes) -> None:
        self.out.write(data)
        if self.flush is not None:
            self.flush()
        self.tail += data
        if len(self.tail) > 2 * self.keep:
            del self.tail[: len(self.tail) - self.keep]

    def value(self) -> bytes:
        return bytes(self.tail[-self.keep :])

    def text(self) -> str:
        return self.value().decode(errors="replace")


def hand_over(fd: int, data: bytes) -> None:
    """Write all of `data` to a pipe and close it; a reader that is gone is no error."""
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    except OSError:
        pass
    finally:
        os.close(fd)


def read_to_end(fd: int) -> bytes:
    """All a pipe holds until its writer closes it; closes it."""
    chunks = []
    try:
        while chunk := os.read(fd, BLOCK):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks)


def widen_pipe(fd: int) -> None:
    """Give a pipe PIPE_BYTES of buffer (Linux; the system's limit may refuse it)."""
    with contextlib.suppress(OSError):
        fcntl.fcntl(fd, F_SETPIPE_SZ, PIPE_BYTES)


# After a short read the reader naps, so that a program printing line by line fills the
# pipe instead of waking its reader (a context switch, on the program's own CPU when
# they share it) for every line: 2.6x the /dev/null time without the nap, 1.28x with it (5 ms).
# A fast writer fills a 1 MB pipe in less than that: the nap is cut to the time the pipe
# takes to half fill at the rate just seen (nap_s), so that its writes rarely find it full.
NAP_S = 0.005


# CPU time the harness spent on CPUs outside the run's own (pump_aside); the run's
# CPU use (CpuWatch) leaves it out.
aside_cpu_s = 0.0


def run_aside(cpus: set[int]) -> bool:
    """Move the calling thread (only it) to these CPUs, outside the run's own; False
    when there are none or the system refuses (a Slurm job's cgroup)."""
    try:
        return bool(cpus) and os.sched_setaffinity(0, cpus) is None
    except OSError:
        return False


def pump_aside(fd: int, sink) -> None:
    """pump() in a thread that runs beside the run's CPUs where it may (local runs: the
    launcher's CPUs the run was not pinned to, SCALESTUDY_HARNESS_CPUS), so that
    passing a chatty program's output on never takes the program's own CPU: 1.5x the
    /dev/null time for 1 M buffered lines when the copy shared its CPU."""

    def run() -> None:
        global aside_cpu_s
        cpus = os.environ.get("SCALESTUDY_HARNESS_CPUS", "")
        aside = run_aside({int(c) for c in cpus.split(",") if c})
        start = resource.getrusage(resource.RUSAGE_THREAD)
        try:
            pump(fd, sink)
        finally:
            if aside:
                end = resource.getrusage(resource.RUSAGE_THREAD)
                aside_cpu_s += end.ru_utime + end.ru_stime - start.ru_utime - start.ru_stime

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join()


def nap_s(read: int, seconds: float) -> float:
    """How long to nap after a read of `read` bytes that took `seconds` to arrive: NAP_S
    after a short read, but never longer than the pipe takes to half fill at that rate
    (a full pipe holds the program back)."""
    if read >= BLOCK // 4:
        return 0.0
    return min(NAP_S, PIPE_BYTES / 2 * max(seconds, 1e-6) / max(read, 1))


def pump(fd: int, sink) -> None:
    """Copy a pipe to `sink.write` in blocks until it closes, then close it."""
    try:
        last = time.monotonic()
        while data := os.read(fd, BLOCK):
            now = time.monotonic()
            sink.write(data)
            if nap := nap_s(len(data), now - last):
                time.sleep(nap)
            last = now
    finally:
        os.close(fd)
