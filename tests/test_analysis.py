"""Summary math: speedup, efficiency, cost, status, measured CSVs, overlaps."""

import json

import pandas as pd
import pytest

from scalestudy.analysis.tables import (
    mark_overlaps,
    runs_from_measured,
    runs_from_records,
    summarise,
)
from scalestudy.records import RecordError, write_json_atomic
from tests.conftest import REPO, study_model
from tests.test_records import good_record

RTX_STUDY = {
    "measured": "config/examples/rtx2080ti_autoencoder_ddp.csv",
    "scaling": {"axis": "devices", "device": "gpu", "threads": 1, "devices": 1, "nodes": 1},
    "cost": {"core_weight": 1, "gpu_weight": 2},
}
PUBLISHED_SPEEDUP = [1.00, 1.58, 2.16, 2.67, 3.00, 3.29, 3.35, 3.49, 3.49, 3.49]
PUBLISHED_RELATIVE_SU = [1.00, 1.26, 1.39, 1.50, 1.67, 1.82, 2.09, 2.29, 2.58, 2.87]


def test_rtx2080ti_table_from_the_brief():
    rtx = study_model(RTX_STUDY, "rtx")
    runs = runs_from_measured(REPO / RTX_STUDY["measured"], rtx)
    summary = summarise(runs, rtx)
    assert list(summary["point"]) == [f"g{n}" for n in range(1, 11)]
    assert list(summary["speedup"].round(2)) == PUBLISHED_SPEEDUP
    assert list(summary["relative_su"].round(2)) == PUBLISHED_RELATIVE_SU
    assert summary["efficiency"].round(2).iloc[5] == round(3.29 / 6, 2)
    assert summary.loc[summary["is_base"], "n"].tolist() == [1]
    # SU = (1 core + 2 x 1 GPU) x 171 s / 3600 for the base case
    assert summary["su"].iloc[0] == pytest.approx(3 * 171 / 3600)


def synthetic_runs(times: dict[int, list[float]], status=None) -> pd.DataFrame:
    rows = []
    for n, ts in times.items():
        for k, t in enumerate(ts, 1):
            rows.append(
                {
                    "study": "s",
                    "point": f"t{n}",
                    "n": n,
                    "repeat": k,
                    "status": "ok",
                    "reason": None,
                    "wall_s": t,
                    "elapsed_s": t,
                    "train_s": t / 2,
                    "mismatch": False,
                    "mismatches": "",
                    "overlapped": False,
                    "cores": n,
                    "gpus": 0,
                    "samples_per_s": 10.0 * n,
                    "test_accuracy": 0.9,
                }
            )
    runs = pd.DataFrame(rows)
    for (n, k), (st, reason) in (status or {}).items():
        sel = (runs["n"] == n) & (runs["repeat"] == k)
        runs.loc[sel, ["status", "reason", "wall_s", "train_s"]] = [st, reason, None, None]
    return runs


def test_speedup_is_a_ratio_of_medians_never_a_mean_of_ratios():
    runs = synthetic_runs({1: [10, 12, 30], 4: [2, 4, 9]})
    s = summarise(runs, study_model({})).set_index("n")
    assert s.loc[4, "speedup"] == pytest.approx(12 / 4)
    assert s.loc[4, "efficiency"] == pytest.approx(3 / 4)
    assert s.loc[4, "time_min_s"] == 2 and s.loc[4, "time_max_s"] == 9
    assert s.loc[4, "relative_su"] == pytest.approx((4 * 4) / (1 * 12))


def test_a_points_time_interval_carries_the_level_it_reaches():
    # 3 runs: a t interval on log times, 93 % where the runs are right-skewed; 6 runs:
    # order statistics at 95 % (intervals.median_ci_coverage); the report says the first
    runs = synthetic_runs({1: [10, 11, 12, 10.5, 11.5, 10.2], 4: [3, 3.2, 3.1]})
    s = summarise(runs, study_model({})).set_index("n")
    # a level short of the stated one is given; one that reaches it is left empty
    assert s.loc[4, "time_ci_level"] == 0.93 and pd.isna(s.loc[1, "time_ci_level"])


def test_base_case_and_time_choice():
    runs = synthetic_runs({1: [8], 2: [5], 4: [4]})
    s = summarise(runs, study_model({"scaling": {"base": 2}, "time": "train"})).set_index("n")
    assert s.loc[2, "is_base"] and s.loc[2, "speedup"] == 1
    assert s.loc[4, "speedup"] == pytest.approx(2.5 / 2)
    assert s.loc[4, "efficiency"] == pytest.approx(1.25 * 2 / 4)
    assert s.loc[1, "time_s"] == 4  # training time is half the wall time here


def test_failed_point_is_kept_with_its_reason():
    runs = synthetic_runs(
        {1: [10, 10], 2: [6, 6], 4: [5, 5]},
        status={
            (4, 1): ("failed", "killed by SIGKILL"),
            (4, 2): ("failed", "killed by SIGKILL"),
            (2, 2): ("failed", "CUDA error"),
        },
    )
    s = summarise(runs, study_model({})).set_index("n")
    assert s.loc[4, "status"] == "failed: killed by SIGKILL"
    assert pd.isna(s.loc[4, "speedup"]) and s.loc[4, "repeats_ok"] == 0
    assert s.loc[2, "status"] == "ok (1 of 2 runs failed: CUDA error)"
    assert s.loc[2, "speedup"] == pytest.approx(10 / 6)


def test_failed_base_case_is_said():
    runs = synthetic_runs({1: [10], 2: [6]}, status={(1, 1): ("failed", "boom")})
    s = summarise(runs, study_model({})).set_index("n")
    assert s.loc[1, "status"] == "failed: boom"
    assert "base case failed" in s.loc[2, "status"] and pd.isna(s.loc[2, "speedup"])


def test_mismatched_runs_are_flagged_and_left_out_unless_the_study_opts_in():
    runs = synthetic_runs({1: [10], 2: [6, 5]})
    mismatched = (runs["n"] == 2) & (runs["repeat"] == 2)
    runs.loc[mismatched, ["mismatch", "mismatches"]] = [True, "threads: asked for 2, given 1"]
    s = summarise(runs, study_model({})).set_index("n")
    assert s.loc[2, "status"] == (
        "allocation mismatch: threads: asked for 2, given 1 (left out of speedups)"
    )
    assert s.loc[2, "time_s"] == 6 and s.loc[2, "speedup"] == pytest.approx(10 / 6)
    s = summarise(runs, study_model({"include_mismatched": True})).set_index("n")
    assert s.loc[2, "status"] == "allocation mismatch: threads: asked for 2, given 1"
    assert s.loc[2, "time_s"] == 5.5


def test_records_to_runs_table(tmp_path):
    paths = []
    for point, n, wall in [("t1", 1, 4.0), ("t2", 2, 2.5)]:
        path = tmp_path / f"{point}.json"
        write_json_atomic(
            path, good_record(point=point, n=n, wall_s=wall, run_id=f"run-of-{point}")
        )
        paths.append(path)
    runs = runs_from_records(paths)
    assert list(runs["wall_s"]) == [4.0, 2.5]
    assert runs["startup_s"].tolist() == [0.5, 0.5] and runs["train_s"].tolist() == [1.5, 1.5]
    assert runs["other_s"].tolist() == [2.0, 0.5]


def test_one_bad_record_stops_aggregation_and_names_it(tmp_path):
    good, bad = tmp_path / "rep1.json", tmp_path / "rep2.json"
    write_json_atomic(good, good_record())
    bad.write_text(json.dumps(good_record())[:-40])
    with pytest.raises(RecordError, match="rep2.json: not a complete JSON record"):
        runs_from_records([good, bad])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("N,seconds\n1,3\n", "missing column(s) ['time_s']"),
        ("N,time_s\n1,3\n2,fast\n", "line 3: time_s='fast'"),
        # plain numbers, not numpy's repr ("time_s=np.float64(nan)", "N=np.int64(0)")
        ("N,time_s\n1,3\n2,nan\n", "line 3: time_s=nan is not"),
        ("N,time_s\n1,3\n2,inf\n", "line 3: time_s=inf is not"),
        ("N,time_s\n1,3\n2,-1\n", "line 3: time_s=-1 is not"),
        ("N,time_s\n1,3\n0,2\n", "line 3: N=0 is not a positive finite number"),
        # the fault probe: times of 1e308 overflowed the statistics, and the analysis
        # stopped on "Out of range float values are not JSON compliant", naming no file
        (
            "N,time_s\n1,3\n2,1e308\n",
            "line 3: time_s=1e+308 is longer than a run takes (at most 1e+09 s, 32 years)",
        ),
        ("N,time_s\n", "no rows"),
        ("N,time_s\n1.5,3\n", "whole numbers"),
    ],
)
def test_bad_measured_csv_names_file_and_line(tmp_path, text, expected):
    path = tmp_path / "times.csv"
    path.write_text(text)
    with pytest.raises(RecordError, match=f"{path}"):
        try:
            runs_from_measured(path, study_model(RTX_STUDY, "m"))
        except RecordError as e:
            assert expected in str(e)
            raise


def test_measured_csv_with_repeats(tmp_path):
    path = tmp_path / "times.csv"
    path.write_text("N,time_s,repeat\n1,10,1\n1,12,2\n2,6,1\n2,7,2\n")
    runs = runs_from_measured(path, study_model(RTX_STUDY, "m"))
    s = summarise(runs, study_model(RTX_STUDY, "m")).set_index("n")
    assert s.loc[2, "speedup"] == pytest.approx(11 / 6.5)
    assert s.loc[1, "repeats"] == 2


def test_overlapping_runs_are_marked():
    runs = pd.DataFrame(
        {
            "study": ["s"] * 4,
            "host": ["a", "a", "a", "b"],
            "started_at": [
                "2026-01-01T00:00:00Z",
                "2026-01-01T00:00:05Z",
                "2026-01-01T00:00:20Z",
                "2026-01-01T00:00:01Z",
            ],
            "finished_at": [
                "2026-01-01T00:00:10Z",
                "2026-01-01T00:00:15Z",
                "2026-01-01T00:00:30Z",
                "2026-01-01T00:00:09Z",
            ],
        }
    )
    assert mark_overlaps(runs).tolist() == [True, True, False, False]


def test_every_field_of_a_record_reaches_the_runs_table():
    from scalestudy.analysis.tables import record_row

    record = good_record()
    row = record_row(record)
    fields = record["metrics"] | record["resources"]["received"] | record["environment"]
    assert {k: row[k] for k in fields} == fields


def test_a_point_that_learned_less_is_flagged():
    runs = synthetic_runs({1: [10, 10], 2: [6, 6], 4: [3, 3]})
    runs["val_loss"] = runs["n"].map({1: 0.40, 2: 0.41, 4: 0.60})
    s = summarise(runs, study_model({"convergence": {"tolerance": 0.05}})).set_index("n")
    assert list(s["converged"]) == [True, True, False]
    assert s.loc[4, "status"] == (
        "ok; did not converge like the base case: val_loss 0.6 vs 0.4 (tolerance 5%)"
    )
    assert s.loc[2, "status"] == "ok" and s.loc[4, "quality"] == 0.60


def test_convergence_metric_can_be_chosen():
    runs = synthetic_runs({1: [10], 2: [6]})
    runs["val_loss"] = [0.4, 0.9]
    runs["test_accuracy"] = [0.90, 0.89]
    s = summarise(runs, study_model({"convergence": {"metric": "test_accuracy"}}))
    assert s["converged"].tolist() == [True, True]


def test_quality_is_compared_on_one_metric_across_points():
    runs = synthetic_runs({1: [10, 10], 2: [6, 6]})
    runs["val_loss"] = [0.5, 0.5, None, None]  # the second point reports no val_loss
    runs["final_loss"] = [9.0, 9.0, 0.5, 0.5]
    s = summarise(runs, study_model({})).set_index("n")
    assert s.loc[1, "quality"] == 0.5 and pd.isna(s.loc[2, "quality"])
