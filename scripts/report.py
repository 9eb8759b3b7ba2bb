"""Snakemake entry: results/report.html from every study's analysis.json, summary.csv,
figures and profiling runs, as the rule declares them (nothing else is read)."""

import logging
from pathlib import Path

import pandas as pd

from scalestudy.records import read_values
from scalestudy.report.rendering import write_report
from scalestudy.report.views import profile_links, study_view
from scalestudy.sections import Analysis


def of_study(files, folder: Path, depth: int) -> list[Path]:
    """The declared files that lie `depth` folders below a study's folder."""
    return [Path(f) for f in files if Path(f).parents[depth] == folder]


def build(inputs, title: str, out: Path, not_in_config=()) -> None:
    """The report of the studies whose analyses `inputs.analyses` lists, in its order;
    each study's other inputs are the declared ones in its folder. `not_in_config`: the
    results folders of studies the config no longer names, which it names only."""
    views = []
    for analysis in map(Path, inputs.analyses):
        folder = analysis.parent
        (summary,) = of_study(inputs.summaries, folder, 0)
        figures = {f.stem: f for f in of_study(inputs.figures, folder, 1)}
        traces = profile_links(of_study(inputs.profiles, folder, 1), out)
        try:
            found = Analysis.load(analysis)
            views.append(study_view(found, pd.read_csv(summary), figures, traces))
        except ValueError as e:
            raise SystemExit(f"report: {e}") from None
    write_report(out, title, views, list(not_in_config))


def main(smk) -> None:
    logging.basicConfig(filename=smk.log[0], level=logging.INFO, force=True)
    title, not_in_config = read_values(smk.params.page)
    build(smk.input, title, Path(smk.output.html), not_in_config)
    logging.info("wrote %s", smk.output.html)


if "snakemake" in globals():
    main(snakemake)  # noqa: F821
