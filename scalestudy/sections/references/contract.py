"""The references a study states (`expect:`) against what was measured
(its produce.py): analysis.json's "references"."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Expectation:
    """A reference the study states (`expect:`) against what was measured."""

    what: str
    n: int
    lower: float | None
    upper: float | None
    value: float | None
    lo: float | None
    hi: float | None
    status: str  # ok | broken | unsure (the interval reaches the bounds) | unmeasured
    text: str


DATA = list[Expectation]
