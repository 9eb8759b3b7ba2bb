"""Snakemake entry: records (or a measured CSV) -> runs.csv and summary.csv of one study."""

import logging
import sys

from scalestudy.analysis import runs_from_measured, runs_from_records, summarise
from scalestudy.records import RecordError, write_text_atomic


def aggregate(study_name: str, study: dict, inputs: list[str], summary_path, runs_path):
    if "measured" in study:
        runs = runs_from_measured(inputs[0], study_name, study)
    else:
        runs = runs_from_records(inputs)
    summary = summarise(runs, study)
    write_text_atomic(runs_path, runs.to_csv(index=False))
    write_text_atomic(summary_path, summary.to_csv(index=False))
    return summary


def main(smk) -> None:
    logging.basicConfig(filename=smk.log[0], level=logging.INFO, force=True)
    try:
        summary = aggregate(
            smk.wildcards.study,
            smk.params.study,
            list(smk.input.records),
            smk.output.summary,
            smk.output.runs,
        )
    except RecordError as e:
        logging.error("%s", e)
        sys.exit(f"aggregate_study: refusing to aggregate: {e}")
    logging.info("\n%s", summary.to_string())


if "snakemake" in globals():
    main(snakemake)  # noqa: F821
