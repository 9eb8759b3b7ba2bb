"""The paired ratio b/a of each point, with its interval and verdict."""

from scalestudy.analysis.stats.paired import paired_ratios, pairs_of
from scalestudy.analysis.stats.predictions import usable_runs
from scalestudy.analysis.stats.verdicts import FASTER_ALARMS, SLOWER_ALARMS
from scalestudy.analysis.tables import TIME_COLUMNS
from scalestudy.sections.paired.contract import DATA, Paired, PairedPoint
from scalestudy.study.points import point_for


def produce(given) -> DATA:
    study = given.study
    compare = study.compare
    if compare is None:
        return None
    # adjacency among all the point's runs; only usable ones (not disturbed) measure
    pairs = pairs_of(given.runs, TIME_COLUMNS[study.time], usable_runs(given.runs, study))
    ns = sorted(study.scaling.ns())
    at = [pairs[pairs["n"] == n] for n in ns]
    found = paired_ratios(
        [(p["a"].to_numpy(), p["b"].to_numpy()) for p in at], ns, compare.tolerance
    )
    points = [
        PairedPoint(point_for(study, n).label, n, **vars(f)) for n, f in zip(ns, found, strict=True)
    ]
    return Paired(compare.a, compare.b, compare.order_seed, compare.tolerance,
                  SLOWER_ALARMS, FASTER_ALARMS, study.time, points)  # fmt: skip
