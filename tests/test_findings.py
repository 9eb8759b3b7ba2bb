"""The report's numbers are computed at aggregation (scalestudy.analysis.findings) and written to
analysis.json as plain JSON: numbers stay numbers, missing ones are null."""

import json

import pandas as pd
import pytest

from scalestudy.analysis.pipeline import aggregate
from scalestudy.records import write_json_atomic
from scalestudy.sections.staging.produce import staging
from tests.conftest import REPO, study_model
from tests.test_analysis import RTX_STUDY
from tests.test_records import good_record


def rtx_findings() -> dict:
    study = study_model(RTX_STUDY | {"description": "published"}, "rtx")
    return json.loads(aggregate(study, [REPO / RTX_STUDY["measured"]]).analysis_json())["findings"]


def test_aggregation_writes_the_findings_into_valid_json(tmp_path):
    study = study_model(RTX_STUDY, "rtx")
    out = {k: tmp_path / f"{k}.{ext}" for k, ext in
           [("runs", "csv"), ("summary", "csv"), ("analysis", "json")]}  # fmt: skip
    aggregate(study, [str(REPO / RTX_STUDY["measured"])]).write(out)
    found = json.loads(out["analysis"].read_text())["findings"]
    assert found["study"]["name"] == "rtx" and found["study"]["unit"] == "GPUs"
    assert found["base"] == {"point": "g1", "n": 1, "time_s": 171.0}
    assert found["repeats"] == [1, 1] and found["failures"] == []


def test_the_answer_is_numbers():
    (answer,) = rtx_findings()["answers"]
    assert answer["worth_n"] == 6 and answer["base_n"] == 1
    assert answer["speedup"] == pytest.approx(171 / 52)
    assert answer["relative_su"] == pytest.approx(6 * 52 / 171)
    assert answer["stopped_at"]["from_n"] == 6 and answer["stopped_at"]["to_n"] == 7
    assert answer["stopped_at"]["marginal"] == pytest.approx(171 / 51 - 171 / 52)
    assert answer["speedup_ci_lo"] is None  # one run per point: no interval
    assert answer["usable_points"] is None  # a model fitted


def test_charges_and_the_cost_model_are_the_studys():
    found = rtx_findings()
    seconds = [171, 108, 79, 64, 57, 52, 51, 49, 49, 49]
    gpu_hours = sum(n * t for n, t in enumerate(seconds, 1)) / 3600
    assert found["charges"]["gpu_hours"] == pytest.approx(gpu_hours)
    assert found["charges"]["su"] == pytest.approx(3 * gpu_hours)  # 1 core + 2 x 1 GPU
    assert found["cost"]["rate"] == "1 × cores + 2 × GPUs"


def test_staging_growth_with_copies_at_once():
    runs = pd.DataFrame(
        [
            {"status": "ok", "stagers": k, "stage_s": t, "stage_s_median": m, "dataset_mb": 60.0}
            for k, t, m in [(1, 1.0, 1.0), (1, 1.2, 1.2), (4, 2.0, 1.5), (4, 2.4, 1.7)]
        ]
        + [{"status": "failed", "stagers": 8, "stage_s": None}]
    )
    rows = staging(runs).rows
    assert [r.k for r in rows] == [1, 4]  # the failed run is no point
    assert rows[1].growth == pytest.approx(2.0)  # median 2.2 s against 1.1 s
    assert rows[1].mb_per_s == pytest.approx(4 * 60 / 2.2)
    assert rows[1].typical_s == pytest.approx(1.6)
    assert staging(runs[runs["stagers"] == 1]) is None  # one k: nothing to compare


def test_failures_mismatches_and_missing_numbers_are_json(tmp_path):
    study = study_model({"scaling": {"axis": "threads"}}, "s")
    mismatched = good_record()["resources"] | {
        "mismatch": True,
        "mismatches": ["cpus: asked for 2, only 1 usable (affinity)"],
    }
    records = [
        good_record(),
        good_record(point="t2", n=2, resources=mismatched),
        good_record(point="t2", n=2, repeat=2, status="failed", exit_code=1, wall_s=1.0),
    ]
    paths = []
    for r in records:
        path = tmp_path / "results" / "s" / "runs" / r["point"] / f"rep{r['repeat']}.json"
        write_json_atomic(path, r | {"run_id": f"run-of-{r['point']}-rep{r['repeat']}"})
        paths.append(path)
    analysis = json.loads(aggregate(study, paths).analysis_json())
    found = analysis["findings"]
    json.dumps(found, allow_nan=False)  # NaN became null
    assert found["failures"] == [{"point": "t2", "repeat": 2, "reason": None}]
    assert found["mismatches"] == [
        {"point": "t2", "repeat": 1, "what": "cpus: asked for 2, only 1 usable (affinity)"}
    ]
    # every run asked for one core; the failed one is charged too
    assert found["charges"]["core_hours"] == pytest.approx((2.5 + 2.5 + 1.0) / 3600)
    assert (found["fingerprint"]["hosts"], found["fingerprint"]["python"]) == ("h", "3.11.7")
    assert found["telemetry"] == [] and analysis["staging"] is None and found["scheduler"] == []
    assert found["received"][1]["got"][0] == ["cpus_usable", "2"]


def test_runs_that_shared_a_slurm_job_and_whether_it_had_its_nodes_to_itself():
    """Packed repeats (submission.pack_repeats) share one Slurm job: each run names the
    runs it shared it with, and the study says how many jobs its runs took."""
    from scalestudy.analysis.findings import allocations, scheduler

    runs = pd.DataFrame(
        {
            "point": ["t1", "t1", "t1", "t2", "t2", "t2"],
            "repeat": [1, 2, 3, 1, 2, 3],
            "slurm_job_id": ["7", "7", "7", "8", "8", "8"],
            "slurm_oversubscribe": ["NO"] * 3 + ["OK"] * 3,
            "queue_wait_s": [1.0] * 6,
            "elapsed_s": [10.0] * 6,
            "status": ["ok"] * 6,
        }
    )
    jobs = scheduler(runs)
    assert jobs[0]["shared_with"] == [["t1", 2], ["t1", 3]]
    assert jobs[4]["shared_with"] == [["t2", 1], ["t2", 3]]
    assert [j["exclusive"] for j in jobs] == [True] * 3 + [False] * 3
    assert allocations(jobs) == {"runs": 6, "jobs": 2, "shared_jobs": 2, "exclusive": "some"}
    # one job per run, records without the field (older ones): nothing shared, unknown
    single = runs.assign(slurm_job_id=[str(i) for i in range(6)]).drop(
        columns="slurm_oversubscribe"
    )
    jobs = scheduler(single)
    assert all(j["shared_with"] == [] and j["exclusive"] is None for j in jobs)
    assert allocations(jobs) == {"runs": 6, "jobs": 6, "shared_jobs": 0, "exclusive": None}
    assert allocations([]) is None
