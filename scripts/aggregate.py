"""Snakemake entry: records (or a measured CSV) -> runs.csv, summary.csv and
analysis.json of one study (scalestudy.analysis.pipeline)."""

import logging
import sys
from pathlib import Path

from scalestudy.analysis.pipeline import aggregate
from scalestudy.model import Study
from scalestudy.records import RecordError, read_values


def main(smk) -> None:
    logging.basicConfig(filename=smk.log[0], level=logging.INFO, force=True)
    try:
        study = Study.from_config(smk.wildcards.study, read_values(smk.params.study))
        baseline = Path(smk.input.baseline[0]).parent if smk.input.baseline else None
        # each archive's folder once, oldest first (their names start with the time)
        archives = sorted({Path(path).parent for path in smk.input.archives})
        result = aggregate(
            study, list(smk.input.records), list(smk.input.rounds), baseline, archives,
            smk.input.cluster, smk.params.history_min_jobs,
        )  # fmt: skip
    except RecordError as e:
        logging.error("%s", e)
        sys.exit(f"aggregate_study: refusing to aggregate: {e}")
    result.write(dict(smk.output.items()))  # by name: the baseline is among them
    times = result.analysis.section("time_to_result")
    if times is not None:
        history = times.history_note or ("asked" if times.history_days else "not asked")
        logging.info("time to result: queue %s, %s call(s) to sbatch --test-only, history: %s",
                     times.queue, times.calls, history)  # fmt: skip
        if times.note:  # Slurm could not be asked: said once, no traceback
            logging.warning("%s", times.note)
            print(f"aggregate_study {smk.wildcards.study}: {times.note}", file=sys.stderr)
    logging.info("\n%s", result.summary.to_string())


if "snakemake" in globals():
    main(snakemake)  # noqa: F821
