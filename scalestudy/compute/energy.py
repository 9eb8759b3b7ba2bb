"""Energy of a run, read from hardware counters (NVML, RAPL) at the start and end of the
workload's run and of each timed phase, so that the analysis takes the energy of the same
phases as the time it uses; never estimated (docs/measuring.md, "Energy").

Each part is {"joules", "source", "scope", "not_measured"}: a figure with its source, or
null with the reason (records.py refuses a figure without a source).
"""

import os
import re
import threading
import time
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

from scalestudy.compute.harness import visible_devices

POWERCAP = Path("/sys/class/powercap")
# top-level zones (intel-rapl:0:0, core or uncore, is inside its package; DRAM is not
# counted) whose name is package-<k>: a platform zone (psys) holds the packages too
PACKAGE_ZONE = re.compile(r"^(intel-rapl|amd-rapl):\d+$")
WRAP_CHECK_S = 30.0
NVML_SCOPE = "whole board of each GPU the run used (NVML total energy)"
RAPL_SCOPE = "whole CPU packages of the node (RAPL): every process on the node, not the run's share"


def not_measured(why: str) -> dict:
    return {"joules": None, "source": None, "scope": None, "not_measured": why}


def measured(joules: float, source: str, scope: str) -> dict:
    return {"joules": float(joules), "source": source, "scope": scope, "not_measured": None}


# --- RAPL ---------------------------------------------------------------------------


@dataclass
class Zone:
    name: str
    energy_file: Path
    max_uj: int


def _zone_name(folder: Path) -> str:
    """The zone's own name (package-0, psys, dram); a zone that does not say is taken
    for a package, as the kernel names every top-level RAPL zone but these."""
    try:
        return (folder / "name").read_text().strip()
    except OSError:
        return "package"


def rapl_zones(root: Path = POWERCAP) -> tuple[list[Zone], str | None]:
    """The package zones under `root` and None, or [] and why they cannot be read."""
    try:
        names = sorted(
            p.name
            for p in Path(root).iterdir()
            if PACKAGE_ZONE.match(p.name) and _zone_name(p).startswith("package")
        )
    except OSError:
        return [], "no counter: no RAPL powercap interface on this node"
    if not names:
        return [], "no counter: no RAPL package zone on this node"
    zones = []
    for name in names:
        folder = Path(root) / name
        try:
            max_uj = int((folder / "max_energy_range_uj").read_text().strip())
            int((folder / "energy_uj").read_text().strip())
        except PermissionError:
            return [], "not readable: RAPL energy_uj is root-only on this node"
        except (OSError, ValueError) as e:
            return [], f"not readable: {folder.name}: {e}"
        zones.append(Zone(name, folder / "energy_uj", max_uj))
    return zones, None


def rapl_read(zones: list[Zone]) -> list[int]:
    return [int(z.energy_file.read_text().strip()) for z in zones]


class RaplMeter:
    """The node's package energy between start() and stop(), in joules, wraps counted."""

    def __init__(self, root: Path = POWERCAP, wrap_check_s: float = WRAP_CHECK_S):
        self.zones, self.reason = rapl_zones(root)
        self.wrap_check_s = wrap_check_s
        self._start: list[int] = []
        self._last: list[int] = []
        self._wraps: list[int] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        if self.reason:
            return
        try:
            self._start = rapl_read(self.zones)
        except OSError as e:
            self.reason = f"not readable: {e}"
            return
        self._last = list(self._start)
        self._wraps = [0] * len(self.zones)
        self._thread = threading.Thread(target=self._loop, name="rapl-wraps", daemon=True)
        self._thread.start()

    def _check(self) -> bool:
        """Count the wraps since the last reading; False, with the reason noted, where a
        counter cannot be read."""
        # read under the lock: the wrap thread and a phase's read (read()) both check,
        # and an older reading compared after a newer one would count a false wrap
        try:
            with self._lock:
                now = rapl_read(self.zones)
                for i, (before, after) in enumerate(zip(self._last, now, strict=True)):
                    if after < before:
                        self._wraps[i] += 1
                self._last = now
        except OSError as e:
            self.reason = f"not readable: {e}"
            return False
        return True

    def _loop(self) -> None:
        while not self._stop.wait(self.wrap_check_s) and self._check():
            pass

    def read(self) -> float | None:
        """Joules since start(), wraps counted; None where the counter cannot be read."""
        if self.reason or not self._start or not self._check():
            return None
        # each wrap lost max_energy_range_uj + 1 (the counter goes from max to 0)
        with self._lock:
            read = zip(self.zones, self._start, self._last, self._wraps, strict=True)
            total_uj = sum(end - start + wraps * (z.max_uj + 1) for z, start, end, wraps in read)
        return total_uj / 1e6

    def stop(self) -> dict:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
        joules = self.read()
        if joules is None:
            return not_measured(self.reason or "not readable: RAPL was not started")
        return measured(joules, "rapl", RAPL_SCOPE)


# --- NVML ---------------------------------------------------------------------------

# NVML's energy counter moves in steps (seen here on an H200: every 0.1 s or so, 12.3 J
# at a time), so a phase shorter than a few steps has no figure worth the name. The
# steps are timed once per run, before its first phase, by polling the counter until it
# moves twice (at most UPDATE_POLL_LIMIT_S); the analysis judges each window by them.
UPDATE_POLL_LIMIT_S = 0.5


def update_interval(read, limit_s: float = UPDATE_POLL_LIMIT_S, clock=time.perf_counter):
    """Seconds between two moves of a counter (`read`), by polling it; None where it did
    not move twice within `limit_s` (a board whose counter stands still)."""
    deadline = clock() + limit_s
    moves: list[float] = []
    last = read()
    while len(moves) < 2:
        value, now = read(), clock()
        if value != last:
            moves.append(now)
            last = value
        elif now > deadline:
            return None
    return moves[1] - moves[0]


class NvmlMeter:
    """Total energy of the given GPUs (torch's indices in this process, with their NVML
    UUIDs where known) between start() and stop(). `nvml`: the binding (default pynvml,
    imported on start; tests pass a fake)."""

    def __init__(self, devices: list[tuple[int, str | None]], nvml=None, environ=os.environ):
        self.devices, self._nvml, self.environ = devices, nvml, environ
        self.reason: str | None = None
        self._handles: list = []
        self.uuids: list[str] = []
        self._start: list[int] = []
        self._initialised = False
        self.update_s: float | None = None  # seconds between the counter's moves

    def _read(self) -> list[int]:
        return [int(self._nvml.nvmlDeviceGetTotalEnergyConsumption(h)) for h in self._handles]

    def start(self) -> None:
        if not self.devices:
            self.reason = "no counter: the run used no GPU"
            return
        # here, not above: this module's own import stays light where no GPU is used
        from scalestudy.compute.telemetry import _import_pynvml, nvml_handle

        try:
            nvml = self._nvml if self._nvml is not None else _import_pynvml()
            self._nvml = nvml
            nvml.nvmlInit()
            self._initialised = True
            for index, uuid in self.devices:
                handle = nvml_handle(nvml, index, uuid, self.environ)
                self._handles.append(handle)
                own = nvml.nvmlDeviceGetUUID(handle)
                self.uuids.append(own.decode() if isinstance(own, bytes) else str(own))
            first = self._handles[0]
            self.update_s = update_interval(lambda: nvml.nvmlDeviceGetTotalEnergyConsumption(first))
            self._start = self._read()
        except ImportError:
            self.reason = "no counter: NVML (pynvml) is not installed"
        except Exception as e:  # NVMLError_NotSupported (pre-Volta), no driver...
            self.reason = f"no counter: NVML total energy: {type(e).__name__}: {e}".strip()
        if self.reason:
            self._shutdown()

    def read(self) -> dict[str, float] | None:
        """Joules of each GPU (uuid -> J) since start(); None where they cannot be read
        (then `reason` says why)."""
        if self.reason or not self._initialised:
            return None
        try:
            end = self._read()
        except Exception as e:
            self.reason = f"not readable: NVML total energy: {type(e).__name__}: {e}"
            return None
        if any(b < a for a, b in zip(self._start, end, strict=True)):
            # the counter starts at the driver's load: it went back, so it was reloaded
            self.reason = "not readable: NVML total energy went back (driver reloaded)"
            return None
        return {u: (b - a) / 1000 for u, a, b in zip(self.uuids, self._start, end, strict=True)}

    def stop(self) -> dict:
        """The GPUs' energy, with per-GPU joules under "devices" (uuid -> J)."""
        per_gpu = self.read()
        self._shutdown()
        if per_gpu is None:
            return not_measured(self.reason or "not readable: NVML was not started")
        extra = {"devices": per_gpu, "update_s": self.update_s}
        return measured(sum(per_gpu.values()), "nvml", NVML_SCOPE) | extra

    def _shutdown(self) -> None:
        if self._initialised:
            self._initialised = False
            with suppress(Exception):  # shutting down must not fail the run
                self._nvml.nvmlShutdown()


def gpus_of(device, torch_module=None, environ=os.environ) -> list[tuple[int, str | None]] | None:
    """The GPUs this rank used, as (index, UUID or None); None where it cannot be known
    (a command that asked for GPUs with CUDA_VISIBLE_DEVICES unset)."""
    if getattr(device, "type", None) == "cuda":
        from scalestudy.compute.telemetry import torch_uuid

        return [(device.index or 0, torch_uuid(device))]
    if device == "cuda":  # a command: every GPU left visible to it
        visible = visible_devices(environ)
        return [(i, None) for i in range(len(visible))] or None
    return []


# --- one rank -----------------------------------------------------------------------


@dataclass
class RankEnergy:
    """What one rank reads around its workload: its GPUs, and the node's packages when it
    is the node's first rank (one reader per node, so no node counts twice)."""

    gpus: list[tuple[int, str | None]] | None
    node_reader: bool
    nvml: object = None
    powercap: Path = POWERCAP
    wrap_check_s: float = WRAP_CHECK_S
    _gpu: NvmlMeter | None = field(default=None, init=False)
    _rapl: RaplMeter | None = field(default=None, init=False)

    def __enter__(self) -> "RankEnergy":
        if self.gpus:
            self._gpu = NvmlMeter(self.gpus, self.nvml)
            self._gpu.start()
        if self.node_reader:
            self._rapl = RaplMeter(self.powercap, self.wrap_check_s)
            self._rapl.start()
        return self

    def read(self) -> dict:
        """The counters since the start, for a phase's start or end (harness.Context):
        {"gpu": {uuid: J} or None, "node": J or None}. None where not read."""
        return {
            "gpu": self._gpu.read() if self._gpu else None,
            "node": self._rapl.read() if self._rapl else None,
        }

    def __exit__(self, *exc) -> bool:
        unknown = "which GPUs the command used is unknown (CUDA_VISIBLE_DEVICES unset)"
        why = "no counter: " + ("the run used no GPU" if self.gpus == [] else unknown)
        self.result = {
            "gpu": self._gpu.stop() if self._gpu else not_measured(why),
            "node": self._rapl.stop() if self._rapl else None,
        }
        return False


# --- the run: every rank's readings, combined by the launcher -------------------------


def each_gpu_once(readings: list[dict[str, float]]) -> dict[str, float]:
    """The ranks' GPU readings (uuid -> J) with each GPU once: a GPU two ranks shared
    counts its widest reading."""
    per_gpu: dict[str, float] = {}
    for reading in readings:
        for uuid, joules in reading.items():
            per_gpu[uuid] = max(per_gpu.get(uuid, 0.0), joules)
    return per_gpu


def combine(ranks: list[dict], exclusive: bool | None, nodes: int) -> dict | None:
    """The run's energy from each rank's {"host", "gpu", "node"}: GPU energy summed over
    distinct GPUs (a GPU two ranks shared counts once, its widest reading), node energy
    summed over the nodes' first ranks, and only where the run had its nodes to itself
    (`exclusive`); else "not measured" with why. None where no rank read anything."""
    ranks = [r for r in ranks if r]
    if not ranks:
        return None
    gpu_parts = [r["gpu"] for r in ranks if r.get("gpu")]
    missing = [p["not_measured"] for p in gpu_parts if p["joules"] is None]
    if not gpu_parts:
        gpu = not_measured("no counter: no rank read the GPUs")
    elif missing:
        gpu = not_measured(missing[0])
    else:
        per_gpu = each_gpu_once([p.get("devices") or {} for p in gpu_parts])
        steps = [p["update_s"] for p in gpu_parts if p.get("update_s") is not None]
        gpu = measured(sum(per_gpu.values()), "nvml", NVML_SCOPE) | {
            "gpus": len(per_gpu),
            # the coarsest counter's steps: what every phase's figure is judged by
            "update_s": max(steps) if steps else None,
        }
    node_parts = {r["host"]: r["node"] for r in ranks if r.get("node")}
    node_missing = [p["not_measured"] for p in node_parts.values() if p["joules"] is None]
    if not node_parts:
        node = not_measured("no counter: no rank read the node's packages")
    elif node_missing:
        node = not_measured(node_missing[0])
    elif len(node_parts) < nodes:
        node = not_measured(f"not readable: RAPL read on {len(node_parts)} of {nodes} nodes")
    elif not exclusive:
        node = not_measured("shared node: RAPL counts the whole node, the run had only a share")
    else:
        joules = sum(p["joules"] for p in node_parts.values())
        node = measured(joules, "rapl", RAPL_SCOPE) | {"nodes": len(node_parts)}
    return {"window": "the workload's run, after start-up", "gpu": gpu, "node": node}


def combine_phases(head: list[dict], ranks: list[dict], run: dict | None) -> list[dict]:
    """Rank 0's phases (`head`), each with the run's energy in that phase where the
    run's counter was read: {"gpu_j", "node_j"}, counted as combine counts the run (a GPU
    once, a node once), from each rank's phase readings ({"host", "phases"}, a phase's
    "energy" being {"gpu": {uuid: J} or None, "node": J or None}). A part is null where
    a rank did not read it in that phase; no phase has energy where the ranks timed
    different phases (they cannot be matched) or nothing was measured."""
    plain = [{k: v for k, v in p.items() if k != "energy"} for p in head]
    if not run:
        return plain
    gpu_read = run["gpu"]["joules"] is not None
    node_read = run["node"]["joules"] is not None
    shapes = {tuple((p["name"], p["kind"]) for p in r["phases"]) for r in ranks}
    if not (gpu_read or node_read) or len(shapes) != 1:
        return plain
    phases = []
    for i, phase in enumerate(plain):
        readings = [(r["host"], r["phases"][i].get("energy") or {}) for r in ranks]
        gpu_j = node_j = None
        if gpu_read and all(e.get("gpu") is not None for _, e in readings):
            gpu_j = sum(each_gpu_once([e["gpu"] for _, e in readings]).values())
        nodes = {host: e["node"] for host, e in readings if e.get("node") is not None}
        if node_read and len(nodes) == run["node"].get("nodes", len(nodes)):
            node_j = sum(nodes.values())
        if phase["kind"] == "startup":  # before the counters were started
            gpu_j = node_j = None
        if gpu_j is not None or node_j is not None:
            phase = phase | {"energy": {"gpu_j": gpu_j, "node_j": node_j}}
        phases.append(phase)
    return phases
