"""Snakemake entry: the figures of one study (see scalestudy.report.plots)."""

import logging
from pathlib import Path

import pandas as pd

from scalestudy.report.plots import write_figures
from scalestudy.sections import Analysis


def main(smk) -> None:
    logging.basicConfig(filename=smk.log[0], level=logging.INFO, force=True)
    summary = pd.read_csv(smk.input.summary)
    runs = pd.read_csv(smk.input.runs)
    path = Path(smk.input.analysis)
    analysis = Analysis.load(path)
    figures = write_figures(summary, runs, smk.params.axis, smk.params.out_dir, analysis)
    for path in figures:
        logging.info("wrote %s", path)


if "snakemake" in globals():
    main(snakemake)  # noqa: F821
