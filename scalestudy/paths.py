"""Where a run's record lives: the one place that spells the pattern.

The rules name their outputs with these patterns, aggregation reads a record's
identity back from its path, and a record that does not match its path (copied
or moved by hand) is refused.
"""

from __future__ import annotations

import re
from pathlib import Path

RECORD = "results/{study}/runs/{point}/rep{repeat}.json"
_RECORD_PATH = re.compile(r"(?:^|/)results/([^/]+)/runs/([^/]+)/rep([1-9][0-9]*)\.json$")


def record_path(study: str, point: str, repeat: int) -> str:
    return RECORD.format(study=study, point=point, repeat=repeat)


def identity_from_path(path: str | Path) -> dict | None:
    """(study, point, repeat) that a record's path says it holds, or None when the
    path is not laid out as RECORD (a test's or a benchmark's own file)."""
    match = _RECORD_PATH.search(Path(path).as_posix())
    if not match:
        return None
    return {"study": match[1], "point": match[2], "repeat": int(match[3])}
