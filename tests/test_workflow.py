"""The workflow end to end with real Snakemake, real workloads and the real report."""

import json
import os
import re
import shutil
import sys
import zipfile

import pandas as pd
import pytest
import yaml

from benchmarks.dag_dry_run import grid_study
from scalestudy.sections import FIGURES
from tests.browser import CHROMIUM, dialogs, open_report
from tests.conftest import FASHION_DIR, NOT_JUDGED_ON_SHARED_CPUS, REPO, tiny_mnist_study
from tests.test_report_questions import first_row, lines

needs_fashion = pytest.mark.skipif(
    not FASHION_DIR.is_dir(), reason="Debian's dataset-fashion-mnist is not installed"
)
needs_chromium = pytest.mark.skipif(
    shutil.which("chromium") is None and not __import__("os").path.exists(CHROMIUM),
    reason="Debian's chromium is not installed",
)

MEASURED = {
    "description": "published RTX 2080 Ti times",
    "measured": "config/examples/rtx2080ti_autoencoder_ddp.csv",
    "scaling": {"axis": "devices", "device": "gpu"},
}


def planned_runs(proc) -> set[tuple[str, str, str]]:
    """(study, point, repeat) of the run_point jobs in a dry run's output."""
    return set(
        re.findall(
            r"wildcards: study=([\w-]+), point=([\w-]+), repeat=(\d+)", proc.stdout + proc.stderr
        )
    )


@pytest.mark.slow
@needs_fashion
@needs_chromium
def test_study_end_to_end_with_a_failed_point_and_a_rerun(workflow):
    gpu = tiny_mnist_study(description="asks for a GPU this machine does not have", repeats=1)
    gpu["scaling"] = {"axis": "threads", "points": [1], "device": "gpu"}
    gpu["oversubscribe"] = True  # run anyway (else refused before any job), to fail
    workflow.write_config(
        {"studies": {"tiny": tiny_mnist_study(), "gpu": gpu, "published": MEASURED}}
    )
    # the GPU study's base case failed in every run: said, after the report, non-zero
    proc = workflow.snakemake("--profile", "profiles/local", "--cores", "2", check=False)
    assert proc.returncode != 0
    assert "gpu: no answer: every run of the base case t1 failed: RuntimeError" in proc.output
    results = workflow.root / "results"

    tiny = pd.read_csv(results / "tiny" / "summary.csv")
    assert list(tiny["point"]) == ["t1", "t2"] and list(tiny["repeats_ok"]) == [2, 2]
    assert list(tiny["status"]) == ["ok", "ok"]
    assert tiny.loc[0, "is_base"] and tiny.loc[0, "speedup"] == 1.0
    assert tiny.loc[1, "speedup"] > 0 and tiny.loc[1, "samples_per_s"] > 0
    runs = pd.read_csv(results / "tiny" / "runs.csv")
    assert not runs["overlapped"].any(), "profiles/local must run timed jobs one at a time"
    failed = pd.read_csv(results / "gpu" / "summary.csv")
    assert failed.loc[0, "status"] == (
        "failed: RuntimeError: the point asks for a GPU but CUDA sees none"
    )

    page = open_report(results / "report.html", screenshot=workflow.root / "report.png")
    assert page["console"] == [] and page["external_requests"] == []
    assert page["studies"] == ["tiny", "gpu", "published"]
    # 6 figures a study; times measured elsewhere have no phases figure
    assert len(page["images"]) == 17 and all(i["ok"] for i in page["images"])
    assert "the point asks for a GPU but CUDA sees none" in page["text"]
    assert any(c.startswith("failed") for c in page["bad_cells"])
    assert "point t1 (N = 1)" in page["text"]  # the base case is stated
    # the published times: their answer leads the study, the prediction labelled as one
    assert "3.49" in page["text"] and "2.87" in page["text"]
    assert "Ask for 6 GPUs" in page["text"]
    assert "Going from 6 to 7 GPUs adds only 0.06 speedup per added unit" in page["text"]
    assert "Prediction (model" in page["text"] and "extrapolated" in page["text"]
    assert "Hoefler" in page["text"]
    # the first table: each study's own question, decided or not, and what would decide it
    html = (results / "report.html").read_text()
    assert [q for q, _ in lines(html, "tiny")] == ["how many"]
    assert "how many : Ask for " in first_row(html, "tiny")
    assert "how many : Ask for 6 GPUs (1 node, 6 processes per node, 1 thread each, 6 GPUs" in (
        first_row(html, "published")
    )
    assert lines(html, "gpu") == [("how many", "no")]
    assert (
        "No recommendation: every run of the base case t1 failed: RuntimeError: the point asks "
        "for a GPU but CUDA sees none. Not decided: "
    ) in first_row(html, "gpu")
    # the whole request: #SBATCH lines of the recommended point, and every point's
    assert "#SBATCH --cpus-per-task=" in page["text"] and "#SBATCH --mem=" in page["text"]
    assert "What to ask for, per point" in page["text"] and "a scaled estimate" in page["text"]
    found = json.loads((results / "tiny" / "analysis.json").read_text())
    requests = found["requests"]["points"]
    assert [r["point"] for r in requests] == ["t1", "t2"]
    assert all(r["time_scaled"] and r["mem_mb"] and r["cpu_busy"] for r in requests)

    assert_snakemake_report_holds_ours(workflow, ["tiny", "gpu", "published"])

    # A second invocation repeats the failed point only.
    dry = workflow.snakemake("--profile", "profiles/local", "-n")
    assert planned_runs(dry) == {("gpu", "t1", "1")}

    # Adding a study is a config edit; only its runs are new.
    config = {
        "studies": {
            "tiny": tiny_mnist_study(),
            "gpu": gpu,
            "published": MEASURED,
            "tiny_big_batch": tiny_mnist_study(repeats=1),
        }
    }
    config["studies"]["tiny_big_batch"]["params"]["batch_size"] = 64
    workflow.write_config(config)
    dry = workflow.snakemake("--profile", "profiles/local", "-n")
    assert planned_runs(dry) == {
        ("gpu", "t1", "1"),
        ("tiny_big_batch", "t1", "1"),
        ("tiny_big_batch", "t2", "1"),
    }


def report_index(page: str, name: str) -> dict:
    """One of the JSON objects Snakemake's report page declares (`var name = {...};`)."""
    return json.loads(re.search(rf"var {name} = (\{{.*?\}});\s*</script>", page, re.S)[1])


def assert_snakemake_report_holds_ours(workflow, studies):
    """`snakemake --report` after a finished run: its archive holds our report, and each
    study's figures and tables under the study's name, each with its caption."""
    workflow.snakemake("--report", "results/snakemake-report.zip")
    with zipfile.ZipFile(workflow.root / "results" / "snakemake-report.zip") as archive:
        names = archive.namelist()
        page = archive.read("snakemake-report/report.html").decode()
        raw = [n for n in names if "/data/raw/" in n]  # the tagged files, a folder each
        (ours,) = [archive.read(n) for n in raw if n.endswith("/report.html")]
    assert ours == (workflow.root / "results" / "report.html").read_bytes()
    expected = {"Report": {"Other": ["results/report.html"]}}
    for study in studies:
        expected[study] = {
            "Tables": [f"results/{study}/runs.csv", f"results/{study}/summary.csv"],
            "Figures": sorted(f"results/{study}/figures/{figure}.svg" for figure in FIGURES),
        }
    assert report_index(page, "categories") == expected
    results = report_index(page, "results")
    held = {n.rpartition("/")[2] for n in raw}
    assert len(raw) == 1 + len(studies) * (2 + len(FIGURES))
    assert held == {"report.html", "runs.csv", "summary.csv"} | {f"{f}.svg" for f in FIGURES}
    for study in studies:
        figure = results[f"results/{study}/figures/speedup.svg"]
        assert figure["labels"] == {"study": study, "figure": "speedup"}
        assert f'figures of study <tt class="docutils literal">{study}</tt>' in figure["caption"]


def test_malformed_config_stops_before_any_job(workflow):
    study = tiny_mnist_study(repeats=0)
    workflow.write_config({"studies": {"s": study}})
    proc = workflow.snakemake("--cores", "1", check=False)
    assert proc.returncode != 0
    assert "config key studies.s.repeats: 0 is less than the minimum of 1" in proc.output
    assert not (workflow.root / "results").exists()


def test_unknown_key_is_named(workflow):
    study = tiny_mnist_study()
    study["scaling"]["pointz"] = [1]
    workflow.write_config({"studies": {"s": study}})
    proc = workflow.snakemake("-n", check=False)
    assert proc.returncode != 0
    assert "config key studies.s.scaling" in proc.output and "'pointz'" in proc.output


def test_bad_measured_csv_is_not_aggregated(workflow):
    (workflow.root / "bad.csv").write_text("N,time_s\n1,10\n2,NaN\n")
    workflow.write_config({"studies": {"m": dict(MEASURED, measured="bad.csv")}})
    proc = workflow.snakemake("--cores", "1", check=False)
    assert proc.returncode != 0
    assert "bad.csv: line 3" in proc.output
    assert not (workflow.root / "results" / "m" / "summary.csv").exists()


def test_missing_data_stops_with_instructions(workflow):
    study = tiny_mnist_study()
    study["params"]["dataset"] = "mnist"
    workflow.write_config({"data_sources": {"mnist": ["/nonexistent"]}, "studies": {"s": study}})
    proc = workflow.snakemake("--cores", "2", check=False, timeout=300)
    assert proc.returncode != 0
    assert "MNIST is not available" in proc.output
    assert "data_sources.mnist" in proc.output
    assert not list((workflow.root / "results").glob("s/runs/*/*.json"))


def test_thousand_point_dry_run_plans_every_point(workflow):
    # how fast: benchmarks/dag_dry_run.py (a timed assert here failed CI on a busy
    # machine: 16.8 s against 15, where a quiet one takes about 2 s)
    study = tiny_mnist_study(repeats=1)
    study["scaling"]["points"] = list(range(1, 1001))
    study["oversubscribe"] = True  # else a local dry run refuses points beyond the machine
    workflow.write_config({"studies": {"big": study}})
    proc = workflow.snakemake("-n", "--cores", "2")
    assert re.search(r"run_point\s+1000", proc.stdout)


def test_grid_of_5000_cells_dry_run_plans_every_cell(workflow):
    # how fast: benchmarks/dag_dry_run.py (5.5 minutes before the series views were
    # built once and {point} was constrained by its grammar, not a list of every label)
    workflow.write_config({"studies": {"big": grid_study(50, 100)}})
    proc = workflow.snakemake("-n", "--cores", "2")
    assert re.search(r"run_point\s+5000", proc.stdout)
    # a point the config does not have is named as such
    proc = workflow.snakemake("-n", "results/big/runs/p1-c999/rep1.json", check=False)
    assert proc.returncode != 0 and "studies.big has no point p1-c999" in proc.output


def test_the_local_profile_runs_a_timed_run_alone_and_other_jobs_side_by_side(workflow):
    # a timed run takes every timed_runs slot there is; figures, aggregations and the
    # report one each, so two of them run at once between timed runs (157 s of figures
    # for 50 studies one at a time: benchmarks/report_scale.py)
    workflow.write_config({"studies": {"s": tiny_mnist_study(repeats=1)}})
    proc = workflow.snakemake("-n", "--profile", "profiles/local")
    slots, rule = {}, None
    for line in proc.stdout.splitlines():
        if found := re.match(r"(?:local)?(?:rule|checkpoint) (\w+):", line):
            rule = found.group(1)
        elif found := re.search(r"resources: .*timed_runs=(\d+)", line):
            slots.setdefault(rule, set()).add(int(found.group(1)))
    profile = yaml.safe_load((REPO / "profiles" / "local" / "config.yaml").read_text())
    total = int(dict(r.split("=") for r in profile["resources"])["timed_runs"])
    assert total >= 2 and slots["run_point"] == {total}
    assert slots["plot_study"] == slots["aggregate_study"] == slots["report"] == {1}


def test_no_profiles_default():
    assert not (REPO / "profiles" / "default").exists()


def test_unknown_profile_key_fails_loudly(workflow, tmp_path):
    profile = tmp_path / "site"
    profile.mkdir()
    (profile / "config.yaml").write_text("executor: slurm\nslurm-statuss-command: squeue\n")
    proc = workflow.snakemake("-n", "--profile", str(profile), check=False)
    assert proc.returncode != 0
    assert "unrecognized arguments: --slurm-statuss-command=squeue" in proc.output


def test_shipped_slurm_profile_is_accepted(workflow):
    workflow.write_config({"studies": {"published": MEASURED}})
    proc = workflow.snakemake("-n", "--profile", "profiles/slurm")
    assert "aggregate_study" in proc.output


def test_a_switch_of_profile_does_not_aggregate_again_where_slurm_facts_are_the_same(workflow):
    """What Slurm says is a file of its own (rules/cluster.smk), aggregation's input:
    the Slurm profile asks again (its queue differs), but times measured elsewhere have
    nothing to ask about, the facts come out the same, and the study is not aggregated
    again. The Slurm executor submits no job here: every rule it meets is local."""
    workflow.write_config({"studies": {"published": MEASURED}})
    target = "results/published/analysis.json"
    workflow.snakemake("--profile", "profiles/local", "--cores", "1", target)
    facts = workflow.root / "results" / "published" / "cluster.json"
    assert json.loads(facts.read_text())["queue"] == "local"
    made = (workflow.root / target).stat().st_mtime_ns
    for profile in ("profiles/slurm", "profiles/local"):
        proc = workflow.snakemake("--profile", profile, "--cores", "1", target)
        # planned before the facts were known, then judged again by them: not run
        ran = re.findall(r"^local(?:rule|checkpoint) (\w+):", proc.output, re.MULTILINE)
        assert ran == ["cluster_facts"], proc.output
    assert (workflow.root / target).stat().st_mtime_ns == made


# What sinfo, squeue, sacct and sbatch print on a machine whose Slurm controller is down
# or out of reach (a site's client tools, no route to slurmctld).
SLURM_DOWN = "slurm_load_partitions: Unable to contact slurm controller (connect failure)"


def slurm_out_of_reach(folder, monkeypatch):
    """Slurm's commands first on PATH, each failing as it does without a controller."""
    folder.mkdir()
    for tool in ("sinfo", "squeue", "sacct", "sbatch", "scontrol"):
        fake = folder / tool
        fake.write_text(f"#!/bin/sh\necho '{SLURM_DOWN}' >&2\nexit 1\n")
        fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")


def test_slurm_out_of_reach_is_said_once_before_any_job(workflow, tmp_path, monkeypatch):
    """-n and the plan warn (they submit nothing); a run that would submit stops before
    any job, instead of the plugin failing at each submission."""
    slurm_out_of_reach(tmp_path / "bin", monkeypatch)
    study = tiny_mnist_study(repeats=1)
    workflow.write_config({"studies": {"tiny": study}})
    said = f"Slurm could not be asked: sinfo failed ({SLURM_DOWN})"

    dry = workflow.snakemake("-n", "--profile", "profiles/slurm")
    assert dry.output.count("Slurm could not be asked") == 1 and said in dry.output
    assert "a real run stops here, before submitting any job" in dry.output

    plan = workflow.snakemake("--profile", "profiles/slurm", "results/plan.html")
    assert plan.output.count("Slurm could not be asked") == 1 and said in plan.output
    assert (workflow.root / "results" / "plan.html").is_file()

    run = workflow.snakemake("--profile", "profiles/slurm", check=False)
    assert run.returncode != 0
    assert run.output.count("Slurm could not be asked") == 1 and said in run.output
    assert "no job was run" in run.output and "Failed to run sinfo" not in run.output
    assert not (workflow.root / ".snakemake" / "slurm_logs").exists()


# what a hostile config writes: each opens a dialog where a page runs it
PAYLOAD = "</script><script>alert('script')</script><img src=x onerror=\"alert('img')\">"


@pytest.mark.slow
@pytest.mark.browser
@needs_chromium
def test_no_string_a_user_wrote_runs_as_script_in_either_report(workflow, tmp_path):
    # the fault probe: `snakemake --report`'s page carried the rules' params, the study's
    # config among them, raw inside a <script>: a `</script>` in a description, a command,
    # a value, an env entry or the title broke out, and Chromium fired 16 dialogs
    fails_at_2 = "import sys; sys.exit(sys.argv[1] if sys.argv[2] == '2' else 0)"
    command = {
        "description": f"D{PAYLOAD}",
        "workload": "command",
        "params": {
            "command": [sys.executable, "-c", fails_at_2, f"C{PAYLOAD}", "{threads}"],
            "values": {"tag": f"V{PAYLOAD}"},
            "env": {"PAYLOAD": f"E{PAYLOAD}"},
        },
        "scaling": {"axis": "threads", "points": [1, 2]},
        "repeats": 2,
        "resources": {"mem_mb": 500, "runtime": 2},
    } | NOT_JUDGED_ON_SHARED_CPUS
    config = {
        "report": {"title": f"T{PAYLOAD}"},
        "studies": {"c": command, "published": MEASURED | {"description": f"M{PAYLOAD}"}},
    }
    workflow.write_config(config)
    workflow.snakemake("--profile", "profiles/local")
    workflow.snakemake("--report", "results/snakemake-report.zip")
    with zipfile.ZipFile(workflow.root / "results" / "snakemake-report.zip") as archive:
        archive.extractall(tmp_path / "unzipped")
    (theirs,) = (tmp_path / "unzipped").glob("*/report.html")
    ours = workflow.root / "results" / "report.html"
    assert dialogs(theirs) == [] and dialogs(ours) == []
    # ours says each as text; the failed run's reason too (the program's own words)
    text = open_report(ours)["text"]
    for mark in "TDM":
        assert f"{mark}{PAYLOAD}" in text, mark
    assert f"C{PAYLOAD}" in text
    # Snakemake's holds no config string at all, only paths, hashes and numbers
    page = theirs.read_text()
    assert not any(f"{mark}</script>" in page for mark in "TDMCVE")
