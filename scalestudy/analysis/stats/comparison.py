"""Do two series (e.g. two GPU models, or two software versions) differ in time?
Per common N a ratio of medians with its bootstrap CI and a permutation test; over all
N a stratified permutation test. Pure functions on numpy arrays; every random draw
comes from ``np.random.default_rng(seed)``.

Its statistical choices, and why: docs/report.md, "Series against each other, and why".
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from scalestudy.analysis.stats.intervals import _finite, ratio_ci


def _split_statistics(log_a, log_b, n_perm, rng) -> tuple[float, np.ndarray, bool]:
    """mean(log b) - mean(log a), and the same statistic over every split of the pooled
    values into groups of the same sizes (exact) or over n_perm random splits."""
    x = np.concatenate([log_a, log_b])
    na, m = log_a.size, x.size
    nb = m - na
    total = x.sum()
    exact = math.comb(m, na) <= n_perm
    if exact:
        chosen = np.array(list(itertools.combinations(range(m), na)), dtype=np.intp)
    else:
        chosen = np.argsort(rng.random((n_perm, m)), axis=1)[:, :na]
    sum_a = x[chosen].sum(axis=1)
    null = (total - sum_a) / nb - sum_a / na
    observed = (total - log_a.sum()) / nb - log_a.sum() / na
    return float(observed), null, exact


def _p_value(observed: float, null: np.ndarray, exact: bool, tol: float) -> float:
    extreme = int(np.sum(np.abs(null) >= abs(observed) - tol))
    return extreme / null.size if exact else (1 + extreme) / (1 + null.size)


def _smallest_p(null: np.ndarray, exact: bool, tol: float) -> float:
    if not exact:
        return 1 / (1 + null.size)
    return float(np.mean(np.abs(null) >= np.abs(null).max() - tol))


def compare_series(a_by_n: dict, b_by_n: dict, n_perm: int = 5000, seed: int = 0) -> dict:
    """Do two series (e.g. two GPU models) differ in time? (The tests: module docstring.)
    Per common N: ratio = median(b)/median(a) with a Welch CI on log times (`ratio_ci`)
    and the permutation test's p; N with one run in each series get no per-N test but
    count in the overall one. p = nan, with a note, when there is no common N."""
    rng = np.random.default_rng(seed)
    common = sorted(set(a_by_n) & set(b_by_n))
    per_n, strata, used = [], [], []
    for n in common:
        a, b = _finite(a_by_n[n]), _finite(b_by_n[n])
        entry = {"n": n, "n_a": int(a.size), "n_b": int(b.size)}
        ratio, lo, hi = ratio_ci(b, a)
        entry.update(ratio=ratio, lo=lo, hi=hi, p_value=math.nan, method="", note="")
        if a.size == 0 or b.size == 0 or np.any(a <= 0) or np.any(b <= 0):
            entry["note"] = "no runs, or a non-positive time, in one of the series: no test"
            per_n.append(entry)
            continue
        log_a, log_b = np.log(a), np.log(b)
        tol = 1e-9 * max(1.0, float(np.abs(np.concatenate([log_a, log_b])).max()))
        observed, null, exact = _split_statistics(log_a, log_b, n_perm, rng)
        strata.append((observed, null, exact, tol))
        used.append(n)
        if a.size + b.size < 3:
            entry["note"] = "one run in each series: no test at this N (counts in the overall test)"
        else:
            entry["p_value"] = _p_value(observed, null, exact, tol)
            entry["method"] = f"permutation ({'exact' if exact else f'{n_perm} random'} splits)"
            floor = _smallest_p(null, exact, tol)
            if floor > 0.05:
                entry["note"] = f"{null.size} splits only: p cannot be below {floor:.3g}"
        per_n.append(entry)
    result = {
        "per_n": per_n,
        "common_n": used,
        "p_value": math.nan,
        "significant": False,
        "mean_log_ratio": math.nan,
    }
    if not strata:
        result.update(method="", note="no common N with runs in both series: no test")
        return result
    observed = sum(s[0] for s in strata)
    tol = max(s[3] for s in strata) * len(strata)
    exact = all(s[2] for s in strata) and math.prod(s[1].size for s in strata) <= n_perm
    if exact:
        null = np.zeros(1)
        for s in strata:
            null = np.add.outer(null, s[1]).ravel()
    else:
        null = np.zeros(n_perm)
        for _, stratum_null, stratum_exact, _ in strata:
            if stratum_exact:  # every split listed: draw from them uniformly
                null += stratum_null[rng.integers(0, stratum_null.size, n_perm)]
            else:  # n_perm random splits, independent of the other strata's
                null += stratum_null
    p = _p_value(observed, null, exact, tol)
    floor = _smallest_p(null, exact, tol)
    kind = "exact" if exact else f"{n_perm} random"
    note = f"only {null.size} joint splits: p cannot be below {floor:.3g}" if floor > 0.05 else ""
    method = f"stratified permutation over {len(used)} N ({kind} joint splits)"
    result.update(
        p_value=p,
        significant=bool(p < 0.05),
        method=method,
        note=note,
        mean_log_ratio=observed / len(strata),
    )
    return result
