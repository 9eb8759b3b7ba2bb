"""Is the GPU worth it? Per problem size, the GPU point (the fastest there) against the
fastest and the cheapest CPU point, each ratio with its 95 % interval (ratio_ci), and a
verdict decided on those intervals or not, with the runs that would decide it: the
rules and why, docs/cpu-or-gpu.md ("A calibrated verdict"). Times are the study's
`time`; SU per result are each run's whole-job time priced by its series' cost.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from scalestudy.analysis.cost.cost import run_su
from scalestudy.analysis.stats.intervals import ratio_ci, runs_to_decide, side_of_one
from scalestudy.analysis.stats.predictions import usable_runs
from scalestudy.analysis.tables import TIME_COLUMNS
from scalestudy.model import Study
from scalestudy.records import jsonable
from scalestudy.sections.gpu_verdict.contract import (
    DATA,
    EVEN,
    NOT_WORTH,
    OPEN,
    WORTH,
    GpuSize,
    GpuVerdict,
    Ratio,
    Weighed,
)


@dataclass(frozen=True)
class Side:
    """One point's usable runs: its times (the study's `time`) and each run's SU."""

    series: str
    point: str
    threads: int
    times: np.ndarray
    su: np.ndarray

    @property
    def time(self) -> float:
        return float(np.median(self.times))

    @property
    def cost(self) -> float:
        return float(np.median(self.su))

    def weighed(self) -> Weighed:
        return Weighed(self.point, self.series or None, self.threads, self.time, self.cost)


def judge_size(size, cpu: list[Side], gpu: list[Side], zone: float) -> GpuSize:
    """The GPU point against the fastest and the cheapest CPU point at one size."""
    g = min(gpu, key=lambda s: s.time)
    fast = min(cpu, key=lambda s: (s.time, s.threads))
    cheap = min(cpu, key=lambda s: (s.cost, s.time))
    speed, su = ratio_ci(fast.times, g.times), ratio_ci(g.su, cheap.su)
    # each ratio oriented so that above 1 favours the GPU, its CPU point and samples
    calls = [
        (side_of_one(speed[1], speed[2], zone), fast, fast.times, g.times),
        (side_of_one(1 / su[2], 1 / su[1], zone), cheap, g.su, cheap.su),
    ]
    sides = {c for c, *_ in calls}
    verdict = EVEN if sides == {"within"} else WORTH if None not in sides else OPEN
    verdict = NOT_WORTH if "below" in sides else verdict
    needed = [(*runs_to_decide(x, y, zone), side) for c, side, x, y in calls if c is None]
    added, short = {}, verdict == OPEN and any(short for _, short, _ in needed)
    for k, _, side in needed if verdict == OPEN and all(k for k, *_ in needed) else ():
        for point in (g.point, side.point):
            added[point] = max(added.get(point, 0), k)
    ratios = (Ratio(*jsonable(speed)), Ratio(*jsonable(su)))
    return GpuSize(
        size, g.weighed(), fast.weighed(), cheap.weighed(), *ratios, verdict, added, short
    )


def first_size(sizes: list, holds: list[bool]):
    """The smallest size from which `holds` at every larger one (None: none)."""
    return next((s for i, s in enumerate(sizes) if all(holds[i:])), None)


def gpu_verdict(points: dict, size_param: str | None, zone: float) -> GpuVerdict:
    """`points`: size -> (CPU sides, GPU sides), each side a point with runs."""
    sizes = sorted(s for s, (cpu, gpu) in points.items() if cpu and gpu)
    if not sizes:
        needs = "a problem size measured on both the CPU and the GPU (the failed runs say why)"
        return GpuVerdict([], size_param, zone, needs=needs)
    rows = [judge_size(s, *points[s], zone) for s in sizes]
    worth = first_size(sizes, [r.verdict == WORTH for r in rows])
    faster = first_size(sizes, [r.speedup.value > 1 for r in rows])
    return GpuVerdict(rows, size_param, zone, None, worth, faster)


# what a study with series on one side only (all on a GPU, or none) lacks for a verdict
NEEDS = {
    True: "a CPU series to weigh the GPU against: add a series of CPU threads",
    False: "a GPU series: add a series with `scaling: {device: gpu}`",
}


# each size's verdict, as an adaptive study's rounds say it
CALLS = {WORTH: "use the GPU", NOT_WORTH: "stay on the CPU", EVEN: "either is right"}


def ratio(r: Ratio) -> str:
    return f"{r.value:.3g}x" + (f" [{r.lo:.3g}, {r.hi:.3g}]" if r.lo is not None else "")


def rounds_wanted(runs: pd.DataFrame, study: Study) -> tuple[bool, str, dict] | None:
    """The GPU verdict as an adaptive study's rounds read it (scripts/adaptive_round.py,
    adaptive.question_round): whether it is decided at every size, in words, and point
    -> (runs to add, why) where it is open (judge_size's more_runs); None: no verdict."""
    found = gpu_verdict_of(runs, runs, study)
    return found and verdict_wanted(found)


def verdict_wanted(found: GpuVerdict) -> tuple[bool, str, dict]:
    """rounds_wanted of a verdict (benchmarks/adaptive_simulator.py --gpu calls it)."""
    if found.needs:
        return False, f"no GPU verdict: it needs {found.needs}", {}
    said, wanted = [], {}
    for r in found.sizes:
        at = f"at {found.size_param} {r.size}, " if found.size_param else ""
        words = (
            f"{at}{CALLS.get(r.verdict, 'not decided')}: {r.gpu.point} is {ratio(r.speedup)} "
            f"as fast as {r.fastest_cpu.point}, at {ratio(r.su_ratio)} the SU per result of "
            f"{r.best_cpu.point}"
        )
        if r.verdict == OPEN and not r.more_runs:
            words += (
                " (more runs cannot decide it: a wider verdict.indifference, now "
                f"{100 * found.indifference:g} %, would call them even)"
            )
        said.append(words)
        more = ", ".join(f"{k} at {point}" for point, k in r.more_runs.items())
        for point, k in r.more_runs.items():
            why = f"the GPU verdict, {words}: more runs, {more}, would likely decide it"
            wanted[point] = (max(k, wanted.get(point, (0,))[0]), why)
    return all(r.verdict != OPEN for r in found.sizes), "; ".join(said), wanted


def produce(given) -> DATA:
    return gpu_verdict_of(given.runs, given.summary, given.study)


def gpu_verdict_of(runs: pd.DataFrame, summary: pd.DataFrame, study: Study) -> DATA:
    """The verdict of a study whose series run on CPU threads and on GPUs (per size: the
    series' `verdict.size_param`); one on one side only that names a size parameter
    says what it lacks; None for any other study. `summary`: a table with each point's
    series and GPUs (the runs do too)."""
    on_gpu = summary.groupby("series", sort=False)["gpus"].max() > 0
    size_param, zone = study.verdict.size_param, study.verdict.indifference
    if on_gpu.all() or not on_gpu.any():
        needs = NEEDS[bool(on_gpu.all())]
        return None if size_param is None else GpuVerdict([], size_param, zone, needs=needs)
    usable = usable_runs(runs, study)
    times = pd.to_numeric(usable[TIME_COLUMNS[study.time]], errors="coerce")
    usable = usable.assign(su=run_su(usable, study), t=times)[times > 0]
    points = {}
    for (name, point), part in usable.groupby(["series", "point"], sort=False):
        size = study.for_series(name).params.get(size_param, "all") if size_param else "all"
        times, su = part["t"].to_numpy(float), part["su"].to_numpy(float)
        side = Side(name, point, int(part["threads"].iloc[0]), times, su)
        points.setdefault(size, ([], []))[int(on_gpu[name])].append(side)
    return gpu_verdict(points, size_param, zone)
