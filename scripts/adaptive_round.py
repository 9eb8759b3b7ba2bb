"""Snakemake entry: the plan of one round of an adaptive study, from the records of
the rounds before it (scalestudy.analysis.plan.round_plan, whose rules are
scalestudy.analysis.adaptive)."""

import json
import logging
import sys

from scalestudy.analysis.plan import round_plan
from scalestudy.analysis.tables import runs_from_records
from scalestudy.model import Study
from scalestudy.records import RecordError, write_text_atomic
from scalestudy.study.points import series_of_points


def main(smk) -> None:
    logging.basicConfig(filename=smk.log[0], level=logging.INFO, force=True)
    study = Study.from_config(smk.wildcards.study, smk.params.study)
    records = list(smk.input.records)
    try:
        runs = runs_from_records(records, series_of_points(study)) if records else None
    except RecordError as e:
        logging.error("%s", e)
        sys.exit(f"adaptive_round: refusing to plan round {smk.wildcards.round}: {e}")
    plan = round_plan(study, int(smk.wildcards.round), runs)
    logging.info("round %s: %s", smk.wildcards.round, json.dumps(plan, indent=1))
    write_text_atomic(smk.output.plan, json.dumps(plan, indent=1, allow_nan=False))


if "snakemake" in globals():
    main(snakemake)  # noqa: F821
