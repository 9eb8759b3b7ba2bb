"""Validity gates, fits, the recommendation and series, from runs to analysis.json."""

import numpy as np
import pandas as pd
import pytest

from scalestudy.analysis import charges, runs_from_measured, summarise
from scalestudy.predictions import split_by_provenance, study_predictions
from scalestudy.studies import point_for, points_table, run_spec, series_of_points
from tests.conftest import REPO, tiny_mnist_study
from tests.test_analysis import RTX_STUDY, synthetic_runs
from tests.test_studies import config_error, validated


def amdahl_runs(serial=0.1, ns=(1, 2, 4, 8), repeats=4, noise=0.02, seed=1, **columns):
    rng = np.random.default_rng(seed)
    times = {n: list(100 * (serial + (1 - serial) / n) * rng.lognormal(0, noise, repeats))
             for n in ns}  # fmt: skip
    runs = synthetic_runs(times)
    for column, value in columns.items():
        runs[column] = value
    runs["series"] = ""
    return runs


def analyse(runs, study):
    runs = split_by_provenance(runs, study)
    summary = summarise(runs, study)
    return summary, study_predictions(summary, runs, study)


def test_rtx_table_recommends_6_and_predicts_a_peak_beyond_it():
    runs = runs_from_measured(REPO / RTX_STUDY["measured"], "rtx", RTX_STUDY)
    summary, pred = analyse(runs, RTX_STUDY)
    series = pred["series"][0]
    assert series["recommendation"]["worth_n"] == 6
    assert series["recommendation"]["stopped_at"][:2] == [6, 7]
    assert series["selected"] in {"amdahl", "fixed_work_overhead", "usl"}
    assert all(f["ok"] for f in series["fits"])
    assert series["peak"]["beyond_measured"] and series["peak"]["n"] > 10
    curve = series["curve"]
    assert max(curve["n"]) >= 20 and curve["measured_max_n"] == 10
    # the prediction band widens beyond the measured range
    width = np.array(curve["band_hi"]) - np.array(curve["band_lo"])
    assert width[-1] > width[np.searchsorted(curve["n"], 10)]


def test_fits_recover_amdahl_and_intervals_are_reported():
    summary, pred = analyse(amdahl_runs(serial=0.1, ns=(1, 2, 4, 8, 16)), {"scaling": {}})
    amdahl = next(f for f in pred["series"][0]["fits"] if f["name"] == "amdahl")
    lo, hi = amdahl["param_ci"]["s"]
    assert lo < amdahl["params"]["s"] < hi and abs(amdahl["params"]["s"] - 0.1) < 0.02
    assert (summary["speedup_ci_lo"] <= summary["speedup"]).all()
    assert (summary["speedup"] <= summary["speedup_ci_hi"]).all()
    assert summary.loc[summary["n"] == 16, "karp_flatt"].iloc[0] == pytest.approx(0.1, abs=0.03)


def test_unstable_points_are_flagged_and_kept_out_of_fits_unless_opted_in():
    runs = amdahl_runs()
    runs.loc[(runs["n"] == 4) & (runs["repeat"] == 1), "wall_s"] *= 3  # one slow run
    summary, pred = analyse(runs, {"scaling": {}})
    row = summary.set_index("n").loc[4]
    assert row["unstable"] and "outlier" in row["unstable_reason"]
    assert "t4" in pred["series"][0]["excluded"]
    _, pred = analyse(runs, {"scaling": {}, "include_unstable": True})
    assert "t4" not in pred["series"][0]["excluded"]


def test_failed_and_mismatched_points_stay_out_of_fits():
    runs = amdahl_runs()
    runs.loc[runs["n"] == 8, ["status", "reason", "wall_s"]] = ["failed", "OOM", None]
    runs.loc[runs["n"] == 2, ["mismatch", "mismatches"]] = [True, "cpus: asked for 2, got 1"]
    _, pred = analyse(runs, {"scaling": {}})
    excluded = pred["series"][0]["excluded"]
    assert excluded["t8"] == "failed: OOM"
    assert excluded["t2"].startswith("allocation mismatch")


def test_mixed_provenance_is_refused_with_the_fields_or_split_on_request():
    runs = amdahl_runs(torch="2.14.1", cpu_model="EPYC")
    runs.loc[runs["repeat"] > 2, "torch"] = "2.9.0"
    _, pred = analyse(runs, {"scaling": {}})
    series = pred["series"][0]
    assert series["fits"] == [] and series["mixed_provenance"] == {"PyTorch": ["2.14.1", "2.9.0"]}
    assert "PyTorch (2.14.1, 2.9.0)" in series["fit_note"]
    summary, pred = analyse(runs, {"scaling": {}, "provenance": "split"})
    assert set(summary["series"]) == {"[PyTorch=2.14.1]", "[PyTorch=2.9.0]"}
    assert all(s["fits"] for s in pred["series"])


def test_two_series_are_compared_and_a_real_difference_is_significant():
    fast = amdahl_runs(seed=1).assign(series="a100")
    slow = amdahl_runs(seed=2).assign(series="v100")
    slow["wall_s"] *= 1.3
    runs = pd.concat([fast, slow], ignore_index=True)
    summary, pred = analyse(runs, {"scaling": {}})
    assert list(dict.fromkeys(summary["series"])) == ["a100", "v100"]
    (comparison,) = pred["comparisons"]
    assert comparison["a"] == "a100" and comparison["significant"]
    assert comparison["per_n"][0]["ratio"] == pytest.approx(1.3, rel=0.1)
    same = amdahl_runs(seed=3).assign(series="again")
    _, pred = analyse(pd.concat([fast, same], ignore_index=True), {"scaling": {}})
    assert not pred["comparisons"][0]["significant"]


def test_partition_weights_price_runs_by_where_they_ran():
    runs = synthetic_runs({1: [3600.0]})
    runs["elapsed_s"], runs["partition"] = 3600.0, "gpu"
    study = {"scaling": {}, "cost": {"core_weight": 1, "partitions": {"gpu": {"core_weight": 3}}}}
    assert charges(runs, study)["su"] == 3
    assert summarise(runs, study)["su"].iloc[0] == 3


def test_series_in_config_become_labelled_points_with_their_overrides():
    study = tiny_mnist_study()
    study["series"] = {
        "b32": {"params": {"batch_size": 32}},
        "b128": {"params": {"batch_size": 128}},
    }
    config = validated({"studies": {"s": study}})
    points = points_table(config)
    assert list(points["point"]) == ["b32-t1", "b32-t2", "b128-t1", "b128-t2"]
    s = config["studies"]["s"]
    assert run_spec("s", s, 2, 1, "b128")["params"]["batch_size"] == 128
    assert run_spec("s", s, 2, 1, "b32")["point"] == "b32-t2"
    assert series_of_points("s", s) == {"b32-t1": "b32", "b32-t2": "b32",
                                        "b128-t1": "b128", "b128-t2": "b128"}  # fmt: skip
    assert point_for("s", s, 1, "b128").series == "b128"


def test_a_series_with_an_unknown_parameter_is_named():
    study = tiny_mnist_study()
    study["series"] = {"x": {"params": {"batchsize": 32}}}
    assert "studies.s.series.x.params.batchsize" in config_error({"studies": {"s": study}})


def test_weak_scaling_efficiency_and_fits_use_time_per_unit_of_work():
    rng = np.random.default_rng(4)
    # the problem grows with N; time grows 5 % per doubling from communication
    times = {
        n: list(10 * (1 + 0.05 * np.log2(n)) * rng.lognormal(0, 0.01, 4)) for n in (1, 2, 4, 8)
    }
    runs = synthetic_runs(times).assign(series="")
    study = {"scaling": {"kind": "weak"}}
    summary, pred = analyse(runs, study)
    s = summary.set_index("n")
    assert s.loc[8, "efficiency"] == pytest.approx(1 / 1.15, rel=0.03)  # t_base / t_N
    assert s.loc[8, "speedup"] == pytest.approx(8 * s.loc[8, "efficiency"])  # scaled speedup
    series = pred["series"][0]
    assert series["fit_basis"] == "time per unit of work (weak scaling)"
    amdahl = next(f for f in series["fits"] if f["name"] == "amdahl")
    assert amdahl["ok"] and amdahl["params"]["s"] < 0.05
