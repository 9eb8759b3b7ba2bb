"""The report's words and numbers (issue 15): all answers in one table at the top, words
that fit what the study is, runs named as their files are, one precision per column."""

import json
import re
import uuid
from types import SimpleNamespace

import pandas as pd
import pytest

from scalestudy.analysis.findings import study_facts
from scalestudy.analysis.pipeline import aggregate
from scalestudy.analysis.tables import point_status
from scalestudy.records import write_json_atomic
from scalestudy.report.rendering import render
from scalestudy.report.views import results_view, study_view
from tests.conftest import study_model
from tests.test_records import good_record
from tests.test_views import aggregated, text_of

THREADS = {"axis": "threads", "device": "cpu", "threads": 1, "devices": 1, "nodes": 1}
COMMAND = {"workload": "command", "params": {"command": "xz -T{threads} data"}}
TRAINING = {"workload": "mnist_cnn", "params": {"dataset": "fashion_mnist"}}


def view_of(study, records: list[dict], root) -> dict:
    """A study's view as the workflow makes it: records on disk, aggregated, analysis.json
    written and read back, the summary through its CSV."""
    paths = []
    for r in records:
        path = root / "results" / study.name / "runs" / r["point"] / f"rep{r['repeat']}.json"
        write_json_atomic(path, r | {"study": study.name, "run_id": uuid.uuid4().hex})
        paths.append(path)
    result = aggregate(study, paths)
    result.summary.to_csv(root / "summary.csv", index=False)
    return study_view(result.analysis_as_read(), pd.read_csv(root / "summary.csv"), {})


def run(point: str, n: int, repeat: int, wall_s: float, **fields) -> dict:
    # one after another (a minute apart), as profiles/local times them
    minute = n * 10 + repeat
    when = {"started_at": f"2026-01-01T00:{minute:02d}:00.000+00:00",
            "finished_at": f"2026-01-01T00:{minute:02d}:30.000+00:00"}  # fmt: skip
    r = good_record(point=point, n=n, repeat=repeat, wall_s=wall_s, **when | fields)
    r["resources"]["requested"]["threads"] = n
    return r


def two_points(t1=(2.5, 2.5, 2.5), t2=(2.0, 2.0, 2.0), **fields) -> list[dict]:
    return [
        run(point, n, k, t, **fields)
        for point, n, times in (("t1", 1, t1), ("t2", 2, t2))
        for k, t in enumerate(times, 1)
    ]


def answers_table(html: str) -> str:
    """The table at the top of the report, before the first study's section."""
    top = html[: html.index('<section id="study-')]
    return top[top.index('<table class="answers">') :]


# ---------------------------------------------------------------- the summary table


def test_every_answer_is_in_one_table_at_the_top_linked_to_its_section(tmp_path):
    rtx = aggregated(tmp_path / "rtx", description="published")
    found = json.loads(rtx["analysis"].read_text())
    views = [study_view(found, pd.read_csv(rtx["summary"]), {})]
    other = json.loads(json.dumps(found))
    other["findings"]["study"]["name"] = "rtx_again"
    for decided in (True, None):
        other["findings"]["answers"][0]["decided"] = decided
        views.append(study_view(json.loads(json.dumps(other)), pd.read_csv(rtx["summary"]), {}))
        other["findings"]["study"]["name"] += "_"
    table = answers_table(render("t", views))
    rows = re.findall(r"<tr data-study=.*?</tr>", table, re.S)
    assert len(rows) == 3
    first = text_of(rows[0])
    assert '<a href="#study-rtx">rtx</a>' in rows[0]
    # study; its question, the answer (N and layout, speedup, efficiency, relative SU),
    # decided or what would decide it; warnings
    assert first == (
        " rtx published how many : Ask for 6 GPUs (1 node, 6 processes per node, 1 thread "
        "each, 6 GPUs per node): speedup 3.29, efficiency 55 %, 1.82x the SU of the base case "
        "N = 1. Not decided: 1 more run at N = 5, N = 6, N = 7: measure them as before and add "
        "them to the CSV. none "
    )
    assert text_of(rows[1]).endswith(" N = 1. Decided. none ") and "Not decided" not in rows[1]
    assert text_of(rows[2]).endswith(" add them to the CSV. none ")


def test_the_answer_carries_efficiency_layout_and_whether_it_is_decided():
    from tests.test_findings import rtx_findings

    (answer,) = rtx_findings()["answers"]
    assert answer["efficiency"] == pytest.approx(171 / 52 / 6)
    assert answer["point"] == "g6"
    assert answer["layout"] == {"nodes": 1, "tasks_per_node": 6, "threads": 1, "gpus_per_node": 6}
    assert "decided" in answer and answer["fitted"] is True


def test_the_summary_table_warns_and_the_headline_says_one_thread(tmp_path):
    study = study_model({**COMMAND, "scaling": THREADS}, "cmd")
    records = two_points(t2=(3.0, 3.0, 3.0))  # 2 threads are slower: ask for 1
    records.append(run("t2", 2, 4, 1.0, status="failed", exit_code=1, reason="boom"))
    view = view_of(study, records, tmp_path)
    html = render("t", [view])
    text = text_of(html)
    assert (
        "Ask for 1 thread: speedup 1.00 [1.00, 1.00], efficiency 100 %, "
        "1.00x the SU of the base case N = 1."
    ) in text
    assert "1 threads" not in text
    row = text_of(answers_table(html))
    assert "1 thread (1 node, 1 process per node, 1 thread each)" in row
    assert "1 failed run; no model fitted" in row


# ---------------------------------------------------------------- words per kind of study


def test_published_ddp_times_are_said_as_measured_and_get_the_sources_table(tmp_path):
    out = aggregated(tmp_path / "rtx")
    found = json.loads(out["analysis"].read_text())["findings"]
    assert found["study"]["kind"] == "measured" and found["study"]["distributed"]
    analysis = json.loads(out["analysis"].read_text())
    html = render("t", [study_view(analysis, pd.read_csv(out["summary"]), {})])
    text = text_of(html)
    assert "Times were measured elsewhere and read from" in text
    assert "whole job" not in text and "data loading from" not in text
    assert "training epochs" not in text
    assert "Distributed training, in the source's form" in text
    ddp = html[html.index('<table class="ddp">') :]
    head = ddp[: ddp.index("</thead>")]
    # the source's columns the published times hold, none they do not
    assert "configuration" in head and "time (s)" in head and "interpretation" in head
    assert "job id" not in head and "val loss" not in head and "throughput" not in head
    assert "6 processes/node × 1 node" in text_of(ddp)
    # nor a results column without a value
    assert "samples/s" not in text_of(html[html.index('<table class="summary">') :])


def test_a_command_is_said_as_a_command_without_the_sources_table(tmp_path):
    said = {
        "train": "your program's own training time , as it reports it",
        "steady": "your program's steady epoch : the median of the epoch_s it reports",
        "wall": "the harness's start-up and your command's whole run",
    }
    for time, words in said.items():
        study = study_model({**COMMAND, "scaling": THREADS, "time": time}, "cmd")
        assert study_facts(study).kind == "command"
        assert not study_facts(study).distributed  # one process at every point
        text = text_of(render("t", [view_of(study, two_points(), tmp_path / time)]))
        assert words in text
        assert "training epochs" not in text and "data loading" not in text
        assert "in the source's form" not in text and "job id" not in text
        assert "warm-up epoch is reported" not in text


def test_a_training_in_one_process_and_a_distributed_one_are_told_apart(tmp_path):
    single = study_model({**TRAINING, "scaling": THREADS, "time": "train"}, "single")
    assert study_facts(single).kind == "training"
    text = text_of(render("t", [view_of(single, two_points(), tmp_path)]))
    assert "Times are the training epochs only" in text
    assert "a training in one process" in text and "in the source's form" not in text
    # a workload that can run DDP, run in one process, is no distributed study
    one = study_model({"workload": "spiral_mlp", "scaling": THREADS}, "spiral")
    assert study_facts(one).kind == "training"
    devices = {"axis": "devices", "points": [1, 2], "device": "cpu"}
    ddp = study_model({"workload": "spiral_mlp", "scaling": devices}, "spiral")
    assert study_facts(ddp).kind == "distributed" and study_facts(ddp).distributed


def test_a_steady_state_study_is_not_said_to_time_the_whole_job(tmp_path):
    study = study_model({**TRAINING, "scaling": THREADS, "time": "steady"}, "steady")
    # two epochs that fit in the run's wall time
    epoch = two_points()[0]["phases"][1] | {"seconds": 0.7}
    records = [r | {"phases": [r["phases"][0], epoch, epoch]} for r in two_points()]
    text = text_of(render("t", [view_of(study, records, tmp_path)]))
    assert "Times are the steady-state epoch" in text and "whole job:" not in text


def test_the_checklist_draws_no_model_where_none_was_fitted(tmp_path):
    study = study_model({**TRAINING, "scaling": THREADS}, "two")
    text = text_of(render("t", [view_of(study, two_points(), tmp_path)]))
    assert "No scaling model fitted" in text
    assert "fitted model's bound are drawn" not in text
    assert "no scaling model could be fitted" in text


# ---------------------------------------------------------------- runs by their names


def test_an_outlier_is_named_as_its_file(tmp_path):
    study = study_model({**TRAINING, "scaling": THREADS}, "s")
    # rep1 failed, so the outlier rep4 is the third time measured
    records = [
        run("t1", 1, k, t) for k, t in enumerate([2.5, 2.5, 2.51, 4.0, 2.49, 2.5], 1) if k > 1
    ]
    records.append(run("t1", 1, 1, 1.0, status="failed", exit_code=1, reason="boom"))
    records += [run("t2", 2, k, 2.0) for k in (1, 2, 3)]
    view = view_of(study, records, tmp_path)
    text = text_of(render("t", [view]))
    assert "outlier runs rep4 (|modified z| &gt; 3.5, over 5 % from the median)" in text
    # the caution states the rule with the analysis's own limits
    assert ("their repeats disagree (CV above 10 %, or an outlier: "
            "modified z-score above 3.5 and over 5 % from the median)") in text  # fmt: skip
    assert "outlier repeats" not in text and "[2]" not in text
    # failed runs too: by point and file, t1/rep1
    assert "t1/rep1: boom" in text
    # and the help the caution gives is how to run more
    assert "make redo STUDY=s POINT=t1" in text and "raise repeats" in text


# ---------------------------------------------------------------- precision


def summary_row(point: str, n: int, **values) -> dict:
    base = {"series": "", "point": point, "n": n, "repeats_ok": 3, "time_s": 10.0, "cv": 0.01}
    return base | {"speedup": 1.0, "efficiency": 1.0, "karp_flatt": None, "relative_su": 1.0,
                   "is_base": n == 1, "unstable": False, "status": "ok",
                   "status_kind": "ok"} | values  # fmt: skip


def column(view: dict, key: str) -> list[str]:
    i = view["keys"].index(key)
    return [r["cells"][i] for r in view["rows"]]


def test_one_precision_per_column_and_significant_digits_for_rates():
    rows = [
        summary_row("t1", 1, samples_per_s=3.22, quality=0.5688, time_s=171.0),
        summary_row("t2", 2, samples_per_s=3.35, quality=0.567, time_s=9.5, efficiency=0.66),
        summary_row("t4", 4, samples_per_s=3.3, quality=0.6, time_s=49.0, efficiency=0.5),
    ]
    view = results_view(rows, [], False)
    assert column(view, "samples_per_s") == ["3.22", "3.35", "3.30"]
    assert column(view, "quality") == ["0.569", "0.567", "0.600"]
    assert column(view, "time_s") == ["171.0", "9.5", "49.0"]
    assert column(view, "efficiency") == ["100 %", "66 %", "50 %"]
    fast = results_view([summary_row("t1", 1, samples_per_s=5412.3)], [], False)
    assert column(fast, "samples_per_s") == ["5412"]


def test_a_reason_left_out_of_the_fit_is_said_once_in_its_row():
    reason = "allocation mismatch: cpus: asked for 2, only 1 usable (affinity)"
    rows = [summary_row("t1", 1), summary_row("t2", 2, status=reason, time_s=None)]
    fit = SimpleNamespace(series="", excluded={"t2": reason}, fits=[], one_point=False)
    view = results_view(rows, [fit], False)
    cells = view["rows"][1]["cells"]
    assert cells[view["keys"].index("fit")] == "allocation mismatch"
    assert sum("asked for 2" in c for c in cells) == 1


def test_a_status_is_coloured_by_its_kind_from_the_analysis_not_by_its_words():
    """The report read the status sentence: a point whose one failed run's reason said
    "did not converge" was coloured as a point that did not converge (bad)."""
    runs = pd.DataFrame(
        {"status": ["ok", "ok", "failed"], "reason": [None, None, "loss did not converge"],
         "mismatch": [False] * 3, "mismatches": [""] * 3, "repeat": [1, 2, 3]}
    )  # fmt: skip
    kind, status = point_status(runs)
    assert (kind, status) == ("warn", "ok (1 of 3 runs failed: loss did not converge)")
    row = summary_row("t1", 1, status=status, status_kind=kind)
    assert results_view([row], [], False)["rows"][0]["status_class"] == "warn"
