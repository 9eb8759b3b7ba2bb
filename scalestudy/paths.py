"""Where a run's record lives: the one place that spells the pattern.

The rules name their outputs with these patterns, aggregation reads a record's
identity back from its path, and a record that does not match its path (copied
or moved by hand) is refused.
"""

import itertools
import re
import string
from pathlib import Path

RECORD = "results/{study}/runs/{point}/rep{repeat}.json"
# what aggregation makes of a study's records (rules/aggregate.smk)
RUNS_TABLE = "results/{study}/runs.csv"
ANALYSIS = "results/{study}/analysis.json"
# the price and predicted start of every study's jobs, before any runs (rules/plan.smk)
PLAN_HTML = "results/plan.html"
PLAN_JSON = "results/plan.json"
# an adaptive study's plan of one round (rules/adaptive.smk)
ROUND = "results/{study}/rounds/round{round}.json"
# a study's results kept for later comparison: `make archive`
# (scalestudy/study/archives.py);
# {stamp} is the UTC time, then the fingerprint's hash, so that names sort by date
ARCHIVE = "archive/{study}/{stamp}"
# the files of a results folder (or an archive) that a baseline is read from
BASELINE_FILES = ("runs.csv", "analysis.json")
# What a user wrote that a rule needs (a study's config, the report's title) reaches it as
# a file of its JSON values named by their hash, never as a param: `snakemake --report`
# puts the params of the jobs that made its files, unescaped, in a <script> of its page
VALUES = ".snakemake/scalestudy/values/{digest}.json"
# RECORD read backwards: each placeholder becomes a named group
_GROUPS = {"study": "[^/]+", "point": "[^/]+", "repeat": "[1-9][0-9]*"}
_RECORD_PATH = re.compile(
    "(?:^|/)"
    + "".join(
        re.escape(literal) + (f"(?P<{name}>{_GROUPS[name]})" if name else "")
        for literal, name, _, _ in string.Formatter().parse(RECORD)
    )
    + "$"
)


def study_folders_not_in(studies, results: Path = Path("results")) -> list[str]:
    """The folders under `results` that hold a study's results (its runs, runs table or
    analysis) whose study is not among `studies` (the config's names): a study renamed
    or removed. They are kept, and never read, as "results/<name>/"."""
    marks = ("runs", Path(RUNS_TABLE).name, Path(ANALYSIS).name)
    return sorted(
        f"{folder.as_posix()}/"
        for folder in (results.iterdir() if results.is_dir() else ())
        if folder.name not in studies and any((folder / mark).exists() for mark in marks)
    )


def record_path(study: str, point: str, repeat: int) -> str:
    return RECORD.format(study=study, point=point, repeat=repeat)


def identity_from_path(path: str | Path) -> dict | None:
    """(study, point, repeat) that a record's path says it holds, or None when the
    path is not laid out as RECORD (a test's or a benchmark's own file)."""
    match = _RECORD_PATH.search(Path(path).as_posix())
    if not match:
        return None
    return match.groupdict() | {"repeat": int(match["repeat"])}


def records_on_disk(study: str, point: str):
    """(repeat, path) of the point's records that exist, from rep1 up to the first gap."""
    for repeat in itertools.count(1):
        path = Path(record_path(study, point, repeat))
        if not path.exists():
            return
        yield repeat, path
