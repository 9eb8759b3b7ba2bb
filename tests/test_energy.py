"""Energy from counters (scalestudy/compute/energy.py), its place in the record, and its
refusal without a source. CPU only: RAPL on a folder laid out like /sys/class/powercap,
NVML faked (tests/test_gpu.py reads the real one)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from scalestudy.compute import energy
from scalestudy.compute.launch import had_node_to_itself, run_energy
from scalestudy.records import RecordError, read_record
from tests.test_records import good_record


def powercap(root, zones: dict[str, tuple[int, int]]):
    """zones: name -> (energy_uj, max_energy_range_uj), with a subzone that must not count."""
    for k, (name, (uj, max_uj)) in enumerate(zones.items()):
        folder = root / name
        folder.mkdir(parents=True)
        (folder / "name").write_text(f"package-{k}\n")
        (folder / "energy_uj").write_text(f"{uj}\n")
        (folder / "max_energy_range_uj").write_text(f"{max_uj}\n")
        sub = root / f"{name}:0"  # the package's core domain: inside its package
        sub.mkdir()
        (sub / "energy_uj").write_text("999999999\n")
        (sub / "max_energy_range_uj").write_text(f"{max_uj}\n")
    return root


def set_uj(root, name: str, uj: int) -> None:
    (root / name / "energy_uj").write_text(f"{uj}\n")


def test_rapl_sums_packages_and_skips_subzones(tmp_path):
    root = powercap(tmp_path, {"intel-rapl:0": (1_000_000, 10**9), "intel-rapl:1": (0, 10**9)})
    psys = root / "intel-rapl:2"  # the platform zone holds the packages too: not counted
    psys.mkdir()
    (psys / "name").write_text("psys\n")
    (psys / "energy_uj").write_text("5\n")
    (psys / "max_energy_range_uj").write_text("1000000000\n")
    meter = energy.RaplMeter(root, wrap_check_s=3600)
    meter.start()
    set_uj(root, "intel-rapl:0", 3_500_000)
    set_uj(root, "intel-rapl:1", 1_500_000)
    set_uj(root, "intel-rapl:2", 9_000_000)  # psys
    part = meter.stop()
    assert part == {
        "joules": 4.0,
        "source": "rapl",
        "scope": energy.RAPL_SCOPE,
        "not_measured": None,
    }


def test_rapl_counter_that_wraps_at_max_energy_range(tmp_path):
    max_uj = 262_143_328_850
    root = powercap(tmp_path, {"intel-rapl:0": (max_uj - 2_000_000, max_uj)})
    meter = energy.RaplMeter(root, wrap_check_s=3600)
    meter.start()
    set_uj(root, "intel-rapl:0", 3_000_000)  # past max: back to 0, then on to 3 J
    assert meter.stop()["joules"] == pytest.approx(5.000001)


def test_rapl_wraps_between_reads_are_counted_by_the_checks(tmp_path):
    root = powercap(tmp_path, {"intel-rapl:0": (500, 999)})
    meter = energy.RaplMeter(root, wrap_check_s=3600)
    meter.start()
    for uj in (900, 100, 800, 200):  # two wraps, seen by the checks in between
        set_uj(root, "intel-rapl:0", uj)
        meter._check()
    # 500 -> 999 -> 0 -> 999 -> 0 -> 200: 2 x 1000 + 200 - 500 microjoules
    assert meter.stop()["joules"] == pytest.approx(1700e-6)


def test_rapl_unreadable_file_is_not_measured(tmp_path, monkeypatch):
    root = powercap(tmp_path, {"intel-rapl:0": (1, 10**9)})
    target = root / "intel-rapl:0" / "energy_uj"
    target.chmod(0)
    if os.geteuid() == 0:  # root reads any file: refuse it as the kernel does others
        read_text = Path.read_text

        def refuse(self, *args, **kwargs):
            if self == target:
                raise PermissionError(13, "Permission denied", str(self))
            return read_text(self, *args, **kwargs)

        monkeypatch.setattr(Path, "read_text", refuse)
    meter = energy.RaplMeter(root)
    meter.start()
    part = meter.stop()
    assert part["joules"] is None and part["source"] is None
    assert part["not_measured"] == "not readable: RAPL energy_uj is root-only on this node"


def test_rapl_without_powercap_is_no_counter(tmp_path):
    meter = energy.RaplMeter(tmp_path / "absent")
    meter.start()
    assert meter.stop()["not_measured"].startswith("no counter")


class FakeNvml:
    """NVML's total energy in mJ, each read advancing by `step_mj`."""

    def __init__(self, start_mj=(10_000, 50_000), step_mj=2_500, supported=True):
        self.energy = list(start_mj)
        self.step_mj = step_mj
        self.supported = supported
        self.shutdowns = 0

    def nvmlInit(self):
        pass

    def nvmlShutdown(self):
        self.shutdowns += 1

    def nvmlDeviceGetHandleByIndex(self, i):
        return i

    def nvmlDeviceGetHandleByUUID(self, uuid):
        return int(uuid.rsplit("-", 1)[1])

    def nvmlDeviceGetUUID(self, h):
        return f"GPU-{h}"

    def nvmlDeviceGetTotalEnergyConsumption(self, h):
        if not self.supported:
            raise RuntimeError("Not Supported")
        value = self.energy[h]
        self.energy[h] += self.step_mj
        return value


def test_nvml_reads_total_energy_at_start_and_end():
    nvml = FakeNvml()
    meter = energy.NvmlMeter([(0, None), (1, "GPU-1")], nvml, environ={})
    meter.start()
    part = meter.stop()
    assert part["source"] == "nvml" and part["joules"] == pytest.approx(5.0)
    assert part["devices"] == {"GPU-0": 2.5, "GPU-1": 2.5}
    assert nvml.shutdowns == 1


def test_nvml_maps_the_index_through_cuda_visible_devices():
    meter = energy.NvmlMeter([(0, None)], FakeNvml(), environ={"CUDA_VISIBLE_DEVICES": "1"})
    meter.start()
    assert list(meter.stop()["devices"]) == ["GPU-1"]


def test_nvml_without_the_counter_is_not_measured():
    meter = energy.NvmlMeter([(0, None)], FakeNvml(supported=False), environ={})
    meter.start()
    part = meter.stop()
    assert part["joules"] is None and part["not_measured"].startswith("no counter: NVML")


def test_nvml_counter_that_went_back_is_not_measured():
    nvml = FakeNvml(step_mj=-5)
    meter = energy.NvmlMeter([(0, None)], nvml, environ={})
    meter.start()
    assert meter.stop()["not_measured"].startswith("not readable: NVML total energy went back")


def test_a_rank_on_cpu_reads_no_gpu_and_its_node_once(tmp_path):
    root = powercap(tmp_path, {"intel-rapl:0": (0, 10**9)})
    with energy.RankEnergy(energy.gpus_of("cpu"), True, powercap=root) as meter:
        set_uj(root, "intel-rapl:0", 2_000_000)
    assert meter.result["gpu"]["not_measured"] == "no counter: the run used no GPU"
    assert meter.result["node"]["joules"] == 2.0
    with energy.RankEnergy([], False, powercap=root) as second:
        pass
    assert second.result["node"] is None  # not the node's first rank: not its reader


def test_a_command_with_gpus_but_no_visible_list_is_unknown():
    assert energy.gpus_of("cuda", environ={}) is None
    assert energy.gpus_of("cuda", environ={"CUDA_VISIBLE_DEVICES": "2,3"}) == [(0, None), (1, None)]


def gpu_part(devices: dict) -> dict:
    return energy.measured(sum(devices.values()), "nvml", energy.NVML_SCOPE) | {"devices": devices}


def test_combine_counts_each_gpu_and_node_once():
    ranks = [
        {"host": "a", "gpu": gpu_part({"GPU-0": 10.0}), "node": energy.measured(100, "rapl", "")},
        {"host": "a", "gpu": gpu_part({"GPU-1": 12.0}), "node": None},
        {"host": "b", "gpu": gpu_part({"GPU-0b": 11.0}), "node": energy.measured(90, "rapl", "")},
    ]
    both = energy.combine(ranks, exclusive=True, nodes=2)
    assert both["gpu"]["joules"] == 33.0 and both["gpu"]["gpus"] == 3
    assert both["node"]["joules"] == 190.0 and both["node"]["nodes"] == 2
    shared = energy.combine(ranks, exclusive=False, nodes=2)
    assert shared["gpu"]["joules"] == 33.0  # a GPU is the run's own whether or not the node is
    assert shared["node"]["joules"] is None
    assert shared["node"]["not_measured"].startswith("shared node")
    assert energy.combine(ranks[:2], exclusive=True, nodes=2)["node"]["not_measured"] == (
        "not readable: RAPL read on 1 of 2 nodes"
    )


def test_node_to_itself():
    requested = {"threads": 2, "tasks_per_node": 1}
    assert had_node_to_itself(requested, {"machine_cpus": 2}, {}, [])
    assert not had_node_to_itself(requested, {"machine_cpus": 4}, {}, [])
    assert not had_node_to_itself(requested, {"machine_cpus": 2}, {}, [{"run": "x"}])
    assert had_node_to_itself(requested, {"machine_cpus": 64}, {"OverSubscribe": "NO"}, [])
    assert not had_node_to_itself(requested, {"machine_cpus": 2}, {"OverSubscribe": "OK"}, [])


def test_run_energy_from_rank_results():
    spec = {"requested": {"threads": 1, "tasks_per_node": 1, "nodes": 1}}
    results = {
        0: {
            "environment": {"host": "a"},
            "energy": {
                "gpu": energy.not_measured("no counter: the run used no GPU"),
                "node": energy.measured(7.5, "rapl", energy.RAPL_SCOPE),
            },
        }
    }
    found = run_energy(spec, results, {"machine_cpus": 1}, {}, [])
    assert found["node"]["joules"] == 7.5 and found["gpu"]["joules"] is None


def record_with(energy_part: dict) -> dict:
    return good_record(
        energy={
            "window": "the workload's run, after start-up",
            "gpu": energy.not_measured("no counter: the run used no GPU"),
            "node": energy_part,
        }
    )


def test_a_record_with_measured_energy_is_read(tmp_path):
    path = tmp_path / "rep1.json"
    path.write_text(json.dumps(record_with(energy.measured(12.5, "rapl", energy.RAPL_SCOPE))))
    assert read_record(path)["energy"]["node"]["joules"] == 12.5


@pytest.mark.parametrize(
    ("part", "why"),
    [
        (dict(joules=300.0, source=None, scope=None, not_measured=None), "without a source"),
        (dict(joules=300.0, source="tdp", scope="x", not_measured=None), "without a source"),
        (dict(joules=None, source=None, scope=None, not_measured=None), "does not say why"),
    ],
)
def test_a_record_claiming_energy_without_a_source_is_refused(tmp_path, part, why):
    path = tmp_path / "rep1.json"
    path.write_text(json.dumps(record_with(part)))
    with pytest.raises(RecordError, match=f"{path}: energy.node .*{why}"):
        read_record(path)


def test_the_wrap_check_thread_stops(tmp_path):
    root = powercap(tmp_path, {"intel-rapl:0": (0, 10**9)})
    meter = energy.RaplMeter(root, wrap_check_s=0.01)
    meter.start()
    time.sleep(0.05)
    set_uj(root, "intel-rapl:0", 1_000_000)
    assert meter.stop()["joules"] == 1.0
    assert not meter._thread.is_alive()


def test_the_worker_reads_the_counters_around_the_workload(tmp_path, monkeypatch):
    """The worker's wiring, in-process: a command that adds 5 J to a fake package
    counter while it runs, read by the node's first rank; the launcher's combination
    keeps it only for a run that held the whole machine."""
    from functools import partial

    from scalestudy.compute import worker
    from scalestudy.study.run_spec import run_spec
    from tests.test_studies import model

    root = powercap(tmp_path / "powercap", {"intel-rapl:0": (1_000_000, 10**12)})
    counter = root / "intel-rapl:0" / "energy_uj"
    monkeypatch.setattr(worker, "RankEnergy", partial(energy.RankEnergy, powercap=root))
    # run_workload sets the rank's variables in os.environ: restored after the test
    for name, value in {"OMP_NUM_THREADS": "1", "RANK": "0", "LOCAL_RANK": "0",
                        "WORLD_SIZE": "1", "NODE_RANK": "0"}.items():  # fmt: skip
        monkeypatch.setenv(name, value)
    add_5_joules = ["sh", "-c", f"echo 6000000 > {counter}"]
    study = {"workload": "command", "params": {"command": add_5_joules},
             "scaling": {"axis": "threads", "points": [1]}}  # fmt: skip
    spec = run_spec(model({"studies": {"s": study}}), 1, 1) | {"data_dir": str(tmp_path)}
    result = worker.run_workload(spec, time.time())
    assert result["status"] == "ok", result["reason"]
    assert result["energy"]["node"]["joules"] == 5.0
    assert result["energy"]["gpu"]["not_measured"] == "no counter: the run used no GPU"
    # the command's phase read the counters too: the 5 J fell inside it
    (phase,) = (p for p in result["phases"] if p["name"] == "command")
    assert phase["energy"] == {"gpu": None, "node": 5.0}
    results = {0: result}
    whole = run_energy(spec, results, {"machine_cpus": 1}, {}, [])
    assert whole["node"] == energy.measured(5.0, "rapl", energy.RAPL_SCOPE) | {"nodes": 1}
    shared = run_energy(spec, results, {"machine_cpus": 16}, {}, [])
    assert shared["node"]["joules"] is None
    assert shared["node"]["not_measured"].startswith("shared node")


# --- each phase's energy: the same work as the phase's time --------------------------


class Counters:
    """RankEnergy.read's form: a GPU and the node's packages, each read advancing."""

    def __init__(self):
        self.gpu = self.node = 0.0

    def read(self) -> dict:
        self.gpu += 10.0
        self.node += 1.0
        return {"gpu": {"GPU-a": self.gpu}, "node": self.node}


def test_each_phase_reads_the_counters_at_its_start_and_end(tmp_path):
    from scalestudy.compute.harness import Context, Phase

    ctx = Context(params={}, data_dir=tmp_path, threads=1)
    ctx.energy_reader = Counters().read
    with ctx.phase("load data", kind="data"):
        pass
    since = ctx.mark()  # a callback-timed phase (Lightning's epochs)
    ctx.end_phase(Phase("epoch 1", "epoch", 0.0, 32), since)
    data, epoch = (p.as_dict() for p in ctx.phases)
    assert data["energy"] == {"gpu": {"GPU-a": 10.0}, "node": 1.0}
    assert epoch["energy"] == {"gpu": {"GPU-a": 10.0}, "node": 1.0}
    assert epoch["samples"] == 32 and epoch["seconds"] >= 0
    with pytest.raises(ValueError, match="phase kind must be one of"), ctx.phase("x", "nonsense"):
        pass
    plain = Context(params={}, data_dir=tmp_path, threads=1)  # no counter: no energy key
    with plain.phase("epoch 1", kind="epoch"):
        pass
    assert "energy" not in plain.phases[0].as_dict()


def rank_phases(host: str, gpu: dict | None, node: float | None, kinds=("epoch", "epoch")):
    phases = [{"name": "startup", "kind": "startup", "seconds": 1.0}]
    for i, kind in enumerate(kinds, 1):
        phases.append({"name": f"{kind} {i}", "kind": kind, "seconds": 1.0,
                       "energy": {"gpu": gpu, "node": node}})  # fmt: skip
    return {"host": host, "phases": phases}


def run_part(gpu_j, node_j, nodes=2) -> dict:
    return {
        "window": "w",
        "gpu": energy.measured(gpu_j, "nvml", energy.NVML_SCOPE) | {"gpus": 2}
        if gpu_j is not None
        else energy.not_measured("no counter: the run used no GPU"),
        "node": energy.measured(node_j, "rapl", energy.RAPL_SCOPE) | {"nodes": nodes}
        if node_j is not None
        else energy.not_measured("shared node: ..."),
    }


def test_a_phase_counts_each_gpu_and_node_of_the_run_once():
    # two nodes, two ranks each; the ranks of a node share its packages (first reads
    # them), and two ranks of node b read the same GPU
    ranks = [
        rank_phases("a", {"GPU-a0": 5.0}, 20.0),
        rank_phases("a", {"GPU-a1": 6.0}, None),
        rank_phases("b", {"GPU-b0": 7.0}, 30.0),
        rank_phases("b", {"GPU-b0": 7.5}, None),
    ]
    phases = energy.combine_phases(ranks[0]["phases"], ranks, run_part(100.0, 200.0))
    assert "energy" not in phases[0]  # start-up: before the counters started
    assert phases[1]["energy"] == {"gpu_j": 5.0 + 6.0 + 7.5, "node_j": 50.0}
    # only what the run measured: here its node energy (the run had its nodes to itself)
    only_gpu = energy.combine_phases(ranks[0]["phases"], ranks, run_part(100.0, None))
    assert only_gpu[1]["energy"] == {"gpu_j": 18.5, "node_j": None}
    assert energy.combine_phases(ranks[0]["phases"], ranks, None)[1].keys() == {
        "name", "kind", "seconds"}  # fmt: skip
    # a node whose first rank did not read its packages: no node figure in the phase
    partial_nodes = [ranks[0], ranks[1], rank_phases("b", {"GPU-b0": 7.0}, None)]
    assert energy.combine_phases(ranks[0]["phases"], partial_nodes, run_part(1.0, 2.0))[1][
        "energy"]["node_j"] is None  # fmt: skip


def test_ranks_that_timed_different_phases_give_no_phase_energy():
    ranks = [
        rank_phases("a", {"GPU-0": 5.0}, 1.0),
        rank_phases("a", {"GPU-1": 5.0}, None, kinds=("epoch", "eval")),
    ]
    phases = energy.combine_phases(ranks[0]["phases"], ranks, run_part(10.0, 2.0, nodes=1))
    assert all("energy" not in p for p in phases)


def phase_record(gpu_run, phase_gpu: list) -> dict:
    record = good_record(
        energy={"window": "w", "gpu": gpu_run,
                "node": energy.not_measured("no counter: no RAPL powercap interface")},
        phases=[{"name": f"epoch {i}", "kind": "epoch", "seconds": 0.5,
                 "energy": {"gpu_j": j, "node_j": None}} for i, j in enumerate(phase_gpu, 1)],
    )  # fmt: skip
    return record


def test_phase_energy_must_agree_with_the_runs(tmp_path):
    path = tmp_path / "rep1.json"
    path.write_text(json.dumps(phase_record(energy.measured(100.0, "nvml", "x"), [40.0, 50.0])))
    assert read_record(path)["phases"][1]["energy"]["gpu_j"] == 50.0
    path.write_text(json.dumps(phase_record(energy.measured(100.0, "nvml", "x"), [60.0, 50.0])))
    more = "phases claim 110.0 J of energy.gpu, more than the run's 100.0 J"
    with pytest.raises(RecordError, match=more):
        read_record(path)
    path.write_text(json.dumps(phase_record(energy.not_measured("no counter: x"), [1.0, 1.0])))
    unmeasured = "phase 'epoch 1' claims 1.0 J of energy.gpu, which the run did not measure"
    with pytest.raises(RecordError, match=unmeasured):
        read_record(path)


def test_the_counters_steps_are_timed_by_polling():
    ticks = iter(range(1000))
    readings = iter([5, 5, 5, 6, 6, 6, 6, 7, 7])  # moves at the 4th and 8th read
    found = energy.update_interval(lambda: next(readings), clock=lambda: next(ticks) * 0.01)
    assert found == pytest.approx(0.04)
    # a counter that stands still: no interval, after the limit
    assert energy.update_interval(lambda: 5, limit_s=0.01) is None
    meter = energy.NvmlMeter([(0, None)], FakeNvml(), environ={})
    meter.start()
    part = meter.stop()
    assert part["update_s"] is not None and part["update_s"] >= 0


def test_a_phase_read_beside_the_wrap_check_counts_no_false_wrap(tmp_path, monkeypatch):
    """The wrap thread and a phase's read both read the counter: an older reading
    compared after a newer one looked like a wrap (+ max_energy_range_uj: 1 kJ here)."""
    import threading

    root = powercap(tmp_path, {"intel-rapl:0": (0, 10**9)})
    meter = energy.RaplMeter(root, wrap_check_s=3600)
    meter.start()
    newer_read = threading.Event()
    values = {"wrap-thread": 1_000_000, "phase": 2_000_000}

    def rapl_read(zones):  # the wrap thread's read is slow: the phase's comes first
        who = threading.current_thread().name
        if who == "wrap-thread":
            newer_read.wait(0.5)
        else:
            newer_read.set()
        return [values[who]]

    monkeypatch.setattr(energy, "rapl_read", rapl_read)
    wrap = threading.Thread(target=meter._check, name="wrap-thread")
    wrap.start()
    time.sleep(0.05)
    threading.current_thread().name, name = "phase", threading.current_thread().name
    try:
        joules = meter.read()
    finally:
        threading.current_thread().name = name
    wrap.join()
    assert joules in (1.0, 2.0) and meter._wraps == [0]
