"""Keep a study's results for later comparison, never overwriting:

    python -m scalestudy.analysis.history.archive STUDY   (or: make archive STUDY=...)

copies results/STUDY's records (runs/), runs.csv, summary.csv, analysis.json (and
baseline.json) to archive/STUDY/<UTC time>-<fingerprint hash>/ (scalestudy.paths.ARCHIVE).
The hash names the environment the runs had (analysis.json's fingerprint), so that two
archives of one environment share it. `baseline: last` compares a study with its newest
archive; `make history STUDY=...` shows them all.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import shutil
import sys
from datetime import UTC, datetime
from pathlib import Path

from scalestudy.contract import EarlierAnalysis, earlier_analysis
from scalestudy.paths import ARCHIVE, BASELINE_FILES
from scalestudy.records import RecordError
from scalestudy.study.baseline import runs_csv_text

KEPT = (*BASELINE_FILES, "summary.csv", "baseline.json")


def fingerprint_hash(analysis: EarlierAnalysis) -> str:
    """8 hex digits of the analysis's fingerprint ("unknown": an analysis without one)."""
    found = analysis.fingerprint
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
    runs, analysis = BASELINE_FILES
    try:  # an archive is a later baseline: read as one is (never a file cut short)
        runs_csv_text(source / runs)
        analysis = earlier_analysis(source / analysis)
    except RecordError as e:
        raise SystemExit(
            f"archive: {e}; aggregate the study again (snakemake results/{study}/analysis.json)"
        ) from None
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    target = workdir / ARCHIVE.format(study=study, stamp=f"{stamp}-{fingerprint_hash(analysis)}")
    exists = f"archive: {target} exists already; an archive is never overwritten"
    if target.exists():
        raise SystemExit(exists)
    target.parent.mkdir(parents=True, exist_ok=True)
    # copied beside it first, then renamed: a reader never sees half an archive. Made
    # with mkdir, not mkdtemp (mode 0700): an archive is as readable as the umask allows
    staging = target.parent / f".{target.name}.{secrets.token_hex(4)}"
    staging.mkdir()
    try:
        for name in KEPT:
            if (source / name).is_file():
                shutil.copy2(source / name, staging / name)
        if (source / "runs").is_dir():
            shutil.copytree(source / "runs", staging / "runs")
        try:
            staging.rename(target)
        except OSError:
            if not target.exists():
                raise
            # another `make archive` of the same second renamed its copy there first
            raise SystemExit(f"{exists} (made by another archive at the same time)") from None
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    print(f"archived {sys.argv[1]} in {archive(sys.argv[1])}")
