"""Config schema, defaults, point expansion and semantic checks."""

import copy

import pytest
from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from scalestudy.study.config_tables import points_table, runs_table
from scalestudy.study.errors import ConfigError, describe_validation_error
from scalestudy.study.points import point_for
from scalestudy.study.run_spec import run_spec
from scalestudy.study.validation import checked_config, normalise_config, study_models
from tests.conftest import REPO, study_model, tiny_mnist_study

SCHEMA = str(REPO / "config" / "schema" / "config.schema.yaml")


def validated(config: dict) -> dict:
    config = copy.deepcopy(config)
    validate(config, schema=SCHEMA)
    return normalise_config(config, REPO)


def model(config: dict, name: str = "s"):
    """Study `name` of a config, validated, as the study model."""
    return study_models(validated(config))[name]


def config_error(config: dict) -> str:
    with pytest.raises((WorkflowError, ConfigError)) as info:
        try:
            validated(config)
        except WorkflowError as e:
            raise WorkflowError(describe_validation_error(e)) from None
    return str(info.value)


def test_shipped_config_is_valid():
    import yaml

    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    config = validated(config)
    assert config["studies"]["mnist_threads"]["scaling"]["points"] == [1, 2]


def test_defaults_are_filled_in():
    study = tiny_mnist_study()
    del study["repeats"], study["resources"]
    config = validated({"studies": {"s": study}})
    s = config["studies"]["s"]
    assert s["repeats"] == 3
    assert s["resources"] == {"mem_mb": 4000, "runtime": 30}
    assert s["cost"] == {"core_weight": 1, "gpu_weight": 2, "energy_weight": 0, "partitions": {}}
    assert s["scaling"]["axis"] == "threads" and s["scaling"]["device"] == "cpu"
    assert s["params"]["lr"] == 1.0 and s["params"]["gamma"] == 0.7
    assert config["data_dir"] == "data"


def test_defaults_are_not_shared_between_studies():
    config = validated({"studies": {"a": tiny_mnist_study(), "b": tiny_mnist_study()}})
    config["studies"]["a"]["cost"]["gpu_weight"] = 99
    assert config["studies"]["b"]["cost"]["gpu_weight"] == 2


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda s: s.update(repeats=0), "studies.s.repeats"),
        (lambda s: s.update(repeat=3), "'repeat' was unexpected"),
        (lambda s: s["scaling"].update(points=[1, 0]), "studies.s.scaling.points.1"),
        (lambda s: s["scaling"].update(points=[]), "studies.s.scaling.points"),
        (lambda s: s["params"].update(batch_size="big"), "studies.s.params.batch_size"),
        (lambda s: s["params"].update(bogus=1), "'bogus' was unexpected"),
        (lambda s: s.update(workload="nope"), "studies.s.workload"),
        (lambda s: s["scaling"].update(axis="gpus"), "studies.s.scaling.axis"),
        (lambda s: s["scaling"].update(base=3), "studies.s.scaling.base: 3 is not one of"),
        (lambda s: s.update(measured="x.csv"), "studies.s"),
        (lambda s: s["scaling"].update(axis="devices"), "runs one process"),
    ],
)
def test_bad_config_names_the_key(mutate, expected):
    study = tiny_mnist_study()
    mutate(study)
    assert expected in config_error({"studies": {"s": study}})


def test_unsafe_study_name_is_rejected():
    message = config_error({"studies": {"a b;rm": tiny_mnist_study()}})
    assert "a b;rm" in message and "does not match" in message


def test_measured_study_needs_its_file():
    study = {"measured": "no/such.csv", "scaling": {"axis": "devices"}}
    assert "studies.s.measured: no such file" in config_error({"studies": {"s": study}})


def test_point_labels_and_resources():
    study = {
        "scaling": {"axis": "devices", "threads": 4, "devices": 1, "nodes": 2, "device": "gpu"}
    }
    p = point_for(study_model(study), 4)
    assert (p.label, p.threads, p.tasks_per_node, p.nodes, p.gpus_per_node) == ("g4-n2", 4, 4, 2, 4)
    assert (p.cores, p.gpus, p.world_size) == (32, 8, 8)
    study["scaling"].update(axis="threads", nodes=1, devices=1, device="cpu")
    p = point_for(study_model(study), 8)
    assert (p.label, p.cores, p.gpus, p.world_size) == ("t8", 8, 0, 1)
    study["scaling"].update(axis="nodes", devices=2)
    assert point_for(study_model(study), 3).label == "n3"


def test_tables_expand_points_and_repeats():
    config = validated({"studies": {"s": tiny_mnist_study(repeats=3)}})
    points = points_table(study_models(config))
    assert list(points["point"]) == ["t1", "t2"]
    runs = runs_table(study_models(config))
    assert len(runs) == 6 and set(runs["repeat"]) == {1, 2, 3}


def test_base_case_defaults_to_smallest_point():
    study = tiny_mnist_study()
    study["scaling"]["points"] = [4, 2, 8]
    assert study_model(study).base_n([4, 2, 8]) == 2
    study["scaling"]["base"] = 4
    assert study_model(study).base_n([4, 2, 8]) == 4


def test_run_spec_carries_the_request():
    config = validated({"studies": {"s": tiny_mnist_study()}})
    spec = run_spec(study_models(config)["s"], 2, 1)
    assert spec["point"] == "t2" and spec["requested"]["threads"] == 2
    assert spec["requested"]["mem_mb"] == 2000
    assert spec["series"] == "" and "data_dir" not in spec and "profile" not in spec


def test_run_spec_is_built_whole_with_the_data_and_the_profile():
    """The rules pass data_dir and a profiling job's trace; nothing adds to the spec."""
    config = validated({"studies": {"s": tiny_mnist_study()}})
    study = study_models(config)["s"]
    spec = run_spec(study, 2, 3, data_dir="data")
    assert spec["data_dir"] == "data" and spec["repeat"] == 3 and "profile" not in spec
    traced = run_spec(study, 2, 1, data_dir="data", profile_trace="t.trace.json")
    assert traced["profile"] == {"steps": study.profile.steps, "trace": "t.trace.json"}


def test_only_keeps_the_named_studies_and_refuses_unknown_names():
    studies = {"a": tiny_mnist_study(), "b": tiny_mnist_study()}
    config = checked_config({"studies": copy.deepcopy(studies), "only": ["b"]}, SCHEMA, REPO)
    assert list(config["studies"]) == ["b"]
    assert set(points_table(study_models(config))["study"]) == {"b"}
    assert list(validated({"studies": studies})["studies"]) == ["a", "b"]  # empty = all
    with pytest.raises(ConfigError) as refused:
        checked_config({"studies": studies, "only": ["b", "c"]}, SCHEMA, REPO)
    assert refused.value.problems == ["config key only: no study named c"]
