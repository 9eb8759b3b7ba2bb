"""Records to tables without hand-kept lists: every metric a workload reports reaches
runs.csv, its median per point summary.csv, and the report, with no other edit."""

import io
import json
import uuid

import pandas as pd
import pytest

from scalestudy.analysis.findings import analysis_of, study_findings
from scalestudy.analysis.tables import (
    derived_columns,
    record_row,
    runs_from_measured,
    runs_from_records,
    runs_table,
    summarise,
)
from scalestudy.records import write_json_atomic
from scalestudy.report.views import study_view
from tests.conftest import REPO, study_model
from tests.test_analysis import RTX_STUDY
from tests.test_records import good_record

STUDY = study_model(
    {
        "workload": "command",
        "params": {"command": "xz -T{threads} data", "metrics_regex": {"compression_ratio": "x"}},
        "scaling": {"axis": "threads", "device": "cpu", "threads": 1, "devices": 1, "nodes": 1},
    },
    "xz",
)


def record(point: str, n: int, repeat: int, metrics: dict, **fields) -> dict:
    r = good_record(study="xz", point=point, n=n, repeat=repeat, run_id=uuid.uuid4().hex)
    r["resources"]["requested"]["threads"] = n
    r["metrics"] = metrics
    r.update(fields)
    return r


def place(root, r: dict):
    path = root / "results" / "xz" / "runs" / r["point"] / f"rep{r['repeat']}.json"
    write_json_atomic(path, r)
    return path


def round_trip(frame: pd.DataFrame) -> pd.DataFrame:
    """As the report reads it: through runs.csv or summary.csv."""
    return pd.read_csv(io.StringIO(frame.to_csv(index=False)))


def report_view(summary: pd.DataFrame, runs: pd.DataFrame) -> dict:
    """The report's view of the study as the workflow makes it: the findings in
    analysis.json at aggregation, summary.csv read back by the report."""
    found = study_findings(STUDY, summary, runs, {})
    analysis = {"series": [], "comparisons": [], "layouts": [], "gpu_verdict": None}
    analysis = json.loads(analysis_of(analysis | {"findings": found}).to_json())
    return study_view(analysis, round_trip(summary), {})


SPEED = {"samples_per_s": 64.0}  # a metric the results table shows


def xz_runs(tmp_path) -> pd.DataFrame:
    ratios = {("t1", 1): 3.0, ("t1", 2): 3.4, ("t1", 3): 3.2, ("t2", 1): 2.8, ("t2", 2): 3.0}
    paths = [
        place(tmp_path, record(point, int(point[1]), k, {"compression_ratio": ratio} | SPEED))
        for (point, k), ratio in ratios.items()
    ]
    # a failed run's figure is no measurement of its point
    failed = record("t2", 2, 3, {"compression_ratio": 99.0}, status="failed", reason="boom")
    return runs_from_records([*paths, place(tmp_path, failed)])


def test_a_new_metric_reaches_runs_summary_and_report(tmp_path):
    runs = xz_runs(tmp_path)
    assert runs["compression_ratio"].tolist() == [3.0, 3.4, 3.2, 2.8, 3.0, 99.0]

    summary = summarise(runs, STUDY).set_index("point")
    # the median over each point's successful runs, as every other median
    assert summary.loc["t1", "compression_ratio"] == pytest.approx(3.2)
    assert summary.loc["t2", "compression_ratio"] == pytest.approx(2.9)

    # the report, from the files as the workflow writes them
    assert round_trip(runs)["compression_ratio"].tolist() == [3.0, 3.4, 3.2, 2.8, 3.0, 99.0]
    context = report_view(summary.reset_index(), runs)
    metrics = context["metrics"]
    column = metrics["columns"].index("compression_ratio")
    assert metrics["columns"][0] == "point"
    assert [row[column] for row in metrics["rows"]] == ["3.2", "2.9"]
    # what the results table already shows is not repeated
    assert "samples/s" in context["columns"] and "samples_per_s" not in metrics["columns"]


def test_a_missing_or_non_numeric_metric_does_not_break_aggregation(tmp_path):
    rows = [
        record("t1", 1, 1, {"compression_ratio": 3.0, "speed": 10.0}),
        record("t1", 2, 2, {"compression_ratio": None}),  # reported, but not measured
        record("t2", 2, 1, {"compression_ratio": "n/a", "speed": 20.0}),  # edited by hand
        record("t2", 2, 2, {}),  # reports nothing
        record("t3", 3, 1, {"label_only": "fast"}),
    ]
    for r, n in zip(rows, (1, 1, 2, 2, 3), strict=True):
        r["n"] = r["resources"]["requested"]["threads"] = n
    runs = runs_table([record_row(r) for r in rows])
    assert runs["compression_ratio"].tolist()[:3] == [3.0, None, "n/a"]
    summary = summarise(runs, STUDY).set_index("point")
    assert summary.loc["t1", "compression_ratio"] == 3.0
    assert summary["compression_ratio"].iloc[1:].isna().all()
    assert summary.loc["t2", "speed"] == 20.0 and pd.isna(summary.loc["t1", "label_only"])
    assert list(summary["status"]) == ["ok", "ok", "ok"]

    context = report_view(summary.reset_index(), runs)
    columns = context["metrics"]["columns"]
    # a metric with no number at any point has nothing to show
    assert "compression_ratio" in columns and "speed" in columns
    assert "label_only" not in columns


def test_records_without_any_metric_leave_no_metrics_part(tmp_path):
    paths = [place(tmp_path, record(f"t{n}", n, 1, {})) for n in (1, 2)]
    runs = runs_from_records(paths)
    summary = summarise(runs, STUDY)
    assert summary["speedup"].notna().all()
    assert report_view(summary, runs)["metrics"] is None


def test_a_field_named_like_a_derived_column_keeps_both(tmp_path):
    r = record("t1", 1, 1, {"samples": 5.0, "time_per_epoch_s": 0.7, "peak_rss_mb": 300.0})
    r["resources"]["received"]["nodes"] = 2
    r["resources"]["usage"] = {"cpu_time_s": 1.0, "peak_rss_mb": 250.0}
    r["environment"] |= {"hosts": ["a", "b"], "slurm_partition": "gpu"}
    row = record_row(r)
    # derived columns keep their meaning; the field arrives under its part's prefix
    assert row["samples"] == 96 and row["metric_samples"] == 5.0
    assert row["nodes"] == 1 and row["received_nodes"] == 2
    assert row["peak_rss_mb"] == 300.0 and row["usage_peak_rss_mb"] == 250.0
    assert row["cpu_time_s"] == 1.0 and row["hosts"] == "a,b" and row["partition"] == "gpu"

    runs = runs_from_records([place(tmp_path, r)])
    summary = summarise(runs, STUDY).iloc[0]
    # the summary's own time per epoch (training time / epochs) against the reported one
    assert summary["time_per_epoch_s"] == 1.5 and summary["metric_time_per_epoch_s"] == 0.7
    assert summary["metric_samples"] == 5.0 and summary["peak_rss_mb"] == 300.0


def test_times_measured_elsewhere_have_the_same_derived_columns(tmp_path):
    measured = runs_from_measured(REPO / RTX_STUDY["measured"], study_model(RTX_STUDY, "rtx"))
    from_record = runs_from_records([place(tmp_path, record("t1", 1, 1, {}))])
    assert measured["metric_names"].tolist() == ["[]"] * len(measured)
    assert set(derived_columns(good_record())) <= set(measured) & set(from_record)
    assert measured["startup_s"].isna().all() and not measured["overlapped"].any()
    assert (measured["other_s"] == measured["wall_s"]).all()
