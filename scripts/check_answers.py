"""Snakemake entry: after the report, end the workflow non-zero where a study has no
answer because every run of its base case failed (Findings.base_failure), naming each
such study and why in one line; otherwise write the list of studies checked."""

import sys
from pathlib import Path

from scalestudy.records import write_text_atomic
from scalestudy.sections import Analysis


def failed_studies(analyses: list[str]) -> list[str]:
    """One line per study whose base case failed in every run."""
    found = ((Path(a).parent.name, Analysis.load(a).findings.base_failure) for a in analyses)
    return [f"{study}: no answer: {why}" for study, why in found if why]


def main(smk) -> None:
    failed = failed_studies(smk.input.analyses)
    with open(smk.log[0], "w") as log:
        for line in failed:
            print(line, file=log)
            print(line, file=sys.stderr)
    if failed:
        sys.exit(f"{smk.input.report} is written; fix what failed, then run the workflow again")
    studies = "".join(f"{Path(a).parent.name}: base case measured\n" for a in smk.input.analyses)
    write_text_atomic(smk.output[0], studies)


if "snakemake" in globals():
    main(snakemake)  # noqa: F821
