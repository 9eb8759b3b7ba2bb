"""Validity gates, fits, the recommendation and series, from runs to analysis.json."""

import json

import numpy as np
import pandas as pd
import pytest

from scalestudy.analysis import pipeline
from scalestudy.analysis.cost.cost import charges
from scalestudy.analysis.decisions.recommendation import within_zone
from scalestudy.analysis.stats import models
from scalestudy.analysis.tables import runs_from_measured, summarise
from scalestudy.study.config_tables import points_table
from scalestudy.study.points import point_for, series_of_points
from scalestudy.study.run_spec import run_spec
from scalestudy.study.validation import study_models
from tests.conftest import REPO, study_model, tiny_mnist_study
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


def analyse(runs, study: dict):
    """Aggregate made runs as the workflow would, for `study` (a test's keys; the rest
    the schema's defaults)."""
    result = pipeline.analyse(study_model(study, "rtx" if "measured" in study else "s"), runs)
    return result.summary, json.loads(result.analysis_json())


def test_rtx_table_recommends_6_and_predicts_a_peak_beyond_it():
    runs = runs_from_measured(REPO / RTX_STUDY["measured"], study_model(RTX_STUDY, "rtx"))
    summary, pred = analyse(runs, RTX_STUDY)
    series = pred["series"][0]
    assert series["recommendation"]["worth_n"] == 6
    assert series["recommendation"]["stopped_at"][:2] == [6, 7]
    assert series["selected"] in {"amdahl", "fixed_work_overhead", "log_comm"}
    assert all(f["ok"] for f in series["fits"])
    assert series["peak"]["beyond_measured"] and series["peak"]["n"] > 10
    curve = series["curve"]
    assert max(curve["n"]) >= 20 and curve["measured_max_n"] == 10
    # the prediction band widens beyond the measured range
    width = np.array(curve["band_hi"]) - np.array(curve["band_lo"])
    assert width[-1] > width[np.searchsorted(curve["n"], 10)]


def test_rtx_peak_is_stated_against_the_measured_base_time():
    # the model's own t(1) is 179 s, the measured base 171 s: against the model's base the
    # curve lay above every measured point and the peak read 3.76; against 171 s, 3.59
    runs = runs_from_measured(REPO / RTX_STUDY["measured"], study_model(RTX_STUDY, "rtx"))
    _, pred = analyse(runs, RTX_STUDY)
    series = pred["series"][0]
    assert series["prediction_base"]["source"] == "measured"
    assert series["prediction_base"]["time_s"] == 171
    assert series["prediction_base"]["model_s"] > 175
    assert series["peak"]["speedup"] == pytest.approx(3.59, abs=0.01)


def test_speedup_figure_has_x_ticks_over_the_extrapolated_range():
    import matplotlib.pyplot as plt

    from scalestudy.report.plots import extrapolated_ticks, speedup_figure
    from scalestudy.sections import Analysis

    runs = runs_from_measured(REPO / RTX_STUDY["measured"], study_model(RTX_STUDY, "rtx"))
    summary, pred = analyse(runs, RTX_STUDY)
    fig = speedup_figure(summary, Analysis.from_values(pred).section("series"), "N")
    ax = fig.axes[0]
    # measured N = 1..10, predictions drawn to 2 x 10 = 20
    assert list(ax.get_xticks()) == [*range(1, 11), 12, 14, 16, 18, 20]
    assert ax.xaxis.get_major_formatter()(20.0, 0) == "20"
    plt.close(fig)
    assert extrapolated_ticks([1, 2, 4, 8, 16], 40) == [32]  # doubling goes on doubling
    assert extrapolated_ticks([10, 20, 30], 60) == [40, 50, 60]
    assert extrapolated_ticks([1, 2, 4], 4) == []


def selected_time(series, n):
    """The selected model's fitted time at n, from the parameters in analysis.json."""
    fit = next(f for f in series["fits"] if f["name"] == series["selected"])
    p = fit["params"]
    theta = [p["T"] * p["s"], p["T"] * (1 - p["s"])] if "s" in p else [p["F"], p["W"], p["c"]]
    return models._design(series["selected"], np.asarray(n, dtype=float)) @ np.array(theta)


def test_predicted_speedups_are_against_the_measured_base_case():
    # The base runs are 8 % slower than the curve through the other points, so the
    # fitted t(1) is below the measured base median: the predicted curve, band and peak
    # must still be against the measured median, like the measured speedups.
    rng = np.random.default_rng(5)
    ns = (1, 2, 3, 4, 6, 8, 12, 16)
    times = {n: list((5 + 100 / n + 0.4 * n) * rng.lognormal(0, 0.01, 5)) for n in ns}
    times[1] = [t * 1.08 for t in times[1]]
    summary, pred = analyse(synthetic_runs(times).assign(series=""), {"scaling": {}})
    series = pred["series"][0]
    t_base = summary.loc[summary["is_base"], "time_s"].iloc[0]
    base = series["prediction_base"]
    assert base == pytest.approx(
        {
            "n": 1,
            "time_s": t_base,
            "source": "measured",
            "measured_s": t_base,
            "model_s": float(selected_time(series, 1)),
        }  # fmt: skip
    )
    assert base["model_s"] < 0.98 * t_base
    curve = series["curve"]
    assert curve["base_source"] == "measured" and curve["base_time_s"] == t_base
    n = np.array(curve["n"])
    speedup = np.array(curve["speedup"])
    assert speedup == pytest.approx(t_base / selected_time(series, n), rel=1e-9)
    assert speedup[0] > 1.02  # at the base N: the measured median over the model's t(1)
    assert np.all(np.array(curve["band_lo"]) < speedup)
    assert np.all(speedup < np.array(curve["band_hi"]))
    # Each family holds every multiple of its curves, so the log-space residuals of the
    # fit sum to zero: against the measured base the curve is centred on the measured
    # speedups (against its own t(1) it lay 3 % below them on average)
    measured = summary.set_index("n")["speedup"]
    log_ratio = [np.log(speedup[n == m][0] / measured[m]) for m in ns]
    assert abs(np.mean(log_ratio)) < 0.005
    peak = series["peak"]
    assert peak["base_source"] == "measured"
    assert peak["speedup"] == pytest.approx(t_base / selected_time(series, peak["n"]), rel=1e-9)


def test_amdahl_bound_is_against_the_measured_base_case():
    # base N = 2: the speedup t(2)/t(N) tends to t(2)/(T·s) = 0.55/0.1, not 1/s
    summary, pred = analyse(amdahl_runs(serial=0.1, ns=(1, 2, 4, 8, 16)), {"scaling": {"base": 2}})
    series = pred["series"][0]
    amdahl = next(f for f in series["fits"] if f["name"] == "amdahl")
    assert series["selected"] == "amdahl"
    t_base = summary.loc[summary["n"] == 2, "time_s"].iloc[0]
    serial = amdahl["params"]["T"] * amdahl["params"]["s"]
    assert series["bound"] == pytest.approx(t_base / serial)
    assert series["bound"] == pytest.approx(5.5, rel=0.1)


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
    study = study_model({"cost": {"core_weight": 1, "partitions": {"gpu": {"core_weight": 3}}}})
    assert charges(runs, study).su == 3
    assert summarise(runs, study)["su"].iloc[0] == 3


def test_series_in_config_become_labelled_points_with_their_overrides():
    study = tiny_mnist_study()
    study["series"] = {
        "b32": {"params": {"batch_size": 32}},
        "b128": {"params": {"batch_size": 128}},
    }
    config = validated({"studies": {"s": study}})
    points = points_table(study_models(config))
    assert list(points["point"]) == ["b32-t1", "b32-t2", "b128-t1", "b128-t2"]
    s = study_models(config)["s"]
    assert run_spec(s, 2, 1, "b128")["params"]["batch_size"] == 128
    assert run_spec(s, 2, 1, "b32")["point"] == "b32-t2"
    assert series_of_points(s) == {"b32-t1": "b32", "b32-t2": "b32",
                                        "b128-t1": "b128", "b128-t2": "b128"}  # fmt: skip
    assert point_for(s, 1, "b128").series == "b128"


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


def test_the_recommendation_says_whether_it_is_decided_and_what_would_decide_it():
    """Issue 16: the published table has one run per point, so no step has an interval:
    not decided, and a second run at both ends of the steps around the answer would
    give them one, priced in SU."""
    runs = runs_from_measured(REPO / RTX_STUDY["measured"], study_model(RTX_STUDY, "rtx"))
    _, pred = analyse(runs, RTX_STUDY)
    rec = pred["series"][0]["recommendation"]
    assert rec["worth_n"] == 6 and rec["decided"] is False
    assert rec["undecided_steps"] == [[5, 6], [6, 7]]
    advice = rec["next_measurements"]
    assert [(r["n"], r["more"]) for r in advice["repeats"]] == [(5, 1), (6, 1), (7, 1)]
    # one more run at N = 5, 6 and 7, at each point's SU per run
    summary, _ = analyse(runs, RTX_STUDY)
    su = summary.set_index("n")["su"]
    assert advice["su"] == pytest.approx(su[5] + su[6] + su[7])


def test_a_fixed_grid_answer_is_decided_inside_the_indifference_zone():
    """Issue 36: the step 8 -> 16 gains 0.214 [0.204, 0.226] per unit against a threshold
    of 0.22: without a zone never decided, however many runs; with the default one (0.22
    ± 0.165) it is, and the step says it lies inside the zone."""
    runs = amdahl_runs(serial=0.1, ns=(1, 2, 4, 8, 16))
    strict = {"min_marginal_speedup": 0.22, "indifference": 0.0}
    _, pred = analyse(runs, {"scaling": {}, "recommend": strict})
    rec = pred["series"][0]["recommendation"]
    assert rec["worth_n"] == 8 and rec["decided"] is False and rec["zone"] == 0
    _, pred = analyse(runs, {"scaling": {}, "recommend": {"min_marginal_speedup": 0.22}})
    rec = pred["series"][0]["recommendation"]
    assert rec["worth_n"] == 8 and rec["decided"] is True
    assert rec["zone"] == pytest.approx(0.165)
    (_, _, into, *into_ci), (_, _, out, *out_ci) = rec["step_intervals"][-2:]
    assert within_zone(out, out_ci, 0.22, rec["zone"])
    assert not within_zone(into, into_ci, 0.22, rec["zone"])
