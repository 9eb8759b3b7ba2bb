"""Snakemake entry: the figures of one study (see scalestudy.plots)."""

import logging

import pandas as pd

from scalestudy.plots import write_figures


def main(smk) -> None:
    logging.basicConfig(filename=smk.log[0], level=logging.INFO, force=True)
    summary = pd.read_csv(smk.input.summary)
    runs = pd.read_csv(smk.input.runs)
    for path in write_figures(summary, runs, smk.params.axis, smk.params.out_dir):
        logging.info("wrote %s", path)


if "snakemake" in globals():
    main(snakemake)  # noqa: F821
