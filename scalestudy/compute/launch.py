"""Run one (study, point, repeat): start the workload process(es), time them, write the record.

The launcher itself imports only the standard library and this package, so
its own start-up is not charged to the workload. It always writes a record,
for a failed run too (with the reason), and exits 0 when it did: a failed
point is data for the report, not a reason to stop the other points.
"""

import argparse
import collections
import fcntl
import json
import math
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from contextlib import ExitStack, closing, contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path

from scalestudy.compute import energy, ledger, processes
from scalestudy.compute.harness import TRAINING, allocation_mismatches, threads_from_allocation
from scalestudy.records import SCHEMA_VERSION, write_json_atomic

REPO_DIR = Path(__file__).resolve().parents[2]


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def git_commit(repo: Path = REPO_DIR) -> dict:
    """The workflow's commit, and whether tracked files differ from it."""

    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=10, check=True
        )
        return done.stdout.strip()

    try:
        commit = git("rev-parse", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return {"workflow_commit": None}
    return {"workflow_commit": commit, "workflow_dirty": bool(dirty)}


def worker_processes(
    spec: dict, spec_file: Path, result_dir: Path, environ=os.environ, job: dict | None = None
):
    """Command and environment of each process to start: one `srun` step for all
    ranks inside a Slurm allocation, else one local process per rank."""
    base = [*interpreter(spec), "-m", "scalestudy.compute.worker", "--spec", str(spec_file)]
    base += ["--result-dir", str(result_dir)]
    requested = spec["requested"]
    world = requested["tasks_per_node"] * requested["nodes"]
    env = dict(environ, SCALESTUDY_LAUNCH_TIME=repr(time.time()))
    if environ.get("SLURM_JOB_ID"):
        env |= {"MASTER_ADDR": socket.gethostname(), "MASTER_PORT": str(free_port())}
        return [(srun_command(spec, environ, job) + base, env)]
    if requested["nodes"] > 1:
        raise RuntimeError("points with more than one node need a Slurm allocation")
    if spec["workload"] == "command":
        # the program's output then comes to the launcher itself (Supervisor.run)
        env["SCALESTUDY_DIRECT_OUTPUT"] = "1"
    cpu_sets = local_cpu_sets(requested["threads"], world, sorted(os.sched_getaffinity(0)))
    # as torchrun gives them, one process included: a program that joins its group
    # with init_method="env://" runs at every N (the worker adds the rest)
    env |= {
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(free_port()),
        "NODE_RANK": "0",
        "WORLD_SIZE": str(world),
    }
    return [
        (base, pinned(env, cpu_sets, r) | {"RANK": str(r), "LOCAL_RANK": str(r)})
        for r in range(world)
    ]


def interpreter(spec: dict) -> list[str]:
    """What runs the worker: this interpreter, or the one a comparison's variant names
    (another virtual environment), inside its container image where it names one."""
    if spec.get("container"):
        return ["apptainer", "exec", spec["container"], spec.get("python", "python3")]
    return [spec.get("python", sys.executable)]


def enforced_minutes(spec: dict, local: bool) -> float | None:
    """The time limit the launcher itself enforces: locally the run's; on Slurm only a
    round's budget limit (Slurm keeps whole minutes, rounds a fraction up and stops a
    step late: the budget must hold to the second)."""
    return spec.get("time_limit_min") if local else spec.get("budget_limit_min")


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
    # what Slurm granted the job, not what the point asked for: a shortfall then shows
    # up as an allocation mismatch instead of a failed srun
    cpus = (job or {}).get("CPUs/Task", "")
    cpus = int(cpus) if cpus.isdigit() else threads_from_allocation(environ)
    cmd = [
        "srun",
        "--overlap",
        "--kill-on-bad-exit=1",
        "--export=ALL",
        f"--nodes={requested['nodes']}",
        f"--ntasks-per-node={requested['tasks_per_node']}",
        f"--cpus-per-task={cpus}",
    ]
    if requested.get("mem_mb"):
        cmd.append(f"--mem={requested['mem_mb']}")
    if requested["gpus_per_node"]:
        cmd.append(f"--gpus-per-task={requested['gpus_per_node'] // requested['tasks_per_node']}")
    if spec.get("time_limit_min"):
        cmd.append(f"--time={math.ceil(spec['time_limit_min'])}")  # a round's may be a fraction
    return cmd


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
    command = ["scontrol", "show", "job", "-o", job_id]
    try:
        text = subprocess.run(command, capture_output=True, text=True, timeout=20, check=True)
    except (OSError, subprocess.SubprocessError):
        return {}
    return dict(re.findall(r"(\S+?)=(\S+)", text.stdout))


def slurm_job_times(info: dict) -> dict:
    times = {
        "slurm_submit_time": info.get("SubmitTime"),
        "slurm_start_time": info.get("StartTime"),
        "slurm_time_limit": info.get("TimeLimit"),
        "slurm_partition": info.get("Partition"),
        # NO: the job had its nodes to itself (sbatch --exclusive)
        "slurm_oversubscribe": info.get("OverSubscribe"),
        # also where the run died before it could say: which runs shared a job
        "slurm_job_id": info.get("JobId"),
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


class RunClaimed(RuntimeError):
    """Another launcher is running the same run."""


# After SIGTERM, a run's processes get this long to end before SIGKILL.
GRACE_S = 10.0
# How often the launcher looks at the clock and, locally, at the run's memory (Slurm
# samples memory every 30 s by default: a run's processes' own peaks are in their
# records too, from getrusage, however short the peak).
WATCH_S = 0.5
# How much later than its limit a run may end, killed at once (a failed run: no grace
# period): the watch's period and a second to start and reap its processes (an adaptive
# round holds it back from its budget: scalestudy/analysis/cost/plan.py, round_plan)
STOP_SLACK_S = WATCH_S + 1.0


class Supervisor:
    """Start a run's processes, each leading its own process group and dying with the
    launcher; stream their output into the capped log (a local command's program
    writes into a pipe of ours, not its worker's); stop them all at the time or
    memory limit (local runs: Slurm enforces its own) or when the launcher is told to
    stop; and leave no process of theirs behind (this process adopts those that
    detach) and none of their files in the temporary folder."""

    def __init__(
        self, log, time_limit_s=None, mem_limit_mb=None, limit_name="time limit", local=True
    ):
        self.log, self.time_limit_s, self.mem_limit_mb = log, time_limit_s, mem_limit_mb
        self.limit_name, self.local = limit_name, local
        self.procs: list[subprocess.Popen] = []
        self.limit_reason: str | None = None
        # locally: the largest the run's process tree held, sampled, and the largest
        # single process of the run (getrusage of the waited-for children)
        self.peak_rss_mb: float | None = None
        self.largest_process_mb: float | None = None
        # made by the ranks ({run_dir}), removed here: a killed rank cannot remove its own
        self.run_tmp = Path(tempfile.gettempdir()) / f"scalestudy-run-{uuid.uuid4().hex}"
        processes.adopt_orphans()
        # started here, before the run's clock, so that its start-up is not timed
        self.reaper = processes.start_reaper(self.run_tmp)

    def close(self) -> None:
        """End the reaper: the launcher has cleaned up after the run itself."""
        if self.reaper.poll() is None:
            self.reaper.kill()
        self.reaper.wait()
        processes.adopt_orphans(False)  # for a caller that goes on (tests call launch())
        shutil.rmtree(self.run_tmp, ignore_errors=True)

    def stop(self, sig=signal.SIGTERM, grace_s: float | None = None) -> None:
        """Signal every process group; SIGKILL what is left after the grace period."""
        for p in self.procs:
            processes.signal_group(p.pid, sig)
        deadline = time.monotonic() + (GRACE_S if grace_s is None else grace_s)
        while time.monotonic() < deadline and any(p.poll() is None for p in self.procs):
            time.sleep(0.05)
        for p in self.procs:
            processes.signal_group(p.pid, signal.SIGKILL)

    def run(self, commands) -> list[int]:
        # this process's children before the run (the reaper; a caller's own): not the run's
        earlier = set(processes.child_pids(os.getpid()))
        own_cpus = os.sched_getaffinity(0)
        # the launcher's CPUs that no rank was pinned to: its readers and watch run there
        pinned = ",".join(env.get("SCALESTUDY_CPUS", "") for _, env in commands)
        pinned_cpus = {int(c) for c in pinned.split(",") if c}
        aside = os.sched_getaffinity(0) - pinned_cpus if pinned_cpus else set()

        def read(fd: int, tail_fd: int | None = None) -> None:
            processes.run_aside(aside)
            if tail_fd is None:
                processes.pump(fd, self.log)
                return
            # a program's own output, read here in one hop (through its worker it cost a
            # chatty program 10-18 % more than a bare pipe): into the log, and its tail
            # back to the worker (metric patterns, failure message) once it has ended
            kept = processes.OutputTail(self.log)
            try:
                processes.pump(fd, kept)
            finally:
                processes.hand_over(tail_fd, kept.value())

        def on_signal(signum, _frame):
            raise Terminated(signal.Signals(signum).name)

        readers, old = [], {}
        try:
            for cmd, env in commands:
                env = env | {processes.RUN_TMP: str(self.run_tmp)}
                theirs = []  # the worker's ends of the pipes of its program's output
                if env.get("SCALESTUDY_DIRECT_OUTPUT"):
                    out_r, out_w = os.pipe()
                    tail_r, tail_w = os.pipe()
                    processes.widen_pipe(out_r)
                    theirs = [out_w, tail_r]
                    env |= {"SCALESTUDY_OUTPUT_FD": str(out_w), "SCALESTUDY_TAIL_FD": str(tail_r)}
                try:  # preexec_fn: safe, no threads yet
                    self.procs.append(
                        subprocess.Popen(
                            cmd,
                            env=env,
                            stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT,
                            pass_fds=theirs,
                            preexec_fn=processes.start_alone,
                        )
                    )
                except BaseException:
                    if theirs:
                        os.close(out_r)
                        os.close(tail_w)
                    raise
                finally:
                    for fd in theirs:
                        os.close(fd)
                if theirs:
                    readers.append(threading.Thread(target=read, args=(out_r, tail_w), daemon=True))
            groups = " ".join(str(p.pid) for p in self.procs)  # the reaper's one line
            self.reaper.stdin.write(groups.encode() + b"\n")
            self.reaper.stdin.close()
            for p in self.procs:
                processes.widen_pipe(p.stdout.fileno())
                readers.append(
                    threading.Thread(target=read, args=(os.dup(p.stdout.fileno()),), daemon=True)
                )
                p.stdout.close()
            processes.run_aside(aside)  # this thread only; restored below
            for r in readers:
                r.start()
            # handlers can only be set from the main thread (tests call launch() from others)
            if threading.current_thread() is threading.main_thread():
                old = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
            self._watch()
            codes = [p.wait() for p in self.procs]
            if self.local:  # on Slurm the children are srun alone
                self.largest_process_mb = processes.largest_child_mb()
            return codes
        except Terminated:
            self.stop()
            raise
        finally:
            for s, handler in old.items():
                signal.signal(s, handler)
            # whatever the run left behind in its groups (a program's own children)
            for p in self.procs:
                if p.poll() is None:
                    p.kill()
                processes.signal_group(p.pid, signal.SIGKILL)
                p.wait()
            # and outside them (setsid, double forks): adopted by this process
            processes.sweep(earlier)
            os.sched_setaffinity(0, own_cpus)
            for r in readers:
                r.join(timeout=10)

    def _watch(self) -> None:
        started = time.monotonic()
        roots = [p.pid for p in self.procs]
        with closing(processes.ExitWatch(self.procs)) as exits:
            while exits.running():
                exits.wait(WATCH_S)  # back at once when a process ends: its time ends there
                if self.local:
                    rss = processes.tree_rss_mb(roots)
                    self.peak_rss_mb = max(self.peak_rss_mb or 0.0, rss)
                    if self.mem_limit_mb and rss > self.mem_limit_mb:
                        self.limit_reason = (
                            f"memory limit ({self.mem_limit_mb} MB) exceeded: "
                            f"the run's processes held {rss:.0f} MB"
                        )
                        self.stop(signal.SIGKILL, 0)
                        return
                if self.time_limit_s is not None and time.monotonic() - started > self.time_limit_s:
                    minutes = self.time_limit_s / 60
                    self.limit_reason = f"{self.limit_name} ({minutes:g} min) exceeded"
                    self.log.note(f"[scalestudy: {self.limit_reason}: stopping the run]")
                    self.stop(signal.SIGKILL, 0)  # within STOP_SLACK_S of its limit
                    return


def read_results(result_dir: Path) -> dict[int, dict]:
    results = {}
    for path in sorted(result_dir.glob("rank*.json")):
        with suppress(OSError, ValueError, KeyError):  # a rank that wrote no whole result
            result = json.loads(path.read_text())
            results[int(result["rank"])] = result
    return results


def rank_spread(results: dict[int, dict]) -> dict:
    """Slowest and fastest rank's training time: a wide spread means load imbalance
    or a slow node, which the mean would hide."""
    phases = ([p for p in r.get("phases", []) if p["kind"] in TRAINING] for r in results.values())
    train = [sum(p["seconds"] for p in own) for own in phases if own]  # ranks that trained
    if len(train) < 2:
        return {}
    return {"rank_train_s_min": min(train), "rank_train_s_max": max(train)}


def failure_reason(results: dict[int, dict], codes: list[int], stderr_text: str) -> str | None:
    """Why the run failed (None if it did not): Slurm's words first, then the
    workload's own, then how the process ended."""
    if any(codes) and (slurm := slurm_reason(stderr_text)):
        return slurm
    if failed := [r for r in results.values() if r.get("status") != "ok"]:
        return failed[0].get("reason") or "a rank failed"
    if bad := next((c for c in codes if c), 0):
        return describe_exit(bad)
    if not results:
        return "the workload wrote no result"
    return None


def had_node_to_itself(
    requested: dict, environment: dict, job: dict, overlapping: list[dict] | None
) -> bool:
    """Whether the run's nodes ran nothing else, as far as can be known: on Slurm the job
    was exclusive (OverSubscribe=NO); locally the run held every CPU of the machine and no
    other timed run overlapped it. Node-wide counters (RAPL) count only then."""
    if job:
        return job.get("OverSubscribe") == "NO"
    cores = requested["threads"] * requested["tasks_per_node"]
    return not overlapping and cores >= (environment.get("machine_cpus") or 0) > 0


def run_energy(
    spec: dict, results: dict[int, dict], environment: dict, job: dict | None, overlapping
) -> dict | None:
    """The run's energy from its ranks' counter readings (scalestudy.compute.energy)."""
    ranks = [
        r["energy"] | {"host": r["environment"]["host"]}
        for r in results.values()
        if r.get("energy") and r.get("environment")
    ]
    exclusive = had_node_to_itself(spec["requested"], environment, job or {}, overlapping)
    return energy.combine(ranks, exclusive, spec["requested"]["nodes"])


def memory_use(results: dict[int, dict], hosts: list[str], launcher_seen: list | None) -> dict:
    """The run's peak memory per rank (each rank's processes, from getrusage), per node
    (the sum of its ranks' peaks; locally, where `launcher_seen` holds the sampled tree's
    and the largest single process's, whichever is more) and the largest node's, which
    `--mem` must cover; None where nothing was measured (docs/measuring.md, memory)."""
    peaks = {r: results[r].get("metrics", {}).get("peak_rss_mb") for r in sorted(results)}
    nodes = [
        sum(filter(None, (peaks[r] for r in peaks if host_of(results[r]) == host))) or None
        for host in hosts
    ]
    if launcher_seen is not None:  # a local run: one node, the launcher's
        nodes = [max(filter(None, [*nodes, *launcher_seen]), default=None)]
    return {
        "peak_rss_mb": max(filter(None, nodes), default=None),
        "rank_peak_rss_mb": list(peaks.values()),
        "node_peak_rss_mb": nodes,
    }


def host_of(result: dict) -> str | None:
    return (result.get("environment") or {}).get("host")


def assemble_record(
    spec: dict,
    results: dict[int, dict],
    codes: list[int],
    wall_s: float | None,
    started_at: str,
    rerun_token: str,
    reason: str | None,
    job: dict | None = None,
    run_id: str | None = None,
    overlapping: list[dict] | None = None,
    launcher_seen: list | None = None,
) -> dict:
    """One record from the ranks' results; rank 0 speaks for the run."""
    head, ranks = results.get(0, {}), list(results.values())
    nothing = {"cpus_usable": 0, "threads_given": 0, "torch_threads": None, "omp_num_threads": None}
    received = dict(head.get("received") or nothing)
    placed = [r for r in ranks if r.get("environment")]  # the ranks that say where they ran
    ranks_on = collections.Counter(r["environment"]["host"] for r in placed)
    hosts = set(ranks_on)
    received["nodes"] = len(hosts) or None
    # the most ranks any one host ran: a layout packed other than asked shows here
    received["tasks_per_node"] = max(ranks_on.values()) if ranks_on else None
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
    usage = processes.combine_usage(
        [r["usage"] | {"host": r["environment"]["host"]} for r in ranks if r.get("usage")]
    )
    usage |= memory_use(results, environment["hosts"] or [socket.gethostname()], launcher_seen)
    used = run_energy(spec, results, environment, job, overlapping) if not reason else None
    return {
        "schema_version": SCHEMA_VERSION,
        "study": spec["study"],
        "point": spec["point"],
        "repeat": spec["repeat"],
        "series": spec.get("series", ""),
        "run_id": run_id or uuid.uuid4().hex,
        "workload": spec["workload"],
        "n": spec["n"],
        "params": spec["params"],
        "status": "failed" if reason else "ok",
        "reason": reason,
        "exit_code": next((c for c in codes if c), 0) if codes else None,
        "wall_s": wall_s,
        # rank 0's phases, each with the run's energy in it (all ranks' readings)
        "phases": energy.combine_phases(
            head.get("phases", []),
            [{"host": r["environment"]["host"], "phases": r.get("phases", [])} for r in placed],
            used,
        ),
        "metrics": head.get("metrics", {}) | rank_spread(results),
        "resources": {
            "requested": spec["requested"],
            "received": received,
            "mismatch": bool(mismatches),
            "mismatches": mismatches,
            "usage": usage,
        },
        "environment": environment,
        "overlaps": overlapping or [],
        # a comparison's: the seed of its order, and the run's place in its point's job
        **({"compare": spec["compare"]} if spec.get("compare") else {}),
        # counters only; absent where nothing was read (a failed run)
        **({"energy": used} if used else {}),
        "started_at": started_at,
        "finished_at": utc_now(),
        "rerun_token": rerun_token,
    }


@contextmanager
def claimed(work: Path, record_path: Path):
    """The run's work folder, claimed for this launcher alone (an flock that ends with
    the process): a second launcher of the same run stops instead of mixing its files
    into the first one's. Emptied before use; removed afterwards, also after a failure."""
    work.mkdir(parents=True, exist_ok=True)
    fd = os.open(work / ".claim", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 200, 0).decode(errors="replace").strip()
        os.close(fd)
        raise RunClaimed(
            f"{record_path}: another launcher is running this run ({holder or 'unknown'}); "
            "let it finish, or stop it, before running this run again"
        ) from None
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()}, since {utc_now()}".encode(), 0)
        for entry in work.iterdir():
            if entry.name != ".claim":
                shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
        yield work
    finally:
        shutil.rmtree(work, ignore_errors=True)
        os.close(fd)


def launch(
    spec: dict,
    record_path: Path,
    rerun_token: str = "first",
    log_path: Path | None = None,
    log_limit_mb: float | None = None,
) -> dict:
    """Run one job of a point and write its record; returns the record. Raises
    RunClaimed when another launcher runs the same run, and OSError when the record
    cannot be written (a full disk); the work folder is removed either way. The log
    keeps at most `log_limit_mb` of output (the rule passes the config's log_limit_mb;
    None keeps all of it)."""
    record_path = Path(record_path)
    work = record_path.parent / f".{record_path.stem}.work"
    limit = sys.maxsize if log_limit_mb is None else int(log_limit_mb * 2**20)
    log = processes.CappedLog(log_path, limit)
    local = not os.environ.get("SLURM_JOB_ID")
    run_id = uuid.uuid4().hex
    try:
        with claimed(work, record_path), ExitStack() as held:
            spec_file = work / "spec.json"
            spec_file.write_text(json.dumps(spec))
            job = slurm_job_info()
            if local:
                waiting = "[scalestudy: waiting for another timed run on this machine to end]"
                held.enter_context(ledger.timed_run_lock(on_wait=lambda: log.note(waiting)))
            hosts_ledger = ledger.Ledger()
            cpus = sorted(os.sched_getaffinity(0))
            run_name = f"{spec['study']}/{spec['point']}/rep{spec['repeat']}"
            running = hosts_ledger.begin(run_id, run_name, cpus)
            minutes = enforced_minutes(spec, local)
            mem_mb = spec["requested"].get("mem_mb") if local else None
            # a round's budget limit stops the run where the study's budget ends: said so
            name = PROBE_LIMIT if spec.get("probe") else "budget limit"
            name = name if spec.get("budget_limit_min") else "time limit"
            supervisor = held.enter_context(
                closing(
                    Supervisor(log, None if minutes is None else minutes * 60, mem_mb, name, local)
                )
            )
            started = time.time()
            started_at = utc_now()
            start = time.perf_counter()
            codes = []
            try:
                codes = supervisor.run(worker_processes(spec, spec_file, work, job=job))
                reason = supervisor.limit_reason
            except Terminated as e:
                reason = f"terminated by {e}: the job was cancelled or ran out of time"
            except (OSError, RuntimeError) as e:
                reason = f"could not start the workload: {e}"
            wall_s = time.perf_counter() - start
            during = hosts_ledger.finish(run_id, started)
            results = read_results(work)
            reason = reason or failure_reason(results, codes, log.recent_text())
            seen = [supervisor.peak_rss_mb, supervisor.largest_process_mb] if local else None
            record = assemble_record(
                spec,
                results,
                codes,
                wall_s,
                started_at,
                rerun_token,
                reason,
                job,
                run_id=run_id,
                overlapping=ledger.overlaps(cpus, running + during),
                launcher_seen=seen,
            )
            write_json_atomic(record_path, record)
    finally:
        log.close()
    return record


# A command study's probe (spec "probe", rules/run.smk): one short run first, stopped at
# its limit, so that a command that is not found or fails at once is named before the
# study's runs pile up, and none of them starts.
PROBE_LIMIT = "probe limit"


def probe_failure(record: dict) -> str | None:
    """Why a probe says that its study's runs must not start (None: its command ran to
    its end, or was still running at the probe's limit)."""
    reason = record["reason"] or ""
    if record["status"] == "ok" or reason.startswith(PROBE_LIMIT):
        return None
    study = record["study"]
    return f"study {study}: its command failed at once, so none of its runs starts: {reason}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--spec", required=True, help="the run's spec as JSON")
    parser.add_argument("--record", required=True, help="where the record is written")
    parser.add_argument("--rerun-token", default="first")
    parser.add_argument("--log", help="the job's log: the run's output (capped) goes there")
    limit_help = "most output kept (config log_limit_mb; unset: all)"
    parser.add_argument("--log-limit-mb", type=float, help=limit_help)
    args = parser.parse_args(argv)
    # errors the record cannot hold go to our own stderr, which Snakemake shows
    spec = json.loads(args.spec)
    try:
        record = launch(spec, Path(args.record), args.rerun_token, args.log, args.log_limit_mb)
    except (RunClaimed, OSError) as e:
        message = f"scalestudy.compute.launch: {e}"
        print(message, file=sys.stderr)
        with suppress(OSError), open(args.log, "a") if args.log else open(os.devnull, "w") as f:
            print(message, file=f)
        return 1
    summary = (
        f"{record['study']}/{record['point']}/rep{record['repeat']}: {record['status']}"
        + (f" ({record['reason']})" if record["reason"] else "")
        + (f" in {record['wall_s']:.2f} s" if record["wall_s"] is not None else "")
    )
    failed = probe_failure(record) if spec.get("probe") else None
    print(summary)
    if args.log:
        with open(args.log, "a") as f:
            print(summary, *[failed] if failed else [], sep="\n", file=f)
    if failed:  # said here; its record stands for the study's runs (rules/run.smk)
        print(failed, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
