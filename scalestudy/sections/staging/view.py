"""Staging with several copies at once in the report."""

from scalestudy.sections.formatting import runs_by_count, shallow, table, with_ci
from scalestudy.sections.staging.contract import Staging
from scalestudy.thresholds import STAGING_FLAT_WORDS

# its line of the first table, staging: a main question of the studies that vary it
RANK = 0


def view(staging: Staging) -> dict:
    """Per number of copies at once, its copies' times formatted; the first and the
    last as numbers too (the template's sentence compares them)."""
    columns = {
        "slowest": "slowest_s",
        "typical": "typical_s",
        "growth": "growth",
        "rate": "mb_per_s",
    }
    # the fewest copies are not compared with themselves
    first, last = staging.rows[0], staging.rows[-1]
    shown = [shallow(r) | ({"growth": None} if r is first else {}) for r in staging.rows]
    formatted = table(shown, columns.values())
    view = [
        {"k": r.k, "runs": r.runs} | {key: f[c] for key, c in columns.items()}
        for r, f in zip(staging.rows, formatted, strict=True)
    ]
    growth = with_ci(last.growth, last.growth_lo, last.growth_hi, unit="x")
    more = runs_by_count({f"k = {r.k}": staging.more_runs for r in (first, last)})
    said = {"first": first, "last": last, "rows": view, "growth": growth, "more": more}
    return shallow(staging) | said | {"flat": STAGING_FLAT_WORDS}
