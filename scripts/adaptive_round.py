"""Snakemake entry: the plan of one round of an adaptive study, from the records of
the rounds before it (scalestudy.analysis.cost.plan.round_plan, whose rules are
scalestudy.analysis.decisions.adaptive)."""

import logging
import sys
from dataclasses import replace
from pathlib import Path

import pandas as pd

from scalestudy.analysis.cost.plan import round_plan
from scalestudy.analysis.decisions.adaptive import RoundPlan, config_fingerprint
from scalestudy.analysis.tables import read_runs
from scalestudy.model import Study
from scalestudy.records import RecordError, read_values, write_text_atomic
from scalestudy.redo import discard
from scalestudy.sections import SECTIONS, has, part


def kept_plan(path: Path) -> str | None:
    """A round that was planned before: its history copy's text (None: not planned
    yet, or a copy that holds no plan)."""
    try:
        RoundPlan.load(path)
        return path.read_text()
    except (OSError, ValueError):
        return None


def question(study: Study, runs: pd.DataFrame | None):
    """What a section's question asks of a study's rounds, where one settles them (a
    producer's `rounds_wanted`: the GPU verdict of a study of CPU and GPU series)."""
    # a section made by a shared step has no producer (pipeline.MADE_FIRST)
    producers = [part(name, "produce") for name in SECTIONS if has(name, "produce")]
    asks = [f for producer in producers if (f := getattr(producer, "rounds_wanted", None))]
    found = (ask(runs, study) for ask in asks) if runs is not None and study.series else ()
    return next((q for q in found if q is not None), (False, "no question to settle", {}))


def main(smk) -> None:
    logging.basicConfig(filename=smk.log[0], level=logging.INFO, force=True)
    # A round that ran is history: planned again (Snakemake reruns a checkpoint whose
    # input a redone run updated, after removing its file), it is written back byte for
    # byte from its copy beside it, never planned anew from other runs or another config
    output = Path(smk.output.plan)
    history = output.with_name(f".{output.name}")
    kept = kept_plan(history)
    if kept is not None:
        logging.info(
            "round %s ran before: kept as it was planned (%s)", smk.wildcards.round, history
        )
        write_text_atomic(output, kept)
        return
    if history.exists():  # a copy no reader of this version reads: kept aside, planned anew
        aside = discard(history.parent, [history], "a round's plan this version cannot read")
        logging.warning(
            "round %s: its plan could not be read, kept in %s", smk.wildcards.round, aside
        )
    config = read_values(smk.params.study)
    study = Study.from_config(smk.wildcards.study, config)
    records = list(smk.input.records)
    try:
        runs = read_runs(study, records) if records else None
    except RecordError as e:
        logging.error("%s", e)
        sys.exit(f"adaptive_round: refusing to plan round {smk.wildcards.round}: {e}")
    # the baseline's runs: points whose comparison with it is undecided get runs too
    baseline = next((p for p in smk.input.baseline if Path(p).name == "runs.csv"), None)
    baseline = pd.read_csv(baseline) if baseline else None
    # the config it was planned under: the round is history, never planned again
    # (rules/adaptive.smk, get_round_config), and the report says where the config changed
    plan = replace(
        round_plan(study, int(smk.wildcards.round), runs, baseline, question(study, runs)),
        config_fingerprint=config_fingerprint(config),
        config=config,
    )
    logging.info("round %s: %s", smk.wildcards.round, plan)
    plan.dump(history)
    plan.dump(output)


if "snakemake" in globals():
    main(snakemake)  # noqa: F821
