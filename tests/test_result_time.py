"""Time to result (issue 28): each point's queue wait beside its full-length run time,
through the whole aggregation (scalestudy.analysis.pipeline), fed the study's cluster
facts as data: gathered as rules/cluster.smk gathers them (scalestudy.slurm.gather),
Slurm's answers stood in for: sbatch --test-only per distinct request, sacct's past
waits."""

import subprocess
from datetime import datetime, timedelta
from functools import partial

import pytest

from scalestudy.analysis.decisions.request import job_ids, probe_commands_of
from scalestudy.analysis.pipeline import analyse
from scalestudy.analysis.stats.intervals import median_ci
from scalestudy.analysis.tables import runs_from_records
from scalestudy.records import write_json_atomic
from scalestudy.report.rendering import render
from scalestudy.report.views import study_view
from scalestudy.slurm import gather
from scalestudy.study.points import series_of_points
from tests.conftest import study_model
from tests.test_generic_records import round_trip
from tests.test_records import good_record

NOW = datetime(2026, 5, 1, 10, 0, 0)


def study(**recommend):
    return study_model(
        {"workload": "spiral_mlp", "scaling": {"axis": "threads", "points": [1, 2]},
         "repeats": 3, "recommend": recommend},
    )  # fmt: skip


def runs_of(tmp_path, times: dict[str, list[float]], **metrics):
    """A runs table of records with these whole-job times per point (t1, t2)."""
    paths = []
    for point, walls in times.items():
        n = int(point[1:])
        for k, wall in enumerate(walls, start=1):
            r = good_record(
                point=point, n=n, repeat=k, wall_s=wall, run_id=f"run-of-{point}-rep{k}"
            )
            r["resources"]["requested"]["threads"] = n
            r["metrics"] |= metrics
            path = tmp_path / "results" / "s" / "runs" / point / f"rep{k}.json"
            write_json_atomic(path, r)
            paths.append(path)
    return runs_from_records(paths, series_of_points(study()))


def slurm(waits: dict[str, float], history: str = "", calls: list | None = None):
    """A stand-in for subprocess.run: sbatch --test-only starts a job of
    --cpus-per-task=C `waits[C]` seconds from NOW; sacct prints `history`."""

    def run(command, **_):
        if calls is not None:
            calls.append(command)
        if command[0] == "sacct":
            return subprocess.CompletedProcess(command, 0, history, "")
        cpus = next(w.split("=")[1] for w in command if w.startswith("--cpus-per-task="))
        start = (NOW + timedelta(seconds=waits[cpus])).isoformat()
        line = f"sbatch: Job 7 to start at {start} using {cpus} processors on nodes node1 in partition debug"  # noqa: E501
        return subprocess.CompletedProcess(command, 0, "", line)

    return run


def facts(made, runs, site: dict, history_days: int | None, run) -> dict:
    """The study's cluster facts, asked as scripts/cluster.py asks them."""
    commands = partial(probe_commands_of, made, runs, site=site)
    return gather(site, history_days, job_ids(runs), commands, run=run, now=NOW)


def on_slurm(made, runs, site, history_days, min_jobs, run):
    """The study aggregated with the facts Slurm gave."""
    return analyse(made, runs, cluster=facts(made, runs, site, history_days, run),
                   min_jobs=min_jobs)  # fmt: skip


def page(result) -> str:
    """The report's HTML of the study, as the workflow makes it."""
    return render("t", [study_view(result.analysis_as_read(), round_trip(result.summary), {})])


def times_of(result) -> dict:
    found = result.analysis_as_read().section("time_to_result")
    return found, {p.point: p for p in found.points}


def test_time_to_result_adds_the_wait_to_the_median_full_length_run_time(tmp_path):
    # t1: 10, 11, 30 s (median 11, not the mean 17); t2: 6, 6.5, 7 s, then 300 s in
    # the queue (a node is held): t1's result comes first
    runs = runs_of(tmp_path, {"t1": [10.0, 11.0, 30.0], "t2": [6.0, 6.5, 7.0]})
    calls = []
    ask = slurm({"1": 0, "2": 300}, calls=calls)
    found, points = times_of(on_slurm(study(), runs, {"slurm_partition": "debug"}, 30, 10, ask))
    t1, t2 = points["t1"], points["t2"]
    assert (t1.basis, t1.wait_s, t1.run_s) == ("now", 0.0, 11.0)
    assert (t2.basis, t2.wait_s, t2.run_s) == ("now", 300.0, 6.5)
    assert t2.result_s == 306.5
    # the median's interval shifted by the wait
    lo, hi = median_ci([6.0, 6.5, 7.0])[1:]
    assert (t2.result_lo_s, t2.result_hi_s) == pytest.approx((300 + lo, 300 + hi))
    assert (t1.result_lo_s, t1.result_hi_s) == median_ci([10.0, 11.0, 30.0])[1:]
    assert [(e.point, e.result_s) for e in found.earliest] == [("t1", 11.0)]
    # one --test-only call per distinct request, one sacct call
    assert found.calls == 2 and [c[0] for c in calls].count("sacct") == 1
    assert found.waits_known and found.note is None and found.asked_at == NOW.isoformat()
    html = page(on_slurm(study(), runs, {"slurm_partition": "debug"}, 30, 10, ask))
    # beside the answer: the point worth its cost and the earliest result, which wait
    assert "the point worth its cost, N = 2, in 306 s [305, 308] (a wait of 300 s now" in html
    assert "the earliest result is at N = 1 (t1), in 11 s [3.28, 67.53] (a wait of 0 s now" in html
    assert "sbatch --test-only</code> at 2026-05-01T10:00:00" in html
    assert "A queue changes by the minute" in html and "a rough figure" in html
    # the per-point table's column
    assert "<th>result expected in</th>" in html
    assert "<td>306 s [305, 308] (wait now 300 s)</td>" in html
    # and the summary at the top: the answer's (N = 2) time to result
    top = html.split('<table class="answers">')[1].split("</table>")[0]
    assert "; result expected in 306 s [305, 308]." in top
    assert "Run locally" not in html


def test_a_shortened_run_is_scaled_to_full_length_first(tmp_path):
    # each record: 1.5 s of training at a quarter of a full run -> +4.5 s
    runs = runs_of(tmp_path, {"t1": [10.0, 10.0, 10.0], "t2": [6.0, 6.0, 6.0]},
                   train_s=1.5, train_fraction=0.25)  # fmt: skip
    _, points = times_of(on_slurm(study(), runs, {}, None, None, slurm({"1": 20, "2": 0})))
    assert points["t1"].run_scaled and points["t1"].run_s == pytest.approx(14.5)
    assert points["t1"].result_s == pytest.approx(34.5)


def test_the_typical_wait_of_enough_past_jobs_and_the_bound_on_its_p90_tops_it(tmp_path):
    runs = runs_of(tmp_path, {"t1": [10.0, 10.0, 10.0], "t2": [6.0, 6.0, 6.0]})
    # t1's request: 1 node, 1 CPU, 1 minute (10 s x 1.5); 30 past jobs waited 40, 42, ...
    # 98 s and ran 30 s of their minute each
    history = "".join(
        f"{k}|1|cpu=1,mem=1000M,node=1|debug|00:01:00|2026-04-01T10:00:00|"
        f"2026-04-01T10:0{wait // 60}:{wait % 60:02d}|00:00:30|COMPLETED\n"
        for k, wait in enumerate(range(40, 100, 2))
    )
    ask = slurm({"1": 0, "2": 40}, history)
    result = on_slurm(study(), runs, {"slurm_partition": "debug"}, 30, 5, ask)
    times, points = times_of(result)
    t1, t2 = points["t1"], points["t2"]
    assert (t1.basis, t1.history_jobs, t1.wait_s, t1.wait_now_s) == ("typical", 30, 69.0, 0.0)
    # 30 past jobs: the 95 % bound on the 90th percentile is the largest wait, and it
    # tops the interval
    assert t1.history_wait_bound_s == 98.0 and t1.wait_hi_s == 98.0
    assert t1.result_hi_s == pytest.approx(108.0)
    assert t1.result_s == 79.0 and t1.result_lo_s == 79.0
    # each later wait is above all those before it: the backtest says so (0 of 1)
    assert (t1.history_bound_covered, t1.history_bound_tested) == (0, 1)
    # --test-only's 40 s, corrected by past jobs' run time to limit (30 s of 60 s)
    assert times.run_to_limit == {"ratio": 0.5, "jobs": 30}
    assert (t2.basis, t2.history_jobs, t2.wait_now_s) == ("now", 0, 40.0)
    assert t2.wait_now_corrected_s == 20.0 and t2.wait_s == 20.0 and t2.wait_hi_s == 20.0
    html = page(result)
    assert "95 % upper bound" in html and "corrected from 40 s" in html
    # the top wait is the longer of the bound and the wait (queue.top_wait): said so
    assert "or the wait itself where that is longer" in html
    assert "no past job of its shape known: no bound on its wait" in html  # t2's
    # fewer past jobs than queue_history_min_jobs: the wait now stands, the bound tops it
    _, points = times_of(on_slurm(study(), runs, {"slurm_partition": "debug"}, 30, 31, ask))
    assert (points["t1"].basis, points["t1"].wait_s, points["t1"].wait_hi_s) == ("now", 0.0, 98.0)


def test_the_deadline_is_met_by_time_to_result_when_waits_are_known(tmp_path):
    runs = runs_of(tmp_path, {"t1": [10.0, 10.0, 10.0], "t2": [6.0, 6.0, 6.0]})
    local = analyse(study(deadline_s=8), runs).analysis_as_read().findings.answers[0]
    assert local.cheapest_meeting_deadline == 2  # t2's 6 s run alone
    ask = slurm({"1": 0, "2": 300})
    (a,) = (
        on_slurm(study(deadline_s=8), runs, {}, None, None, ask).analysis_as_read().findings.answers
    )
    assert a.cheapest_meeting_deadline is None
    assert a.deadline_note == "no point has its result within 8 s (fastest: 10 s at N=1)"
    (a,) = (
        on_slurm(study(deadline_s=20), runs, {}, None, None, ask)
        .analysis_as_read()
        .findings.answers
    )
    assert a.cheapest_meeting_deadline == 1 and "time to result 10 s" in a.deadline_note


def test_slurm_unreachable_gives_one_note_and_the_run_time_alone(tmp_path):
    runs = runs_of(tmp_path, {"t1": [10.0, 10.0, 10.0], "t2": [6.0, 6.0, 6.0]})
    calls = []

    def down(command, **_):
        calls.append(command)
        raise FileNotFoundError(command[0])

    result = on_slurm(study(), runs, {}, 30, 10, down)
    found, points = times_of(result)
    assert found.note.startswith("Slurm could not be asked for start times")
    assert [c[0] for c in calls] == ["sacct", "sbatch"]  # the first refusal stops asking
    assert {p.basis for p in points.values()} == {"unknown wait"}
    assert points["t2"].result_s == points["t2"].run_s == 6.0 and points["t2"].wait_s is None
    assert not found.waits_known
    view = study_view(result.analysis_as_read(), round_trip(result.summary), {})
    assert view["views"]["time_to_result"]["note"] == found.note
    html = page(result)
    assert html.count("Slurm could not be asked") == 1 and "result expected in" not in html
    assert "in 6 s (wait unknown: the run time alone)" in html


def test_locally_no_queue_the_result_is_the_run_time_and_no_wait_is_shown(tmp_path):
    runs = runs_of(tmp_path, {"t1": [10.0, 10.0, 10.0], "t2": [6.0, 6.0, 6.0]})
    result = analyse(study(), runs)
    found, points = times_of(result)
    assert found.queue == "local" and found.calls == 0 and not found.waits_known
    assert {(p.basis, p.wait_s) for p in points.values()} == {("local", 0.0)}
    assert points["t2"].result_s == 6.0
    view = study_view(result.analysis_as_read(), round_trip(result.summary), {})
    assert (
        view["views"]["time_to_result"]["local"]
        and not view["views"]["time_to_result"]["waits_known"]
    )
    html = page(result)
    # said once, with the earliest result; no queue section, no wait, no column
    assert html.count("there is no queue") == 1
    assert "the earliest at N = 2 (t2, 6 s)" in html
    assert "result expected in" not in html and "sbatch --test-only" not in html
    assert "result expected in" not in html.split("</table>")[0]
    assert "wait" not in html.split("Run locally")[1].split("</p>")[0]


def test_the_answer_shows_its_request_and_time_and_the_sections_follow_in_order(tmp_path):
    """The answer's request and time to result are macros of their sections' partials,
    which the report's template imports; each section's own part stands once, in its
    place: time to result after the answers, the requests after the rounds, the scaling
    models after the results."""
    from tests.test_views import text_of

    runs = runs_of(tmp_path, {"t1": [10.0, 10.0, 10.0], "t2": [6.0, 6.0, 6.0]})
    html = page(analyse(study(), runs))
    text = text_of(html)
    # the request's words name the layout (the template's macro, seen by the import)
    assert "Ask the scheduler for it (1 node, 1 process per node, 2 threads each):" in text
    assert "#SBATCH --cpus-per-task=2" in html
    order = ["Ask the scheduler", "Run locally", "What to ask for, per point", "Scaling models"]
    assert [text.count(words) for words in order] == [1, 1, 1, 1]
    assert sorted(order, key=text.index) == order
