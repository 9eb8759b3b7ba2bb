"""Redo runs without deleting anything: move their records aside, so that the next
invocation runs them again (a missing record is redone, and its study re-aggregated).

    python -m scalestudy.redo STUDY [POINT [REPEAT]]   (or: make redo STUDY=... POINT=...)

STUDY alone: the whole study starts over (an adaptive one's rounds too); with POINT:
that point; with REPEAT: that one run (rep REPEAT). The records go to
results/STUDY/discarded/<time>/, with their folders, and are never read again by the
workflow; delete them when sure.
"""

from __future__ import annotations

import shutil
import sys
from datetime import UTC, datetime
from pathlib import Path


def redo(results: Path, study: str, point: str | None = None, repeat: str | None = None):
    runs = results / study / "runs"
    if not runs.is_dir():
        raise SystemExit(f"redo: no runs of study {study!r} under {runs}")
    pattern = f"{point or '*'}/rep{repeat or '*'}.json"
    records = sorted(runs.glob(pattern))
    if not records:
        raise SystemExit(f"redo: no record matches {runs}/{pattern}")
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    aside = results / study / "discarded" / stamp
    for record in records:
        target = aside / record.relative_to(runs)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(record, target)
    rounds = results / study / "rounds"
    if point is None and rounds.is_dir():
        # an adaptive study over: its rounds (history of runs now aside) go with them
        shutil.move(rounds, aside / "rounds")
    print(f"moved {len(records)} record(s) to {aside}; the next invocation runs them again")
    return aside


if __name__ == "__main__":
    if not 2 <= len(sys.argv) <= 4:
        raise SystemExit(__doc__)
    redo(Path("results"), *sys.argv[1:])
