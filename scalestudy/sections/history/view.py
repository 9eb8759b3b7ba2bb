"""The study's history in the report: one row an archive, one column a point."""

from scalestudy.contract import NO_CHANGE
from scalestudy.sections.formatting import fmt
from scalestudy.sections.history.contract import HistoryEntry


def view(entries: list[HistoryEntry]) -> dict | None:
    """The study's archives and its runs now as a table: one row an entry, one column a
    point, a step marked where a change was called (its produce.py)."""
    if not entries:
        return None
    keys = sorted({(p.series, p.n) for e in entries for p in e.points})
    rows = []
    for e in entries:
        at = {(p.series, p.n): p for p in e.points}
        cells = [
            {
                "time": fmt(at[k].time_s, "{:.3g}") if k in at else "–",
                "change": at[k].change if k in at and at[k].change != NO_CHANGE else "",
            }
            for k in keys
        ]
        said = "; ".join(
            f"{d.key} {d.baseline or 'unknown'} → {d.now or 'unknown'}" for d in e.differences
        )
        rows.append({"name": e.name, "cells": cells, "differences": said})
    return {"columns": [f"N = {n}" + (f" ({s})" if s else "") for s, n in keys], "rows": rows}
