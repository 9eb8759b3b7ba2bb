"""Snakemake entry: results/plan.html, the price of every study before it runs. The
plans were computed when the rule's params were (rules/plan.smk, scalestudy.analysis.plan);
this only renders them."""

import logging
from datetime import UTC, datetime
from pathlib import Path

from scalestudy.records import write_text_atomic
from scalestudy.report.rendering import environment


def write_plan(path: Path, title: str, plans: list[dict]) -> None:
    generated = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    html = (
        environment()
        .get_template("plan.html.j2")
        .render(title=title, plans=plans, generated=generated)
    )
    write_text_atomic(path, html)


def main(smk) -> None:
    logging.basicConfig(filename=smk.log[0], level=logging.INFO, force=True)
    write_plan(Path(smk.output.html), smk.params.title, smk.params.plans)
    for plan in smk.params.plans:
        logging.info("%s: %s", plan["study"], plan["totals"])


if "snakemake" in globals():
    main(snakemake)  # noqa: F821
