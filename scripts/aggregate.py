"""Snakemake entry: records (or a measured CSV) -> runs.csv, summary.csv and
analysis.json (fits, predictions, recommendation, and under "findings" every other
number the report shows: scalestudy.analysis.findings) of one study."""

import json
import logging
import sys
from pathlib import Path

from scalestudy.analysis.adaptive import round_of_run, rounds_summary
from scalestudy.analysis.findings import study_findings
from scalestudy.analysis.plan import spent_su
from scalestudy.analysis.predictions import jsonable, split_by_provenance, study_predictions
from scalestudy.analysis.tables import (
    disturbed_reasons,
    runs_from_measured,
    runs_from_records,
    summarise,
)
from scalestudy.model import Study
from scalestudy.records import RecordError, write_text_atomic
from scalestudy.study.points import series_of_points


def aggregate(study: Study, inputs: list[str], out: dict, rounds: list[str] = ()):
    """`rounds`: an adaptive study's round plans (rules/adaptive.smk), in order."""
    if study.measured is not None:
        runs = runs_from_measured(inputs[0], study)
    else:
        runs = runs_from_records(inputs, series_of_points(study))
        runs["disturbed"] = disturbed_reasons(runs, study)
    plans = [json.loads(Path(path).read_text()) for path in rounds]
    if plans:
        runs["round"] = [
            round_of_run(plans, p, int(k))
            for p, k in zip(runs["point"], runs["repeat"], strict=True)
        ]
    runs = split_by_provenance(runs, study)
    summary = summarise(runs, study)
    predictions = study_predictions(summary, runs, study)
    if plans:
        spent = float(spent_su(runs, study))
        predictions["adaptive"] = jsonable(rounds_summary(plans, spent, study.repeats))
    predictions["findings"] = study_findings(study, summary, runs, predictions)
    write_text_atomic(out["runs"], runs.to_csv(index=False))
    write_text_atomic(out["summary"], summary.to_csv(index=False))
    write_text_atomic(out["analysis"], json.dumps(predictions, indent=1, allow_nan=False))
    return summary


def main(smk) -> None:
    logging.basicConfig(filename=smk.log[0], level=logging.INFO, force=True)
    try:
        study = Study.from_config(smk.wildcards.study, smk.params.study)
        summary = aggregate(
            study, list(smk.input.records), dict(smk.output), list(smk.input.rounds)
        )
    except RecordError as e:
        logging.error("%s", e)
        sys.exit(f"aggregate_study: refusing to aggregate: {e}")
    logging.info("\n%s", summary.to_string())


if "snakemake" in globals():
    main(snakemake)  # noqa: F821
