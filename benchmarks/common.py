"""Helpers of the benchmarks: prepared data and alternating, interleaved timing."""

from __future__ import annotations

import statistics
import time
from pathlib import Path

from scalestudy.compute.data import PREPARED_FILES, prepare

REPO = Path(__file__).resolve().parents[1]
DATA_DIR = REPO / "data"


def fashion_root() -> Path:
    root = DATA_DIR / "fashion_mnist"
    # ready.json is written last; a copy from before the tensor files lacks them
    if not all((root / name).exists() for name in ["ready.json", *PREPARED_FILES.values()]):
        prepare("fashion_mnist", ["/usr/share/datasets/fashion-mnist"], root, root / "ready.json")
    return root


def alternate(candidates: dict, rounds: int) -> dict[str, float]:
    """Median seconds of each candidate, run in turn round after round, so that slow
    phases of a noisy machine hit every candidate alike. The order flips every round,
    so that no candidate always runs right after another."""
    times = {name: [] for name in candidates}
    order = list(candidates.items())
    for k in range(rounds):
        for name, fn in order if k % 2 == 0 else reversed(order):
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(ts) for name, ts in times.items()}
