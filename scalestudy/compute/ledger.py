"""The host's ledger of timed runs, and the machine-wide lock for local timed runs
(docs/measuring.md). Every launcher on a host notes its run, with the CPUs it could use,
in one append-only file in node-local shared memory (/dev/shm, else the temporary folder),
whatever its study or workflow folder, so that each of two overlapping runs names the other.
"""

import contextlib
import fcntl
import json
import os
import socket
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

KEEP_S = 7 * 24 * 3600  # entries older than this are dropped when the file grows
PRUNE_BYTES = 1 << 20


def shared_dir() -> Path:
    shm = Path("/dev/shm")
    return shm if shm.is_dir() and os.access(shm, os.W_OK) else Path(tempfile.gettempdir())


def _open_shared(path: Path) -> int:
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o666)
    # other users' runs disturb ours too: let them note theirs
    with contextlib.suppress(PermissionError):
        os.fchmod(fd, 0o666)
    return fd


@contextmanager
def locked(path: Path, on_wait=None):
    """Hold an exclusive lock of the shared file `path` (yields its descriptor);
    `on_wait()` is called once if another holds it. Released when the holder ends,
    however it ends."""
    fd = _open_shared(path)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if on_wait:
                on_wait()
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield fd
    finally:
        os.close(fd)


def timed_run_lock(path: Path | None = None, on_wait=None):
    """Hold the machine-wide lock of local timed runs (see `locked`)."""
    return locked(path or shared_dir() / "scalestudy-timed-run.lock", on_wait)


def _start_time(pid: int) -> str | None:
    """The process's start time since boot (clock ticks), to tell a live run from a
    reused process id."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    return stat[stat.rfind(b")") + 2 :].split()[19].decode()


class Ledger:
    def __init__(self, path: Path | None = None, host: str | None = None):
        self.path = path or shared_dir() / "scalestudy-timed-runs.jsonl"
        self.host = host or socket.gethostname()

    def _entries(self, fd: int) -> dict[str, dict]:
        os.lseek(fd, 0, os.SEEK_SET)
        runs: dict[str, dict] = {}
        for line in b"".join(iter(lambda: os.read(fd, 1 << 16), b"")).splitlines():
            try:
                entry = json.loads(line)
                runs.setdefault(entry["run_id"], {}).update(entry)
            except (ValueError, KeyError, TypeError):
                continue  # a line cut by a full disk: ignore it
        return runs

    def _append(self, fd: int, entry: dict) -> None:
        os.write(fd, (json.dumps(entry) + "\n").encode())

    def _others(self, entries: dict[str, dict], run_id: str) -> list[dict]:
        """The entries of the other runs on this host."""
        return [e for e in entries.values() if e.get("host") == self.host and e["run_id"] != run_id]

    def begin(self, run_id: str, run: str, cpus: list[int]) -> list[dict]:
        """Note this run's start; return the runs on this host still running now."""
        now = time.time()
        try:
            with locked(self.path) as fd:
                entries = self._entries(fd)
                running = [
                    e
                    for e in self._others(entries, run_id)
                    if e.get("end") is None
                    and e.get("pid_start") is not None
                    and _start_time(e.get("pid", -1)) == e["pid_start"]
                ]
                if os.fstat(fd).st_size > PRUNE_BYTES:
                    self._prune(fd, entries, now)
                pid = os.getpid()
                self._append(
                    fd,
                    {
                        "run_id": run_id,
                        "run": run,
                        "host": self.host,
                        "pid": pid,
                        "pid_start": _start_time(pid),
                        "cpus": cpus,
                        "start": now,
                    },
                )
        except OSError:
            return []  # no ledger (read-only /dev/shm, full disk): overlaps go unseen
        return running

    def finish(self, run_id: str, started: float) -> list[dict]:
        """Note this run's end; return the runs on this host that started while it ran."""
        now = time.time()
        try:
            with locked(self.path) as fd:
                entries = self._entries(fd)
                self._append(fd, {"run_id": run_id, "end": now})
        except OSError:
            return []
        return [e for e in self._others(entries, run_id) if started <= e.get("start", -1) <= now]

    def _prune(self, fd: int, entries: dict, now: float) -> None:
        keep = [e for e in entries.values() if now - e.get("start", now) < KEEP_S]
        os.ftruncate(fd, 0)
        for e in keep:
            self._append(fd, e)


def overlaps(mine: list[int], others: list[dict]) -> list[dict]:
    """Record entries for the runs that overlapped this one, once each."""
    first: dict[str, dict] = {}
    for e in others:
        first.setdefault(e["run_id"], e)
    result = []
    for e in first.values():
        same = bool(set(mine) & set(e["cpus"])) if e.get("cpus") and mine else None
        result.append({"run": e.get("run", "?"), "run_id": e["run_id"], "same_cpus": same})
    return result
