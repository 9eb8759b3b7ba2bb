"""Your own program, measured as well as ours, through the real workflow: its memory
however short its peak, torchrun's environment at every N, its own training time, and
a base case that failed in every run said first and in the workflow's exit status. One
workflow run serves every test here; the DDP study is docs/studies.md's worked example."""

import json
import re
import sys

import pandas as pd
import pytest
import yaml

from tests.conftest import NOT_JUDGED_ON_SHARED_CPUS, REPO, copy_of_the_workflow
from tests.test_report_words import text_of

PY = sys.executable
# holds 800 MB for half a second, then ends: a 5-s sampler would never see it
HOLDS_800_MB = (
    "import time; b = bytearray(800 * 2**20); b[::4096] = b'x' * (len(b) // 4096); time.sleep(0.5)"
)
# starts (0.5 s), then trains 1/N s, and says so: its own speedup is 2.0 at N = 2,
# its whole run's about 1.4
TRAINS_1_OVER_N = (
    "import sys, time; time.sleep(0.5); t = time.perf_counter(); time.sleep(1 / int(sys.argv[1]));"
    " print('train_s=%.4f' % (time.perf_counter() - t))"
)


def docs_example() -> dict:
    """The worked example's study, as docs/studies.md shows it."""
    text = (REPO / "docs" / "studies.md").read_text()
    block = re.search(r"<!-- own-ddp-example -->\n```yaml\n(.*?)```", text, re.S).group(1)
    return yaml.safe_load(block)["studies"]


def own(command, metrics_regex=None, **study) -> dict:
    params = {"command": command, "metrics_regex": metrics_regex or {}}
    return {"workload": "command", "params": params, "repeats": 1} | study


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    workflow = copy_of_the_workflow(tmp_path_factory.mktemp("own"))
    (example,) = docs_example().values()
    studies = {
        "example": example | NOT_JUDGED_ON_SHARED_CPUS,
        "memory": own([PY, "-c", HOLDS_800_MB], scaling={"axis": "threads", "points": [1]}),
        "phases": own(
            [PY, "-c", TRAINS_1_OVER_N, "{threads}"],
            {"train_s": r"train_s=([0-9.]+)"},
            scaling={"axis": "threads", "points": [1, 2]},
            repeats=2,
            time="train",
            # it sleeps: the other core may be busy, and that is not under test
            include_shared=True,
        ),
        "broken": own(
            [PY, "-c", "import sys; sys.exit('no such data set: /scratch/imagenet')"],
            scaling={"axis": "threads", "points": [1, 2]},
        ),
    }
    workflow.write_config({"studies": studies})
    proc = workflow.snakemake("--profile", "profiles/local", check=False)
    return workflow, proc


def analysis(workflow, study: str) -> dict:
    return json.loads((workflow.root / "results" / study / "analysis.json").read_text())


@pytest.mark.slow
def test_every_probe_is_in_the_first_plan_so_they_run_side_by_side(ran):
    """The whole run asks each probe's checkpoint in turn, and Snakemake learns of one
    incomplete checkpoint an evaluation: the four studies' probes ran one after another
    (on Slurm a status-check cycle each, 14-36 s on the test cluster) until every probe
    became an input of the whole run."""
    _, proc = ran
    first_plan = re.search(r"probe_command\s+(\d+)", proc.output)
    assert int(first_plan.group(1)) == 4, proc.output[:2000]


@pytest.mark.slow
def test_a_half_second_800_mb_peak_gets_a_mem_that_holds_it(ran):
    workflow, _ = ran
    (request,) = analysis(workflow, "memory")["requests"]["points"]
    assert request["peak_mem_mb"] >= 800 and request["mem_mb"] >= 800, request
    assert request["mem_from"] == "measured"
    assert any(line.startswith("#SBATCH --mem=") for line in request["sbatch"])
    record = json.loads((workflow.root / "results/memory/runs/t1/rep1.json").read_text())
    usage = record["resources"]["usage"]
    assert usage["rank_peak_rss_mb"][0] >= 800 and usage["node_peak_rss_mb"][0] >= 800


@pytest.mark.slow
def test_a_ddp_program_joining_from_env_runs_at_1_and_2_processes(ran):
    workflow, _ = ran
    runs = pd.read_csv(workflow.root / "results" / "example" / "runs.csv")
    assert set(runs["status"]) == {"ok"}, runs["reason"].tolist()
    assert sorted(runs["world_size"].unique()) == [1, 2]
    # its own phases are the record's: the speedup rests on its training
    summary = pd.read_csv(workflow.root / "results" / "example" / "summary.csv")
    assert (summary["time_s"] == summary["train_s"]).all()
    assert (summary["train_s"] < summary["wall_s"] / 2).all()
    # the #SBATCH lines of the worked example, with a measured --mem
    requests = analysis(workflow, "example")["requests"]["points"]
    assert all(r["mem_from"] == "measured" and r["sbatch"] for r in requests)


@pytest.mark.slow
def test_a_program_reporting_its_training_gets_its_speedup_from_it(ran):
    workflow, _ = ran
    summary = pd.read_csv(workflow.root / "results" / "phases" / "summary.csv").set_index("n")
    assert summary.loc[2, "speedup"] == pytest.approx(2.0, rel=0.1)
    # the whole run's would be about 1.4: it starts for half a second first
    assert summary.loc[1, "wall_s"] / summary.loc[2, "wall_s"] < 1.6
    text = text_of((workflow.root / "results" / "report.html").read_text())
    assert "Times are your program's own training time , as it reports it" in text
    assert "time / epoch" not in text and "Global batch" not in text


@pytest.mark.slow
def test_a_base_case_failed_in_every_run_ends_the_workflow_non_zero_after_the_report(ran):
    workflow, proc = ran
    assert proc.returncode != 0
    assert "broken: no answer: every run of the base case t1 failed" in proc.output
    report = workflow.root / "results" / "report.html"
    assert report.exists()
    html = report.read_text()
    first = html[html.index('data-study="broken"') :]
    row = text_of(first[: first.index("</tr>")])
    assert "how many : No recommendation: every run of the base case t1 failed" in row
    assert "no such data set: /scratch/imagenet" in row
    # the other studies were answered all the same
    assert (workflow.root / "results" / "memory" / "summary.csv").exists()


@pytest.mark.slow
def test_a_command_that_fails_at_once_is_named_by_its_probe_and_none_of_its_runs_starts(ran):
    workflow, proc = ran
    said = "study broken: its command failed at once, so none of its runs starts: RuntimeError"
    assert said in proc.output
    assert not (workflow.root / "results" / "broken" / "runs").exists()
    # the probe's record stands for them: the study's one failed run
    runs = pd.read_csv(workflow.root / "results" / "broken" / "runs.csv")
    assert list(runs["status"]) == ["failed"] and list(runs["point"]) == ["t1"]
    # a working command's probe passed, and its runs ran
    probe = json.loads((workflow.root / "results/memory/probe/t1.json").read_text())
    assert probe["status"] == "ok" and (workflow.root / "results/memory/runs/t1").is_dir()


@pytest.mark.slow
def test_a_dry_run_on_slurm_after_local_runs_says_their_records_are_kept(ran):
    workflow, _ = ran
    dry = workflow.snakemake("--profile", "profiles/slurm", "-n", check=False)
    assert (
        "Study memory: 1 point (t1) already has records made locally: they are kept, not "
        "run again on Slurm (make redo STUDY=memory moves them aside to run them on Slurm)"
    ) in dry.output
    assert "rule run_point" not in dry.output
