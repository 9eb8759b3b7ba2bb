"""What to ask for, per point, in the report (and each answer's own: answer.html.j2)."""

from scalestudy.contract import PointRequest, Requests
from scalestudy.sections.formatting import fmt, shallow

# where the report shows it: after the answer's rounds and the layouts
PLACE = "layouts"


def view(requests: Requests) -> dict | None:
    """Each point's request formatted, and which optional columns have figures; None
    where no point has #SBATCH lines (times measured elsewhere)."""
    points = requests.points
    if not any(r.sbatch for r in points):
        return None
    return shallow(requests) | {
        "points": [request_view(r) for r in points],
        "sacct": any(r.sacct_cpu_busy is not None for r in points),
        "gpus": any(r.gpus for r in points),
    }


def gigabytes(mb) -> str:
    """A measured memory in GB, two significant digits."""
    return fmt(mb and mb / 1024, "{:.2g} GB")


def request_view(r: PointRequest) -> dict:
    """One point's request, its numbers formatted (--mem as the analysis words it)."""
    return shallow(r) | {
        "mem": r.mem_text or ("not measured" if r.mem_from == "unmeasured" else "–"),
        "asked_mem": r.asked_mem_text or "–",
        "peak_mem": gigabytes(r.peak_mem_mb),
        "time": fmt(r.time_min, "{} min"),
        "slowest": fmt(r.slowest_s, "{:.3g} s"),
        "cpu_busy_pct": fmt(r.cpu_busy and 100 * r.cpu_busy, "{:.0f} %"),
        "memory_used_pct": fmt(r.memory_used and 100 * r.memory_used, "{:.0f} %"),
        "gpu_util": fmt(r.gpu_util_pct, "{:.0f} %"),
        "sacct_cpu_busy_pct": fmt(r.sacct_cpu_busy and 100 * r.sacct_cpu_busy, "{:.0f} %"),
        "sacct_peak_mem": gigabytes(r.sacct_peak_mem_mb),
    }


def of_answer(v: dict | None, answer) -> dict:
    """The request of the point an answer recommends (of the view `v`), formatted."""
    points = v["points"] if v else []
    found = (r for r in points if r["series"] == answer.series and r["n"] == answer.worth_n)
    return {"request": next(found, None)}
