"""A paired comparison in the report: each point's ratio b/a with its interval and verdict."""

from scalestudy.report.views import fmt, shallow
from scalestudy.sections.paired.contract import Paired


def variant_words(overrides: dict) -> str:
    """What a variant changes, in one line ("as the study" when nothing)."""
    parts = [overrides["description"]] if overrides.get("description") else []
    parts += [f"{k} = {v}" for k, v in sorted((overrides.get("params") or {}).items())]
    parts += [f"{k} {overrides[k]}" for k in ("python", "container") if k in overrides]
    return "; ".join(parts) or "as the study"


def view(paired: Paired) -> dict:
    points = [shallow(p) | {"ratio": fmt(p.ratio, "{:.3f}"), "interval": "–" if p.ci_lo is None
                            else f"[{fmt(p.ci_lo, '{:.3f}')}, {fmt(p.ci_hi, '{:.3f}')}]"}
              for p in paired.points]  # fmt: skip
    return shallow(paired) | {
        "a": variant_words(paired.a),
        "b": variant_words(paired.b),
        "tolerance": f"{paired.tolerance * 100:g} %",
        "slower_alarms": f"{paired.slower_alarms * 100:g} %",
        "faster_alarms": f"{paired.faster_alarms * 100:g} %",
        "points": points,
    }
