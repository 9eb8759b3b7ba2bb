"""References (`expect:`): what a study states it expects, judged against what it
measured (analysis.json's `expectations`); `make check` reads the analyses and runs
nothing:

    python -m scalestudy.sections.references.produce [STUDY ...]   (or: make check [STUDY=...])

When an expectation is broken, unsure or unmeasured: docs/baselines.md, "References for CI".
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from scalestudy.contract import ContractError
from scalestudy.model import CONFIG_FILE, Study
from scalestudy.paths import ANALYSIS
from scalestudy.records import finite
from scalestudy.sections import Analysis
from scalestudy.sections.references.contract import DATA, Expectation
from scalestudy.study.validation import config_as_written, selected, study_named

# what `expect:` may name -> the summary's columns (value, interval)
VALUES = {
    "speedup": ("speedup", "speedup_ci_lo", "speedup_ci_hi"),
    "efficiency": ("efficiency", "efficiency_ci_lo", "efficiency_ci_hi"),
    "time_s": ("time_s", "time_ci_lo", "time_ci_hi"),
}

# what an expectation's words say after the measured value, by its status
SAID = {
    "broken": ", its whole interval outside",
    "ok": "",
    "unsure": ", outside, but its interval reaches the bounds (not called)",
}


def produce(given) -> DATA:
    return expectations(given.study, given.summary)


def _bounds(lower, upper) -> str:
    if upper is None:
        return f"at least {lower:g}"
    if lower is None:
        return f"at most {upper:g}"
    return f"within [{lower:g}, {upper:g}]"


def judge(what: str, n: int, lower, upper, value, lo, hi) -> Expectation:
    """One expectation against a measured value and its interval."""
    wanted = f"{what} at N = {n} expected {_bounds(lower, upper)}"
    if value is None:
        status, text = "unmeasured", f"{wanted}: not measured"
    else:
        below = lower is not None and value < lower
        above = upper is not None and value > upper
        sure_below = below and hi is not None and hi < lower
        sure_above = above and lo is not None and lo > upper
        interval = f" [{lo:.3g}, {hi:.3g}]" if lo is not None and hi is not None else ""
        status = "broken" if sure_below or sure_above else "unsure" if below or above else "ok"
        text = f"{wanted}: measured {value:.3g}{interval}{SAID[status]}"
    return Expectation(what, n, lower, upper, value, lo, hi, status, text)


def expectations(study: Study, summary: pd.DataFrame) -> list[Expectation]:
    """Every expectation of the study, judged against its summary (the first series
    measured at that N, or its only one)."""
    out = []
    for what, bounds in (study.expect or {}).items():
        columns = VALUES[what]
        for key, (lower, upper) in sorted(bounds.items(), key=lambda kv: int(kv[0])):
            n = int(key)
            rows = summary[summary["n"] == n] if "n" in summary else summary.iloc[0:0]
            row = rows.iloc[0] if len(rows) else None
            value, lo, hi = (None,) * 3 if row is None else (finite(row.get(c)) for c in columns)
            out.append(judge(what, n, lower, upper, value, lo, hi))
    return out


def broken(analysis: Analysis) -> list[str]:
    """The expectations a study breaks, as `make check` names them."""
    return [e.text for e in analysis.section("references") if e.status in ("broken", "unmeasured")]


def check(folders: list[Path]) -> int:
    """Exit status of `make check`: 1 when any expectation is broken (each named), or an
    analysis cannot be read; 0 otherwise."""
    failed = 0
    for folder in folders:
        path = folder / "analysis.json"
        try:
            analysis = Analysis.load(path)
        except (OSError, ContractError) as e:
            print(f"{folder.name}: cannot check: {e}")
            failed += 1
            continue
        bad = broken(analysis)
        for text in bad:
            print(f"{folder.name}: broken: {text}")
        unsure = [e.text for e in analysis.section("references") if e.status == "unsure"]
        for text in unsure:
            print(f"{folder.name}: unsure: {text}")
        if not analysis.section("references"):
            print(f"{folder.name}: no expectations stated (expect:)")
        elif not bad:
            print(f"{folder.name}: {len(analysis.section('references'))} expectation(s) kept")
        failed += bool(bad)
    return 1 if failed else 0


def check_config(names: list[str], workdir: Path = Path(".")) -> int:
    """Exit status of `make check`: the studies named (default: every study of the
    config, as `only:` selects them, that states expectations), each from its analysis;
    one with `expect:` but no analysis is a broken expectation. A results folder of a
    study the config does not name is said, and not checked."""
    config = config_as_written(workdir)
    studies = config["studies"]
    expects = {n: isinstance(s, dict) and bool(s.get("expect")) for n, s in studies.items()}
    if names:
        names = [study_named(name, config, "check") for name in names]
    else:
        names = [name for name in selected(config)[0]["studies"] if expects[name]]
        for found in sorted(workdir.glob(ANALYSIS.format(study="*"))):
            if found.parent.name not in config["studies"]:
                print(f"{found.parent.name}: not a study of {CONFIG_FILE}: not checked")
    if not names:
        print(f"check: no study of {CONFIG_FILE} states expectations (expect:)")
        return 0
    folders, failed = [], 0
    for name in names:
        path = workdir / ANALYSIS.format(study=name)
        if path.is_file():
            folders.append(path.parent)
        elif expects[name]:
            print(f"{name}: broken: no analysis to check ({path} is missing: run the workflow)")
            failed += 1
        else:
            print(f"{name}: no expectations stated (expect:), and no analysis yet")
    return 1 if check(folders) or failed else 0


if __name__ == "__main__":
    sys.exit(check_config(sys.argv[1:]))
