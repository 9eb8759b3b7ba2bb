"""The study model (scalestudy/model.py): built once from the validated config, every
default from the schema alone, and series merged into a Study."""

import ast
import dataclasses
import re

import pytest
import yaml

from scalestudy.model import Study, StudyModelError
from tests.conftest import REPO, SCHEMA, checked_study, resolved, study_model, tiny_mnist_study

# code that reads the config or what it becomes (workloads read only their own
# params, which their own schemas complete: workloads/__init__.py)
CODE_FOLDERS = ("scalestudy", "scripts", "benchmarks")


def schema_defaults() -> dict[str, list]:
    """Every key of the config schema that has a default -> its defaults."""
    found: dict[str, list] = {}

    def walk(node) -> None:
        if isinstance(node, dict):
            for key, sub in (node.get("properties") or {}).items():
                if isinstance(sub, dict) and "default" in sub:
                    found.setdefault(key, []).append(sub["default"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(yaml.safe_load(SCHEMA.read_text()))
    return found


def _literal(node):
    try:
        return ast.literal_eval(node)
    except ValueError:
        return ...


def rewritten_defaults(source: str, defaults: dict[str, list]) -> list[str]:
    """Places in Python source that write one of the schema's defaults again: a
    `.get(key, default)`, `.pop(key, default)`, `getattr(x, key, default)`, or a
    parameter named after a key whose default is the schema's."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and len(node.args) >= 2:
            func = node.func
            is_get = isinstance(func, ast.Attribute) and func.attr in ("get", "pop", "setdefault")
            is_getattr = isinstance(func, ast.Name) and func.id == "getattr"
            key, fallback = (node.args[0], node.args[1]) if is_get else (None, None)
            if is_getattr and len(node.args) == 3:
                key, fallback = node.args[1], node.args[2]
            if isinstance(key, ast.Constant) and key.value in defaults:
                value = _literal(fallback)
                if any(value == d and type(value) is type(d) for d in defaults[key.value]):
                    found.append(f"line {node.lineno}: {ast.unparse(node)}")
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            args = node.args.args + node.args.kwonlyargs
            values = [None] * (len(node.args.args) - len(node.args.defaults))
            values += node.args.defaults + node.args.kw_defaults
            for arg, value in zip(args, values, strict=True):
                if value is not None and arg.arg in defaults:
                    literal = _literal(value)
                    if any(literal == d and type(literal) is type(d) for d in defaults[arg.arg]):
                        found.append(f"line {node.lineno}: def {node.name}(... {arg.arg}=...)")
    return found


def test_the_scan_finds_a_rewritten_default():
    """The check below can fail: the forms the code used before the model."""
    defaults = schema_defaults()
    source = (
        'tolerance = study.get("convergence", {}).get("tolerance", 0.1)\n'
        'kind = study["scaling"].get("kind", "strong")\n'
        'keep = getattr(study, "include_shared", False)\n'
        "def summarise(runs, time='wall'): ...\n"
        'fine = study.get("tolerance", 0.2)\n'  # not the schema's default
    )
    assert len(rewritten_defaults(source, defaults)) == 5  # the convergence {} counts too


def test_no_code_writes_a_schema_default_again():
    defaults = schema_defaults()
    assert 0.1 in defaults["tolerance"] and defaults["gpu_weight"] == [2]
    problems = []
    for folder in CODE_FOLDERS:
        for path in sorted((REPO / folder).rglob("*.py")):
            for place in rewritten_defaults(path.read_text(), defaults):
                problems.append(f"{path.relative_to(REPO)} {place}")
    assert not problems, "defaults belong in the config schema only:\n" + "\n".join(problems)


# the modules of scalestudy/study/ that check and expand the config's dicts
PRE_MODEL = {"validation", "expansion"}


def test_nothing_reads_a_study_as_a_dict_after_the_model():
    """After rules/common.smk builds the model, a study is read by attribute; only the
    validation in study/validation.py and study/expansion.py (before the model exists)
    sees the dict. (The report reads
    the study's facts from analysis.json: JSON, not the config.)"""
    pattern = re.compile(r"\bstudy(\.get\(|\[\")")
    offenders = []
    for folder in ("scalestudy", "scripts"):
        for path in sorted((REPO / folder).rglob("*.py")):
            before_the_model = path.parent.name == "study" and path.stem in PRE_MODEL
            if before_the_model or "scalestudy.model" not in path.read_text():
                continue
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if pattern.search(line):
                    offenders.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    for path in sorted((REPO / "rules").glob("*.smk")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"STUDIES\[[^]]+\]\[", line):
                offenders.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


def test_a_validated_study_becomes_the_model_with_every_default():
    study = checked_study(tiny_mnist_study())
    assert isinstance(study, Study)
    assert study.name == "s" and study.workload == "mnist_cnn"
    assert (study.repeats, study.time, study.scaling.kind, study.scaling.device) == (
        2, "wall", "strong", "cpu"
    )  # fmt: skip
    assert study.convergence.tolerance == 0.1 and study.convergence.metric is None
    assert study.cost == {"core_weight": 1, "gpu_weight": 2, "energy_weight": 0, "partitions": {}}
    assert study.scaling.points == (1, 2) and study.scaling.base is None
    assert study.recommend.deadline_s is None and study.verdict.size_param is None
    assert study.params["lr"] == 1.0  # the workload's own default
    with pytest.raises(dataclasses.FrozenInstanceError):
        study.repeats = 5


def test_an_unvalidated_study_is_refused_naming_the_key():
    with pytest.raises(StudyModelError, match=r"studies\.s\.description is missing"):
        Study.from_config("s", {"scaling": {"points": [1]}})


def test_a_series_sees_its_overrides_merged_key_by_key():
    study = checked_study(
        tiny_mnist_study(
            series={
                "big": {
                    "params": {"batch_size": 256},
                    "scaling": {"points": [2, 4], "base": 2},
                    "resources": {"mem_mb": 8000},
                    "cost": {"gpu_weight": 50},
                },
                "same": {},
            }
        )
    )
    big = study.for_series("big")
    assert isinstance(big, Study) and big.name == "s"
    assert big.params["batch_size"] == 256 and big.params["epochs"] == 1
    assert big.scaling.points == (2, 4) and big.scaling.base == 2
    assert big.scaling.axis == study.scaling.axis
    assert big.resources.mem_mb == 8000 and big.resources.runtime == study.resources.runtime
    assert big.cost == {"core_weight": 1, "gpu_weight": 50, "energy_weight": 0, "partitions": {}}
    # a series split by provenance sees its configured series
    assert study.for_series("big [GPU model=A100]") == big
    assert study.for_series("same") == study.for_series("") == study
    assert study.params["batch_size"] == 32  # the study itself is untouched
    assert study.series_names == ["big", "same"]


def test_a_series_view_is_built_once():
    # the workflow asks for a point's view about 30 times a job: a deep copy each time
    # took most of a 5,000-cell grid's 5.5-minute dry run (benchmarks/dag_dry_run.py)
    study = checked_study(tiny_mnist_study(series={"big": {"scaling": {"points": [2, 4]}}}))
    big = study.for_series("big")
    assert study.for_series("big") is big
    assert study.for_series("big [GPU model=A100]") is big
    assert dataclasses.replace(study).for_series("big") == big  # a copy builds its own
    assert study.scaling.given(3) == 3 and big.scaling.given(4) == 4


def test_a_series_override_of_an_unknown_resource_is_refused_before_any_job():
    from tests.test_studies import config_error

    study = tiny_mnist_study(series={"x": {"resources": {"mem_gb": 8}}})
    assert "studies.s.series.x.resources" in config_error({"studies": {"s": study}})


def test_unit_test_studies_take_the_schema_defaults():
    study = study_model({"time": "train"})
    assert study.time == "train" and study.shared_tolerance == 0.1 and study.workload is None


def schema_node(path: list[str]) -> dict | None:
    """The schema of a dotted config key (top level, or a study's when not found there)."""
    root = yaml.safe_load(SCHEMA.read_text())

    def resolve(node: dict) -> dict:
        return resolved(node, root)

    for start in (root, root["$defs"]["study"]):
        node = start
        for part in path:
            node = resolve(node).get("properties", {}).get(part)
            if node is None:
                break
        else:
            return resolve(node)
    return None


def test_the_config_reference_gives_the_schemas_defaults():
    """config/README.md's key tables say each default again, for readers: they must say
    what the schema says, and name every key a study has."""
    text = (REPO / "config" / "README.md").read_text()
    rows = re.findall(r"^\| `([A-Za-z_.]+)` \|([^|]*)\|", text, flags=re.M)
    documented = set()
    for key, default in rows:
        # series.NAME, cost.partitions.NAME: the named part is the user's
        key = re.sub(r"\.[A-Z]+.*$", "", key)
        node = schema_node(key.split("."))
        if node is None:
            continue  # a workload's parameter (checked in test_workloads_registry)
        documented.add(key.split(".")[0])
        written = re.fullmatch(r"`(.*)`", default.strip())
        if written and "default" in node and not isinstance(node["default"], dict):
            assert yaml.safe_load(written[1]) == node["default"], key
        elif "default" in node and not isinstance(node["default"], dict):
            pytest.fail(f"config/README.md: {key} has default {node['default']!r}: say so")
    study_keys = set(yaml.safe_load(SCHEMA.read_text())["$defs"]["study"]["properties"])
    assert study_keys <= documented, sorted(study_keys - documented)
