"""The price of a study before it runs (scalestudy.analysis.cost.plan,
`snakemake results/plan.html`), and its budget refused before any job."""

import json
import sys

import pandas as pd
import pytest

from scalestudy.analysis.cost.plan import (
    LIMIT,
    MEASURED,
    MODEL,
    NEIGHBOUR,
    PRICE_MARGIN,
    budget_problem,
    job_price,
    study_plan,
)
from scalestudy.contract import EarlierAnalysis, EarlierSeries
from tests.conftest import study_model

PY = sys.executable


def study(**extra):
    return study_model(
        {"scaling": {"axis": "threads", "points": [1, 2, 4]}, "repeats": 3} | extra, "c"
    )


def by_point(plan: dict) -> dict:
    return {r.point.label: r for r in plan.rows}


def test_without_earlier_runs_every_job_is_priced_at_its_time_limit():
    plan = study(resources={"runtime": 10}, cost={"core_weight": 2})
    rows = by_point(plan := study_plan(plan))
    assert [r.basis for r in rows.values()] == [LIMIT] * 3
    # 4 cores x 2 SU per core-hour x 10 min
    assert rows["t4"].su_per_job == pytest.approx(4 * 2 * 10 / 60)
    assert rows["t4"].su == pytest.approx(3 * 4 * 2 * 10 / 60)
    assert plan.totals.jobs == 9 and plan.totals.upper_bound
    assert plan.totals.slurm_jobs is None  # each run is a job of its own
    assert plan.totals.su == pytest.approx(3 * (1 + 2 + 4) * 2 * 10 / 60)
    assert plan.totals.seconds_to_run == 9 * 600


def test_earlier_runs_price_their_points_and_the_model_the_others():
    runs = pd.DataFrame(
        {"point": ["t1", "t1", "t1", "t2", "t2"], "status": ["ok", "ok", "failed", "ok", "ok"],
         "wall_s": [100.0, 110.0, None, 60.0, 70.0]}
    )  # fmt: skip
    # the fitted model's curve: speedup 1, 1.6, 2.5 at N = 1, 2, 4 against 105 s, the
    # lower end of its prediction band 1, 1.4, 1.2: at N = 4 an upper time of 87.5 s,
    # slower than the 65 s of N = 2, its measured neighbour
    analysis = earlier({"n": [1, 2, 4, 8], "speedup": [1, 1.6, 2.5, 3.0],
                        "band_lo": [1, 1.4, 1.2, 1.1], "base_time_s": 105.0})  # fmt: skip
    plan = study_plan(study(), runs, analysis, finished={("t1", 1), ("t1", 2)})
    rows = by_point(plan)
    assert (rows["t1"].basis, rows["t1"].seconds, rows["t1"].earlier_runs) == (
        MEASURED, 105.0, 2
    )  # fmt: skip
    assert rows["t2"].seconds == 65.0
    assert rows["t4"].basis == MODEL
    assert rows["t4"].seconds == pytest.approx(105 / 1.2 * PRICE_MARGIN)
    assert rows["t4"].price_basis == "the fitted model's upper prediction, × 1.5 margin"
    assert rows["t1"].done == 2 and rows["t1"].to_run == 1
    assert plan.totals.done == 2 and plan.totals.to_run == 7
    assert not plan.totals.upper_bound
    assert rows["t1"].su_to_run == pytest.approx(105 / 3600)
    # where the model says faster than the neighbour, the neighbour prices it
    analysis.series[0].curve["band_lo"] = [1, 1.4, 2.0, 2.4]
    rows = by_point(study_plan(study(), runs, analysis))
    assert rows["t4"].basis == NEIGHBOUR
    assert rows["t4"].seconds == pytest.approx(65.0 * PRICE_MARGIN)


def test_an_unmeasured_point_is_priced_from_its_measured_neighbour_not_its_time_limit():
    from scalestudy.report.rendering import environment

    # issue 37's study: N = 8 was priced at 8 cores x its 5-minute limit, 0.67 SU,
    # while the measured N = 4 runs cost 0.019 SU each, and its round 2 was cut
    runs = pd.DataFrame({"point": ["t4"] * 3, "status": ["ok"] * 3, "wall_s": [17.0, 16.5, 17.5]})
    threads = {"scaling": {"axis": "threads", "points": [4, 8, 16]}, "resources": {"runtime": 5}}
    rows = by_point(plan := study_plan(study_model(threads, "c"), runs))
    assert rows["t8"].basis == NEIGHBOUR and rows["t8"].price_from_n == 4
    # no faster than N = 4, times the margin: 8 cores x 25.5 s, not 8 x 300 s
    assert rows["t8"].seconds == pytest.approx(17.0 * PRICE_MARGIN)
    assert rows["t8"].su_per_job == pytest.approx(8 * 17.0 * PRICE_MARGIN / 3600)
    assert rows["t8"].price_basis == "from N = 4 measured, × 1.5 margin"
    html = environment().get_template("plan.html.j2").render(title="t", plans=[plan], generated="")
    assert "<td>from N = 4 measured, × 1.5 margin</td>" in html
    assert "<td>median of 3 earlier runs</td>" in html
    # the nearest point measured below it prices a point, the nearest above where none
    # is below: no more core-seconds than it (a strong-scaling efficiency does not
    # fall as N falls)
    assert rows["t16"].price_from_n == 4
    rows = by_point(study_plan(study(), runs.assign(point="t2")))
    assert rows["t4"].price_from_n == 2
    assert rows["t1"].seconds == pytest.approx(17.0 * 2 * PRICE_MARGIN)
    # weak scaling: a run at fewer units takes no longer
    weak = study(scaling={"axis": "threads", "points": [1, 2, 4], "kind": "weak"})
    assert by_point(study_plan(weak, runs.assign(point="t2")))["t1"].seconds == (
        pytest.approx(17.0 * PRICE_MARGIN)
    )  # fmt: skip


def test_a_budget_holds_back_a_margin_over_a_measured_median_too():
    # half the runs are slower than their median: adaptive rounds admitted on medians
    # went over their budgets (benchmarks/adaptive_simulator.py --budget 0.3: 12 of 1000)
    price = job_price(2, {1: 10.0, 2: 6.0}, limit_s=60.0)
    assert (price["basis"], price["seconds"]) == (MEASURED, 6.0)
    assert price["reserve_s"] == pytest.approx(6.0 * PRICE_MARGIN)
    assert job_price(2, {2: 50.0}, limit_s=60.0)["reserve_s"] == 60.0  # at most the limit
    # an estimate holds its margin already
    price = job_price(4, {1: 10.0, 2: 6.0}, limit_s=60.0)
    assert price["reserve_s"] == price["seconds"] == pytest.approx(6.0 * PRICE_MARGIN)


def test_a_price_from_measurements_is_capped_by_the_time_limit():
    runs = pd.DataFrame({"point": ["t1"] * 2, "status": ["ok"] * 2, "wall_s": [500.0, 520.0]})
    rows = by_point(study_plan(study(resources={"runtime": 10}), runs))
    # 510 s x 1.5 is above the 600 s limit, where the run would be stopped
    assert rows["t2"].basis == LIMIT and rows["t2"].seconds == 600
    assert rows["t2"].price_basis == "upper bound: the 10-min time limit"


def test_a_point_whose_runs_all_failed_prices_itself_and_those_above_at_the_limit():
    # killed (a time or memory limit) says "slow or big", not how slow: no estimate
    runs = pd.DataFrame(
        {"point": ["t1", "t1", "t2", "t2"], "status": ["ok", "ok", "failed", "failed"],
         "wall_s": [10.0, 10.0, None, None]}
    )  # fmt: skip
    rows = by_point(study_plan(study(resources={"runtime": 10}), runs))
    assert [rows[p].basis for p in ("t1", "t2", "t4")] == [MEASURED, LIMIT, LIMIT]


def earlier(curve: dict) -> EarlierAnalysis:
    """An earlier analysis whose one series' fitted curve is `curve`."""
    return EarlierAnalysis(2, None, None, [], [EarlierSeries("", curve, [])])


def test_the_model_is_not_used_outside_its_curve_or_on_another_time_basis():
    curve = {"n": [1, 2], "speedup": [1, 1.5], "band_lo": [1, 1.2], "base_time_s": 10.0}
    analysis = earlier(curve)
    assert by_point(study_plan(study(), None, analysis))["t2"].basis == MODEL
    assert by_point(study_plan(study(), None, analysis))["t4"].basis == LIMIT
    trained = study(time="train")
    assert by_point(study_plan(trained, None, analysis))["t2"].basis == LIMIT


def test_series_are_priced_on_their_own_weights():
    plan = study_plan(
        study(series={"a": {}, "g": {"scaling": {"device": "gpu", "axis": "devices",
                                                 "points": [1]}, "cost": {"gpu_weight": 50}}},
              resources={"runtime": 60})
    )  # fmt: skip
    rows = by_point(plan)
    assert rows["g-g1"].su_per_job == pytest.approx(1 + 50)
    assert rows["a-t2"].su_per_job == pytest.approx(2)


def test_a_plan_over_its_budget_is_refused_naming_the_numbers():
    plan = study_plan(study(budget_su=1, resources={"runtime": 10}))
    assert plan.over_budget
    message = budget_problem(plan)
    assert message.startswith("studies.c.budget_su: the plan is estimated at 3.5 SU (9 jobs)")
    assert "above the budget of 1 SU" in message and "time limit, an upper bound" in message
    assert budget_problem(study_plan(study(budget_su=100))) is None


def test_a_budget_equal_to_the_price_is_within_it_and_a_hair_below_is_not():
    # 3 min at 1 and 2 cores: 0.05 + 0.1 SU, which floats sum to 0.15000000000000002
    # (the fault probe's "estimated at 0.15 SU (6 jobs), above the budget of 0.15 SU")
    priced = {"scaling": {"axis": "threads", "points": [1, 2]}, "repeats": 1,
              "resources": {"runtime": 3}}  # fmt: skip
    plan = study_plan(study_model(priced | {"budget_su": 0.15}, "c"))
    assert plan.totals.su != 0.15 and plan.totals.su == pytest.approx(0.15)
    assert not plan.over_budget and budget_problem(plan) is None
    assert study_plan(study_model(priced | {"budget_su": 0.1499999}, "c")).over_budget


# ------------------------------------------------------------- through the workflow
PROGRAM = "import sys, time; time.sleep(0.4 / int(sys.argv[1]))"


def command_study(**extra) -> dict:
    return {
        "workload": "command",
        "params": {"command": [PY, "-c", PROGRAM, "{n}"]},
        "scaling": {"axis": "threads", "points": [1, 2]},
        "repeats": 2,
        "resources": {"runtime": 5},
        "include_shared": True,  # other tests may run beside this one; not under test here
    } | extra


@pytest.mark.slow
@pytest.mark.waits
def test_the_plan_target_runs_nothing_and_prices_from_earlier_runs(workflow):
    # the studies `only` names, and no other
    workflow.write_config({"only": ["c"], "studies": {"c": command_study(), "d": command_study()}})
    workflow.snakemake("results/plan.html", "--cores", "1")
    assert not (workflow.root / "results" / "c").exists()  # no job ran
    html = (workflow.root / "results" / "plan.html").read_text()
    assert 'id="c"' in html and 'id="d"' not in html
    # priced at their limits: the headline says it is a bound, and why
    assert "4 jobs, at most 0.5 SU in all" in html and "upper bound: the 5-min time limit" in html
    assert "an upper bound: a job with no measured run to price it from" in html
    assert "One after another they take at most 20.0 min" in html
    # locally there is no queue: every job waits 0, and plan.json says so per job
    assert "Locally there is no queue" in html
    found = json.loads((workflow.root / "results" / "plan.json").read_text())
    assert found["queue"] == "local" and found["calls"] == 0
    (c,) = found["studies"]
    assert [(j["point"], j["predicted_wait_s"], j["start_basis"]) for j in c["jobs"]] == [
        ("t1", 0.0, "local"), ("t1", 0.0, "local"), ("t2", 0.0, "local"), ("t2", 0.0, "local")
    ]  # fmt: skip
    # after the study ran, its points are priced from their runs, and nothing is left
    workflow.snakemake("--profile", "profiles/local", "results/c/summary.csv")
    workflow.snakemake("results/plan.html", "--cores", "1")
    html = (workflow.root / "results" / "plan.html").read_text()
    assert "median of 2 earlier runs" in html and "upper bound" not in html
    assert "4 have run already; the 0 left cost about 0 SU" in html
    runs = pd.read_csv(workflow.root / "results" / "c" / "runs.csv")
    assert json.loads((workflow.root / "results" / "c" / "analysis.json").read_text())
    assert len(runs) == 4


@pytest.mark.slow
@pytest.mark.waits
def test_a_study_over_its_budget_is_refused_before_any_job(workflow):
    workflow.write_config({"studies": {"c": command_study(budget_su=0.1)}})
    proc = workflow.snakemake("--profile", "profiles/local", check=False)
    assert proc.returncode != 0
    assert "studies.c.budget_su: the plan is estimated at 0.5 SU (4 jobs)" in proc.output
    assert "above the budget of 0.1 SU" in proc.output
    assert not (workflow.root / "results" / "c").exists()
    # the plan itself still shows why
    workflow.snakemake("results/plan.html", "--cores", "1")
    assert "Over the study" in (workflow.root / "results" / "plan.html").read_text()


def test_a_packed_study_says_how_many_slurm_jobs_its_runs_make():
    from scalestudy.report.rendering import environment

    plan = study_plan(study(submission={"pack_repeats": True}))
    assert plan.totals.jobs == 9 and plan.totals.slurm_jobs == 3
    # each point's job, named as the workflow's packing group (study.slurm.shared_job)
    assert [r.slurm_job for r in plan.rows] == ["c-t1", "c-t2", "c-t4"]
    html = environment().get_template("plan.html.j2").render(title="t", plans=[plan], generated="")
    assert "9 jobs, at most" in html  # priced at their time limits
    assert "(on Slurm, 3 jobs: the repeats of a point share one" in html


def test_a_paired_study_counts_one_slurm_job_per_point_for_both_variants():
    """On Slurm a's and b's runs of a point share one job (its packing group,
    study.slurm.shared_job), pack_repeats or not."""
    from scalestudy.report.rendering import environment

    paired = study(compare={"a": {}, "b": {"params": {"values": {"x": 2}}}})
    plan = study_plan(paired)
    assert plan.totals.jobs == 2 * 3 * 3 and plan.totals.slurm_jobs == 3
    assert {r.slurm_job for r in plan.rows} == {"c-n1", "c-n2", "c-n4"}
    html = environment().get_template("plan.html.j2").render(title="t", plans=[plan], generated="")
    assert "(on Slurm, 3 jobs: a's and b's runs of a point share one, <code>compare</code>)" in html


def test_the_plan_page_says_the_time_and_the_budget_as_two_sentences():
    from scalestudy.report.rendering import environment

    plan = study_plan(study(budget_su=100))
    html = environment().get_template("plan.html.j2").render(title="t", plans=[plan], generated="")
    assert " min. Within the study's budget of 100 SU." in html  # was "min.Within"


def test_an_adaptive_studys_plan_says_what_its_rounds_have_run_so_far():
    from scalestudy.report.rendering import environment

    adaptive = study(budget_su=10, adaptive={"first_points": 2})
    plan = study_plan(adaptive)
    assert plan.so_far is None  # nothing has run: round 1 is the whole price
    runs = pd.DataFrame(
        {"point": ["t1"] * 3 + ["t2"] * 3 + ["t4"] * 2, "n": [1] * 3 + [2] * 3 + [4] * 2,
         "status": ["ok"] * 8, "wall_s": [36.0] * 3 + [18.0] * 3 + [9.0] * 2,
         "elapsed_s": [36.0] * 3 + [18.0] * 3 + [9.0] * 2,
         "cores": [1] * 3 + [2] * 3 + [4] * 2, "gpus": [0] * 8}
    )  # fmt: skip
    plan = study_plan(adaptive, runs)
    # 8 runs of 36 core-seconds each: 0.08 SU at 1 SU per core-hour
    assert plan.so_far.runs == 8 and plan.so_far.su == pytest.approx(8 * 36 / 3600)
    html = environment().get_template("plan.html.j2").render(title="t", plans=[plan], generated="")
    assert "So far the study has made 8 runs in all its rounds, about 0.08 SU" in html
