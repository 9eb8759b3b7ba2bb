"""A DDP study end to end on CPU through the workflow: 1 vs 2 processes (gloo), the
own-command workload beside it, a profiler trace, and Comet with a canary key."""

import json
import sys
from pathlib import Path

import pandas as pd
import pytest

from tests.browser import open_report
from tests.conftest import NOT_JUDGED_ON_SHARED_CPUS
from tests.test_workflow import needs_chromium

CANARY = "canary-COMET-KEY-7f3e9a1d"


def spiral_study() -> dict:
    return {
        "description": "spiral MLP, DDP over CPU processes",
        "workload": "spiral_mlp",
        "params": {"samples": 3000, "epochs": 2, "global_batch_size": 64},
        "scaling": {"axis": "devices", "points": [1, 2]},
        "repeats": 1,
        "time": "train",
        "profile": {"enabled": True, "point": 2, "steps": 3},
        "resources": {"mem_mb": 2000, "runtime": 5},
    } | NOT_JUDGED_ON_SHARED_CPUS


def command_study() -> dict:
    script = (
        "import sys, time; n = int(sys.argv[1]); time.sleep(0.4 / n); "
        "print('train_s=%.3f' % (0.4 / n)); print('val_loss=0.5')"
    )
    return {
        "description": "your own program",
        "workload": "command",
        "params": {
            "command": [sys.executable, "-c", script, "{threads}"],
            "metrics_regex": {"train_s": r"train_s=([0-9.]+)", "val_loss": r"val_loss=(\S+)"},
        },
        "scaling": {"axis": "threads", "points": [1, 2]},
        "repeats": 1,
        "time": "train",  # the program's own training (train_s), as the speedup's time
        "resources": {"mem_mb": 1000, "runtime": 5},
    } | NOT_JUDGED_ON_SHARED_CPUS


def files_containing(root: Path, text: str) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and text.encode() in p.read_bytes()]


@pytest.mark.slow
@needs_chromium
def test_ddp_study_on_cpu_end_to_end(workflow, monkeypatch, tmp_path_factory):
    comet_dir = tmp_path_factory.mktemp("comet")
    monkeypatch.setenv("COMET_API_KEY", CANARY)
    monkeypatch.setenv("COMET_OFFLINE_DIRECTORY", str(comet_dir))
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    workflow.write_config({"studies": {"ddp": spiral_study(), "own": command_study()}})
    proc = workflow.snakemake("--profile", "profiles/local", "--cores", "2")
    results = workflow.root / "results"

    runs = pd.read_csv(results / "ddp" / "runs.csv")
    assert set(runs["status"]) == {"ok"}
    assert runs.groupby("point")["world_size"].first().to_dict() == {"p1": 1, "p2": 2}
    summary = pd.read_csv(results / "ddp" / "summary.csv")
    assert list(summary["global_batch"]) == [64, 64]  # strong scaling keeps it
    own = pd.read_csv(results / "own" / "summary.csv")
    assert list(own["status"]) == ["ok", "ok"] and own.loc[1, "speedup"] > 1

    # the profiler trace: Chrome trace format, linked from the report
    trace = results / "ddp" / "profile" / "p2.trace.json"
    events = json.loads(trace.read_text())["traceEvents"]
    assert any("ProfilerStep" in e.get("name", "") for e in events)
    page = open_report(results / "report.html")
    assert page["console"] == [] and page["external_requests"] == []
    assert "ddp/profile/p2.trace.json" in page["html"]

    # Comet ran (offline archive for every rank-0 run), and the key leaked nowhere
    assert len(list(comet_dir.glob("*.zip"))) == 2 + 2 + 1  # ddp runs, own runs, profile
    for where in ("results", "logs", ".snakemake"):
        assert files_containing(workflow.root / where, CANARY) == [], where
    assert CANARY not in proc.output
    records = list((results / "ddp" / "runs").rglob("*.json"))
    assert all(json.loads(p.read_text())["environment"]["tracker"] == "comet" for p in records)
