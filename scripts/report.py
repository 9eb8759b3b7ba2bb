"""Snakemake entry: results/report.html from every study's tables and figures."""

import json
import logging
from pathlib import Path

import pandas as pd

from scalestudy import FIGURES
from scalestudy.report import profile_links, study_context, write_report


def build(studies: dict, results: Path, title: str, out: Path, profiles=()) -> None:
    contexts = []
    for name, study in studies.items():
        summary = pd.read_csv(results / name / "summary.csv")
        runs = pd.read_csv(results / name / "runs.csv")
        figures = {f: results / name / "figures" / f"{f}.svg" for f in FIGURES}
        traces = profile_links([Path(p) for p in profiles if Path(p).parts[-3] == name], out)
        predictions = json.loads((results / name / "analysis.json").read_text())
        contexts.append(study_context(name, study, summary, runs, figures, traces, predictions))
    write_report(out, title, contexts)


def main(smk) -> None:
    logging.basicConfig(filename=smk.log[0], level=logging.INFO, force=True)
    build(
        smk.params.studies,
        Path("results"),
        smk.params.title,
        Path(smk.output.html),
        smk.input.profiles,
    )
    logging.info("wrote %s", smk.output.html)


if "snakemake" in globals():
    main(snakemake)  # noqa: F821
