"""The report formats what aggregation computed: its sentences come from the template,
its numbers from analysis.json and summary.csv, its files from the rule's inputs."""

import json
import sys
from types import SimpleNamespace

import pandas as pd
import pytest

from scalestudy.analysis.pipeline import aggregate, analyse
from scalestudy.report.rendering import render
from scalestudy.report.views import cell, study_view
from tests.conftest import REPO, study_model
from tests.test_analysis import RTX_STUDY

sys.path.insert(0, str(REPO / "scripts"))
from report import build  # noqa: E402

SVG = '<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"/>'


def aggregated(folder, name: str = "rtx", **study) -> dict:
    """A study of the published RTX times aggregated into `folder` as the workflow does."""
    folder.mkdir(parents=True)
    out = {k: folder / f"{k}.{ext}" for k, ext in
           [("runs", "csv"), ("summary", "csv"), ("analysis", "json")]}  # fmt: skip
    aggregate(study_model(RTX_STUDY | study, name), [str(REPO / RTX_STUDY["measured"])]).write(out)
    return out


def text_of(html: str) -> str:
    import re

    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)).replace("&#39;", "'")


def test_the_answer_is_said_by_the_template(tmp_path):
    out = aggregated(tmp_path / "rtx", recommend={"deadline_s": 60, "budget_su": 0.1})
    view = study_view(json.loads(out["analysis"].read_text()), pd.read_csv(out["summary"]), {})
    text = text_of(render("t", [view]))
    # efficiency beside speedup and cost (issue 15)
    assert (
        "Ask for 6 GPUs: speedup 3.29, efficiency 55 %, 1.82x the SU of the base case N = 1."
    ) in text
    assert (
        "Going from 6 to 7 GPUs adds only 0.06 speedup per added unit (below 0.1), "
        "so it is not worth its cost."
    ) in text
    assert "Cheapest point within the deadline of 60 s: N = " in text
    assert "Fastest point within the budget of 0.1 SU: " in text
    assert "Prediction (model" in text and "extrapolated beyond the measured range" in text
    assert "point g1 (N = 1), median time 171 s" in text


def test_a_table_cell_has_its_columns_precision(tmp_path):
    out = aggregated(tmp_path / "rtx")
    view = study_view(json.loads(out["analysis"].read_text()), pd.read_csv(out["summary"]), {})
    speedup = view["columns"].index("speedup [95 % CI]")
    assert [r["cells"][speedup] for r in view["rows"]][:3] == ["1.00", "1.58", "2.16"]
    assert view["charges"]["su"] == f"{3 * 3157 / 3600:.4f}"


def test_a_time_interval_short_of_its_stated_level_says_the_level_it_reaches():
    # from the analysis (intervals.median_ci_coverage): 3 runs reach 93 %, 6 the 95 %
    # the header states
    row = {"time_s": 10.0, "time_ci_lo": 9.0, "time_ci_hi": 11.0}
    assert cell(row | {"time_ci_level": 0.93}, "time_s") == "10 [9, 11] (93 % CI)"
    assert cell(row | {"time_ci_level": float("nan")}, "time_s") == "10 [9, 11]"
    assert cell(row, "time_s") == "10 [9, 11]"


def test_an_analysis_without_findings_is_refused(tmp_path):
    out = aggregated(tmp_path / "rtx")
    analysis = json.loads(out["analysis"].read_text())
    del analysis["findings"]
    with pytest.raises(ValueError, match="missing key 'Analysis.findings'"):
        study_view(analysis, pd.read_csv(out["summary"]), {})


def test_the_report_reads_its_declared_inputs_and_matches_them_by_study(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    studies = {"b_study": "second", "a_study": "first"}  # the config's order, not sorted
    inputs = SimpleNamespace(summaries=[], analyses=[], figures=[], profiles=[])
    for name, description in studies.items():
        out = aggregated(tmp_path / "results" / name, name, description=description)
        for figure in ("speedup", "cost"):
            path = tmp_path / "results" / name / "figures" / f"{figure}.svg"
            path.parent.mkdir(exist_ok=True)
            path.write_text(SVG.replace("/>", f"><desc>{name}</desc></svg>"))
            inputs.figures.append(str(path.relative_to(tmp_path)))
        inputs.summaries.append(str(out["summary"].relative_to(tmp_path)))
        inputs.analyses.append(str(out["analysis"].relative_to(tmp_path)))
    inputs.summaries.reverse()  # matched by folder, not by position
    build(inputs, "two studies", tmp_path / "results" / "report.html")
    html = (tmp_path / "results" / "report.html").read_text()
    assert html.index('id="study-b_study"') < html.index('id="study-a_study"')
    assert "<p>second</p>" in html and "<p>first</p>" in html
    assert html.count('data-figure="speedup"') == 2


def test_a_profile_trace_is_linked_from_its_record_alone(tmp_path):
    """The report reads only declared inputs: whether the trace exists, and its size,
    come from the profiling run's record (metric trace_mb), not from the trace file."""
    from scalestudy.records import write_json_atomic
    from scalestudy.report.views import profile_links
    from tests.test_records import good_record

    folder = tmp_path / "results" / "s" / "profile"
    traced, untraced, failed = folder / "t1.json", folder / "t2.json", folder / "t4.json"
    write_json_atomic(traced, good_record(metrics={"trace_mb": 2.25}))
    write_json_atomic(untraced, good_record(point="t2"))
    write_json_atomic(failed, good_record(point="t4", status="failed", reason="OOM"))
    links = profile_links([traced, untraced, failed], tmp_path / "results" / "report.html")
    assert links[0] == {"point": "t1", "href": "s/profile/t1.trace.json", "size_mb": "2.2",
                        "reason": None}  # fmt: skip
    assert links[1]["href"] is None and links[1]["reason"] == "the run wrote no trace"
    assert links[2]["href"] is None and links[2]["reason"] == "OOM"


def test_an_undecided_answer_says_what_would_decide_it(tmp_path):
    """Issue 16: one run per point gives no interval: the answer is not decided, and
    the report names the runs (by hand, for published times) that would decide it."""
    out = aggregated(tmp_path / "rtx")
    view = study_view(json.loads(out["analysis"].read_text()), pd.read_csv(out["summary"]), {})
    text = text_of(render("t", [view]))
    assert "Not decided by these runs: a step near the answer has an interval" in text
    assert (
        "What would likely decide it: 1 more run at N = 5, 1 more run at N = 6, "
        "1 more run at N = 7 (about 0.79 SU), measured as before and added to the CSV."
    ) in text


def grid_analysis():
    """A 2 x 2 threads x processes grid (issue 12) aggregated as the workflow does: the
    contract of its analysis.json, and its summary."""
    import numpy as np

    from scalestudy.study.points import series_of_points
    from tests.test_studies import model

    scaling = {"axis": "cores", "grid": {"processes_per_node": [1, 2], "threads": [1, 2]}}
    study = model({"studies": {"g": {"workload": "spiral_mlp", "scaling": scaling}}}, "g")
    speed = {"p1-c1-1x1": 100, "p1-c2-1x2": 70, "p2-c2-2x1": 52, "p2-c4-2x2": 30}
    rng = np.random.default_rng(0)
    rows = [
        {"study": "g", "point": p, "series": series, "n": int(p.split("-")[1][1:]),
         "repeat": k, "status": "ok", "reason": None, "wall_s": t, "elapsed_s": t,
         "train_s": t, "mismatch": False, "mismatches": "", "cores": int(p.split("-")[1][1:]),
         "gpus": 0, "overlapped": False}
        for p, series in series_of_points(study).items()
        for k, t in enumerate(speed[p] * np.exp(rng.normal(0, 0.01, 3)), 1)
    ]  # fmt: skip
    result = analyse(study, pd.DataFrame(rows))
    return result.analysis, result.summary


def test_a_grid_shows_its_heat_map_and_the_best_layout_per_total(tmp_path):
    """Issue 12: a 2 x 2 threads x processes grid; 2 cores as 2 x 1 is faster than 1 x 2."""
    analysis, summary = grid_analysis()
    text = text_of(render("t", [study_view(analysis, summary, {})]))
    assert "The best layout for each total" in text
    assert "For 2 cores: 1 node, 2 processes per node, 1 thread each (p2-c2-2x1, 52" in text
    assert "1.33x [" in text
    assert "than 1 node, 1 process per node, 2 threads each (p1-c2-1x2)" in text
    # efficiency against the grid's one base case, 1 core at 100 s: 2 x 1 at 52.5 s is 95 %
    assert "52.5 s 95% efficiency 2 cores" in text
    html = render("t", [study_view(analysis, summary, {})])
    assert html.count('class="band-') == 4 and 'band-excellent best"' in html


def adaptive_result(points: list[int], times: dict[int, list[float]], failed=()):
    """An adaptive study (first_repeats 4) whose rounds 1 and 2 were planned from these
    runs, aggregated; `failed`: (N, repeat) of runs that failed after their time."""
    from scalestudy.analysis.cost.plan import round_plan
    from tests.test_studies import model

    adaptive = {"workload": "spiral_mlp", "scaling": {"points": points}, "budget_su": 1,
                "adaptive": {"target_ci": 0.5, "first_repeats": 4}}  # fmt: skip
    study = model({"studies": {"a": adaptive}}, "a")
    rows = [
        {"study": "a", "point": f"t{n}", "series": "", "n": n, "repeat": k, "status": "ok",
         "reason": None, "wall_s": t, "elapsed_s": t, "train_s": t, "mismatch": False,
         "mismatches": "", "cores": n, "gpus": 0, "overlapped": False}
        for n, ts in times.items()
        for k, t in enumerate(ts, 1)
    ]  # fmt: skip
    runs = pd.DataFrame(rows)
    for n, k in failed:  # a failed run times nothing, but held its allocation
        at = (runs["n"] == n) & (runs["repeat"] == k)
        runs.loc[at, ["status", "reason", "wall_s", "train_s"]] = ["failed", "exit 1", None, None]
    plans = [round_plan(study, 1, None), round_plan(study, 2, runs)]
    return analyse(study, runs, plans), plans


def adaptive_report(points: list[int], times: dict[int, list[float]]) -> tuple[str, list]:
    """The report's text of adaptive_result, and its plans."""
    result, plans = adaptive_result(points, times)
    return text_of(render("t", [study_view(result.analysis_as_read(), result.summary, {})])), plans


def test_an_adaptive_study_costs_its_charges_failed_runs_included():
    """Issue 26: the rounds priced wall_s, empty for a failed run, and the charges each
    run's elapsed time: the report said the study cost less than it was charged."""
    times = {1: [10.0, 10.1, 9.9, 10.0], 2: [5.0, 5.1, 4.9, 5.0, 60.0, 60.0]}
    result, plans = adaptive_result([1, 2], times, failed=[(2, 5), (2, 6)])
    assert plans[-1].stop.reason == "decided"
    analysis = result.analysis_as_read()
    spent = analysis.findings.adaptive.spent_su
    assert spent == pytest.approx((40 + 2 * (20 + 2 * 60)) / 3600)
    assert spent == pytest.approx(analysis.findings.charges.su)
    text = text_of(render("t", [study_view(analysis, result.summary, {})]))
    assert f"The study cost {spent:.3g} SU" in text


def test_a_step_decided_inside_the_indifference_zone_says_both_ends_are_right():
    """Issue 36: a step whose interval reaches across the threshold, narrower than the
    zone, is decided; the words must not say "above 0.1" of an interval that is not."""
    text, plans = adaptive_report([1, 2], {1: [10.0, 10.1, 9.9, 10.0], 2: [9.0, 9.15, 8.95, 9.1]})
    assert plans[-1].stop.reason == "decided"
    assert (
        "Decided by these runs: the step from 1 to 2 adds 0.10 [0.09, 0.12] speedup per unit, "
        "within the indifference zone 0.1 ± 0.075, so N = 1 and N = 2 are both right "
        "(95 % interval)."
    ) in text, text
    # the rounds' stop says it too
    assert "N = 1 and N = 2 are both right: the step 1" in text
    assert "adds 0.105 [0.0904, 0.122] speedup per unit, within the indifference zone" in text


def test_a_decided_adaptive_answer_does_not_ask_for_fixed_repeats(tmp_path):
    """Issue 16: the default study answered "Decided by these runs", then told to raise
    `repeats` (which an adaptive study does not run) for its unstable points, and to
    measure beyond its largest candidate as if it were not decided."""
    # t2's last run an outlier: unstable, yet the step 1 -> 2 clearly pays
    text, plans = adaptive_report([1, 2], {1: [10.0, 10.1, 9.9, 10.0], 2: [5.0, 5.1, 4.9, 9.0]})
    assert plans[-1].stop.reason == "decided"
    # the answer is the last candidate: the step into it is said, with its interval
    assert "Decided by these runs: the step from 1 to 2 adds " in text
    assert "speedup per unit, above 0.1 (95 % interval)." in text
    # the stop's words follow the heading without repeating it ("decided: decided: ...")
    assert "Stopped: the answer is decided: ask for N = 2 (speedup" in text
    # the rounds' note says how candidates are chosen as the rules do now
    assert "candidates further away are not run" in text and "next candidate up" not in text
    assert "point t2 is unstable (its repeats disagree, so it stays out of the model fits)" in (
        text
    )
    assert "raise repeats" not in text and "Caution: point" not in text
    assert "N = 2 is the largest candidate; add larger ones" in text


def test_a_round_the_budget_refused_names_its_candidates_by_n_measured_or_not():
    # t8 was never measured: the view knew only the measured points' N, and said
    # "2 at N = t8"
    from scalestudy.contract import AdaptiveStop, RefusedRound, Round, Rounds
    from scalestudy.report.views import adaptive_view

    rounds = Rounds(
        rounds=[Round(round=1, added={"t1": 3, "t2": 3}, su=0.01,
                      why={"t1": "round 1: the base case", "t2": "round 1: a first step up"})],
        refused=RefusedRound(added={"t8": 2}, why={"t8": "a jump"}, round_su=0.267),
        spent_su=0.011, grid_su=0.4, relative_to_grid=0.0275, budget_needed=0.278,
        points={"t1": 1, "t2": 2, "t4": 4, "t8": 8},
        stop=AdaptiveStop(reason="budget", text="the next round would pass the budget"),
        decided=False, budget_su=0.1, grid_repeats=3, grid_su_estimated=True,
        grid_su_bound=False, runs=[], later_runs=0,
    )  # fmt: skip
    view = adaptive_view(rounds)
    assert view["refused_text"] == "2 at N = 8"
    assert view["rows"][0]["added"] == "3 at N = 1, 3 at N = 2"


def test_a_grid_priced_at_time_limits_is_an_upper_bound_and_the_share_a_lower_one():
    # t4 was never measured, and its neighbour's 20.3 minutes times the price's margin
    # are above its 30-minute limit: its runs are priced at the time limit. The report
    # said "would cost 0.414 SU (estimated ...): this study spent 3 %"
    slow = {1: [1750.0, 1760.0, 1740.0, 1750.0], 2: [1220.0, 1230.0, 1210.0, 1220.0]}
    text, plans = adaptive_report([1, 2, 4], slow)
    assert plans[-1].priced_at_limit == ["t4"]
    assert "runs each would cost at most " in text
    assert (
        "(candidates never measured are priced at their time limit): this study spent at "
        "least " in text
    )
    # all measured: a plain figure
    text, _ = adaptive_report([1, 2], {1: [10.0, 10.1, 9.9, 10.0], 2: [5.0, 5.1, 4.9, 5.0]})
    assert "at most" not in text and "at least" not in text.split("Rounds")[1].split("What")[0]


def test_the_runs_per_point_of_an_adaptive_study_are_said_as_a_range():
    # rounds gave t1 4 runs and t2 3: the report said "4 runs per point"
    text, _ = adaptive_report([1, 2], {1: [10.0, 10.1, 9.9, 10.0], 2: [5.0, 5.1, 4.9]})
    assert "repeats per point 3-4" in text and "3-4 runs per point" in text


def test_a_section_with_a_place_is_shown_there(tmp_path):
    from scalestudy.sections.jobs.contract import Jobs
    from scalestudy.sections.jobs.produce import allocations, scheduler
    from scalestudy.sections.jobs.view import view as jobs_view
    from scalestudy.sections.received.contract import Received
    from scalestudy.sections.received.view import view as received_view
    from scalestudy.sections.telemetry.contract import PointTelemetry
    from scalestudy.sections.telemetry.view import view as telemetry_view

    out = aggregated(tmp_path / "rtx")
    view = study_view(json.loads(out["analysis"].read_text()), pd.read_csv(out["summary"]), {})
    runs = pd.DataFrame({"point": ["t1", "t1"], "repeat": [1, 2], "slurm_job_id": ["7", "7"],
                         "slurm_oversubscribe": ["NO", "NO"], "queue_wait_s": [1.0, 1.0],
                         "elapsed_s": [10.0, 10.0], "status": ["ok", "ok"]})  # fmt: skip
    jobs = scheduler(runs)
    got = [Received("t1", 2, 1, 0, 1, [["cpus_usable", "2"]])]
    view["sections"] = [
        {
            "template": "section:jobs",
            "v": jobs_view(Jobs(jobs, allocations(jobs))),
            "place": "cost",
        },
        {"template": "section:received", "v": received_view(got), "place": "environment"},
        {
            "template": "section:telemetry",
            "v": telemetry_view([PointTelemetry("g1", wait_fraction=0.25)]),
            "place": "telemetry",
        },
    ]
    text = text_of(render("t", [view]))
    said = "2 runs in 1 Slurm job: 1 job ran several runs (packed repeats)"
    assert text.index("Cost and scheduling") < text.index(said) < text.index("How these numbers")
    assert "Every job had its nodes to itself (--exclusive)." in text
    # what the runs received: after the checklist, before the environment
    said = "t1 2 thread(s) × 1 process(es), 0 GPU(s), 1 node(s) usable CPUs 2"
    assert text.index("How these numbers") < text.index("Allocation received") < text.index(said)
    # how the data was loaded: before the scaling models
    assert text.index("Data loading and GPU use") < text.index("Scaling models")
    assert "g1 – – – 25% – – –" in text
