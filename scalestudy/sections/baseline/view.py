"""The comparison with the baseline in the report's formats (decided in
its produce.py)."""

from scalestudy.contract import NO_CHANGE
from scalestudy.sections.baseline.contract import BaselineComparison
from scalestudy.sections.formatting import fmt, pct, runs_by_count, shallow, with_ci

# its line of the first table, slower than before: beside the study's own answer
RANK = 2


def view(b: BaselineComparison) -> dict:
    """The comparison with the baseline in the report's formats (decided in
    its produce.py)."""
    ratio = "{:.2f}"
    points = [
        shallow(p)
        | {k: fmt(getattr(p, k), ratio) for k in ("ratio", "lo", "hi")}
        | {"now": fmt(p.time_now_s, "{:.3g}"), "was": fmt(p.time_baseline_s, "{:.3g}")}
        | {"called": p.change != NO_CHANGE, "p": fmt(p.p_value, "{:.2g}")}
        | {"runs": f"{p.runs_now} / {p.runs_baseline}"}
        for p in b.points
    ]
    curves = [
        shallow(c)
        | {"level": pct(c.level), "p": fmt(c.times_p_value, "{:.3g}"), "method": c.times_method}
        | {
            "apart": [
                f"N = {e.n}: {with_ci(e.ratio, e.lo, e.hi, ratio)}" for e in c.points if e.differs
            ]
        }
        for c in b.curves
    ]
    models = [
        shallow(m)
        | {"now": with_ci(m.now, m.now_lo, m.now_hi, "{:.3g}")}
        | {"was": with_ci(m.baseline, m.baseline_lo, m.baseline_hi, "{:.3g}")}
        for m in b.models
    ]
    return shallow(b) | {
        "path": b.baseline,
        "tolerance": pct(b.tolerance),
        "slower_alarms": pct(b.slower_alarms),
        "faster_alarms": pct(b.faster_alarms),
        "points": points,
        "verdicts": [
            shallow(c) | {"more": runs_by_count({"every point": c.more_runs})} for c in b.verdicts
        ],
        "curves": curves,
        "models": models,
        "differences": b.fingerprint.differences,
        "fingerprint_note": b.fingerprint.note,
    }
