"""Snakemake entry: results/plan.html and results/plan.json, the price of every study
and when each of its jobs would start, before it runs: the plans from the validated config
and each study's earlier results (scalestudy.analysis.cost.plan), the start times from
Slurm (asked here, scalestudy.slurm; read by scalestudy.analysis.cluster.queue)."""

import logging
from datetime import UTC, datetime
from pathlib import Path

from scalestudy.analysis.cluster.queue import Forecast, predict
from scalestudy.analysis.cost.budgets import study_plans
from scalestudy.analysis.cost.plan import StudyPlan
from scalestudy.records import read_values, write_text_atomic
from scalestudy.report.rendering import environment
from scalestudy.slurm import LOCAL, SITE_RESOURCES, gather, local_facts, probe_commands
from scalestudy.study.config_tables import points_table
from scalestudy.study.validation import study_models


def write_plan(
    path: Path, title: str, plans: list[StudyPlan], queue: Forecast | None = None
) -> None:
    generated = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    html = (
        environment()
        .get_template("plan.html.j2")
        .render(title=title, plans=plans, generated=generated, queue=queue)
    )
    write_text_atomic(path, html)


def main(smk) -> None:
    logging.basicConfig(filename=smk.log[0], level=logging.INFO, force=True)
    # the profile's site settings (partition, account...), as every job gets them
    site = {key: smk.resources.get(key) for key in SITE_RESOURCES}
    # every study of the validated config, priced from its earlier results (if any)
    config = read_values(smk.params.config)
    studies = study_models(config)
    points = points_table(studies).set_index(["study", "point"], drop=False)
    made = study_plans(studies, points, studies, logging.warning)
    shapes = [row.slurm_resources for plan in made for row in plan.rows]
    facts = (
        local_facts()
        if smk.params.queue == LOCAL
        else gather(site, smk.params.history_days, [], lambda _: probe_commands(shapes, site))
    )
    plans, queue = predict(made, facts)
    queue.dump(smk.output.json)
    write_plan(Path(smk.output.html), f"{config['report']['title']}: the plan", plans, queue)
    logging.info("queue %s: %s call(s) to Slurm, note: %s", queue.queue, queue.calls, queue.note)
    for plan in plans:
        logging.info("%s: %s", plan.study, plan.totals)


if "snakemake" in globals():
    main(snakemake)  # noqa: F821
