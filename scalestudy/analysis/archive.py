"""Keep a study's results for later comparison, never overwriting:

    python -m scalestudy.analysis.archive STUDY   (or: make archive STUDY=...)

copies results/STUDY's records (runs/), runs.csv, summary.csv, analysis.json (and
baseline.json) to archive/STUDY/<UTC time>-<fingerprint hash>/ (scalestudy.paths.ARCHIVE).
The hash names the environment the runs had (analysis.json's fingerprint), so that two
archives of one environment share it. `baseline: last` compares a study with its newest
archive; `make history STUDY=...` shows them all.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from scalestudy.contract import earlier_analysis
from scalestudy.paths import ARCHIVE, BASELINE_FILES

KEPT = (*BASELINE_FILES, "summary.csv", "baseline.json")


def fingerprint_hash(analysis: dict) -> str:
    """8 hex digits of the analysis's fingerprint ("unknown": an analysis without one)."""
    found = analysis.get("findings", {}).get("fingerprint")
    if not found:
        return "unknown"
    return hashlib.sha256(json.dumps(found, sort_keys=True).encode()).hexdigest()[:8]


def archive(study: str, workdir: Path = Path("."), now: datetime | None = None) -> Path:
    """The new archive's folder; SystemExit says why none was made."""
    source = workdir / "results" / study
    missing = [name for name in BASELINE_FILES if not (source / name).is_file()]
    if missing:
        raise SystemExit(
            f"archive: {source} has no {', '.join(missing)}: run and aggregate "
            f"the study first (snakemake results/{study}/analysis.json)"
        )
    analysis = earlier_analysis(source / "analysis.json")
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    target = workdir / ARCHIVE.format(study=study, stamp=f"{stamp}-{fingerprint_hash(analysis)}")
    if target.exists():
        raise SystemExit(f"archive: {target} exists already; an archive is never overwritten")
    target.parent.mkdir(parents=True, exist_ok=True)
    # copied beside it first, then renamed: a reader never sees half an archive
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        for name in KEPT:
            if (source / name).is_file():
                shutil.copy2(source / name, staging / name)
        if (source / "runs").is_dir():
            shutil.copytree(source / "runs", staging / "runs")
        staging.rename(target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    print(f"archived {sys.argv[1]} in {archive(sys.argv[1])}")
