"""How the data was loaded and the GPU used, in the report, before the fits' models."""

from scalestudy.sections.formatting import shallow, table
from scalestudy.sections.telemetry.contract import TELEMETRY, PointTelemetry

# where the report shows it: after the GPU verdict, before the scaling models
PLACE = "telemetry"
# its line of the first table, data loading: a main question where the runs measured it
RANK = 0
# the metrics it shows: the report's table of the runs' other metrics leaves them out
SHOWS = TELEMETRY


def view(telemetry: list[PointTelemetry]) -> list[dict] | None:
    measured = table([shallow(t) for t in telemetry], TELEMETRY)
    said = [
        {"point": t.point, "bottleneck": t.bottleneck, "runs_agree": t.runs_agree}
        for t in telemetry
    ]
    return [s | f for s, f in zip(said, measured, strict=True)] or None


def asks(rows: list[dict]) -> bool:
    """Whether the runs measured how long the steps waited for data."""
    return any(r["bottleneck"] is not None for r in rows)
