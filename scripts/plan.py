"""Snakemake entry: results/plan.html and results/plan.json, the price of every study
and when each of its jobs would start, before it runs. The plans were computed when the
rule's params were (rules/plan.smk, scalestudy.analysis.cost.plan); the start times come from
Slurm (asked here, scalestudy.slurm; read by scalestudy.analysis.cluster.queue); this only
writes them."""

import logging
from datetime import UTC, datetime
from pathlib import Path

from scalestudy.analysis.cluster.queue import Forecast, predict
from scalestudy.analysis.cost.plan import StudyPlan
from scalestudy.records import write_text_atomic
from scalestudy.report.rendering import environment
from scalestudy.slurm import LOCAL, SITE_RESOURCES, gather, local_facts, probe_commands


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
    shapes = [row.slurm_resources for plan in smk.params.plans for row in plan.rows]
    facts = (
        local_facts()
        if smk.params.queue == LOCAL
        else gather(site, smk.params.history_days, [], lambda _: probe_commands(shapes, site))
    )
    plans, queue = predict(smk.params.plans, facts)
    queue.dump(smk.output.json)
    write_plan(Path(smk.output.html), smk.params.title, plans, queue)
    logging.info("queue %s: %s call(s) to Slurm, note: %s", queue.queue, queue.calls, queue.note)
    for plan in plans:
        logging.info("%s: %s", plan.study, plan.totals)


if "snakemake" in globals():
    main(snakemake)  # noqa: F821
