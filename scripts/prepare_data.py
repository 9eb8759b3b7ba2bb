"""Snakemake entry: place a data set where torchvision reads it (see scalestudy.compute.data)."""

import logging
import sys

from scalestudy.compute.data import DataError, prepare
from scalestudy.records import read_values


def main(smk) -> None:
    logging.basicConfig(filename=smk.log[0], level=logging.INFO, force=True)
    dataset = smk.wildcards.dataset
    try:
        sources = read_values(smk.params.sources)
        info = prepare(dataset, sources, smk.params.root, smk.output.marker)
    except DataError as e:
        logging.error("%s", e)
        sys.exit(f"prepare_data: {e}")
    logging.info("%s ready from %s", dataset, info["source"])


if "snakemake" in globals():
    main(snakemake)  # noqa: F821
