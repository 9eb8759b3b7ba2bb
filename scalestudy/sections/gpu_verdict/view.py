"""Is the GPU worth it, in the report, before the runs' telemetry."""

from scalestudy.report.views import fmt, shallow
from scalestudy.sections.gpu_verdict.contract import GpuVerdict

# where the report shows it: after the fits' notes, before the telemetry
PLACE = "telemetry"


def view(v: GpuVerdict) -> dict:
    """Is the GPU worth it: the verdict, and each size's figures formatted."""
    sizes = [
        shallow(r)
        | {k: fmt(getattr(r, k), "{:.2f}") for k in ("speedup", "break_even_speedup")}
        | {"gpu_time": fmt(r.gpu_time_s, "{:.4g}")}
        | {"fastest_cpu_time": fmt(r.fastest_cpu_time_s, "{:.4g}")}
        | {k: fmt(getattr(r, k), "{:.3g}") for k in ("gpu_su", "best_cpu_su")}
        | {"gpu_series": r.gpu_series or ""}
        for r in v.sizes
    ]
    return shallow(v) | {"sizes": sizes}
