"""From a study's summary to what it predicts and recommends: validity gates, scaling
models, extrapolation, the recommendation and the comparison of series.

Everything here is written to results/{study}/analysis.json, which the figures and
the report read; the statistics themselves live in scalestudy.analysis.stats.models
(fits), scalestudy.analysis.decisions.recommendation (what N to ask for) and
scalestudy.analysis.stats.comparison (series).
"""

from __future__ import annotations

import math
from dataclasses import fields, replace

import numpy as np
import pandas as pd

from scalestudy.analysis.decisions.recommendation import decision, recommend, step_intervals
from scalestudy.analysis.stats import comparison, models
from scalestudy.analysis.tables import TIME_COLUMNS, measures_point, provenance_differences
from scalestudy.contract import Comparison, Curve, Fit, Peak, SeriesFit, TestAtN
from scalestudy.model import Study
from scalestudy.records import jsonable

EXTRAPOLATE_FACTOR = 2.0  # predictions reach this many times the largest measured N
GRID_POINTS = 80


def exclusion_reason(row: pd.Series, study: Study) -> str | None:
    """Why a point stays out of the fits (None: it enters them)."""
    if not np.isfinite(row["time_s"]):
        status = str(row["status"])
        return status if not status.startswith("ok") else "no usable time"
    if row["unstable"] and not study.include_unstable:
        return f"unstable: {row['unstable_reason']}"
    return None


def usable_runs(runs: pd.DataFrame, study: Study) -> pd.DataFrame:
    """The runs that may measure a point: good, given what they asked for (unless the
    study takes mismatched ones), on CPUs nobody else used (unless it takes shared)."""
    return runs[measures_point(runs, study.include_mismatched, study.include_shared)]


def shared_left_out(runs: pd.DataFrame, study: Study) -> dict[str, int]:
    """Point label -> its good runs left out because other programs used their CPUs
    (none where the study takes such runs)."""
    if study.include_shared:
        return {}
    good = measures_point(runs, keep_mismatched=True, keep_disturbed=True)
    shared = runs[good & ~measures_point(runs, keep_mismatched=True)]
    return {str(point): len(group) for point, group in shared.groupby("point")}


def fit_series(summary: pd.DataFrame, runs: pd.DataFrame, study: Study) -> SeriesFit:
    """Validity gates, fits, extrapolation and the recommendation of one series."""
    time_col = TIME_COLUMNS[study.time]
    ns = sorted(int(n) for n in summary["n"])
    base = study.base_n(ns)
    excluded = {
        row["point"]: reason
        for _, row in summary.iterrows()
        if (reason := exclusion_reason(row, study))
    }
    eligible = summary[~summary["point"].isin(list(excluded))]
    usable = usable_runs(runs[runs["point"].isin(eligible["point"])], study)
    mixed = provenance_differences(usable)
    rec = recommendation(summary, study)
    # an adaptive study decided on every usable run, an unstable point's too
    # (scalestudy.analysis.decisions.adaptive): its report shows the intervals that decided it
    deciding = usable_runs(runs, study) if study.adaptive else usable
    rec |= recommendation_decision(rec, summary, deciding, study, time_col, base)
    series = jsonable(summary["series"].iloc[0])
    found = SeriesFit(
        series,
        base,
        excluded,
        mixed,
        fits=[],
        selected=None,
        peak=None,
        curve=None,
        recommendation=jsonable(rec),
    )
    if mixed:
        note = "; ".join(f"{field} ({', '.join(values)})" for field, values in mixed.items())
        return replace(found, fit_note=f"not fitted: the runs differ in {note}")
    times = pd.to_numeric(usable[time_col], errors="coerce").to_numpy()
    n_obs = usable["n"].to_numpy(dtype=float)
    if study.scaling.kind == "weak":
        # fit time per unit of work, t_N x N_base / N: the models then describe the
        # scaled speedup, and perfect weak scaling is Amdahl with s = 0
        times = times * base / n_obs
        found = replace(found, fit_basis="time per unit of work (weak scaling)")
    fits = models.fit_models(n_obs, times, base)
    best = models.select_model(fits)
    weights = models.aicc_weights(fits)
    found = replace(found, fits=[fit_summary(f, weights.get(f.name)) for f in fits])
    if best is None:
        note = "; ".join(f"{f.name}: {f.note}" for f in fits if not f.ok)
        return replace(found, fit_note=f"no model could be fitted: {note}")
    # Predicted speedups are against the measured base median, as the summary's measured
    # speedups are (the model's own t(base) differs: the curve would sit off every
    # measured point by that ratio); the model's base only when the base has no time.
    at_base = summary.loc[summary["n"] == base, "time_s"].astype(float)
    measured_base = float(at_base.iloc[0]) if len(at_base) else math.nan
    model_base = float(best.predict_time(base))
    if np.isfinite(measured_base) and measured_base > 0:
        t_base, source = measured_base, "measured"
    else:
        t_base, source = model_base, "model"
    # source: whose base time the predicted speedups use
    prediction_base = {"n": base, "time_s": t_base, "source": source}
    prediction_base |= {"measured_s": measured_base, "model_s": model_base}
    peak = models.predicted_peak(best, t_base=t_base)
    n_max = max(ns)
    top = max(n_max * EXTRAPOLATE_FACTOR, peak[0] * 1.3 if peak else 0)
    grid = np.unique(np.concatenate([np.linspace(min(ns), top, GRID_POINTS), ns]))
    lo, hi = best.band(grid, t_base=t_base)
    speedup = best.predict_speedup(grid, t_base=t_base)
    curve = Curve(*jsonable([grid, speedup, lo, hi, n_max, t_base]), base_source=source)
    if peak:
        peak = Peak(*jsonable(peak), beyond_measured=bool(peak[0] > n_max), base_source=source)
    bound = None
    if best.name == "amdahl":
        # as N grows t(N) falls to the serial time T·s: the bound is t_base / (T·s)
        # (1/s only against the model's own t(1))
        serial = best.params["T"] * best.params["s"]
        bound = jsonable(t_base / serial) if serial > 0 else None
    return replace(
        found,
        selected=best.name,
        prediction_base=jsonable(prediction_base),
        curve=curve,
        peak=peak or None,
        bound=bound,
    )


def fit_summary(fit: models.FitResult, weight: float | None) -> Fit:
    """A fit as the contract's Fit names its parts, with its Akaike weight."""
    named = {f.name: getattr(fit, f.name) for f in fields(Fit) if f.name != "weight"}
    return Fit(**jsonable(named | {"weight": weight}))


def recommendation(summary: pd.DataFrame, study: Study) -> dict:
    """What to ask for, from the measured points (analysis.recommendation.recommend)."""
    o = study.recommend
    ns, speedups, times, su = (summary[c].to_numpy(float) for c in ("n", "speedup", "wall_s", "su"))
    # N is the unit of the marginal gain too
    return recommend(
        ns,
        speedups,
        ns,
        threshold=o.min_marginal_speedup,
        times=times,
        costs=su,
        deadline_s=o.deadline_s,
        budget=o.budget_su,
        indifference=o.indifference,
    )


def times_by_n(usable: pd.DataFrame, time_col: str) -> dict[int, np.ndarray]:
    """N -> the times (in `time_col`) of these runs at N that have one."""
    times = pd.to_numeric(usable[time_col], errors="coerce")
    return {int(n): g.dropna().to_numpy() for n, g in times.groupby(usable["n"])}


def recommendation_decision(
    rec: dict, summary: pd.DataFrame, usable: pd.DataFrame, study: Study, time_col: str, base
) -> dict:
    """Whether the recommendation is decided by the runs' spread, and what would decide
    it (analysis.recommendation.decision), from the runs given: those that enter the
    fits, or every usable run of an adaptive study (its answer was decided on them)."""
    samples = times_by_n(usable, time_col)
    ns = summary["n"].astype(int)
    units = dict(zip(ns, summary["n"].astype(float), strict=True))
    scale = {n: n / base for n in ns} if study.scaling.kind == "weak" else None
    intervals = step_intervals(samples, units, base, rec["steps"], scale)
    runs_at = {n: len(x) for n, x in samples.items()}
    su_at = dict(zip(ns, pd.to_numeric(summary["su"], errors="coerce"), strict=True))
    return decision(rec, intervals, runs_at, su_at)


def compare_all_series(runs: pd.DataFrame, study: Study) -> list[Comparison]:
    """Each series against the first: do their times differ at the N both measured?
    Not for a paired comparison (`compare:`): its paired verdict answers that question,
    and an unpaired test of the same runs would be a second, weaker answer to it."""
    ok = runs[runs["status"] == "ok"]
    names = list(dict.fromkeys(runs["series"]))
    if len(names) < 2 or study.compare is not None:
        return []

    def by_n(series: str) -> dict[int, np.ndarray]:
        return times_by_n(ok[ok["series"] == series], TIME_COLUMNS[study.time])

    first = by_n(names[0])
    found = []
    for other in names[1:]:
        compared = comparison.compare_series(first, by_n(other))
        # whether an overall test was made: there was a common N to test at
        tested = bool(math.isfinite(compared["p_value"]))
        per_n = [TestAtN(**jsonable(e)) for e in compared.pop("per_n")]
        found.append(Comparison(names[0], other, per_n, **jsonable(compared), tested=tested))
    return found


def study_predictions(summary: pd.DataFrame, runs: pd.DataFrame, study: Study) -> dict:
    """All of a study's predictions: the analysis's parts of those names."""
    series = [
        fit_series(part, runs[runs["series"] == name], study.for_series(name))
        for name, part in summary.groupby("series", sort=False)
    ]
    return {"series": series, "comparisons": compare_all_series(runs, study)}
