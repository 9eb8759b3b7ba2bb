"""The paired ratio b/a of each point, with its interval and verdict."""

from scalestudy.analysis.stats.paired import paired_ratio, pairs_of
from scalestudy.analysis.tables import TIME_COLUMNS
from scalestudy.sections.paired.contract import DATA, Paired, PairedPoint
from scalestudy.study.points import point_for


def produce(given) -> DATA:
    study = given.study
    compare = study.compare
    if compare is None:
        return None
    pairs = pairs_of(given.runs, TIME_COLUMNS[study.time])
    points = []
    for n in sorted(study.scaling.ns()):
        at = pairs[pairs["n"] == n]
        found = paired_ratio(at["a"].to_numpy(), at["b"].to_numpy(), compare.tolerance)
        points.append(PairedPoint(point_for(study, n).label, n, **vars(found)))
    return Paired(compare.a, compare.b, compare.order_seed, compare.tolerance, study.time, points)
