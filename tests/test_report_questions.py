"""Every study answers its own question first (issue 43): the first table's row of a
study gives each of its questions on a line, decided or not; a series of one point says
its time and SU, never a step or a point compared with itself; published CPU and GPU
times, one CSV a series, are studied like runs, and a bad CSV is refused naming its file
and line before any job."""

import copy
import json
import re

import pandas as pd
import pytest

from scalestudy.analysis.pipeline import aggregate
from scalestudy.records import write_json_atomic
from scalestudy.report.rendering import render
from scalestudy.report.views import study_view
from scalestudy.study.errors import ConfigError
from scalestudy.study.validation import checked_config
from tests.conftest import REPO, SCHEMA, checked_study, study_model
from tests.test_energy_analysis import energy_part
from tests.test_records import good_record
from tests.test_views import text_of

CPU_TIMES = [(1, 60.0), (2, 32.0), (4, 18.0), (8, 10.2)]
SPREAD = (0.99, 1.0, 1.02)
CPU_CSV = "N,repeat,time_s\n"
CPU_CSV += "".join(f"{n},{k},{t * f}\n" for n, t in CPU_TIMES for k, f in enumerate(SPREAD, 1))
GPU_CSV = "N,repeat,time_s\n1,1,1.15\n1,2,1.18\n1,3,1.12\n"
PUBLISHED = {
    "description": "published CPU and GPU times",
    "scaling": {"axis": "threads", "points": [1, 2, 4, 8]},
    "series": {
        "cpu": {"measured": "cpu.csv"},
        "gpu": {"measured": "gpu.csv", "scaling": {"points": [1], "device": "gpu"}},
    },
}


def config_error(config: dict, workdir) -> list[str]:
    with pytest.raises(ConfigError) as info:
        checked_config(config, SCHEMA, workdir)
    return info.value.problems


def first_row(html: str, study: str) -> str:
    """A study's row of the first table, as text."""
    top = html[: html.index('<section id="study-')]
    return text_of(re.search(rf'<tr data-study="{study}">.*?</tr>', top, re.S).group(0))


def lines(html: str, study: str) -> list[tuple[str, str]]:
    """(question, decided: yes or no) of each line of a study's row."""
    top = html[: html.index('<section id="study-')]
    row = re.search(rf'<tr data-study="{study}">.*?</tr>', top, re.S).group(0)
    return re.findall(r'data-question="([^"]+)" data-decided="(yes|no)"', row)


def view_of(study, inputs, folder) -> dict:
    result = aggregate(study, inputs)
    result.summary.to_csv(folder / "summary.csv", index=False)
    return study_view(result.analysis_as_read(), pd.read_csv(folder / "summary.csv"), {})


def published(tmp_path, **study):
    (tmp_path / "cpu.csv").write_text(CPU_CSV)
    (tmp_path / "gpu.csv").write_text(GPU_CSV)
    return checked_study(PUBLISHED | study, "pub", tmp_path)


def test_published_cpu_and_gpu_series_get_the_gpu_verdict_first_with_intervals(
    tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)  # where the workflow reads the CSVs from
    study = published(tmp_path)
    assert study.elsewhere and study.for_series("gpu").scaling.device == "gpu"
    inputs = [tmp_path / "cpu.csv", tmp_path / "gpu.csv"]
    html = render("t", [view_of(study, [str(p) for p in inputs], tmp_path)])
    # the main question first, decided; how many threads on the CPU after it
    assert lines(html, "pub") == [("CPU or GPU", "yes"), ("how many", "no")]
    row = first_row(html, "pub")
    assert re.search(
        r"CPU or GPU : Use the GPU \(series gpu\): 8\.\d+x \[\d\.\d+, \d\.\d+\] faster than 8 "
        r"threads, 0\.0\d+x \[0\.0\d+, 0\.0\d+\] the SU per result of 1 thread\. Decided\.",
        row,
    ), row
    # the GPU series has one point: no line of its own, and no speedup against itself
    assert "series gpu): One point" not in row
    assert "measured elsewhere" in text_of(html) and "cpu.csv, gpu.csv" in text_of(html)


def test_a_cpu_against_gpu_study_without_a_cpu_series_says_what_its_verdict_needs(
    tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    published(tmp_path)
    runs_only_gpu = [str(tmp_path / "gpu.csv")]
    gpu_only = copy.deepcopy(PUBLISHED) | {"verdict": {"size_param": "size"}}
    del gpu_only["series"]["cpu"]
    study = checked_study(gpu_only, "pub", tmp_path)
    html = render("t", [view_of(study, runs_only_gpu, tmp_path)])
    assert "No verdict. Not decided: it needs a CPU series to weigh the GPU against" in (
        first_row(html, "pub")
    )


@pytest.mark.parametrize(
    ("series", "csv", "problem"),
    [
        ("gpu", "N,time_s\n1,1.1\n3,0.9\n", "gpu.csv: line 3: N = 3 is no point of the series "
         "(its scaling.points: 1)"),
        ("cpu", "N,time_s\n1,60\n2,32\n4,18\n", "cpu.csv: no row has N = 8, a point of its "
         "scaling.points (its rows, lines 2-4, hold N = 1, 2, 4)"),
        ("gpu", "N,time_s\n1,x\n", "gpu.csv: line 2: time_s='x' is not a positive finite number"),
    ],
)  # fmt: skip
def test_a_series_csv_with_a_stray_or_missing_point_is_refused_naming_file_and_line(
    tmp_path, series, csv, problem
):
    (tmp_path / "cpu.csv").write_text(CPU_CSV)
    (tmp_path / "gpu.csv").write_text(GPU_CSV)
    (tmp_path / f"{series}.csv").write_text(csv)
    (found,) = config_error({"studies": {"pub": PUBLISHED}}, tmp_path)
    assert found.startswith(f"config key studies.pub.series.{series}.measured: ")
    assert found.endswith(problem)


def test_a_study_mixing_runs_and_measured_times_it_cannot_compare_is_refused(tmp_path):
    (tmp_path / "gpu.csv").write_text(GPU_CSV)
    mixed = {
        "workload": "spiral_mlp",
        "scaling": {"axis": "threads", "points": [1, 2]},
        "time": "steady",
        "series": {"cpu": {}, "gpu": PUBLISHED["series"]["gpu"]},
    }
    assert (
        "config key studies.mix.time: times measured elsewhere have no epochs to take the "
        "steady one of: use wall or train"
    ) in config_error({"studies": {"mix": mixed}}, tmp_path)
    bare = copy.deepcopy(PUBLISHED)
    del bare["series"]["cpu"]["measured"]
    assert (
        "config key studies.pub.series.cpu: give it `measured` (a CSV of its times), or give "
        "the study a `workload` to run it"
    ) in config_error({"studies": {"pub": bare}}, tmp_path)


# --- a series of one point: no sentence that says nothing ------------------------------

ONE_POINT = {"scaling": {"axis": "threads"}, "recommend": {"deadline_s": 60, "budget_su": 1}}
# what a one-point series must never say: a step, or its point against itself
EMPTY = [
    "speedup 1.00",
    "Every measured step",
    "Going from",
    "the step from",
    "is 1.00x faster",
    "x the SU of the base case",
    "the energy of the base case",
    "1.00x the base case",
    "Ask for 1 thread",
    "No scaling model fitted",
    "Prediction (model",
]


def one_point_records(folder) -> list:
    paths = []
    for k, joules in enumerate([100.0, 110.0, 120.0], 1):
        record = good_record(point="t1", n=1, repeat=k, wall_s=2.5 + 0.1 * k)
        record["run_id"] = f"one-point-run-of-t1-rep{k}"
        record["phases"] = [{"name": "epoch 1", "kind": "epoch", "seconds": 2.3 + 0.1 * k}]
        record["energy"] = energy_part(joules)
        path = folder / "results" / "s" / "runs" / "t1" / f"rep{k}.json"
        write_json_atomic(path, record)
        paths.append(path)
    return paths


MORE = {"n": 1, "more": 2, "at_least": False}
# each way an answer's sentences can go (the headline's and its section's template)
ANSWER_VARIANTS = [
    {},
    {"decided": True},
    {"decided": False},
    {"decided": None},
    {"decided": False, "next_measurements": {"repeats": [MORE], "su": 0.1}},
    {"decided": False, "adaptive": True},
    {"decided": True, "adaptive": True, "unstable": ["t1"]},
    {"unstable": ["t1"]},
    {"peak": {"n": 9.0, "speedup": 1.5, "beyond_measured": True, "base_source": "measured"}},
    {"provenance_note": "runs differ"},
    {"stopped_at": {"from_n": 1, "to_n": 2, "marginal": 0.01}},
]


@pytest.mark.parametrize("variant", ANSWER_VARIANTS)
def test_a_one_point_series_says_its_time_and_su_in_every_sentence_it_can_reach(tmp_path, variant):
    study = study_model(ONE_POINT, "s")
    result = aggregate(study, one_point_records(tmp_path))
    found = json.loads(result.analysis_json())
    assert found["energy"]["measured"]  # the energy sentences are reached too
    found["findings"]["answers"][0] |= variant
    view = study_view(found, result.summary, {})
    html = render("t", [view])
    text = text_of(html)
    said = [phrase for phrase in EMPTY if phrase in text]
    assert not said, said
    row = first_row(html, "s")
    assert (
        "how many : One point, t1 (1 node, 1 process per node, 1 thread each): 2.70 s [2.46, "
        "2.96] a run, 0.00075 SU a run; nothing to scale against. Not decided: add points to "
        "its scaling.points ."
    ) in row
    # the results table leaves its ratios blank
    (point,) = view["rows"]
    shown = [point["cells"][view["columns"].index(c)] for c in ("speedup [95 % CI]", "relative SU")]
    assert shown == ["–", "–"]


def test_every_sentence_template_of_the_report_is_reached_by_a_one_point_series():
    """The walk above reaches each branch of the answer's macro a one-point series can take
    (a branch it cannot take is one an answer of several points needs)."""
    template = (REPO / "scalestudy/report/templates/report.html.j2").read_text()
    macro = template[template.index("{% macro answer_lines") :]
    macro = macro[: macro.index("{% endmacro %}")]
    fields = set(re.findall(r"\ba\.(\w+)", macro))
    walked = {k for v in ANSWER_VARIANTS for k in v} | {"one_point", "worth_n", "headline"}
    reached_elsewhere = {"steps", "threshold", "zone", "selected"}
    reached_elsewhere |= {"cheapest_meeting_deadline", "deadline_note", "waits_known"}
    reached_elsewhere |= {"fastest_within_budget", "budget_note"}
    assert fields <= walked | reached_elsewhere, fields - walked - reached_elsewhere


@pytest.mark.slow
def test_published_cpu_and_gpu_times_get_their_verdict_through_the_workflow(workflow):
    """Through real Snakemake, no job run: two series of times measured elsewhere, one on
    the GPU; a bad CSV stops the dry run before any job, naming its file and line."""
    root = workflow.root
    (root / "cpu.csv").write_text(CPU_CSV)
    (root / "gpu.csv").write_text(GPU_CSV)
    workflow.write_config({"studies": {"pub": PUBLISHED}})
    workflow.snakemake("--cores", "1")
    html = (root / "results" / "report.html").read_text()
    assert lines(html, "pub") == [("CPU or GPU", "yes"), ("how many", "no")]
    assert "CPU or GPU : Use the GPU (series gpu): 8." in first_row(html, "pub")
    found = json.loads((root / "results" / "pub" / "analysis.json").read_text())
    (size,) = found["gpu_verdict"]["sizes"]
    assert size["verdict"] == "worth" and size["speedup"]["lo"] > 1 > size["su_ratio"]["hi"]
    assert not (root / "results" / "pub" / "runs").exists()  # no job ran
    (root / "gpu.csv").write_text("N,time_s\n1,1.1\n2,0.6\n")
    proc = workflow.snakemake("-n", check=False)
    assert proc.returncode != 0
    assert "studies.pub.series.gpu.measured: gpu.csv: line 3: N = 2 is no point" in proc.output
