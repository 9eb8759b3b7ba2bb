"""A study's kept results: its archives (`make archive`, made here) and its baseline
(`baseline:`), where they lie and whether they can be compared, checked before any job
runs. The comparison itself is the head node's (the baseline section,
scalestudy/sections/baseline/produce.py); this module reads and copies files only
(standard library), with the loaders the comparison reads them with, so that a broken
file is refused before any job rather than at aggregation, after the runs.

    python -m scalestudy.study.archives STUDY   (or: make archive STUDY=...)

copies results/STUDY's records (runs/), runs.csv, summary.csv, analysis.json (and
baseline.json) to archive/STUDY/<UTC time>-<fingerprint hash>/ (scalestudy.paths.ARCHIVE).
The hash names the environment the runs had (analysis.json's fingerprint), so that two
archives of one environment share it. `baseline: last` compares a study with its newest
archive; `make history STUDY=...` shows them all.
"""

import csv
import hashlib
import io
import json
import secrets
import shutil
import sys
from datetime import UTC, datetime
from pathlib import Path

from scalestudy.contract import EarlierAnalysis, earlier_analysis
from scalestudy.model import Study
from scalestudy.paths import ARCHIVE, BASELINE_FILES
from scalestudy.records import RecordError

LAST = "last"  # `baseline: last`: the study's newest archive
KEPT = (*BASELINE_FILES, "summary.csv", "baseline.json")


def archives(study: str, workdir: Path = Path(".")) -> list[Path]:
    """The study's archives (`make archive`), oldest first: their names start with the
    UTC time, so they sort by date."""
    folder = workdir / Path(ARCHIVE.format(study=study, stamp="x")).parent
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))


def baseline_dir(study: Study, workdir: Path = Path(".")) -> Path | None:
    """The folder the study is compared with (None: no baseline, or `last` with no
    archive yet; baseline_problems says so before any job)."""
    if study.baseline is None:
        return None
    if study.baseline == LAST:
        found = archives(study.name, workdir)
        return found[-1] if found else None
    return workdir / study.baseline  # an absolute path stays as it is


def baseline_inputs(study: Study, workdir: Path = Path(".")) -> list[str]:
    """The baseline's files that aggregation reads (its inputs in rules/aggregate.smk)."""
    folder = baseline_dir(study, workdir)
    return [] if folder is None else [str(folder / name) for name in BASELINE_FILES]


def archive_inputs(study: str, workdir: Path = Path(".")) -> list[str]:
    """The files of every archive of the study that aggregation reads (its history)."""
    files = [a / name for a in archives(study, workdir) for name in BASELINE_FILES]
    return [str(f) for f in files if f.is_file()]


def runs_csv_text(path: Path) -> str:
    """A kept runs.csv's text, checked whole: every row has the header's fields, at
    least one row, and the file ends with its newline (aggregation writes it so). A
    row cut short would otherwise be read as a run with its last columns empty, and a
    last value cut mid-number as another number. RecordError names the file and line."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise RecordError(f"{path}: cannot read ({e})") from None
    why = "the file is cut short or was edited"
    reader = csv.reader(io.StringIO(text))
    try:
        header, rows = next(reader, []), 0
        for row in reader:
            if row and len(row) != len(header):
                raise RecordError(
                    f"{path}: line {reader.line_num}: {len(row)} fields, the header has "
                    f"{len(header)}: {why}"
                )
            rows += bool(row)
    except csv.Error as e:
        raise RecordError(f"{path}: line {reader.line_num}: not CSV ({e}): {why}") from None
    if not header:
        raise RecordError(f"{path}: empty: {why}")
    if not text.endswith("\n"):
        raise RecordError(
            f"{path}: line {reader.line_num}: ends without its newline: the file is cut short"
        )
    if not rows:
        raise RecordError(f"{path}: no runs (a header only)")
    return text


def baseline_identity(analysis: EarlierAnalysis) -> dict | None:
    """The baseline's study as its analysis states it (name, workload, params), or
    None where it does not say (an analysis older than that)."""
    facts = analysis.study
    # not the measured file: a new CSV of times is a rerun of a study measured by hand
    return facts and {k: getattr(facts, k) for k in ("name", "workload", "params")}


def baseline_problems(study: Study, workdir: Path) -> list[str]:
    """What stops the study being compared with its baseline, naming the key: a folder
    that does not exist, holds no records, or is another study's (another workload,
    other parameters, another name) unless `baseline_across` says it is meant."""
    if study.baseline is None:
        return []
    key = f"studies.{study.name}.baseline"
    folder = baseline_dir(study, workdir)
    if folder is None:
        where = workdir / Path(ARCHIVE.format(study=study.name, stamp="x")).parent
        return [
            f"{key}: `last`, but the study has no archive under {where} yet "
            f"(make archive STUDY={study.name} keeps one)"
        ]
    if not folder.is_dir():
        return [f"{key}: no such folder: {folder}"]
    if folder.resolve() == (workdir / "results" / study.name).resolve():
        return [
            f"{key}: {folder} is this study's own results folder; copy it elsewhere "
            f"or archive it (make archive STUDY={study.name}) and compare with that"
        ]
    missing = [name for name in BASELINE_FILES if not (folder / name).is_file()]
    if missing:
        return [
            f"{key}: {folder} holds no records of an aggregated study ({', '.join(missing)}); "
            "give a study's results folder (results/<study> copied elsewhere) or an archive"
        ]
    runs, analysis = BASELINE_FILES
    try:
        runs_csv_text(folder / runs)
        analysis = earlier_analysis(folder / analysis)
    except RecordError as e:
        return [f"{key}: {e}; copy the folder again from the study's results or its archive"]
    if study.baseline_across:
        return []
    identity = baseline_identity(analysis)
    if identity is None:
        return []  # an older analysis: compared, with its environment said unknown
    now = {"name": study.name, "workload": study.workload}
    now["params"] = json.loads(json.dumps(study.params))  # as JSON holds them: lists, not tuples
    differ = [f"{k} {identity[k]!r} (this study: {now[k]!r})" for k in now if identity[k] != now[k]]
    if differ:
        return [
            f"{key}: {folder} is another study: its "
            + "; ".join(differ)
            + f". Set studies.{study.name}.baseline_across: true to compare them on purpose"
        ]
    return []


def archive_problems(study: Study, workdir: Path) -> list[str]:
    """The study's archives that aggregation would refuse after the runs (it reads
    them all, for the report's history), said before any job."""
    problems, compared = [], baseline_dir(study, workdir)  # the baseline's are said once
    for path in archive_inputs(study.name, workdir):
        if compared is not None and Path(path).parent == compared:
            continue
        read = runs_csv_text if path.endswith(".csv") else earlier_analysis
        try:
            read(Path(path))
        except RecordError as e:
            problems.append(
                f"studies.{study.name}: an archive of it, read for its history, is broken: "
                f"{e}; move that archive out of {Path(path).parent.parent}"
            )
    return problems


def expect_problems(study: Study) -> list[str]:
    """References the schema cannot refuse: a lower bound above the upper one."""
    problems = []
    for what, bounds in (study.expect or {}).items():
        for n, (lo, hi) in bounds.items():
            if lo is not None and hi is not None and lo > hi:
                problems.append(
                    f"studies.{study.name}.expect.{what}.{n}: the lower bound "
                    f"{lo} is above the upper bound {hi}"
                )
            if lo is None and hi is None:
                problems.append(
                    f"studies.{study.name}.expect.{what}.{n}: both bounds are "
                    "null: nothing to check"
                )
    return problems


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
