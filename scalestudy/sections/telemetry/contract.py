"""How the data was loaded and the GPU used: analysis.json's "telemetry"."""

import dataclasses
from dataclasses import dataclass


@dataclass(frozen=True)
class PointTelemetry:
    """Per point, medians over its runs of how the data was loaded and the GPU used
    (None: not measured)."""

    point: str
    stage_s: float | None = None
    stagers: float | None = None
    time_to_first_batch_s: float | None = None
    wait_fraction: float | None = None
    gpu_util_mean_pct: float | None = None
    gpu_util_peak_pct: float | None = None
    gpu_mem_peak_mb: float | None = None
    # data loading the bottleneck: the median wait over BOTTLENECK_WAIT (None: not
    # measured), and whether every run that measured it (2 or more) lies on that side
    bottleneck: bool | None = None
    runs_agree: bool = False


# the telemetry columns, one list for the analysis, which takes their medians from the
# runs (its produce.py), and the report, which shows them
SAID = ("point", "bottleneck", "runs_agree")
TELEMETRY = [f.name for f in dataclasses.fields(PointTelemetry) if f.name not in SAID]

# one row a point, where the runs measured any (empty: none did)
DATA = list[PointTelemetry]
