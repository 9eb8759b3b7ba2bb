"""A paired comparison in the report: each point's ratio b/a with its interval and verdict."""

from scalestudy.sections.formatting import runs_by_count, shallow, with_ci
from scalestudy.sections.paired.contract import Paired

# its line of the first table, a or b: the study's main question
RANK = 0


def variant_words(overrides: dict) -> str:
    """What a variant changes, in one line ("as the study" when nothing)."""
    parts = [overrides["description"]] if overrides.get("description") else []
    parts += [f"{k} = {v}" for k, v in sorted((overrides.get("params") or {}).items())]
    parts += [f"{k} {overrides[k]}" for k in ("python", "container") if k in overrides]
    return "; ".join(parts) or "as the study"


def view(paired: Paired) -> dict:
    points = [
        shallow(p)
        | {"ratio": with_ci(p.ratio, p.ci_lo, p.ci_hi, "{:.3f}")}
        | {"more": runs_by_count({p.point: p.more_pairs})}
        for p in paired.points
    ]
    return shallow(paired) | {
        "a": variant_words(paired.a),
        "b": variant_words(paired.b),
        "tolerance": f"{paired.tolerance * 100:g} %",
        "slower_alarms": f"{paired.slower_alarms * 100:g} %",
        "faster_alarms": f"{paired.faster_alarms * 100:g} %",
        "points": points,
        "several": len(points) > 1,  # the lines name their point
    }
