"""Snakemake entry: results/<study>/cluster.json, what Slurm says of one study (its
jobs' accounting, the waits of its requests now and in the past), the facts its
aggregation reads as data (scalestudy.slurm.gather); locally it says "local" and asks
nothing."""

import logging
from functools import partial

from scalestudy.analysis.decisions.request import job_ids, probe_commands_of
from scalestudy.analysis.tables import read_runs
from scalestudy.model import Study
from scalestudy.records import read_values
from scalestudy.slurm import LOCAL, SITE_RESOURCES, gather, local_facts


def main(smk) -> None:
    logging.basicConfig(filename=smk.log[0], level=logging.INFO, force=True)
    study = Study.from_config(smk.wildcards.study, read_values(smk.params.study))
    # times measured elsewhere have no job to ask about: the same facts on any profile
    if smk.params.queue == LOCAL or study.elsewhere:
        facts = local_facts()
    else:
        runs = read_runs(study, list(smk.input.records))
        # the profile's site settings (partition, account...), as every job gets them
        site = {key: smk.resources.get(key) for key in SITE_RESOURCES}
        commands = partial(probe_commands_of, study, runs, site=site)
        facts = gather(site, smk.params.history_days, job_ids(runs), commands)
    facts.dump(smk.output[0])
    asked = [facts.accounting, facts.history, *facts.test_only.values()]
    for answer in filter(None, asked):
        logging.info("%s: exit %s %s", " ".join(answer["command"]), answer["returncode"],
                     answer["error"] or "")  # fmt: skip


if "snakemake" in globals():
    main(snakemake)  # noqa: F821
