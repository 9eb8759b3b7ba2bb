"""Staging with several copies at once in the report."""

from scalestudy.report.views import shallow, table
from scalestudy.sections.staging.contract import Staging


def view(staging: Staging) -> dict:
    """Per number of copies at once, its copies' times formatted; the first and the
    last as numbers too (the template's sentence compares them)."""
    columns = {"slowest": "slowest_s", "typical": "typical_s", "growth": "growth",
               "rate": "mb_per_s"}  # fmt: skip
    formatted = table([shallow(r) for r in staging.rows], columns.values())
    view = [
        {"k": r.k, "runs": r.runs} | {key: f[c] for key, c in columns.items()}
        for r, f in zip(staging.rows, formatted, strict=True)
    ]
    return {"first": staging.rows[0], "last": staging.rows[-1], "rows": view}
