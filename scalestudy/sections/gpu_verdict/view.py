"""Is the GPU worth it, in the report, before the runs' telemetry."""

from scalestudy.report.views import fmt
from scalestudy.sections.gpu_verdict.contract import GpuVerdict

# where the report shows it: after the fits' notes, before the telemetry
PLACE = "telemetry"


def view(v: GpuVerdict | None) -> dict | None:
    """Is the GPU worth it: the verdict, and each size's figures formatted."""
    if v is None:
        return None
    return {
        "verdict": v.verdict,
        "crossover_size": v.crossover_size,
        "sizes": [
            {
                "size": r.size,
                "gpu_series": r.gpu_series or "",
                "gpu_time": fmt(r.gpu_time_s, "{:.4g}"),
                "fastest_cpu_threads": r.fastest_cpu_threads,
                "fastest_cpu_time": fmt(r.fastest_cpu_time_s, "{:.4g}"),
                "speedup": fmt(r.speedup, "{:.2f}"),
                "gpu_su": fmt(r.gpu_su, "{:.3g}"),
                "best_cpu_threads": r.best_cpu_threads,
                "best_cpu_su": fmt(r.best_cpu_su, "{:.3g}"),
                "break_even_speedup": fmt(r.break_even_speedup, "{:.2f}"),
            }
            for r in v.sizes
        ],
    }
