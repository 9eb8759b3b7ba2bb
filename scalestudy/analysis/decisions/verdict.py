"""Is the GPU worth it? CPU and GPU times per problem size, turned into words.

Inputs, per problem size (any orderable number: matrix size, samples, ...):
  cpu: {size: [(threads, time_s, su_per_result), ...]}   every CPU point measured
  gpu: {size: (time_s, su_per_result)}                    the GPU point
(`from_frame` builds both from a DataFrame; with several GPU points at a size, the
fastest is the GPU point).

Two figures, two bases, both stated in the report: `time_s` is the time the study's
speedups use (its `time`: whole job, training only or steady epoch), which says
which point is faster; SU per result are priced by scalestudy.analysis.cost.cost on whole-job
(wall) time per result, what the allocation is charged, as the summary's `su` is
(its own series' weights and its partition's). A "result" is whatever one timed
run produces (one batch of solves, one training run): the sizes' times must be per
result for the comparison to mean anything.

Two CPU points matter at each size: the fastest (the time to beat) and the
cheapest in SU per result (the cost to beat; often the fewest threads, since
parallel efficiency is below 1). "Best CPU point" in the verdict's words is the
cheapest one, because the verdict is about what a result costs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from scalestudy.analysis.cost.cost import Cost
from scalestudy.model import Study
from scalestudy.records import jsonable
from scalestudy.sections.gpu_verdict.contract import GpuSize, GpuVerdict

CpuPoints = Mapping[float, Sequence[tuple[int, float, float]]]
GpuPoints = Mapping[float, tuple[float, float]]


def fastest(points: Sequence[tuple[int, float, float]]) -> tuple[int, float, float]:
    """The CPU point with the shortest time (fewer threads on a tie)."""
    return min(points, key=lambda p: (p[1], p[0]))


def cheapest(points: Sequence[tuple[int, float, float]]) -> tuple[int, float, float]:
    """The CPU point with the lowest SU per result (shorter time on a tie)."""
    return min(points, key=lambda p: (p[2], p[1]))


def common_sizes(cpu: CpuPoints, gpu: GpuPoints) -> list:
    return sorted(s for s in gpu if cpu.get(s))


def crossover_size(cpu: CpuPoints, gpu: GpuPoints, sustained: bool = True):
    """The smallest measured size at which the GPU point is faster than the fastest CPU
    point, or None. With `sustained` (default) the GPU must also be faster at every
    larger measured size, so that one noisy small size does not count as a crossover.

    No interpolation: the answer is a size that was measured. Times between sizes are
    rarely linear (caches, kernel choices), and an interpolated size would be a claim
    no run supports; measure more sizes to narrow it down.
    """
    sizes = common_sizes(cpu, gpu)
    return first_size(sizes, [gpu[s][0] < fastest(cpu[s])[1] for s in sizes], sustained)


def first_size(sizes: list, holds: list[bool], sustained: bool):
    """The smallest size where `holds` (with `sustained`, at every larger one too)."""
    found = (s for i, s in enumerate(sizes) if holds[i] and (not sustained or all(holds[i:])))
    return next(found, None)


def compare_size(size, cpu_points, gpu_point) -> dict:
    """The figures of one size. A point may carry its series' name (CPU: (threads, time,
    su, name); GPU: (time, su, name)): the verdict names it; and after it why the point
    is unstable ("" if it is not): the verdict says so (unstable_points).

    The break-even speedup (over the fastest CPU point, for the GPU to cost what the
    cheapest does) assumes the GPU's SU per result shrink with its time: speedup x
    gpu_su / best_cpu_su. Against the same CPU point it is the ratio of SU rates (a
    1-core + 1-GPU job at weights 1 and 2, 3 SU/h, against 4 cores, 4 SU/h, needs
    0.75x), and it stays right when the times are training times and the SU whole-job."""
    gpu_time, gpu_su = gpu_point[:2]
    fast, cheap = fastest(cpu_points), cheapest(cpu_points)
    fast_threads, fast_time, fast_su = fast[:3]
    cheap_threads, cheap_time, cheap_su = cheap[:3]
    if cheap_su <= 0 or gpu_su <= 0 or gpu_time <= 0:
        raise ValueError("SU and times must be positive")
    speedup = fast_time / gpu_time
    return {
        "size": size,
        "gpu_series": gpu_point[2] if len(gpu_point) > 2 else None,
        "fastest_cpu_series": fast[3] if len(fast) > 3 else None,
        "best_cpu_series": cheap[3] if len(cheap) > 3 else None,
        "gpu_time_s": gpu_time, "gpu_su": gpu_su,
        "fastest_cpu_threads": fast_threads, "fastest_cpu_time_s": fast_time,
        "fastest_cpu_su": fast_su,
        "best_cpu_threads": cheap_threads, "best_cpu_time_s": cheap_time, "best_cpu_su": cheap_su,
        "speedup": speedup,
        "break_even_speedup": speedup * gpu_su / cheap_su,
        "gpu_faster": gpu_time < fast_time,
        "gpu_cheaper": gpu_su <= cheap_su,
    }  # fmt: skip


def _su_against(row: dict) -> str:
    """A size's GPU SU per result against the cheapest CPU point's, in the verdict's words."""
    return (f"SU per result {row['gpu_su']:.3g} vs {row['best_cpu_su']:.3g} (best CPU point: "
            f"{_threads(row['best_cpu_threads'])})")  # fmt: skip


def _threads(n: int) -> str:
    return f"{n} thread" + ("" if n == 1 else "s")


def _named(row: dict) -> str:
    return f" (series {row['gpu_series']})" if row.get("gpu_series") else ""


def unstable_points(cpu_points, gpu_point) -> list[str]:
    """The points of one size a verdict rests on (the GPU point, the fastest and the
    cheapest CPU point) whose repeats disagree, each with why (the reason from_frame
    gives a point, after its name; scalestudy.analysis.stats.intervals judges it)."""
    found = []
    if len(gpu_point) > 3 and gpu_point[3]:
        series = f" of series {gpu_point[2]}" if gpu_point[2] else ""
        found.append(f"the GPU point{series} ({gpu_point[3]})")
    fast, cheap = fastest(cpu_points), cheapest(cpu_points)
    for what, point in (("fastest", fast), ("cheapest", cheap)):
        if len(point) > 4 and point[4] and not (what == "cheapest" and point == fast):
            found.append(f"the {what} CPU point ({_threads(point[0])}: {point[4]})")
    return found


def gpu_verdict(
    cpu: CpuPoints, gpu: GpuPoints, sustained: bool = True, size_param: str | None = "size"
) -> dict:
    """Per-size comparison, the crossover, and the verdict in words.

    The GPU is "worth it" at a size where it is faster than the fastest CPU point and
    its SU per result is no higher than the cheapest CPU point's; `worth_it_size` is
    the smallest such size (with `sustained`, it stays worth it at every larger one).
    `size_param` names the sizes in the words ("size 256"); None: the study has one
    problem size (no size parameter), which the words call so. The verdict says when a
    point it rests on is unstable.
    """

    def at(size) -> str:
        return f"at {size_param} {size}" if size_param else "at the study's one problem size"

    sizes = common_sizes(cpu, gpu)
    if not sizes:
        raise ValueError("no problem size was measured on both the CPU and the GPU")
    rows = [compare_size(s, cpu[s], gpu[s]) for s in sizes]
    worth_size = first_size(sizes, [r["gpu_faster"] and r["gpu_cheaper"] for r in rows], sustained)
    crossover = crossover_size(cpu, gpu, sustained)
    if worth_size is not None:
        r = rows[sizes.index(worth_size)]
        text = (
            f"GPU worth it {at(worth_size)}{_named(r)}: {_su_against(r)}, {r['speedup']:.3g}x "
            f"faster than the fastest CPU point ({_threads(r['fastest_cpu_threads'])})"
        )
    elif crossover is not None:
        r = rows[sizes.index(crossover)]
        # the largest size from the crossover on where the GPU costs more: what stops it
        dear = [row for row in rows[sizes.index(crossover) :] if not row["gpu_cheaper"]][-1]
        text = (
            f"GPU faster {f'from {size_param} {crossover}' if size_param else at(crossover)}"
            f"{_named(r)} "
            f"({r['speedup']:.3g}x the fastest CPU point, {_threads(r['fastest_cpu_threads'])}) "
            f"but not cheaper {at(dear['size']) if size_param else 'there'}: "
            f"{_su_against(dear)}; it needs {dear['break_even_speedup']:.3g}x there to break "
            f"even and has {dear['speedup']:.3g}x. Worth it only when time to result matters "
            "more than SU"
        )
    else:
        r = rows[-1]
        where = (f"at any measured {size_param} (up to {r['size']}): {at(r['size'])}"
                 if size_param else f"{at(r['size'])}:")  # fmt: skip
        text = (
            f"GPU not worth it {where} {_su_against(r)}, {r['speedup']:.3g}x the fastest CPU "
            f"point's speed where {r['break_even_speedup']:.3g}x would break even"
        )
    named = [r] if worth_size is not None or crossover is None else [r, dear]
    shaky = [p for row in named for p in unstable_points(cpu[row["size"]], gpu[row["size"]])]
    shaky = list(dict.fromkeys(shaky))
    if shaky:
        text += (
            f". It rests on {'an unstable point' if len(shaky) == 1 else 'unstable points'}, "
            f"whose repeats disagree: {'; '.join(shaky)}; more repeats could change it"
        )
    sizes = [GpuSize(**jsonable(r)) for r in rows]
    worth_it = worth_size is not None
    return GpuVerdict(text, sizes, worth_it, jsonable(worth_size), jsonable(crossover))


def from_frame(df, cost: Cost | None = None) -> tuple[dict, dict]:
    """(cpu, gpu) inputs of gpu_verdict from a DataFrame with columns series ("cpu" or
    "gpu"), size, n, time_s, cores, gpus, and optionally name (the study's series):
    rows of one (series, name, size, n) are repeats and give their median; points of
    different names are kept apart (three input pipelines on one GPU are three GPU
    points, not one), and each point carries its name.

    SU per result: the frame's `su` column (SU per run, already priced, e.g. the
    summary's) where it has one, else `cost` prices whole-job time per result, the
    `wall_s` column (`time_s` in a frame without one: its times are then whole-job
    times) on the `partition` column's partition, if any. An `unstable` column (why a
    point's repeats disagree, "" where they agree) goes with each point to the verdict."""
    missing = {"series", "size", "n", "time_s", "cores", "gpus"} - set(df.columns)
    if missing:
        raise ValueError(f"missing columns: {sorted(missing)}")
    bad = set(df["series"]) - {"cpu", "gpu"}
    if bad:
        raise ValueError(f"series must be 'cpu' or 'gpu', not {sorted(bad)}")
    df = df.assign(name=df["name"] if "name" in df else df["series"])
    if "su" not in df:
        if cost is None:
            raise ValueError("SU per result need an `su` column or a cost to price them")
        # a frame without wall_s has whole-job times in time_s (above)
        df = df.assign(su=cost.su_of(df, time="wall"))
    unstable = "unstable" in df  # each point's reason, after its name
    points = df.groupby(["series", "name", "size", "n"], as_index=False, sort=False).agg(
        time_s=("time_s", "median"),
        su=("su", "median"),
        **({"unstable": ("unstable", "first")} if unstable else {}),
    )
    cpu: dict = {}
    gpu: dict = {}
    for row in points.itertuples(index=False):
        time_s, su = float(row.time_s), float(row.su)
        why = (row.unstable,) if unstable else ()
        if row.series == "cpu":
            cpu.setdefault(row.size, []).append((int(row.n), time_s, su, row.name, *why))
        elif row.size not in gpu or time_s < gpu[row.size][0]:
            gpu[row.size] = (time_s, su, row.name, *why)
    return cpu, gpu


def gpu_verdict_of(summary: pd.DataFrame, study: Study) -> GpuVerdict | None:
    """Is the GPU worth it? For studies with CPU-thread series and GPU series: per
    problem size (the series' `verdict.size_param`), the GPU point against the CPU
    points: which is faster in the study's `time`, and SU per result, the summary's `su`
    (scalestudy.analysis.cost.cost: each series' own weights, on its partition, on whole-job time).
    A summary without `su` is priced here the same way (Cost.su_of)."""
    if not ((summary["gpus"] > 0).any() and (summary["gpus"] == 0).any()):
        return None
    size_param = study.verdict.size_param
    rows = []
    try:
        for name, part in summary.groupby("series", sort=False):
            params = study.for_series(name).params
            size = params.get(size_param, "all") if size_param else "all"
            if "su" in part:
                su = part["su"].to_numpy(dtype=float)
            else:
                su = Cost.of(study, name).su_of(part, study.time)
            for r, su_per_result in zip(part.itertuples(), su, strict=True):
                if np.isfinite(r.time_s) and np.isfinite(su_per_result):
                    # why its repeats disagree (scalestudy.analysis.stats.intervals), "" if not
                    flagged = getattr(r, "unstable", False)
                    unstable = r.unstable_reason if pd.notna(flagged) and flagged else ""
                    rows.append({"series": "gpu" if r.gpus else "cpu", "name": name,
                                 "size": size, "n": r.n, "time_s": r.time_s, "cores": r.cores,
                                 "gpus": r.gpus, "su": su_per_result,
                                 "unstable": unstable})  # fmt: skip
        columns = ["series", "name", "size", "n", "time_s", "cores", "gpus", "su", "unstable"]
        cpu, gpu = from_frame(pd.DataFrame(rows, columns=columns))
        return gpu_verdict(cpu, gpu, size_param=size_param)
    except ValueError as e:
        return GpuVerdict(f"no verdict: {e}", [])
