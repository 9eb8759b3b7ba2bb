"""Does the answer still hold? A study against an earlier run of it (`baseline:`): per
point, whole curve, fitted models, the answer and the two fingerprints
(results/<study>/baseline.json and the report's section). Pure functions; every random
draw comes from ``np.random.default_rng``. The tests and why: docs/baselines.md,
"Comparing with a baseline" (the regression check: stats/verdicts.py).
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from scalestudy.analysis.findings import fingerprint_changes
from scalestudy.analysis.stats.comparison import compare_series
from scalestudy.analysis.stats.intervals import LEVEL, _boot_medians, ratio_ci
from scalestudy.analysis.stats.predictions import usable_runs
from scalestudy.analysis.stats.verdicts import FASTER_ALARMS, SLOWER_ALARMS, regression_check
from scalestudy.analysis.tables import TIME_COLUMNS, read_runs_csv, times_by_point
from scalestudy.contract import NO_CHANGE, EarlierAnalysis, earlier_analysis
from scalestudy.model import Study
from scalestudy.paths import BASELINE_FILES
from scalestudy.records import RecordError, finite
from scalestudy.sections import Analysis
from scalestudy.sections.baseline.contract import (
    DATA,
    AnswerChange,
    BaselineComparison,
    CurveChange,
    CurveStep,
    Fingerprints,
    ModelChange,
    SpeedupCurves,
    SpeedupPoint,
)

N_BOOT = 2000


def produce(given) -> DATA:
    if given.baseline is None:
        return None
    return compare(given.study, given.runs, given.analysis, given.baseline)


def _change(ratio: float, lo: float, hi: float, tolerance: float) -> str:
    if math.isfinite(lo) and lo > 1 and ratio > 1 + tolerance:
        return "slower"
    if math.isfinite(hi) and hi < 1 and ratio < 1 - tolerance:
        return "faster"
    return NO_CHANGE


def log_contrast_p(samples: list[np.ndarray], signs: list[int]) -> float:
    """Two-sided p of a Welch-type t-test that sum(sign x mean log time) is 0: for two
    samples Welch's test, for four the log of a speedup ratio (Welch-Satterthwaite
    degrees of freedom). nan when a sample has fewer than 2 runs."""
    if any(x.size < 2 or np.any(x <= 0) for x in samples):
        return math.nan
    from scipy.stats import t as student  # here: scipy.stats costs ~1 s of an import

    logs = [np.log(x) for x in samples]
    shares = [float(np.var(v, ddof=1)) / v.size for v in logs]
    spread = sum(shares)
    if spread <= 0:
        return math.nan
    contrast = sum(s * float(v.mean()) for s, v in zip(signs, logs, strict=True))
    df = spread**2 / sum(w**2 / (v.size - 1) for w, v in zip(shares, logs, strict=True))
    return float(2 * student.sf(abs(contrast) / math.sqrt(spread), df))


def speedups(times: dict, series: str, base_n: int) -> list[SpeedupPoint]:
    """A series' speedups against base_n with their 95 % intervals (for the figure)."""
    base = times.get((series, base_n))
    found = [
        (n, ratio_ci(base, x))
        for (s, n), x in sorted(times.items())
        if s == series and base is not None
    ]
    return [SpeedupPoint(n, finite(value), finite(lo), finite(hi)) for n, (value, lo, hi) in found]


def curve_change(
    now: dict, was: dict, series: str, base_n: int, tolerance: float, seed: int = 0
) -> CurveChange:
    """Do the speedup curves differ? Per N: speedup now / speedup baseline with a
    Bonferroni bootstrap interval over the k points compared; they differ where one
    interval excludes 1 beyond the tolerance (docs/baselines.md)."""
    keys = sorted(n for s, n in set(now) & set(was) if s == series and n != base_n)
    if (series, base_n) not in now or (series, base_n) not in was or not keys:
        missing = f"N = {base_n} (the base) or another common N is missing: not compared"
        return CurveChange(series, base_n, False, False, LEVEL, [], missing)
    level = 1 - (1 - LEVEL) / len(keys)
    rng = np.random.default_rng(seed)
    b_now, b_was = now[(series, base_n)], was[(series, base_n)]
    few = b_now.size < 2 or b_was.size < 2
    boot_base_now = None if few else _boot_medians(b_now, N_BOOT, rng)
    boot_base_was = None if few else _boot_medians(b_was, N_BOOT, rng)
    points, differ = [], False
    for n in keys:
        x_now, x_was = now[(series, n)], was[(series, n)]
        value = (np.median(b_now) / np.median(x_now)) / (np.median(b_was) / np.median(x_was))
        lo = hi = math.nan
        if not few and x_now.size > 1 and x_was.size > 1:
            boot_now = boot_base_now / _boot_medians(x_now, N_BOOT, rng)
            boot = boot_now / (boot_base_was / _boot_medians(x_was, N_BOOT, rng))
            lo, hi = np.quantile(boot, [(1 - level) / 2, (1 + level) / 2])
        p = log_contrast_p([b_now, x_now, b_was, x_was], [1, -1, -1, 1])
        called = p < 1 - level and _change(value, lo, hi, tolerance) != NO_CHANGE
        differ |= called
        points.append(CurveStep(n, finite(value), finite(lo), finite(hi), finite(p), bool(called)))
    return CurveChange(series, base_n, bool(differ), True, level, points, "")


def model_changes(now: Analysis, was: EarlierAnalysis) -> list[ModelChange]:
    """The selected model's parameters now and in the baseline's fit of the same model,
    and whether their 95 % intervals are apart."""
    out = []
    old = {s.series: s for s in was.series}
    for fit in now.section("series"):
        base = old.get(fit.series)
        if base is None or fit.selected is None:
            continue
        mine = next((f for f in fit.fits if f.name == fit.selected and f.ok), None)
        theirs = next((f for f in base.fits if f.name == fit.selected), None)
        if mine is None or theirs is None or not theirs.ok:
            continue
        for p, value in mine.params.items():
            lo, hi = (mine.param_ci.get(p) or (None, None))[:2]
            b_lo, b_hi = (theirs.param_ci.get(p) or (None, None))[:2]
            known = None not in (lo, hi, b_lo, b_hi)
            apart = bool(known and (hi < b_lo or b_hi < lo))
            was = theirs.params.get(p)
            out.append(
                ModelChange(fit.series, fit.selected, p, value, lo, hi, was, b_lo, b_hi, apart)
            )
    return out


def _said(n, decided, one: str, several: str) -> str:
    if n is None:
        return "no answer"
    how = {True: "decided", False: "not decided"}.get(decided, "not judged")
    return f"ask for {n} {one if n == 1 else several} ({how})"


def answer_change(now: Analysis, was: EarlierAnalysis) -> list[AnswerChange]:
    """Per series, the answer then and now, said plainly."""
    facts = now.findings.study
    old = {a.series: a for a in was.answers}
    out = []
    for answer in now.findings.answers:
        then = old.get(answer.series)
        was_n, was_decided = (then.worth_n, then.decided) if then else (None, None)
        was_text = _said(was_n, was_decided, facts.unit_one, facts.unit)
        now_text = _said(answer.worth_n, answer.decided, facts.unit_one, facts.unit)
        same = was_n == answer.worth_n
        text = f"unchanged: {now_text}" if same else f"was: {was_text}; now: {now_text}"
        if same and was_decided != answer.decided:
            text = f"unchanged: was {was_text}, now {now_text}"
        now = (answer.worth_n, answer.decided)
        out.append(AnswerChange(answer.series, was_n, was_decided, *now, same, text))
    return out


def compare(
    study: Study, runs: pd.DataFrame, analysis: Analysis, folder: str | Path, seed: int = 0
) -> BaselineComparison:
    """The study (its runs table and analysis) against the baseline in `folder`, as
    baseline.json holds it. Its runs table and analysis (as JSON: an older one need not
    match the contract) are read as the config check read them before any job
    (RecordError names the file and line of a broken one)."""
    runs_csv, analysis_json = (Path(folder) / name for name in BASELINE_FILES)
    old_runs, old = read_runs_csv(runs_csv), earlier_analysis(analysis_json)
    column = TIME_COLUMNS[study.time]
    if column not in old_runs:
        raise RecordError(f"baseline {folder}: its runs.csv has no {column} (time: {study.time})")
    # the runs that measure a point, as the speedups take them (no failed, mismatched
    # or disturbed ones), on both sides
    now_t = times_by_point(usable_runs(runs, study), column)
    was_t = times_by_point(usable_runs(old_runs, study), column)
    tolerance = study.baseline_tolerance
    checked = regression_check(now_t, was_t, tolerance)
    curves, shown = [], []
    for fit in analysis.section("series"):
        series = fit.series or ""
        smallest = min((n for s, n in now_t if s == series), default=None)
        base_n = fit.base_n if fit.base_n is not None else smallest
        if base_n is None:
            continue
        curve = curve_change(now_t, was_t, series, base_n, tolerance, seed)
        a = {n: x for (s, n), x in was_t.items() if s == series}
        b = {n: x for (s, n), x in now_t.items() if s == series}
        times = compare_series(a, b, seed=seed)
        p_value, method = finite(times["p_value"]), times["method"] or times.get("note", "")
        curves.append(replace(curve, times_p_value=p_value, times_method=method))
        shown.append(
            SpeedupCurves(series, speedups(now_t, series, base_n), speedups(was_t, series, base_n))
        )
    now_fp, was_fp = analysis.findings.fingerprint, old.fingerprint
    differences, fp_note = fingerprint_changes(now_fp, was_fp)
    mine = json.loads(json.dumps({"workload": study.workload, "params": study.params}))
    across = [k for k in mine if old.study and getattr(old.study, k) != mine[k]]
    said = []
    for curve, points in checked:
        named = f" ({curve.series})" if curve.series else ""
        said.append(f"the curve{named}: {curve.text}")
        said += [f"N = {p.n}{named}: {p.text}" for p in points]
    return BaselineComparison(
        str(folder),
        tolerance,
        SLOWER_ALARMS,
        FASTER_ALARMS,
        [p for _, points in checked for p in points],
        [curve for curve, _ in checked],
        sorted({n for s, n in set(now_t) - set(was_t)}),
        sorted({n for s, n in set(was_t) - set(now_t)}),
        curves,
        shown,
        model_changes(analysis, old),
        answer_change(analysis, old),
        Fingerprints(now_fp, was_fp, differences, fp_note),
        across,
        said,
    )
