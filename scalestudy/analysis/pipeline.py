"""One aggregation of a study: its records (or its CSV of times measured elsewhere) ->
the runs table, the summary and the analysis (fits, predictions, recommendation, an
adaptive study's rounds and, under "findings", every other number the report shows).

scripts/aggregate.py, the tests and the benchmarks all call this; nothing rebuilds
the chain by hand, so no caller can skip a step (the disturbed runs, the split by
provenance, the rounds) that the workflow takes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from scalestudy.analysis.adaptive import round_of_run, rounds_summary
from scalestudy.analysis.cost import charges
from scalestudy.analysis.energy import with_energy
from scalestudy.analysis.findings import analysis_of, study_findings
from scalestudy.analysis.predictions import jsonable, split_by_provenance, study_predictions
from scalestudy.analysis.request import accounting, job_ids
from scalestudy.analysis.tables import (
    disturbed_reasons,
    runs_from_measured,
    runs_from_records,
    summarise,
)
from scalestudy.contract import Analysis
from scalestudy.model import Study
from scalestudy.records import write_text_atomic
from scalestudy.study.points import series_of_points


@dataclass(frozen=True)
class Aggregation:
    """What aggregation makes of one study: runs.csv, summary.csv and analysis.json (the
    typed contract the report reads, scalestudy.contract)."""

    runs: pd.DataFrame
    summary: pd.DataFrame
    analysis: Analysis

    def analysis_json(self) -> str:
        """analysis.json's text (strict JSON: a NaN left anywhere is an error here)."""
        return self.analysis.to_json()

    def analysis_as_read(self) -> Analysis:
        """The analysis as the report reads it back from analysis.json."""
        return Analysis.from_json(self.analysis_json())

    def write(self, out: Mapping[str, str | Path]) -> None:
        """Each table and the analysis to its path in `out` (keys runs, summary,
        analysis), atomically."""
        write_text_atomic(out["runs"], self.runs.to_csv(index=False))
        write_text_atomic(out["summary"], self.summary.to_csv(index=False))
        write_text_atomic(out["analysis"], self.analysis_json())


def read_runs(study: Study, inputs: Sequence[str | Path]) -> pd.DataFrame:
    """The study's runs table: its records, each checked against its path (RecordError
    names a bad one), with why others disturbed a run; or its measured CSV."""
    if study.measured is not None:
        return runs_from_measured(inputs[0], study)
    runs = runs_from_records(list(inputs), series_of_points(study))
    runs["disturbed"] = disturbed_reasons(runs, study)
    return runs


def analyse(
    study: Study, runs: pd.DataFrame, plans: Sequence[dict] = (), sacct=None
) -> Aggregation:
    """The summary and the analysis of a runs table; `plans`: an adaptive study's round
    plans (rules/adaptive.smk), in order, which give each run its round; `sacct`: a
    stand-in for subprocess.run (tests)."""
    # Slurm accounting, asked once (only where runs had jobs): its CPU and memory
    # figures for the requests, its ConsumedEnergy for each run's energy
    accounted = ({}, None)
    if study.measured is None:  # times measured elsewhere have neither
        accounted = accounting(job_ids(runs), sacct)
        runs = with_energy(runs, accounted[0])
    if plans:
        runs = runs.assign(
            round=[
                round_of_run(plans, p, int(k))
                for p, k in zip(runs["point"], runs["repeat"], strict=True)
            ]
        )
    runs = split_by_provenance(runs, study)
    summary = summarise(runs, study)
    analysis = study_predictions(summary, runs, study)
    if plans:
        spent = charges(runs, study)["su"]
        analysis["adaptive"] = jsonable(rounds_summary(plans, spent, study.repeats))
    analysis["findings"] = study_findings(study, summary, runs, analysis, accounted)
    return Aggregation(runs, summary, analysis_of(analysis))


def aggregate(
    study: Study, inputs: Sequence[str | Path], rounds: Sequence[str | Path] = ()
) -> Aggregation:
    """The whole aggregation from files: records (or the measured CSV) and an adaptive
    study's round plans."""
    plans = [json.loads(Path(path).read_text()) for path in rounds]
    return analyse(study, read_runs(study, inputs), plans)
