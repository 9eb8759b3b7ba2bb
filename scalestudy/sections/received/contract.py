"""What the runs received: analysis.json's "received"."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Received:
    point: str
    threads: int
    processes: int
    gpus: int
    nodes: int
    got: list[list[str]]  # [column, distinct values]


# one row a point whose runs saw what they received
DATA = list[Received]
