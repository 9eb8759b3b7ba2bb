"""Comparison of two series: permutation tests find a real difference, mostly not a
made-up one, and say when there are too few runs to tell."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import permutation_test

from scalestudy.analysis.stats.comparison import _p_value, _split_statistics, compare_series

# ---------------------------------------------------------------- two series


def series(scale, seed, repeats=8, ns=(1, 2, 4, 8)):
    rng = np.random.default_rng(seed)
    return {n: scale * 100 / n**0.8 * np.exp(rng.normal(0, 0.05, repeats)) for n in ns}


def test_compare_series_finds_a_20_percent_difference():
    result = compare_series(series(1.0, 1), series(1.2, 2), n_perm=2000)
    assert result["significant"] and result["p_value"] < 0.01
    assert result["common_n"] == [1, 2, 4, 8]
    for entry in result["per_n"]:
        assert entry["p_value"] < 0.05
        assert entry["lo"] < 1.2 < entry["hi"] or abs(entry["ratio"] - 1.2) < 0.06
        assert entry["lo"] > 1.0


def test_compare_series_same_distribution_mostly_not_significant():
    significant = [
        compare_series(series(1.0, 2 * s), series(1.0, 2 * s + 1), n_perm=1000, seed=s)[
            "significant"
        ]
        for s in range(20)
    ]
    assert sum(significant) <= 3  # about 1 in 20 expected at the 5 % level


def test_compare_series_too_few_runs_is_honest():
    few = compare_series(series(1.0, 1, repeats=2, ns=(1,)), series(1.5, 2, repeats=2, ns=(1,)))
    entry = few["per_n"][0]
    assert "cannot be below" in entry["note"]  # 6 splits: p >= 1/3
    assert not few["significant"]
    single = compare_series({1: [10.0], 2: [6.0]}, {1: [12.0], 2: [7.0]})
    assert all(np.isnan(e["p_value"]) for e in single["per_n"])
    assert "cannot be below" in single["note"]
    none = compare_series({1: [1.0, 2.0]}, {2: [1.0, 2.0]})
    assert math.isnan(none["p_value"]) and none["common_n"] == [] and none["note"]


def test_exact_null_is_scipys_permutation_null():
    rng = np.random.default_rng(7)
    for n_a, n_b in ((4, 4), (3, 5), (2, 6)):
        log_a, log_b = rng.normal(4.0, 0.05, n_a), rng.normal(4.1, 0.05, n_b)
        observed, null, exact = _split_statistics(log_a, log_b, 5000, rng)
        res = permutation_test(
            (log_a, log_b),
            lambda x, y, axis=-1: y.mean(axis=axis) - x.mean(axis=axis),
            permutation_type="independent",
            vectorized=True,
            n_resamples=5000,
        )
        assert exact and observed == pytest.approx(res.statistic, rel=1e-12)
        np.testing.assert_allclose(np.sort(null), np.sort(res.null_distribution), atol=1e-12)
        if n_a == n_b:  # a symmetric null: scipy's two-sided p (2 x one-sided) is ours
            assert _p_value(observed, null, exact, 1e-9) == pytest.approx(res.pvalue)
