"""Redo runs without deleting anything: move their records aside, so that the next
invocation runs them again (a missing record is redone, and its study re-aggregated).

    python -m scalestudy.redo STUDY [--point POINT [--repeat REPEAT]]
    (or: make redo STUDY=... [POINT=... [REPEAT=...]])

STUDY alone: the whole study starts over (an adaptive one's rounds too); with POINT: that
point; with REPEAT: that one run (rep REPEAT). The records go to results/STUDY/discarded/<time>/,
with their folders and a why.txt saying why, and are never read again by the workflow;
delete them when sure. STUDY is a study of config/config.yaml (never a folder), and nothing
moves while a Snakemake workflow here holds its results. The workflow keeps the records it
refuses (RefusedRecords) there the same way.
"""

import argparse
import contextlib
import itertools
import shutil
import sys
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path

from scalestudy.model import CONFIG_FILE
from scalestudy.paths import ANALYSIS
from scalestudy.records import write_text_atomic
from scalestudy.snakemake_internals import held_files

DISCARDED = "discarded"  # results/<study>/discarded/<UTC time>/
WHY = "why.txt"  # in it: one line per record moved, "<point>/rep<r>.json: why"


def discard(runs: Path, records: Iterable[Path], why: str | Mapping[Path, str]) -> Path:
    """Move `records` (files under a study's `runs` folder) to the study's
    discarded/<UTC time>/, keeping their folders, with a why.txt saying why each was
    moved (`why`: one reason for all, or each record's); return that folder. Each call
    gets a folder of its own, so nothing moved aside earlier is overwritten."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    for attempt in itertools.count(1):
        aside = runs.parent / DISCARDED / (stamp if attempt == 1 else f"{stamp}-{attempt}")
        with contextlib.suppress(FileExistsError):  # another call's folder: the next name
            aside.mkdir(parents=True)
            break
    lines = []
    for record in records:
        target = aside / record.relative_to(runs)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(record, target)
        reason = why if isinstance(why, str) else why[record]
        lines.append(f"{record.relative_to(runs)}: {reason}\n")
    write_text_atomic(aside / WHY, "".join(lines))
    return aside


class RefusedRecords:
    """Records the workflow refuses as its runs' (unreadable, not the run their path
    names, figures that disagree): each is run again, and kept in discarded/ with its
    reason, never overwritten. The rules learn of them while Snakemake builds its DAG,
    before it is known whether anything runs (a dry run must move nothing), so
    `set_aside` moves them once the start-up checks have passed and their runs are
    about to run; one refused after that (an adaptive round's, planned by a
    checkpoint) is moved at once, its run being about to run too. Snakemake may ask
    for a job's token again after its record has moved: `moved` keeps it."""

    def __init__(self):
        self.pending: dict[Path, tuple[str, str]] = {}  # path -> (why, rerun token)
        self.moved: dict[Path, str] = {}  # path -> the rerun token it was given
        self.running = False

    def refuse(self, path: Path, why: str) -> str:
        """Note a refused record; return the rerun token that makes Snakemake run it
        again, new for every new fault (the file's change time)."""
        token = f"invalid-{path.stat().st_mtime_ns}"
        if self.running:
            discard(path.parents[1], [path], why)
            self.moved[path] = token
        else:
            self.pending[path] = (why, token)
        return token

    def set_aside(self, to_run: Iterable[str]) -> list[str]:
        """Move the refused records among the paths `to_run` (the records this
        invocation will write) to discarded/; the words saying where each study's went."""
        self.running = True
        chosen = {Path(p) for p in to_run} & {p for p in self.pending if p.exists()}
        moved = []
        for runs, records in itertools.groupby(sorted(chosen), key=lambda p: p.parents[1]):
            records = list(records)
            aside = discard(runs, records, {p: self.pending[p][0] for p in records})
            self.moved |= {p: self.pending[p][1] for p in records}
            moved.append(
                f"kept {len(records)} refused record(s) in {aside} ({WHY} says why); "
                "they are measured again"
            )
        self.pending.clear()
        return moved


def redo(results: Path, study: str, point: str | None = None, repeat: str | None = None):
    runs = results / study / "runs"
    if not runs.is_dir():
        raise SystemExit(f"redo: no runs of study {study!r} under {runs}")
    pattern = f"{point or '*'}/rep{repeat or '*'}.json"
    records = sorted(runs.glob(pattern))
    if not records:
        raise SystemExit(f"redo: no record matches {runs}/{pattern}")
    aside = discard(runs, records, "redone on request (scalestudy.redo)")
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
    try:
        return redo(workdir / "results", args.study, args.point, repeat)
    except OSError as e:  # a read-only or full results/: one line, no traceback
        raise SystemExit(
            f"redo: cannot move the records aside ({e.strerror}: {e.filename}): make "
            "results/ writable, then run make redo again"
        ) from None


if __name__ == "__main__":
    main(sys.argv[1:])
