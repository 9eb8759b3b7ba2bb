"""One aggregation of a study: its records (or its CSV of times measured elsewhere) ->
the runs table, the summary and the analysis. scripts/aggregate.py, the tests and the
benchmarks all call it, so no caller can skip a step the workflow takes (the disturbed
runs, the split by provenance, the rounds). It starts no process: what Slurm says comes
in as data, results/<study>/cluster.json (docs/architecture.md; docs/slurm.md).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from functools import partial
from pathlib import Path

import pandas as pd

from scalestudy.analysis.cluster.result_time import study_result_times
from scalestudy.analysis.decisions.adaptive import RoundPlan, round_of_run, rounds_summary
from scalestudy.analysis.decisions.request import read_accounting, study_requests
from scalestudy.analysis.findings import study_findings
from scalestudy.analysis.stats.predictions import study_predictions
from scalestudy.analysis.tables import read_runs, study_tables
from scalestudy.model import Study
from scalestudy.records import write_text_atomic
from scalestudy.sections import SECTIONS, Analysis, part
from scalestudy.slurm import ClusterFacts, local_facts

# The sections whose data a shared step makes, before the findings that read it (the
# answers are made from the series' models, the requests and the time to result): they
# have no producer of their own; every other section's produce.py makes its data.
MADE_FIRST = ("series", "requests", "time_to_result")


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
        analysis, and baseline: the comparison with the baseline, null without one),
        atomically."""
        for name in ("runs", "summary"):
            write_text_atomic(out[name], partial(getattr(self, name).to_csv, index=False))
        self.analysis.dump(out["analysis"])
        if "baseline" in out:
            write_text_atomic(out["baseline"], self.baseline_json())

    def baseline_json(self) -> str:
        """baseline.json's text: the comparison with the baseline (null: none set)."""
        found = self.analysis.section("baseline")
        return json.dumps(found and asdict(found), indent=1, allow_nan=False) + "\n"


@dataclass(frozen=True)
class Given:
    """What a section's producer is given (scalestudy.sections): the study, its runs and
    summary, its analysis (of the sections, only those made before the findings), and
    aggregation's other inputs."""

    study: Study
    runs: pd.DataFrame
    summary: pd.DataFrame
    analysis: Analysis
    baseline: Path | None
    archives: list[Path]


def analyse(
    study: Study,
    runs: pd.DataFrame,
    plans: Sequence[RoundPlan] = (),
    baseline: str | Path | None = None,
    archives: Sequence[str | Path] = (),
    cluster: ClusterFacts | None = None,
    min_jobs: int | None = None,
) -> Aggregation:
    """The summary and the analysis of a runs table; `plans`: an adaptive study's round
    plans (rules/adaptive.smk), in order, which give each run its round; `baseline`: the
    folder of an earlier run to compare with (the baseline section); `archives`:
    the study's archives, oldest first (the history section);
    `cluster`: what Slurm said of the study (scalestudy.slurm.gather; None: locally, no
    queue): accounting of its jobs, the waits of its requests; `min_jobs`: the past jobs
    of a shape that make its typical wait (config queue_history_min_jobs)."""
    cluster = cluster or local_facts()
    # Slurm accounting (only where runs had jobs): its CPU and memory figures for the
    # requests, its ConsumedEnergy for each run's energy
    accounted = ({}, None) if study.elsewhere else read_accounting(cluster.accounting)
    keys = zip(runs["point"], runs["repeat"], strict=True)
    rounds = [round_of_run(plans, p, int(k)) for p, k in keys] if plans else None
    runs, summary = study_tables(study, runs, accounted, rounds)
    predictions = study_predictions(summary, runs, study)
    rounds = rounds_summary(plans, runs, study) if plans else None
    requests = study_requests(study, summary, runs, accounted)
    # with the waits Slurm gave where the study's jobs queue there
    times = study_result_times(runs, requests.points, cluster, min_jobs)
    # an adaptive study's rounds are written once, in the findings
    findings = study_findings(study, summary, runs, predictions, rounds, times)
    made = dict(zip(MADE_FIRST, (predictions["series"], requests, times), strict=True))
    found = Analysis(predictions["comparisons"], findings, made)
    given = Given(
        study, runs, summary, found, baseline and Path(baseline), [Path(a) for a in archives]
    )
    sections = {
        name: made[name] if name in made else part(name, "produce").produce(given)
        for name in SECTIONS
    }
    return Aggregation(runs, summary, replace(found, sections=sections))


def aggregate(
    study: Study,
    inputs: Sequence[str | Path],
    rounds: Sequence[str | Path] = (),
    baseline: str | Path | None = None,
    archives: Sequence[str | Path] = (),
    cluster: str | Path | None = None,
    min_jobs: int | None = None,
) -> Aggregation:
    """The whole aggregation from files: records (or the measured CSV), an adaptive
    study's round plans, the baseline's folder, the study's archives and its cluster
    facts (results/<study>/cluster.json; None: locally); `min_jobs` as for analyse."""
    plans = [RoundPlan.load(path) for path in rounds]
    facts = None if cluster is None else ClusterFacts.load(cluster)
    return analyse(study, read_runs(study, inputs), plans, baseline, archives, facts, min_jobs)
