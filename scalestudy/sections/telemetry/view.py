"""How the data was loaded and the GPU used, in the report, before the fits' models."""

from scalestudy.report.views import shallow, table
from scalestudy.sections.telemetry.contract import TELEMETRY, PointTelemetry

# where the report shows it: after the GPU verdict, before the scaling models
PLACE = "telemetry"


def view(telemetry: list[PointTelemetry]) -> list[dict] | None:
    measured = table([shallow(t) for t in telemetry], TELEMETRY)
    return [{"point": t.point} | f for t, f in zip(telemetry, measured, strict=True)] or None
