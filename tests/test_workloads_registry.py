"""Self-describing workloads: each module declares its capabilities and parameter schema,
the registry reads them without importing the module, config/README.md documents them,
and a brand-new workload is one new module."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from snakemake.utils import validate

import workloads
from scalestudy.study.errors import ConfigError
from scalestudy.study.run_spec import run_spec
from scalestudy.study.validation import normalise_config
from scalestudy.study.workload_bridge import workload_capabilities
from tests.conftest import REPO, study_model
from tests.test_studies import SCHEMA, config_error, validated

BUILT_IN = {
    "mnist_cnn",
    "spiral_mlp",
    "lightning_autoencoder",
    "command",
    "linear_solve",
    "gd_regression",
    "cifar_cnn",
    "data_formats",
}
README = REPO / "config" / "README.md"

# A workload as a user would add one: a module, and nothing else anywhere.
SLEEPER = '''\
"""A workload written by a test: it sleeps in one timed phase."""

import time

WORKLOAD = {
    "distributed": False,
    "steps": False,
    "devices": ["cpu"],
    "params": {
        "properties": {
            "seconds": {
                "description": "how long to sleep",
                "type": "number",
                "exclusiveMinimum": 0,
                "maximum": 5,
                "default": 0.1,
            },
            "label": {"description": "a name", "type": "string", "default": "nap"},
        },
    },
}


def run(params, ctx):
    with ctx.phase("sleep", kind="epoch", samples=1):
        time.sleep(params["seconds"])
    ctx.metric("slept_s", params["seconds"])
    ctx.metric("label_length", len(params["label"]))
'''


def sleeper_study(**params) -> dict:
    return {
        "workload": "sleeper",
        "params": params,
        "scaling": {"axis": "threads", "points": [1]},
        "repeats": 1,
        "resources": {"mem_mb": 2000, "runtime": 2},
    }


def write_module(folder: Path, name: str, source: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "__init__.py").touch()
    path = folder / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    return path


# --- the declarations -------------------------------------------------------------------


def test_every_workload_declares_itself():
    known = workloads.discover()
    assert set(known) == BUILT_IN
    assert known["data_formats"].path == REPO / "workloads" / "data_formats" / "__init__.py"
    for workload in known.values():
        assert set(workload.devices) <= {"cpu", "gpu"}
        schema = workload.params
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        # every default is valid: completing nothing (or the one required key) passes
        required = {"command": "true"} if workload.name == "command" else {}
        filled = workload.complete(required)
        assert set(filled) >= {k for k, v in schema["properties"].items() if "default" in v}


def test_capabilities_match_the_code():
    """`steps` says the module calls ctx.step(); distributed ones may scale over devices."""
    for workload in workloads.discover().values():
        source = workload.path.read_text()
        assert ("ctx.step" in source) == workload.steps, workload.name
    capabilities = workload_capabilities("spiral_mlp", REPO)
    assert capabilities == {"distributed": True, "steps": True, "devices": ("cpu", "gpu")}
    assert workload_capabilities("linear_solve", REPO)["distributed"] is False
    assert workload_capabilities(None, REPO) == {}
    assert workload_capabilities("no_such", REPO) == {}


def test_reading_the_declarations_imports_no_workload():
    """At DAG-parse time: the declarations without torch or the modules themselves."""
    code = (
        "import sys, json; from pathlib import Path;"
        "from scalestudy.study.workload_bridge import workloads_of;"
        "known = workloads_of(Path('.'));"
        "print(json.dumps([sorted(known), sorted(m for m in sys.modules"
        " if m in ('torch', 'jax', 'cupy') or m.startswith('workloads.'))]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    names, imported = json.loads(out.stdout)
    assert set(names) == BUILT_IN and imported == []


def test_options_copies_are_gone():
    for workload in workloads.discover().values():
        assert "def options(" not in workload.path.read_text(), workload.name


def test_malformed_declarations_are_named(tmp_path):
    folder = tmp_path / "workloads"
    write_module(folder, "good", 'WORKLOAD = {"distributed": False, "steps": False}\n')
    write_module(folder, "_helper", "X = 1\n")  # not a workload: leading underscore
    assert list(workloads.discover(folder)) == ["good"]
    assert workloads.discover(folder)["good"].params["properties"] == {}

    cases = {
        "computed": ("N = 2\nWORKLOAD = {'distributed': N > 1, 'steps': False}\n", "plain literal"),
        "missing": ("def run(params, ctx):\n    pass\n", "no WORKLOAD = {...} declaration"),
        "typo": ("WORKLOAD = {'distributed': False, 'step': True}\n", "unknown keys ['step']"),
        "flags": ("WORKLOAD = {'distributed': 'no', 'steps': False}\n", "['distributed'] must"),
        "device": (
            "WORKLOAD = {'distributed': False, 'steps': False, 'devices': ['tpu']}\n",
            "['devices'] must",
        ),
        "broken": ("WORKLOAD = {\n", "cannot parse"),
    }
    for name, (source, message) in cases.items():
        path = write_module(folder, name, source)
        with pytest.raises(workloads.WorkloadError, match=re.escape(message)) as info:
            workloads.discover(folder)
        assert str(path) in str(info.value)
        path.unlink()
    with pytest.raises(workloads.WorkloadError, match="unknown workload 'bad'.*good"):
        workloads.find("bad", folder)
    source = "WORKLOAD = {'distributed': False, 'steps': False, 'params': %r}\n"
    write_module(folder, "typed", source % {"properties": {"n": {"type": "integr"}}})
    with pytest.raises(workloads.WorkloadError, match="typed.py: WORKLOAD.'params'. is no valid"):
        workloads.find("typed", folder).complete({"n": 1})


def test_a_package_is_a_workload_too(tmp_path):
    package = tmp_path / "workloads" / "packed"
    package.mkdir(parents=True)
    (tmp_path / "workloads" / "__init__.py").touch()
    (package / "__init__.py").write_text("WORKLOAD = {'distributed': True, 'steps': True}\n")
    (package / "helpers.py").write_text("X = 1\n")  # inside a package: not scanned
    assert workloads.folder_for(tmp_path) == (tmp_path / "workloads").resolve()
    assert list(workloads.discover(workloads.folder_for(tmp_path))) == ["packed"]
    assert workloads.folder_for(tmp_path / "elsewhere") == workloads.FOLDER


# --- parameters -------------------------------------------------------------------------


def test_complete_validates_and_fills_in_defaults():
    declaration = workloads.find("linear_solve")
    params = declaration.complete({"systems": 4})
    assert params == {
        "systems": 4,
        "backend": "numpy",
        "size": 256,
        "repeats_inner": 3,
        "seed": 1,
        "data_on_host": False,
        "dtype": "float32",
    }
    from workloads import linear_solve

    assert workloads.complete(linear_solve.WORKLOAD, params) is params  # from the workflow
    assert workloads.complete(linear_solve.WORKLOAD, {"size": 8})["systems"] == 64
    with pytest.raises(workloads.ParamsError, match=r"^params\.dtype: 'float16' is not one of"):
        workloads.complete(linear_solve.WORKLOAD, {"dtype": "float16"})
    with pytest.raises(workloads.ParamsError, match=r"^params\.sise: .*'sise' was unexpected"):
        workloads.complete(linear_solve.WORKLOAD, {"sise": 8})


def test_defaults_are_copies():
    command = workloads.find("command")
    a, b = command.complete({"command": "true"}), command.complete({"command": "true"})
    a["values"]["x"] = 1
    assert b["values"] == {} and command.params["properties"]["values"]["default"] == {}


def test_study_params_are_validated_with_the_workloads_schema():
    study = {
        "workload": "cifar_cnn",
        "params": {"batch_size": 32},
        "scaling": {"axis": "threads", "points": [1, 2]},
        "series": {"big": {"params": {"batch_size": 256}}, "same": {}},
    }
    s = validated({"studies": {"s": study}})["studies"]["s"]
    assert s["params"]["batch_size"] == 32 and s["params"]["placement"] == "loader"
    assert s["series"]["big"]["params"] == {"batch_size": 256}  # overrides stay overrides
    assert run_spec(study_model(s), 1, 1, "big")["params"]["batch_size"] == 256
    assert run_spec(study_model(s), 1, 1, "big")["params"]["momentum"] == 0.9

    def error(**change) -> str:
        bad = json.loads(json.dumps(study))
        for key, value in change.items():
            target = bad
            *path, last = key.split("__")
            for part in path:
                target = target[part]
            target[last] = value
        return config_error({"studies": {"s": bad}})

    assert "studies.s.params.placement: 'gpu' is not one of" in error(params__placement="gpu")
    assert "studies.s.params.epochz: Additional properties" in error(params__epochz=2)
    assert "the parameters are batch_size, dataset, epochs" in error(params__epochz=2)
    message = error(series__big__params__batch_size=0)
    assert "studies.s.series.big.params.batch_size: 0 is less than the minimum of 1" in message
    message = error(series__big__params__batch_sise=0)
    assert "studies.s.series.big.params.batch_sise: Additional properties" in message
    message = error(workload="cifar")
    assert "studies.s.workload: unknown workload 'cifar'; the workloads are cifar_cnn" in message


def test_command_params_still_need_a_command():
    study = {"workload": "command", "scaling": {"axis": "threads", "points": [1]}}
    assert "studies.s.params: 'command' is a required property" in config_error(
        {"studies": {"s": study}}
    )
    study["params"] = {"command": ["echo", "{nope}"]}
    assert "studies.s.params.command" in config_error({"studies": {"s": study}})


# --- config/README.md -------------------------------------------------------------------


def documented(text: str) -> dict[str, dict[str, str]]:
    """workload -> {parameter: default cell} from the tables of config/README.md."""
    tables = {}
    pattern = r"<!-- params of (\w+):.*?-->\n(.*?)<!-- end of params -->"
    for name, table in re.findall(pattern, text, flags=re.DOTALL):
        rows = [line.split(" | ") for line in table.splitlines()[2:]]
        tables[name] = {row[0].strip("| `"): row[1] for row in rows}
    return tables


def test_readme_documents_every_parameter_with_its_default():
    text = README.read_text()
    tables = documented(text)
    known = workloads.discover()
    assert set(tables) == set(known)
    for name, workload in known.items():
        properties = workload.params["properties"]
        assert set(tables[name]) == set(properties), f"{name}: run python -m workloads"
        for key, prop in properties.items():
            if "default" in prop:
                want = f"`{workloads.markdown_value(prop['default'])}`"
                assert tables[name][key] == want, f"{name}.{key}: run python -m workloads"
        assert f"## Workload `{name}`" in text
        assert f"`{name}`" in next(line for line in text.splitlines() if "| `workload` |" in line)
    # and the whole table, descriptions included, is what the generator writes
    assert workloads.readme_with_tables(text, known) == text, "run python -m workloads"


def test_readme_generator_adds_a_new_workloads_table(tmp_path):
    folder = tmp_path / "workloads"
    write_module(folder, "sleeper", SLEEPER)
    known = workloads.discover(folder)
    with pytest.raises(workloads.WorkloadError, match="no parameter table of sleeper"):
        workloads.readme_with_tables("# nothing\n", known)
    stub = f"## Workload `sleeper`\n\n{workloads.BEGIN.format(name='sleeper')}\n{workloads.END}\n"
    text = workloads.readme_with_tables(stub, known)
    assert "| `seconds` | `0.1` | how long to sleep |" in text
    assert "| `label` | `nap` | a name |" in text
    with pytest.raises(workloads.WorkloadError, match="documents 'gone'"):
        workloads.readme_with_tables(stub.replace("sleeper", "gone"), {})


# --- a brand-new workload in a copy of the workflow -------------------------------------


def add_sleeper(workflow) -> None:
    (workflow.root / "workloads" / "sleeper.py").write_text(SLEEPER)


def test_new_workload_is_planned_and_its_bad_params_refused(workflow):
    add_sleeper(workflow)
    workflow.write_config({"studies": {"naps": sleeper_study(seconds=0.2)}})
    proc = workflow.snakemake("-n", "--cores", "1")
    assert "wildcards: study=naps, point=t1, repeat=1" in proc.output

    workflow.write_config({"studies": {"naps": sleeper_study(seconds=0)}})
    proc = workflow.snakemake("-n", "--cores", "1", check=False)
    assert proc.returncode != 0
    assert (
        "config key studies.naps.params.seconds: 0 is less than or equal to the minimum of 0"
        in proc.output
    )
    assert not (workflow.root / "results").exists()

    # the same checks in-process (what rules/common.smk calls) on the copy's workloads
    def refused(**change) -> str:
        study = sleeper_study()
        for key, value in change.items():
            target = study
            *path, last = key.split("__")
            for part in path:
                target = target.setdefault(part, {})
            target[last] = value
        config = {"studies": {"naps": study}}
        validate(config, schema=SCHEMA)
        with pytest.raises(ConfigError) as info:
            normalise_config(config, workflow.root)
        return str(info.value)

    message = refused(params__secondz=1)
    assert message.startswith("studies.naps.params.secondz: Additional properties")
    message = refused(scaling__device="gpu")
    assert "studies.naps.scaling.device: workload sleeper runs on cpu only" in message
    assert "runs one process" in refused(scaling__axis="devices")
    assert "has no training steps" in refused(profile__enabled=True)
    message = refused(workload="sleepr")
    assert "unknown workload 'sleepr'; the workloads are" in message
    assert "sleeper" in message and "mnist_cnn" in message
    # the repository's own folder does not have it
    with pytest.raises(ConfigError, match="unknown workload 'sleeper'"):
        validated({"studies": {"naps": sleeper_study()}})


@pytest.mark.slow
def test_new_workload_runs_through_snakemake(workflow):
    add_sleeper(workflow)
    workflow.write_config({"studies": {"naps": sleeper_study(seconds=0.2)}})
    workflow.snakemake("--cores", "1", "results/naps/runs/t1/rep1.json", timeout=120)
    record = json.loads((workflow.root / "results/naps/runs/t1/rep1.json").read_text())
    assert record["status"] == "ok", record.get("reason")
    assert record["workload"] == "sleeper"
    assert record["metrics"]["slept_s"] == 0.2
    assert record["metrics"]["label_length"] == 3  # the default, filled in from the schema
    sleep = next(p for p in record["phases"] if p["name"] == "sleep")
    assert sleep["kind"] == "epoch" and sleep["seconds"] >= 0.2
