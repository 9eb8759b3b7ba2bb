"""A study's baseline (`baseline:`): where the earlier run lies, and whether it can be
compared, checked before any job runs. The comparison itself is the head node's
(scalestudy.analysis.baseline); this module reads files only (standard library).
"""

from __future__ import annotations

import json
from pathlib import Path

from scalestudy.contract import earlier_analysis
from scalestudy.model import Study
from scalestudy.paths import ARCHIVE, BASELINE_FILES

LAST = "last"  # `baseline: last`: the study's newest archive


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
    path = Path(study.baseline)
    return path if path.is_absolute() else workdir / path


def baseline_inputs(study: Study, workdir: Path = Path(".")) -> list[str]:
    """The baseline's files that aggregation reads (its inputs in rules/aggregate.smk)."""
    folder = baseline_dir(study, workdir)
    return [] if folder is None else [str(folder / name) for name in BASELINE_FILES]


def archive_inputs(study: str, workdir: Path = Path(".")) -> list[str]:
    """The files of every archive of the study that aggregation reads (its history)."""
    return [
        str(a / name)
        for a in archives(study, workdir)
        for name in BASELINE_FILES
        if (a / name).is_file()
    ]


def baseline_identity(folder: Path) -> dict | None:
    """The baseline's study as its analysis.json states it (name, workload, params), or
    None where the file does not say (an analysis older than that)."""
    try:
        data = earlier_analysis(folder / "analysis.json")
        facts = data["findings"]["study"]
        # not the measured file: a new CSV of times is a rerun of a study measured by hand
        return {k: facts.get(k) for k in ("name", "workload", "params")}
    except (OSError, ValueError, KeyError, TypeError):
        return None


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
    runs = folder / BASELINE_FILES[0]
    if missing or len(runs.read_text().splitlines()) < 2:
        what = ", ".join(missing) if missing else f"no runs in {runs.name}"
        return [
            f"{key}: {folder} holds no records of an aggregated study ({what}); give a "
            "study's results folder (results/<study> copied elsewhere) or an archive"
        ]
    if study.baseline_across:
        return []
    identity = baseline_identity(folder)
    if identity is None:
        return []  # an older analysis: compared, with its environment said unknown
    now = {
        "name": study.name,
        "workload": study.workload,
        "params": json.loads(json.dumps(study.params)),
    }
    differ = [f"{k} {identity[k]!r} (this study: {now[k]!r})" for k in now if identity[k] != now[k]]
    if differ:
        return [
            f"{key}: {folder} is another study: its "
            + "; ".join(differ)
            + f". Set studies.{study.name}.baseline_across: true to compare them on purpose"
        ]
    return []


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
