"""Which data format loads fastest: what analysis.json holds under "formats" (its
produce.py)."""

from dataclasses import dataclass

# where the fastest format's interval against the others lies: "above" (it loads
# fastest), "within" FORMATS_ALIKE of the next best (either is right), None (not decided)
FASTEST, ALIKE = "above", "within"


@dataclass(frozen=True)
class FormatLoad:
    """One series' way of loading the data at one point: medians over its usable runs."""

    series: str
    point: str
    how: str  # its format, and how it was staged ("tar, extracted"; "folder, not staged")
    runs: int
    load_s: float  # staging and reading (with `train`, the steps' waits for data)
    stage_s: float  # 0: read straight from the source


@dataclass(frozen=True)
class FormatsAt:
    """The series of one point, fastest first, and the next best's loading time over the
    fastest's with its 95 % interval (ratio_ci)."""

    n: int
    loads: list[FormatLoad]
    ratio: float
    lo: float | None
    hi: float | None
    call: str | None  # FASTEST, ALIKE or None
    more_runs: dict[str, int]  # not decided: point -> the runs that would likely decide it


# None: not a study of data formats in several series
DATA = list[FormatsAt] | None
