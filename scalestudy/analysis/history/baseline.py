"""Does the answer still hold? A study against an earlier run of it (`baseline:`): per
point, whole curve, fitted models, the answer and the two fingerprints
(results/<study>/baseline.json and the report's section). Pure functions; every random
draw comes from ``np.random.default_rng``. The tests and why: docs/baselines.md,
"Comparing with a baseline" (the regression check: stats/verdicts.py).
"""

from __future__ import annotations

import io
import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from scalestudy.analysis.cost.cost import within_budget
from scalestudy.analysis.stats.comparison import compare_series
from scalestudy.analysis.stats.intervals import LEVEL, _boot_medians, _finite, ratio_ci
from scalestudy.analysis.stats.predictions import usable_runs
from scalestudy.analysis.stats.verdicts import (
    ALPHA,
    FASTER,
    FASTER_ALARMS,
    SLOWER,
    SLOWER_ALARMS,
    UNDECIDED,
    pooled_log_variance,
    verdicts,
)
from scalestudy.analysis.tables import TIME_COLUMNS, distinct_text
from scalestudy.contract import Analysis, EarlierAnalysis, earlier_analysis
from scalestudy.model import Study
from scalestudy.paths import BASELINE_FILES
from scalestudy.records import RecordError, finite
from scalestudy.sections.baseline.contract import (
    NO_CHANGE,
    AnswerChange,
    BaselineComparison,
    CurveChange,
    CurveStep,
    CurveVerdict,
    FingerprintDiff,
    Fingerprints,
    ModelChange,
    PointChange,
    SpeedupCurves,
    SpeedupPoint,
)
from scalestudy.study.baseline import runs_csv_text

N_BOOT = 2000
# The fingerprint: label -> the runs table's column (a record's environment field under
# its own name; tables.PARTS: env_ before it where another part took the name)
FINGERPRINT = {
    "cluster": "slurm_cluster",
    "partition": "partition",
    "hosts": "host",
    "nodes": "nodes",
    "cpu": "cpu_model",
    "gpu": "gpu_models",
    "python": "python",
    "pytorch": "torch",
    "cuda": "cuda",
    "driver": "gpu_driver",
    "workflow commit": "workflow_commit",
}


def distinct(runs: pd.DataFrame, column: str) -> str:
    """The distinct values of a column over the runs (each of a list's too), in order."""
    if column not in runs and f"env_{column}" in runs:
        column = f"env_{column}"
    parts = (part for text in distinct_text(runs, column) for part in text.split(","))
    return ", ".join(dict.fromkeys(part for part in parts if part))


def fingerprint(study: Study, runs: pd.DataFrame) -> dict[str, str]:
    """Where and with what the study's runs ran (the values its runs hold, distinct, in
    order; "" where none says), and the workload with its parameters."""
    found = {label: distinct(runs, column) for label, column in FINGERPRINT.items()}
    if "workflow_dirty" in runs and runs["workflow_dirty"].astype(str).eq("True").any():
        found["workflow commit"] += " (with uncommitted changes)"
    found["workload"] = study.workload or f"measured: {study.measured or 'a CSV a series'}"
    found["parameters"] = json.dumps(study.params, sort_keys=True)
    return found


def times_by_point(runs: pd.DataFrame, column: str) -> dict[tuple[str, int], np.ndarray]:
    """Each point's times of its successful runs, keyed by (series, N)."""
    ok = runs[(runs["status"] == "ok")]
    if "series" in ok:  # a CSV read back gives NaN for a study without series
        series = ok["series"].astype("string").fillna("")
    else:
        series = pd.Series("", index=ok.index)
    out: dict[tuple[str, int], np.ndarray] = {}
    for (s, n), times in pd.to_numeric(ok[column], errors="coerce").groupby([series, ok["n"]]):
        x = _finite(times)
        if x.size:
            out[(str(s), int(n))] = x
    return out


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


def regression_check(
    now: dict, was: dict, tolerance: float
) -> list[tuple[CurveVerdict, list[PointChange]]]:
    """Per series measured in both (now and was keyed (series, N), as times_by_point):
    its curve's verdict and each common point's (stats/verdicts.py). Alpha is split
    evenly over the series."""
    common = sorted(set(now) & set(was))
    series = sorted({s for s, _ in common})
    out = []
    for name in series:
        keys = [
            key
            for key in common
            if key[0] == name and np.all(now[key] > 0) and np.all(was[key] > 0)
        ]
        if not keys:
            continue
        variance, df = pooled_log_variance([now[k] for k in keys] + [was[k] for k in keys])
        found = verdicts(
            [np.log(now[k]).mean() - np.log(was[k]).mean() for k in keys],
            [now[k].size for k in keys],
            [was[k].size for k in keys],
            variance,
            df,
            [math.log(k[1]) for k in keys],
            tolerance,
            ALPHA / len(series),
        )
        points = [
            PointChange(
                key[0],
                key[1],
                finite(v["ratio"]),
                finite(v["lo"]),
                finite(v["hi"]),
                finite(v["p_value"]),
                finite(v["threshold"]),
                v["verdict"] if v["verdict"] in (SLOWER, FASTER) else NO_CHANGE,
                v["verdict"],
                finite(v["power"]),
                v["more_runs"],
                v["text"],
                int(now[key].size),
                int(was[key].size),
                float(np.median(now[key])),
                float(np.median(was[key])),
            )
            for key, v in zip(keys, found["points"], strict=True)
        ]
        curve = {k: finite(v) if isinstance(v, float) else v for k, v in found["curve"].items()}
        out.append((CurveVerdict(name, **curve), points))
    return out


def point_changes(now: dict, was: dict, tolerance: float) -> list[PointChange]:
    """Per (series, N) measured in both: time ratio now / baseline, its 95 % interval,
    p, the verdict and the change called (regression_check)."""
    return [p for _, points in regression_check(now, was, tolerance) for p in points]


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


def fingerprint_changes(now: dict, was: dict | None) -> tuple[list[FingerprintDiff], str]:
    """What differs between the two fingerprints, and a note when the baseline's is
    unknown (records and analyses made before fingerprints)."""
    if was is None:
        return [], "the baseline's environment is unknown (its analysis has no fingerprint)"
    return [
        FingerprintDiff(k, was.get(k, ""), now.get(k, ""))
        for k in now
        if was.get(k, "") != now.get(k, "")
    ], ""


def read_runs_csv(path: str | Path) -> pd.DataFrame:
    """A kept runs table (a baseline's, an archive's), checked whole as the config
    check reads it (scalestudy.study.baseline.runs_csv_text: RecordError names the
    file and line)."""
    return pd.read_csv(io.StringIO(runs_csv_text(Path(path))))


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


def undecided_points(now: dict, was: dict, tolerance: float) -> dict[int, tuple[int, str]]:
    """N -> (the runs to add now that would decide it, why) where the comparison with
    the baseline is undecided and more runs now can decide it (regression_check).
    Keys of now and was: (series, N) as times_by_point."""
    return {
        p.n: (
            p.more_runs,
            f"the comparison with the baseline is undecided at N = {p.n} (time ratio "
            f"{p.ratio:.2f} [{p.lo:.2f}, {p.hi:.2f}], tolerance {tolerance:.0%}): "
            f"{p.text.removeprefix('undecided: ')}",
        )
        for p in point_changes(now, was, tolerance)
        if p.verdict == UNDECIDED and p.more_runs
    }


def runs_for_comparison(plan: dict, now: dict, was: dict, study: Study, su_per_run: dict) -> dict:
    """An adaptive round plan (analysis.adaptive.next_round, keyed by N) with runs added
    where the comparison with the baseline is undecided: the runs that would decide it,
    up to max_repeats, as many as the budget allows, within max_rounds. A plan stopped
    as decided goes on for them; one stopped by its budget or limits stays stopped."""
    stopped = plan.get("stop")
    if stopped and stopped["reason"] != "decided":
        return plan
    adaptive = study.adaptive
    if plan["round"] > adaptive.max_rounds:
        return plan
    added, why = dict(plan["added"]), dict(plan["why"])
    round_su = plan["round_su"]
    for n, (more, reason) in undecided_points(now, was, study.baseline_tolerance).items():
        have = plan["totals"].get(n, 0)
        extra = min(more - added.get(n, 0), adaptive.max_repeats - have)
        per_run = su_per_run.get(n, math.inf)
        while extra > 0 and not within_budget(
            plan["spent_su"] + round_su + extra * per_run, study.budget_su
        ):
            extra -= 1
        if extra <= 0:
            continue
        added[n] = added.get(n, 0) + extra
        why.setdefault(n, reason)
        round_su += extra * per_run
    if added == plan["added"]:
        return plan
    # plan["totals"] already holds the runs next_round added: count only these
    totals = {n: plan["totals"].get(n, 0) + k - plan["added"].get(n, 0) for n, k in added.items()}
    return plan | {
        "added": added,
        "why": why,
        "round_su": round_su,
        "stop": None,
        "totals": plan["totals"] | totals,
    }
