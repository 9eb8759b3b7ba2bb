"""Several layouts of one total: what analysis.json holds under "layouts"
(its produce.py)."""

from dataclasses import dataclass
from typing import Any

from scalestudy.contract import Placement


@dataclass(frozen=True)
class PlacedPoint(Placement):
    """A point of a total and where it ran, with its median time."""

    point: str
    series: str
    time_s: float


@dataclass(frozen=True)
class OtherLayout(PlacedPoint):
    """Another layout of a total, against the best one: its median time over the best
    one's, with a 95 % interval; told apart where the interval excludes 1."""

    ratio: float | None
    lo: float | None
    hi: float | None
    told_apart: bool


@dataclass(frozen=True)
class Total:
    """The layouts of one total N: the fastest, and the others against it."""

    n: int
    best: PlacedPoint
    others: list[OtherLayout]


@dataclass(frozen=True)
class GridCell:
    point: str | None
    n: int | None
    time_s: float | None
    efficiency: float | None
    best: bool
    band: str | None = None  # the efficiency band, the heat map's colour


@dataclass(frozen=True)
class GridRow:
    value: Any
    cells: list[GridCell]


@dataclass(frozen=True)
class Grid:
    line_key: str
    along_key: str
    base: str | None
    columns: list[Any]
    rows: list[GridRow]


@dataclass(frozen=True)
class Layouts:
    totals: list[Total]  # each total N that two or more layouts ran
    grid: Grid | None  # a grid study's heat map


DATA = Layouts
