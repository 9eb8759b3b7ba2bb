"""The references a study states, each kept or not, in the report."""

from scalestudy.sections.references.contract import Expectation

# the statuses the analysis gives a reference it does not keep, shown in red
BROKEN = ("broken", "unmeasured")


def view(expectations: list[Expectation]) -> list[dict] | None:
    return [
        {"status": e.status, "text": e.text, "broken": e.status in BROKEN} for e in expectations
    ] or None
