"""Snakemake entry: records (or a measured CSV) -> runs.csv, summary.csv and
analysis.json of one study (scalestudy.analysis.pipeline)."""

import logging
import sys
from pathlib import Path

from scalestudy.analysis.pipeline import aggregate
from scalestudy.model import Study
from scalestudy.records import RecordError


def main(smk) -> None:
    logging.basicConfig(filename=smk.log[0], level=logging.INFO, force=True)
    try:
        study = Study.from_config(smk.wildcards.study, smk.params.study)
        baseline = Path(smk.input.baseline[0]).parent if smk.input.baseline else None
        # each archive's folder once, oldest first (their names start with the time)
        archives = sorted({Path(path).parent for path in smk.input.archives})
        result = aggregate(
            study, list(smk.input.records), list(smk.input.rounds), baseline, archives
        )
    except RecordError as e:
        logging.error("%s", e)
        sys.exit(f"aggregate_study: refusing to aggregate: {e}")
    result.write(dict(smk.output.items()))  # by name: the baseline is among them
    logging.info("\n%s", result.summary.to_string())


if "snakemake" in globals():
    main(snakemake)  # noqa: F821
