"""Each series' scaling models in the report, after the fits' notes and telemetry."""

from scalestudy.contract import SeriesFit
from scalestudy.sections.formatting import fmt, shallow

# where the report shows it: after the GPU verdict and the telemetry
PLACE = "telemetry"
# its line of the first table, how many, after the study's main question (docs/report.md)
RANK = 1


def view(series: list[SeriesFit]) -> dict:
    # a series of one point has no model to fit: nothing to say of it here
    return {"models": [models_view(p) for p in series if not p.one_point]}


def models_view(pred: SeriesFit) -> dict:
    """The fitted models of one series, for the report's table."""
    fits = [
        shallow(f)
        | {
            "params": [
                {
                    "name": k,
                    "value": fmt(v, "{:.4g}"),
                    "lo": fmt(f.param_ci.get(k, (None, None))[0], "{:.3g}"),
                    "hi": fmt(f.param_ci.get(k, (None, None))[1], "{:.3g}"),
                }
                for k, v in f.params.items()
            ],
            "r2": fmt(f.r2, "{:.4f}"),
            "aicc": fmt(f.aicc, "{:.2f}"),
            "weight": fmt(f.weight, "{:.0%}"),
            "selected": f.name == pred.selected,
        }
        for f in pred.fits
        if f.ok
    ]
    return shallow(pred) | {
        "fits": fits,
        "fit_note": pred.fit_note or "",
        "usable_points": pred.usable_points,
        # a model that did not fit beside one that did, with why
        "unfitted": [f for f in pred.fits if not f.ok] if fits else [],
        "bound": None if pred.bound is None else fmt(pred.bound, "{:.2f}"),
    }
