"""Is the GPU worth it (scalestudy/sections/gpu_verdict): per size, the GPU point against
the fastest and the cheapest CPU point, each ratio with its 95 % interval, and a verdict
decided on those intervals or not, with the runs that would decide it."""

import numpy as np
import pytest

from scalestudy.analysis.cost.cost import Cost
from scalestudy.sections.gpu_verdict.contract import EVEN, NOT_WORTH, OPEN, WORTH
from scalestudy.sections.gpu_verdict.produce import Side, gpu_verdict, judge_size

SIZES = [64, 128, 256, 512]
WEIGHTS = Cost.from_config({"core_weight": 1, "gpu_weight": 2, "partitions": {}})
TIGHT = (0.99, 1.0, 1.01)  # three runs a point, their median the time given
ZONE = 0.05


def side(name: str, threads: int, time: float, cores: int, gpus: int, spread=TIGHT) -> Side:
    times = np.array([time * f for f in spread])
    su = np.array([WEIGHTS.su(cores, gpus, t) for t in times])
    return Side(name, f"{name}-t{threads}", threads, times, su)


def cpu_sides(size: int) -> list[Side]:
    """Times growing as size^3 / threads^0.8 (imperfect scaling), 1, 2 and 4 threads."""
    base = (size / 64) ** 3 * 10.0
    return [side(f"m{size}", t, base / t**0.8, t, 0) for t in (1, 2, 4)]


def points(gpu_times, cores: int = 1) -> dict:
    return {
        size: (cpu_sides(size), [side(f"gpu{size}", 1, t, cores, 1)])
        for size, t in zip(SIZES, gpu_times, strict=True)
    }


def test_worth_it_is_decided_where_both_intervals_clear_break_even():
    found = gpu_verdict(points([30.0, 40.0, 60.0, 200.0]), "size", ZONE)
    assert found.crossover_size == 256 and found.worth_it_size == 256
    row = found.sizes[2]
    assert row.verdict == WORTH and row.more_runs == {}
    # the fastest CPU point (4 threads), the cheapest (1 thread, 640 core-seconds)
    assert (row.fastest_cpu.threads, row.best_cpu.threads) == (4, 1)
    assert row.gpu.su == pytest.approx(3 * 60 / 3600)
    assert row.speedup.value == pytest.approx(640 / 4**0.8 / 60)
    assert row.speedup.lo > 1 and row.su_ratio.hi < 1
    assert row.su_ratio.value == pytest.approx(0.05 / (640 / 3600))
    assert row.su_ratio.lo < row.su_ratio.value < row.su_ratio.hi
    # the GPU at 3 SU/h must take 640 / 3 s, i.e. be 3 / 4^0.8 times the fastest's speed
    assert row.break_even_speedup == pytest.approx(3 / 4**0.8)
    # 64 and 128: the GPU slower than the fastest CPU point, decided not worth it
    assert [r.verdict for r in found.sizes] == [NOT_WORTH, NOT_WORTH, WORTH, WORTH]


def test_the_crossover_is_sustained_a_noisy_small_size_does_not_count():
    found = gpu_verdict(points([3.0, 40.0, 60.0, 200.0]), "size", ZONE)
    assert found.crossover_size == 256
    assert gpu_verdict(points([1e5] * 4), "size", ZONE).crossover_size is None


def test_faster_but_never_cheaper_is_not_worth_it():
    # the GPU job holds 16 cores + 1 GPU (18 SU/h): faster from 256 on, never cheaper
    found = gpu_verdict(points([30.0, 40.0, 150.0, 1200.0], cores=16), "size", ZONE)
    assert found.crossover_size == 256 and found.worth_it_size is None
    big = found.sizes[3]
    assert big.verdict == NOT_WORTH and big.speedup.lo > 1 and big.su_ratio.lo > 1


def test_within_the_zone_either_answer_is_right_and_decided():
    # a 3-core CPU point and a 1-core + 1-GPU point, both 3 SU/h, both 10 s
    still = (0.999, 1.0, 1.001)
    cpu = [side("cpu", 3, 10.0, 3, 0, still)]
    gpu = [side("gpu", 1, 10.0, 1, 1, still)]
    row = judge_size("all", cpu, gpu, ZONE)
    assert row.verdict == EVEN and row.more_runs == {}
    assert 1 / (1 + ZONE) <= row.speedup.lo <= row.speedup.hi <= 1 + ZONE


def test_an_open_verdict_names_the_runs_that_would_decide_it():
    # the GPU 10 % faster, noisy runs: neither interval clears 1
    noisy = (0.8, 1.0, 1.25)
    cpu = [side("cpu", 4, 11.0, 4, 0, noisy)]
    gpu = [side("gpu", 1, 10.0, 1, 1, noisy)]
    row = judge_size("all", cpu, gpu, ZONE)
    assert row.verdict == OPEN and not row.at_least
    assert row.speedup.lo < 1 < row.speedup.hi
    assert set(row.more_runs) == {"gpu-t1", "cpu-t4"} and all(k > 0 for k in row.more_runs.values())
    # with those runs, at the same spread, the speedup's interval clears 1
    spread = np.resize(noisy, 3 + row.more_runs["gpu-t1"])
    more = judge_size(
        "all", [side("cpu", 4, 11.0, 4, 0, spread)], [side("gpu", 1, 10.0, 1, 1, spread)], ZONE
    )
    assert more.speedup.lo > 1 and more.verdict != OPEN


def test_one_run_a_point_gives_no_interval_and_asks_for_a_second():
    cpu = [side("cpu", 4, 20.0, 4, 0, (1.0,))]
    gpu = [side("gpu", 1, 10.0, 1, 1, (1.0,))]
    row = judge_size("all", cpu, gpu, ZONE)
    assert row.verdict == OPEN and row.at_least and row.speedup.lo is None
    assert row.more_runs == {"gpu-t1": 1, "cpu-t4": 1}


def test_the_fastest_of_several_gpu_points_at_a_size_is_the_gpu_point():
    cpu = [side("cpu", 16, 2.2, 16, 0)]
    gpu = [
        side(name, 8, t, 8, 1)
        for name, t in [("loader", 2.0), ("workers", 0.7), ("on_device", 0.1)]
    ]
    row = judge_size(256, cpu, gpu, ZONE)
    assert row.gpu.series == "on_device" and row.speedup.value == pytest.approx(22.0)


def test_its_intervals_cover_and_its_calls_are_right_in_a_quick_simulation():
    """benchmarks/coverage.py, quick: 400 samples a cell at 3 runs (the full run states
    94.5-97.2 % at 2-8 runs, 2000 a cell)."""
    from benchmarks.coverage import gpu_agrees_with_the_verdict, gpu_cells

    rows = gpu_cells(400, 1, runs=(3,))
    speed, su, wrong = ([r[i] for r in rows] for i in (4, 5, 7))
    assert min(speed) >= 0.92 and min(su) >= 0.92
    assert np.mean(speed) >= 0.945 and np.mean(su) >= 0.945
    assert max(wrong) <= 0.01
    assert gpu_agrees_with_the_verdict(100) == 0
