"""Is the GPU worth it, in the report before the runs' telemetry: each size's figures
formatted (its line.html.j2 says the verdict)."""

from scalestudy.sections.formatting import fmt, pct, runs_by_count, shallow, with_ci
from scalestudy.sections.gpu_verdict.contract import GpuVerdict

# where the report shows it: after the fits' notes, before the telemetry
PLACE = "telemetry"
# its line of the first table, CPU or GPU: the study's main question
RANK = 0


def view(v: GpuVerdict) -> dict:
    sizes = [
        shallow(r)
        | {k: with_ci(*vars(getattr(r, k)).values(), unit="x") for k in ("speedup", "su_ratio")}
        | {"gpu_time": fmt(r.gpu.time_s, "{:.4g}"), "gpu_su": fmt(r.gpu.su, "{:.3g}")}
        | {"fastest_cpu_time": fmt(r.fastest_cpu.time_s, "{:.4g}")}
        | {"best_cpu_su": fmt(r.best_cpu.su, "{:.3g}")}
        | {"break_even": fmt(r.break_even_speedup, "{:.3g}x"), "faster": r.speedup.value >= 1}
        | {"crossover": r.size == v.crossover_size and len(v.sizes) > 1}
        | {"more": runs_by_count(r.more_runs)}
        for r in v.sizes
    ]
    return shallow(v) | {"sizes": sizes, "zone": pct(v.indifference)}
