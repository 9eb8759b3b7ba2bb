"""SU in one place (scalestudy.analysis.cost.cost): series overrides and partition
weights reach every SU figure, the summary's `su` and the GPU verdict's included, on one
time basis."""

import pandas as pd
import pytest
import yaml

from scalestudy.analysis.cost.cost import Cost, Rate, charges, cost_view, run_su, within_budget
from scalestudy.analysis.tables import summarise
from scalestudy.sections.gpu_verdict.produce import gpu_verdict_of
from tests.conftest import SCHEMA, study_model
from tests.test_studies import config_error

CPU_TIMES = {1: 100.0, 2: 60.0}  # CPU threads -> whole-job seconds per result
GPU_TIME = 10.0  # 1 core + 1 GPU


def run(series, n, wall, cores, gpus, repeat=1, partition=None):
    return {"study": "s", "series": series, "point": f"{series}-t{n}", "n": n,
            "repeat": repeat, "status": "ok", "reason": None, "wall_s": wall,
            "elapsed_s": wall, "train_s": wall / 2, "mismatch": False, "mismatches": "",
            "cores": cores, "threads": cores, "gpus": gpus, "partition": partition}  # fmt: skip


def cpu_gpu_runs(gpu_partition=None) -> pd.DataFrame:
    """A CPU-thread series at 1 and 2 threads and a GPU series, three repeats each."""
    rows = []
    for k in (1, 2, 3):
        rows += [run("cpu", n, t, n, 0, k) for n, t in CPU_TIMES.items()]
        rows.append(run("gpu", 1, GPU_TIME, 1, 1, k, gpu_partition))
    return pd.DataFrame(rows)


def study(gpu_series=None, cost=None, **more):
    """A CPU and a GPU series; the weights the schema's defaults (1 and 2) unless set."""
    return study_model({"series": {"cpu": {}, "gpu": gpu_series or {}}, "cost": cost or {}} | more)


def by_series(summary: pd.DataFrame) -> dict:
    return {(r["series"], int(r["n"])): r for _, r in summary.iterrows()}


# --- the case --------------------------------------------------------------


def test_a_series_cost_override_reaches_the_gpu_verdict():
    """Issue 11: a GPU series with `cost: {gpu_weight: 50}` was called worth it at
    (1 + 2) x 10 s = 0.0083 SU per result, the study's weights; its own weights make
    it (1 + 50) x 10 s = 0.142 SU, dearer than 1 CPU thread for 100 s (0.0278 SU)."""
    s = study(gpu_series={"cost": {"gpu_weight": 50}})
    runs = cpu_gpu_runs()
    result = gpu_verdict_of(runs, summarise(runs, s), s)
    assert not result.worth_it_size
    (row,) = result.sizes
    assert row.gpu.su == pytest.approx((1 + 50) * GPU_TIME / 3600)
    assert row.best_cpu.su == pytest.approx(1 * 100 / 3600)
    assert row.speedup.value > 1 and row.su_ratio.value > 1 and row.verdict == "not worth"
    # without the override the same GPU point is worth it (3 SU/h x 10 s = 0.0083 SU)
    cheap = gpu_verdict_of(runs, summarise(runs, study()), study())
    assert cheap.worth_it_size == "all" and cheap.sizes[0].gpu.su == pytest.approx(3 * 10 / 3600)


def test_partition_weights_reach_the_verdict():
    """The GPU runs on partition `gpu`, charged 10 per core-hour: (10 + 2) x 10 s =
    0.0333 SU per result, dearer than 1 CPU thread for 100 s."""
    s = study(cost={"partitions": {"gpu": {"core_weight": 10}}})
    runs = cpu_gpu_runs(gpu_partition="gpu")
    result = gpu_verdict_of(runs, summarise(runs, s), s)
    assert result.sizes[0].gpu.su == pytest.approx((10 + 2) * GPU_TIME / 3600)
    assert not result.worth_it_size
    # the same runs on another partition are priced at the study's weights: worth it
    elsewhere = cpu_gpu_runs(gpu_partition="other")
    assert gpu_verdict_of(elsewhere, summarise(elsewhere, s), s).worth_it_size == "all"


def test_verdict_su_and_summary_su_agree_on_whole_job_time():
    """One basis: with `time: train` the verdict compares training times (half the
    whole job here), but its SU per result are the summary's, on whole-job time."""
    s = study(gpu_series={"cost": {"gpu_weight": 50}}, time="train")
    runs = cpu_gpu_runs()
    summary = summarise(runs, s)
    points = by_series(summary)
    (row,) = gpu_verdict_of(runs, summary, s).sizes
    assert row.gpu.time_s == pytest.approx(GPU_TIME / 2)  # the study's time
    assert row.gpu.su == pytest.approx(points[("gpu", 1)]["su"])
    assert row.gpu.su == pytest.approx(51 * GPU_TIME / 3600)  # whole job, not training
    cheapest = points[("cpu", row.best_cpu.threads)]
    assert row.best_cpu.su == pytest.approx(cheapest["su"])
    fastest = points[("cpu", row.fastest_cpu.threads)]
    assert row.fastest_cpu.su == pytest.approx(fastest["su"])
    # break-even: the speedup at which the GPU's SU per result would equal the cheapest's
    assert row.break_even_speedup == pytest.approx(row.speedup.value * row.gpu.su / cheapest["su"])


# --- every SU figure from the one cost object ----------------------------------------


def test_summary_su_relative_su_and_charges_use_the_series_cost():
    s = study(gpu_series={"cost": {"gpu_weight": 50}})
    runs = cpu_gpu_runs()
    points = by_series(summarise(runs, s))
    assert points[("gpu", 1)]["su"] == pytest.approx(51 * GPU_TIME / 3600)
    assert points[("gpu", 1)]["relative_su"] == pytest.approx(1.0)
    assert points[("cpu", 2)]["relative_su"] == pytest.approx(2 * 60 / 100)
    # every run counts in the charges, each at its series' weights
    cpu_su = 3 * sum(n * t for n, t in CPU_TIMES.items()) / 3600
    gpu_su = 3 * 51 * GPU_TIME / 3600
    assert charges(runs, s).su == pytest.approx(cpu_su + gpu_su)
    assert charges(runs, s).gpu_hours == pytest.approx(3 * GPU_TIME / 3600)


def test_charges_price_each_run_on_its_partition():
    s = study(cost={"partitions": {"gpu": {"gpu_weight": 8}}})
    runs = cpu_gpu_runs(gpu_partition="gpu")
    cpu_su = 3 * sum(n * t for n, t in CPU_TIMES.items()) / 3600
    assert charges(runs, s).su == pytest.approx(cpu_su + 3 * (1 + 8) * GPU_TIME / 3600)


def test_failed_and_killed_runs_are_charged_at_their_whole_job_time():
    # a failed run has no wall_s (it times nothing), but its allocation was held for its
    # elapsed time; a run killed at its time limit the same, for the whole limit
    s = study(cost={"partitions": {"gpu": {"gpu_weight": 8}}})
    runs = pd.DataFrame(
        [
            run("cpu", 2, 100.0, 2, 0),
            run("cpu", 2, 30.0, 2, 0, repeat=2) | {"status": "failed", "wall_s": None},
            run("gpu", 1, 60.0, 1, 1, partition="gpu")
            | {"status": "failed", "reason": "time limit of 1 min reached", "wall_s": None},
        ]
    )
    expected = (2 * 100.0 + 2 * 30.0 + (1 + 8) * 60.0) / 3600
    assert charges(runs, s).su == pytest.approx(expected)
    assert list(run_su(runs, s)) == pytest.approx([200 / 3600, 60 / 3600, 540 / 3600])
    assert charges(runs, s).gpu_hours == pytest.approx(60.0 / 3600)


def test_defaults_come_from_the_schema():
    schema = yaml.safe_load(SCHEMA.read_text())["$defs"]["cost"]["properties"]
    defaults = Rate(schema["core_weight"]["default"], schema["gpu_weight"]["default"])
    assert Cost.of(study_model({})).rate == defaults
    assert Cost.of(study_model({"cost": {"gpu_weight": 7}})).rate == Rate(defaults.core_weight, 7)
    # a cost the schema has not completed is refused, not completed here
    with pytest.raises(KeyError):
        Cost.from_config({"gpu_weight": 7})


def test_cost_object_prices_per_hour_and_per_duration():
    cost = Cost.of(study_model({"cost": {"partitions": {"big": {"core_weight": 3}, "x": {}}}}))
    assert cost.per_hour(4, 1) == 6
    assert cost.per_hour(4, 1, "big") == 3 * 4 + 2  # the partition's own core weight
    assert cost.per_hour(4, 1, "x") == 6  # a partition giving no weight: the study's
    assert cost.per_hour(4, 1, "unlisted") == cost.per_hour(4, 1, float("nan")) == 6
    assert cost.su(4, 1, 1800) == pytest.approx(3.0)
    assert cost.su(4, 1, 1800, "big") == pytest.approx(7.0)


def test_series_override_and_provenance_split_series():
    s = study(
        gpu_series={"cost": {"gpu_weight": 50}}, cost={"partitions": {"p": {"core_weight": 4}}}
    )
    gpu = Cost.of(s, "gpu")
    assert gpu.rate == Rate(1, 50)
    # the study's partition keeps its core weight, the series' GPU weight fills the rest
    assert gpu.rate_on("p") == Rate(4, 50)
    assert Cost.of(s, "gpu [GPU model=A100]") == gpu
    assert Cost.of(s, "cpu") == Cost.of(s) == Cost.of(s, "")


@pytest.mark.parametrize(
    "bad, message",
    [
        ({"gpu_weigth": 50}, "studies.s.cost.gpu_weigth: Additional properties"),
        ({"gpu_weight": -1}, "studies.s.cost.gpu_weight: -1 is less than the minimum of 0"),
        ({"core_weight": "1"}, "studies.s.cost.core_weight: '1' is not of type 'number'"),
        ({"partitions": {"p": {"cores": 1}}}, "studies.s.cost.partitions.p.cores: Additional"),
    ],
)
def test_bad_cost_is_refused_by_the_schema_naming_the_key(bad, message):
    # the weights are checked in one place, the config schema, before any job
    assert message in config_error({"studies": {"s": {"workload": "spiral_mlp", "cost": bad}}})


def test_cost_chooses_the_whole_job_time_of_what_its_callers_pass():
    """The time basis of a price is chosen in one place (Cost.su_of): a run's elapsed
    time (a failed run's too), a point's wall time, a time_s only where the study's time
    is the whole job's; never a train time."""
    cost = Cost.from_config(
        {"core_weight": 1, "gpu_weight": 2, "partitions": {"big": {"core_weight": 3}}}
    )
    runs = pd.DataFrame({"cores": [2, 2], "gpus": [0, 1], "elapsed_s": [3600.0, 1800.0],
                         "wall_s": [3600.0, None], "time_s": [60.0, 60.0],
                         "partition": [None, "big"]})  # fmt: skip
    assert cost.su_of(runs).tolist() == [2.0, pytest.approx((3 * 2 + 2) / 2)]
    points = runs.drop(columns="elapsed_s").assign(wall_s=[3600.0, 7200.0])
    assert cost.su_of(points).tolist() == [2.0, 16.0]
    train_only = runs[["cores", "gpus", "time_s"]]
    assert cost.su_of(train_only, "wall").tolist() == [pytest.approx(2 / 60), pytest.approx(4 / 60)]
    with pytest.raises(ValueError, match="no whole-job time"):
        cost.su_of(train_only, "train")


def test_report_shows_the_weights_used():
    s = study(
        gpu_series={"cost": {"gpu_weight": 50}},
        cost={"partitions": {"fat": {"core_weight": 1.5}}},
    )
    view = cost_view(s)
    assert view.rate == "1 × cores + 2 × GPUs"
    assert "whole-job" in view.basis
    others = {o.where: o.rate for o in view.others}
    assert others == {
        "partition fat": "1.5 × cores + 2 × GPUs",
        "series gpu": "1 × cores + 50 × GPUs",
        "series gpu, partition fat": "1.5 × cores + 50 × GPUs",
    }
    assert cost_view(study_model({})).others == []


def test_every_budget_compares_su_at_their_precision():
    from scalestudy.analysis.decisions.recommendation import recommend

    price = 0.05 + 0.1  # 0.15000000000000002
    assert within_budget(price, 0.15) and not within_budget(price, 0.1499999)
    assert list(within_budget([price, float("nan")], 0.15)) == [True, False]
    # the recommendation's "fastest within budget" asks the same function
    rec = recommend([1, 2], [1.0, 1.9], [1, 2], times=[10.0, 5.0], costs=[0.1, price],
                    budget=0.15)  # fmt: skip
    assert rec["fastest_within_budget"] == 2


def test_an_unstable_gpu_point_leaves_the_verdict_open_with_the_runs_to_decide_it():
    # the fault probe: "GPU worth it ... (series gpu)" though the GPU point's runs
    # disagreed (CV 24 %); its interval now says how little they know
    runs = cpu_gpu_runs()
    gpu = runs["series"] == "gpu"
    for column in ("wall_s", "elapsed_s", "train_s"):
        runs.loc[gpu, column] = [4.0, 10.0, 40.0]
    s = study(gpu_series={"cost": {"gpu_weight": 12}})
    (row,) = gpu_verdict_of(runs, summarise(runs, s), s).sizes
    assert row.verdict == "open" and row.su_ratio.lo < 1 < row.su_ratio.hi
    assert set(row.more_runs) == {"gpu-t1", "cpu-t1", "cpu-t2"}  # both ratios open
