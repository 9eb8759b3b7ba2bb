"""Time to result in the report, said once after the answers (and read by each answer)."""

from scalestudy.contract import ResultTimes
from scalestudy.sections.formatting import Significant, fmt, shallow

# where the report shows it: after the answers, before the rounds
PLACE = "answers"
SECONDS = Significant(3, " s")


def seconds_with_interval(value, lo, hi) -> str:
    """A time with its interval, "306 s [306, 307]"; the time alone where the interval
    is a point."""
    text = fmt(value, SECONDS.fixed([value]))
    if value is None or (lo == value and hi == value):
        return text
    form = SECONDS.fixed([value, lo, hi]).removesuffix(" s")
    return f"{text} [{fmt(lo, form)}, {fmt(hi, form)}]"


def view(times: ResultTimes) -> dict:
    """Each point's time to result and its wait in words' numbers, keyed by point; the
    earliest of each series keyed by series (the template names it beside the answer)."""
    by_point = {
        p.point: shallow(p)
        | {
            "result": seconds_with_interval(p.result_s, p.result_lo_s, p.result_hi_s),
            "run": seconds_with_interval(p.run_s, p.run_lo_s, p.run_hi_s),
            "wait": fmt(p.wait_s, SECONDS.fixed([p.wait_s])),
            "wait_hi": fmt(p.wait_hi_s, SECONDS.fixed([p.wait_hi_s])),
        }
        for p in times.points
    }
    return shallow(times) | {
        "local": times.queue == "local",
        "by_point": by_point,
        "earliest": {e.series: by_point[e.point] for e in times.earliest},
        "bases": sorted({p.basis for p in times.points}),
    }


def of_answer(v: dict | None, answer) -> dict:
    """An answer's time to result (of the view `v`) as the first table says it, only
    where Slurm gave waits (locally the results table's time says it), and whether
    waits are known (its deadline sentence says "expected")."""
    waits_known = bool(v and v["waits_known"])
    known = waits_known and v["by_point"].get(answer.point)
    return {"result_text": known["result"] if known else None, "waits_known": waits_known}
