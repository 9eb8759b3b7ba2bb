"""What every workload runs inside: phase timers, metrics, environment, allocation.

Workloads receive a Context and never read Slurm variables, set thread counts
or write records themselves; this module and scalestudy.compute.launch do that once,
for all of them.
"""

import os
import platform
import resource
import socket
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

PHASE_KINDS = ("startup", "data", "epoch", "train", "eval", "other")
# training: its epochs, or a program's own training not split into epochs (train)
TRAINING = ("epoch", "train")


@dataclass
class Phase:
    name: str
    kind: str
    seconds: float
    samples: int | None = None
    # the counters' energy in the phase, {"gpu": {uuid: J} or None, "node": J or None}
    # (scalestudy.compute.energy); None where no counter was read
    energy: dict | None = None

    def as_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v is not None}  # unset: left out


def check_kind(kind: str) -> None:
    if kind not in PHASE_KINDS:
        raise ValueError(f"phase kind must be one of {PHASE_KINDS}, not {kind!r}")


@dataclass(frozen=True)
class Mark:
    """A phase's start: the clock and the energy counters' readings."""

    at: float
    energy: dict | None


def energy_between(start: dict | None, end: dict | None) -> dict | None:
    """The counters' energy from one reading to another (RankEnergy.read's form)."""
    if start is None or end is None:
        return None
    gpu = None
    if start.get("gpu") is not None and end.get("gpu") is not None:
        gpu = {uuid: end["gpu"][uuid] - joules for uuid, joules in start["gpu"].items()}
    node = None
    if start.get("node") is not None and end.get("node") is not None:
        node = end["node"] - start["node"]
    return None if gpu is None and node is None else {"gpu": gpu, "node": node}


@dataclass
class Context:
    """The workload's view of its run: parameters in, phases and metrics out."""

    params: dict
    data_dir: Path
    threads: int
    device: object = "cpu"  # a torch.device once the worker has imported torch
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    local_world_size: int = 1  # processes on this node
    node_rank: int = 0
    # the point this run measures: study, point, repeat, n and the requested geometry
    point: dict = field(default_factory=dict)
    phases: list[Phase] = field(default_factory=list)
    metrics: dict = field(default_factory=dict)
    # called after every training step; the profiler hooks in here when asked to
    step_hook: Callable[[], None] | None = None
    # the run's energy counters since their start (compute.energy.RankEnergy.read),
    # read at each phase's start and end; None where the worker reads none
    energy_reader: Callable[[], dict] | None = None
    # when (time.time()) the first epoch phase began: the run's whole start-up, imports,
    # data and process group included, ends there (the worker's launch_to_training_s)
    training_started_at: float | None = None

    @contextmanager
    def phase(self, name: str, kind: str = "other", samples: int | None = None):
        """Time a block. GPU work is synchronised at the end so its time is real."""
        check_kind(kind)
        if kind in TRAINING and self.training_started_at is None:
            self.training_started_at = time.time()
        since = self.mark()
        record = Phase(name, kind, 0.0, samples)
        try:
            yield record
        finally:
            self.end_phase(record, since)

    def mark(self) -> Mark:
        """A phase's start, for a workload that times phases from callbacks (Lightning):
        end_phase closes it. The counters are read before the clock, so their reading
        is outside the phase's time."""
        energy = self.energy_reader() if self.energy_reader else None
        return Mark(time.perf_counter(), energy)

    def end_phase(self, phase: Phase, since: Mark) -> Phase:
        """Close a phase started at `since`: its time (GPU work synchronised first) and
        its energy; it joins the run's phases."""
        check_kind(phase.kind)
        self._synchronize()
        phase.seconds = time.perf_counter() - since.at
        if self.energy_reader:
            phase.energy = energy_between(since.energy, self.energy_reader())
        self.phases.append(phase)
        return phase

    def step(self) -> None:
        """Workloads call this after each training step."""
        if self.step_hook is not None:
            self.step_hook()

    def metric(self, name: str, value) -> None:
        self.metrics[name] = None if value is None else float(value)

    def _synchronize(self) -> None:
        if getattr(self.device, "type", None) == "cuda":
            import torch

            torch.cuda.synchronize(self.device)


def threads_from_allocation(environ=os.environ) -> int:
    """Threads the job was given: never the machine's core count (oversubscription)."""
    for key in ("OMP_NUM_THREADS", "SLURM_CPUS_PER_TASK"):
        value = environ.get(key, "")
        if value.isdigit() and int(value) > 0:
            return int(value)
    return len(os.sched_getaffinity(0))


def rank_environment(tasks_per_node: int, environ=os.environ) -> dict:
    """What torchrun gives each process, at every N: RANK, LOCAL_RANK, WORLD_SIZE and
    NODE_RANK as the local launcher set them, else from the SLURM_* variables srun gives
    each task, and LOCAL_WORLD_SIZE, GROUP_RANK, ROLE_RANK, GROUP_WORLD_SIZE and
    ROLE_WORLD_SIZE from them (MASTER_ADDR and MASTER_PORT come from the launcher)."""
    pairs = {
        "RANK": "SLURM_PROCID",
        "LOCAL_RANK": "SLURM_LOCALID",
        "WORLD_SIZE": "SLURM_NTASKS",
        "NODE_RANK": "SLURM_NODEID",
    }
    env = {
        key: environ.get(key) or environ.get(slurm_key) or ("1" if key == "WORLD_SIZE" else "0")
        for key, slurm_key in pairs.items()
    }
    return env | {
        "LOCAL_WORLD_SIZE": str(tasks_per_node),
        "GROUP_RANK": env["NODE_RANK"],
        "ROLE_RANK": env["RANK"],
        "GROUP_WORLD_SIZE": str(max(1, int(env["WORLD_SIZE"]) // tasks_per_node)),
        "ROLE_WORLD_SIZE": env["WORLD_SIZE"],
    }


def peak_rss_mb() -> float:
    """This process's peak resident memory plus its largest waited-for descendant's (a
    command's program, a data loader's worker): exact however short the run when the
    rank runs one program, and an upper bound when its processes did not peak together
    (docs/measuring.md, memory)."""
    own, kids = (
        resource.getrusage(w).ru_maxrss for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
    )
    return (own + kids) / 1024  # KiB on Linux


def memory_limit_mb(environ=os.environ) -> float | None:
    """The memory limit this process can see: Slurm's, else the cgroup's, else none."""
    for key in ("SLURM_MEM_PER_NODE", "SLURM_MEM_PER_CPU"):
        value = environ.get(key, "")
        if value.isdigit():
            mb = float(value)
            if key == "SLURM_MEM_PER_CPU":
                mb *= threads_from_allocation(environ)
            return mb
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        text = _read(path) or ""
        if text.isdigit() and int(text) < 1 << 60:
            return int(text) / 2**20
    return None


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def cpu_model() -> str | None:
    for line in (_read("/proc/cpuinfo") or "").splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.machine() or None  # not platform.processor(): see platform_name


def gpu_driver() -> str | None:
    """The NVIDIA driver's version, from the kernel module's own file (no NVML import:
    a CPU node has neither); None where no NVIDIA driver is loaded."""
    text = _read("/proc/driver/nvidia/version") or ""
    for word in text.split():
        if word.count(".") >= 1 and word.replace(".", "").isdigit():
            return word
    return None


def slurm_environment(environ=os.environ) -> dict:
    keys = {
        "slurm_job_id": "SLURM_JOB_ID",
        "slurm_nodelist": "SLURM_JOB_NODELIST",
        "slurm_partition": "SLURM_JOB_PARTITION",
        "slurm_cluster": "SLURM_CLUSTER_NAME",
        "slurm_step_id": "SLURM_STEP_ID",
        "slurm_ntasks": "SLURM_NTASKS",
    }
    return {name: environ[key] for name, key in keys.items() if environ.get(key)}


def platform_name() -> str:
    """platform.platform()'s words (Linux-6.1.0-x86_64-with-glibc2.36) from uname(2).
    platform.platform() runs `uname -p` in a child process, which at the end of a run
    shares the worker's memory: Slurm's jobacct_gather/linux summed the two (2.66 GB
    for a 1.3-GB worker, on a busy machine) and killed the step at its --mem."""
    u = os.uname()
    lib, version = platform.libc_ver()
    return f"{u.sysname}-{u.release}-{u.machine}" + (f"-with-{lib}{version}" if lib else "")


def environment(torch_module=None) -> dict:
    """Where the run happened: host, software, hardware, scheduler."""
    env = {
        "host": socket.gethostname(),
        "python": platform.python_version(),
        "platform": platform_name(),
        "cpu_model": cpu_model(),
        "machine_cpus": os.cpu_count(),
        # the same boot id under two host names means one physical machine
        "boot_id": _read("/proc/sys/kernel/random/boot_id"),
    }
    if (torch := torch_module) is not None:
        env |= {"torch": torch.__version__, "cuda": torch.version.cuda}
        if (cuda := torch.cuda).is_available():
            env["gpu_driver"] = gpu_driver()
            env["gpu_models"] = [cuda.get_device_name(i) for i in range(cuda.device_count())]
    env.update(slurm_environment())
    return env


def visible_devices(environ=os.environ) -> list[str]:
    """The GPUs CUDA_VISIBLE_DEVICES names (indices or UUIDs), in CUDA's order."""
    return [v.strip() for v in environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]


def received_resources(torch_module=None, environ=os.environ) -> dict:
    """What the process actually got, as seen from inside it."""
    received = {
        "cpus_usable": len(os.sched_getaffinity(0)),
        "threads_given": threads_from_allocation(environ),
        "torch_threads": None,
        "omp_num_threads": environ.get("OMP_NUM_THREADS"),
        "cuda_visible_devices": environ.get("CUDA_VISIBLE_DEVICES"),
        "world_size": int(environ.get("WORLD_SIZE", "1")),
        "mem_limit_mb": memory_limit_mb(environ),
    }
    if torch_module is not None:
        cuda = torch_module.cuda
        received["torch_threads"] = torch_module.get_num_threads()
        received["gpus_visible"] = cuda.device_count() if cuda.is_available() else 0
    elif received["cuda_visible_devices"] is not None:
        # a program without torch here (a command) finds its GPUs through the devices
        # Slurm (or the user) left visible; unset, it could see all, a count unknown
        received["gpus_visible"] = len(visible_devices(environ))
    return received


def allocation_mismatches(requested: dict, received: dict, hosts: int | None = None) -> list[str]:
    """Where the job did not get what its point asked for (empty list: it did)."""
    problems = []
    want = requested["threads"]
    if received["threads_given"] != want:
        problems.append(f"threads: asked for {want}, the job was given {received['threads_given']}")
    if received["cpus_usable"] < want:
        problems.append(f"cpus: asked for {want}, only {received['cpus_usable']} usable (affinity)")
    torch_threads = received.get("torch_threads")
    if torch_threads is not None and torch_threads != received["threads_given"]:
        problems.append(
            f"torch threads: {torch_threads} running, {received['threads_given']} given"
        )
    # what a process sees: its own GPUs (srun binds --gpus-per-task), or all the node's
    per_process = requested.get("gpus_per_node", 0) // max(requested["tasks_per_node"], 1)
    visible = received.get("gpus_visible")
    if per_process and (visible is None or visible < per_process):
        problems.append(f"gpus: asked for {per_process} per process, {visible or 0} visible")
    world = requested["tasks_per_node"] * requested["nodes"]
    if received.get("world_size") not in (None, world):
        problems.append(f"processes: asked for {world}, world size was {received['world_size']}")
    per_node = received.get("tasks_per_node")
    if per_node is not None and per_node != requested["tasks_per_node"]:
        asked = requested["tasks_per_node"]
        problems.append(f"processes per node: asked for {asked}, {per_node} ran on one node")
    if hosts is not None and hosts != requested["nodes"]:
        problems.append(f"nodes: asked for {requested['nodes']}, ran on {hosts} host(s)")
    mem = requested.get("mem_mb")
    limit = received.get("mem_limit_mb")
    if mem and limit is not None and limit < mem:
        problems.append(f"memory: asked for {mem} MB, limit is {limit:.0f} MB")
    return problems
