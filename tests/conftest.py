"""Shared fixtures: the repository, a disposable copy of the workflow, small configs."""

from __future__ import annotations

import contextlib
import copy
import functools
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
FASHION_DIR = Path("/usr/share/datasets/fashion-mnist")
# workloads: the workflow's own folder of them, as a checkout has (workloads.folder_for)
SCHEMA = REPO / "config" / "schema" / "config.schema.yaml"
WORKFLOW_PARTS = ["Snakefile", "rules", "scripts", "config", "profiles", "workloads", "report"]


# make test runs two pytest-xdist workers (-n 2 --dist loadgroup). The tests that time
# runs or load more than one core (marked slow, slurm, browser, gpu or measures) run on
# one of them, one after another. On the other run the rest, each on one core and timing
# nothing, and, one after another, the end-to-end tests marked `waits`: their runs only
# sleep and are not judged on shared CPUs. So beside a timed run at most one core is
# busy: the load every test here passes under (CI's other core may be busy too). Local
# timed runs still take turns machine-wide (compute/ledger.py's lock).
IN_LINE = {"slow", "slurm", "browser", "gpu", "measures"}


# Local timed runs take turns machine-wide: this one's minute-long hang holds that turn,
# so it comes first, while the other worker runs the Slurm tests (their runs take none).
FIRST = {"test_a_local_run_past_its_time_limit_is_stopped_and_the_rest_reach_the_report"}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    items.sort(key=lambda item: not (item.get_closest_marker("slurm") or item.name in FIRST))
    for item in items:
        marks = {mark.name for mark in item.iter_markers()}
        if "waits" in marks:
            item.add_marker(pytest.mark.xdist_group("waits"))
        elif IN_LINE & marks:
            item.add_marker(pytest.mark.xdist_group("in_line"))


def checked_study(study: dict, name: str = "s", workdir: Path = REPO):
    """One study as the workflow sees it: checked against the config schema (which
    fills in every default) and the workload's own, then as the study model."""
    from scalestudy.study.validation import checked_config, study_models

    config = checked_config({"studies": {name: copy.deepcopy(study)}}, SCHEMA, workdir)
    return study_models(config)[name]


def resolved(schema: dict, root: dict) -> dict:
    """A schema node with its $ref followed (its own keys kept beside the target's)."""
    while "$ref" in schema:
        node = root
        for part in schema["$ref"].removeprefix("#/").split("/"):
            node = node[part]
        schema = node | {k: v for k, v in schema.items() if k != "$ref"}
    return schema


def _with_defaults(value: dict, schema: dict, root: dict) -> dict:
    value = dict(value)
    for key, sub in resolved(schema, root).get("properties", {}).items():
        sub = resolved(sub, root)
        if key not in value and "default" in sub:
            value[key] = copy.deepcopy(sub["default"])
        if isinstance(value.get(key), dict) and "properties" in sub:
            value[key] = _with_defaults(value[key], sub, root)
    return value


@functools.cache
def schema_root() -> dict:
    return yaml.safe_load(SCHEMA.read_text())


def study_model(study: dict, name: str = "s"):
    """A study of a unit test as the study model: the keys it gives, and the schema's
    defaults for the rest, read from the schema (never written here). Unlike
    checked_study it needs no workload or measured file: for analysis on made tables."""
    from scalestudy.model import Study

    root = schema_root()
    return Study.from_config(name, _with_defaults(study, root["$defs"]["study"], root))


@contextlib.contextmanager
def on_the_quietest_cpu():
    """Pin this process (and what it starts) to the CPU of its own that was least busy
    a moment ago, and yield that CPU. A test that judges a run's CPU use then measures
    its run, not a program beside it: CI's other core may be busy, and the kernel keeps
    a floating program off a CPU that a pinned one holds."""
    from scalestudy.compute.processes import cpu_busy_ticks

    mine = os.sched_getaffinity(0)
    before = {cpu: cpu_busy_ticks({cpu}) for cpu in mine}
    time.sleep(0.3)
    cpu = min(mine, key=lambda c: cpu_busy_ticks({c}) - before[c])
    os.sched_setaffinity(0, {cpu})
    try:
        yield cpu
    finally:
        os.sched_setaffinity(0, mine)


# Tests run beside other work (CI's other core may be busy). A study whose handling of
# shared CPUs is not under test must not be judged on them: with the schema's 10 %
# tolerance its runs would be flagged and left out of the answer the test checks.
NOT_JUDGED_ON_SHARED_CPUS = {"shared_tolerance": 1.0}


def make(workdir: Path, target: str, *args: str) -> subprocess.CompletedProcess:
    """`make -s TARGET ARGS` in `workdir`, on this interpreter's environment."""
    return subprocess.run(
        ["make", "-s", target, f"VENV={sys.prefix}", *args],
        cwd=workdir,
        capture_output=True,
        text=True,
    )


def tiny_mnist_study(**overrides) -> dict:
    study = {
        "description": "tiny MNIST CNN study for tests",
        "workload": "mnist_cnn",
        "params": {
            "dataset": "fashion_mnist",
            "epochs": 1,
            "batch_size": 32,
            "max_batches": 3,
            "max_test_batches": 1,
            "test_batch_size": 200,
        },
        "scaling": {"axis": "threads", "points": [1, 2]},
        "repeats": 2,
        "resources": {"mem_mb": 2000, "runtime": 5},
    } | NOT_JUDGED_ON_SHARED_CPUS
    study.update(overrides)
    return study


def copy_of_the_workflow(root: Path) -> Workflow:
    """A copy of the workflow in `root`, and a way to run Snakemake in it."""
    for part in WORKFLOW_PARTS:
        src = REPO / part
        (shutil.copytree if src.is_dir() else shutil.copy2)(src, root / part)
    return Workflow(root)


@pytest.fixture
def workflow(tmp_path: Path):
    """A copy of the workflow in a temporary folder, and a way to run Snakemake in it."""
    return copy_of_the_workflow(tmp_path)


class Workflow:
    def __init__(self, root: Path):
        self.root = root

    def write_config(self, config: dict) -> Path:
        path = self.root / "config" / "config.yaml"
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        return path

    def snakemake(self, *args, check: bool = True, timeout: int = 900):
        env = dict(os.environ, PATH=f"{BIN}:{os.environ['PATH']}")
        proc = subprocess.run(
            [str(BIN / "snakemake"), *args],
            cwd=self.root,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        proc.output = proc.stdout + proc.stderr  # Snakemake prints errors to either
        if check and proc.returncode != 0:
            raise AssertionError(
                f"snakemake {' '.join(args)} failed ({proc.returncode}):\n"
                f"{proc.stdout[-4000:]}\n{proc.stderr[-6000:]}"
            )
        return proc
