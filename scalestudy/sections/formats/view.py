"""Which data format loads fastest, in the report, after the results' notes."""

from scalestudy.sections.formats.contract import FormatsAt
from scalestudy.sections.formatting import runs_by_count, shallow, with_ci
from scalestudy.thresholds import FORMATS_ALIKE_WORDS

# where the report shows it: after the results' notes, before the data loading
PLACE = "telemetry"
# its line of the first table, which format: the main question of a study of formats
RANK = 0


def view(found: list[FormatsAt]) -> dict:
    points = [
        shallow(f)
        | {"ratio": with_ci(f.ratio, f.lo, f.hi, unit="x"), "more": runs_by_count(f.more_runs)}
        | {"best": f.loads[0], "next": f.loads[1]}
        for f in found
    ]
    return {"points": points, "several": len(points) > 1, "alike": FORMATS_ALIKE_WORDS}
