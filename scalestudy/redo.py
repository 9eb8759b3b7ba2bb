"""Redo runs without deleting anything: move their records aside, so that the next
invocation runs them again (a missing record is redone, and its study re-aggregated).

    python -m scalestudy.redo STUDY [--point POINT [--repeat REPEAT]]
    (or: make redo STUDY=... [POINT=... [REPEAT=...]])

STUDY alone: the whole study starts over (an adaptive one's rounds too); with POINT:
that point; with REPEAT: that one run (rep REPEAT). The records go to
results/STUDY/discarded/<time>/, with their folders, and are never read again by the
workflow; delete them when sure. STUDY is a study of config/config.yaml (never a
folder), and nothing moves while a Snakemake workflow here holds its results.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from datetime import UTC, datetime
from pathlib import Path

from scalestudy.model import CONFIG_FILE
from scalestudy.paths import ANALYSIS
from scalestudy.snakemake_internals import held_files


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


def refusal(study: str, point: str | None, repeat: int | None, workdir: Path) -> str | None:
    """Why `make redo` must not move the study's records now, or None: a study the
    config does not name, a run without its point, or a running workflow that holds the
    study's results (it would miss the records it is about to read)."""
    from scalestudy.study.validation import config_as_written, study_named

    try:
        study_named(study, config_as_written(workdir), "redo")
    except SystemExit as e:
        return str(e)
    if repeat is not None and point is None:
        return f"redo: REPEAT={repeat} names a run of a point: give its POINT= too"
    results = (workdir / Path(ANALYSIS.format(study=study)).parent).resolve()
    for lock, held in held_files(workdir):
        if held.is_relative_to(results):
            return (
                f"redo: a Snakemake workflow here holds the results of {study} ({lock} "
                f"lists {held.relative_to(workdir.resolve())}): let it end first. If "
                "none runs (one killed leaves its lock), `snakemake --unlock` removes it"
            )
    return None


def main(argv: list[str], workdir: Path = Path(".")) -> Path:
    parser = argparse.ArgumentParser(prog="python -m scalestudy.redo", description=__doc__)
    parser.add_argument("study", help=f"a study of {CONFIG_FILE}")
    parser.add_argument("--point", help="one point of it (t2)")
    parser.add_argument("--repeat", type=int, help="one run of that point (1 for rep1)")
    args = parser.parse_args(argv)
    if args.repeat is not None and args.repeat < 1:
        parser.error(f"--repeat {args.repeat}: runs are numbered from 1")
    refused = refusal(args.study, args.point, args.repeat, workdir)
    if refused:
        raise SystemExit(refused)
    repeat = None if args.repeat is None else str(args.repeat)
    return redo(workdir / "results", args.study, args.point, repeat)


if __name__ == "__main__":
    main(sys.argv[1:])
