"""Config errors in plain words: every problem at once, each naming its key, with the
nearest known key for a typo, name rules in words, YAML errors with file:line:column,
and no traceback."""

import copy

import pytest

from scalestudy.study.errors import ConfigError, yaml_problem
from scalestudy.study.validation import checked_config, not_selected_problems
from tests.conftest import REPO, tiny_mnist_study
from tests.test_studies import SCHEMA


def problems(config: dict, workdir=REPO) -> list[str]:
    """Every problem the workflow reports for `config` (what rules/common.smk calls)."""
    with pytest.raises(ConfigError) as info:
        checked_config(copy.deepcopy(config), SCHEMA, workdir)
    return info.value.problems


def assert_no_traceback(output: str) -> None:
    assert "Traceback" not in output and 'File "' not in output
    assert "common.smk" not in output and "WorkflowError" not in output


def test_three_studies_with_the_same_typo_give_three_messages(workflow):
    studies = {name: tiny_mnist_study() for name in ("a", "b", "c")}
    for study in studies.values():
        study["repeat"] = study.pop("repeats")
    workflow.write_config({"studies": studies})
    proc = workflow.snakemake("-n", check=False)
    assert proc.returncode != 0
    assert "The config has 3 problems; no job was run" in proc.output
    for name in studies:
        assert (
            f"config key studies.{name}.repeat: Additional properties are not allowed "
            "('repeat' was unexpected); did you mean `repeats`?"
        ) in proc.output
    assert_no_traceback(proc.output)
    assert not (workflow.root / "results").exists()


def test_schema_problems_come_first_then_the_workflow_checks_of_the_other_studies():
    bad_schema = tiny_mnist_study(repeats=0)
    bad_params = tiny_mnist_study()
    bad_params["params"]["epochz"] = 2
    bad_base = tiny_mnist_study()
    bad_base["scaling"]["base"] = 3
    config = {"studies": {"p": bad_params, "s": bad_schema, "b": bad_base}}
    found = problems(config)
    assert [p.split(":")[0] for p in found] == [
        "config key studies.s.repeats",
        "config key studies.p.params.epochz",
        "config key studies.b.scaling.base",
    ]


def test_every_problem_of_one_study_is_listed():
    study = tiny_mnist_study()
    study["params"].update(epochz=2, batch_size="big")
    study["scaling"]["base"] = 3
    found = problems({"studies": {"s": study}, "partition_limits": {"cpus_per_node": 1}})
    assert any(p.startswith("config key studies.s.params.epochz:") for p in found)
    assert any(p.startswith("config key studies.s.params.batch_size:") for p in found)
    assert "config key studies.s.scaling.base: 3 is not one of the points [1, 2]" in found
    assert any("point t2 needs 2 CPUs per node, the partition has 1" in p for p in found)


def typo(path: str, value=1):
    """A tiny study with `value` at the dotted `path` (from the config's top level)."""
    config = {"studies": {"s": tiny_mnist_study()}}
    *parents, last = path.split(".")
    target = config
    for part in parents:
        target = target.setdefault(part, {})
    target[last] = value
    return config


@pytest.mark.parametrize(
    ("path", "nearest"),
    [
        ("data_dri", "data_dir"),
        ("studies.s.repeat", "repeats"),
        ("studies.s.scaling.pointz", "points"),
        ("studies.s.resources.mem_mbb", "mem_mb"),
        ("studies.s.cost.core_wieght", "core_weight"),
        ("studies.s.params.epochz", "epochs"),
        ("studies.s.params.batch_sise", "batch_size"),
        ("studies.s.convergence.tolerence", "tolerance"),
    ],
)
def test_unknown_key_suggests_the_nearest_known_one(path, nearest):
    found = problems(typo(path))
    assert len(found) == 1
    assert found[0].startswith(f"config key {path}: ")
    assert f"({path.split('.')[-1]!r} was unexpected); did you mean `{nearest}`?" in found[0]


def test_unknown_key_far_from_any_is_told_the_known_ones():
    (message,) = problems(typo("studies.s.resources.zzz"))
    assert "config key studies.s.resources.zzz:" in message
    assert "did you mean" not in message
    assert "the keys here are gpu_model, mem_mb, runtime" in message


def test_unknown_workload_and_study_in_only_suggest_the_nearest_name():
    config = {"studies": {"tiny": tiny_mnist_study(workload="mnist_cnm")}, "only": ["tiny"]}
    (message,) = problems(config)
    assert message.startswith("config key studies.tiny.workload: unknown workload 'mnist_cnm'")
    assert message.endswith("did you mean `mnist_cnn`?")
    (message,) = problems({"studies": {"tiny": tiny_mnist_study()}, "only": ["tiyn"]})
    assert message == "config key only: no study named tiyn; did you mean `tiny`?"


def test_bad_names_are_described_in_words_not_as_a_regex():
    (message,) = problems({"studies": {"my study": tiny_mnist_study()}})
    assert message == (
        "config key studies.my study: 'my study' does not match the rule for study names: "
        "only letters, digits, '_' and '-', starting with a letter or digit"
    )
    study = tiny_mnist_study(series={"big-batch": {}})
    study["resources"]["gpu_model"] = "A100 80GB"
    found = problems({"studies": {"s": study}})
    assert found == [  # in the order of the file: resources, then series
        "config key studies.s.resources.gpu_model: 'A100 80GB' does not match the rule for "
        "this value: only letters, digits, '_' and '.'",
        "config key studies.s.series.big-batch: 'big-batch' does not match the rule for series "
        "names: only letters, digits and '_', starting with a letter or digit",
    ]
    assert not any("[A-Za-z" in p for p in found)


def test_names_snakemake_cannot_use_are_refused_and_limits_said_with_their_value():
    # the fault probe: 64 of one letter passed, then Snakemake stopped with
    # PeriodicWildcardError; 200 letters were "too long" without the limit
    (message,) = problems({"studies": {"a" * 64: tiny_mnist_study()}})
    assert message == (
        f"config key studies.{'a' * 64}: Snakemake cannot use this name: it ends in 'a' "
        "repeated 64 times, and Snakemake stops any job whose name ends in one part "
        "repeated 20 times or more (PeriodicWildcardError); choose another name"
    )
    (message,) = problems({"studies": {"run" + "ab" * 20: tiny_mnist_study()}})
    assert "it ends in 'ab' repeated 20 times" in message
    assert problems({"studies": {"x" * 200: tiny_mnist_study()}}) == [
        f"config key studies.{'x' * 200}: study names: 200 characters, at most 64 allowed"
    ]
    (message,) = problems({"studies": {"s": tiny_mnist_study(series={"b" * 33: {}})}})
    assert message.endswith(": series names: 33 characters, at most 32 allowed")


def test_workload_and_measured_together_are_refused_in_words():
    (message,) = problems({"studies": {"s": tiny_mnist_study(measured="x.csv")}})
    assert message == "config key studies.s: give `workload` or `measured`, not both"


def test_yaml_syntax_error_gives_file_line_and_column(workflow):
    path = workflow.write_config({"studies": {"s": tiny_mnist_study()}})
    path.write_text("studies:\n  s: {workload: mnist_cnn, scaling: {points: [1, 2}}\n")
    proc = workflow.snakemake("-n", check=False)
    assert proc.returncode != 0
    assert (
        "config/config.yaml:2:51: not valid YAML: expected ',' or ']', but got '}' "
        "(while parsing a flow sequence at line 2, column 46)"
    ) in proc.output
    assert "      s: {workload: mnist_cnn, scaling: {points: [1, 2}}\n" + " " * 54 + "^" in (
        proc.output
    )
    assert_no_traceback(proc.output)


def test_yaml_problem_reads_the_file_as_snakemake_does(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text('{"studies": {}}')  # JSON
    assert yaml_problem(path) is None
    path.write_text("studies:\n  s:\n\tworkload: x\n")
    assert yaml_problem(path).startswith(f"{path}:3:1: not valid YAML: found character '\\t'")
    assert yaml_problem(tmp_path / "absent.yaml") is None  # Snakemake says it is missing
    path.write_text("- studies\n")
    message = yaml_problem(path)
    assert message == f"{path}: must hold keys and their values (studies: ...), not a list"


def test_bad_workdir_of_a_command_study_is_refused_naming_the_key(tmp_path):
    (tmp_path / "a_file").write_text("")
    (tmp_path / "runs_here").mkdir()

    def command_study(workdir: str) -> dict:
        return {
            "workload": "command",
            "params": {"command": "true", "workdir": workdir},
            "scaling": {"axis": "threads", "points": [1]},
        }

    assert problems({"studies": {"own": command_study("nowhere")}}, tmp_path) == [
        f"config key studies.own.params.workdir: no such folder: {tmp_path / 'nowhere'}"
    ]
    assert problems({"studies": {"own": command_study(str(tmp_path / "a_file"))}}) == [
        f"config key studies.own.params.workdir: not a folder: {tmp_path / 'a_file'}"
    ]
    config = {"studies": {"own": command_study("runs_here")}}
    assert checked_config(config, SCHEMA, tmp_path)["studies"]["own"]["params"]["workdir"]


def test_a_malformed_workload_module_is_reported_without_a_traceback(workflow):
    (workflow.root / "workloads" / "broken.py").write_text("WORKLOAD = {\n")
    workflow.write_config({"studies": {"s": tiny_mnist_study()}})
    proc = workflow.snakemake("-n", check=False)
    assert proc.returncode != 0
    assert "broken.py:1: cannot parse the module" in proc.output
    assert_no_traceback(proc.output)


def test_problems_of_studies_left_out_by_only_are_noted_after_the_selected_ones(workflow):
    # they were reported as if they mattered, and stopped a run that did not use them
    good = tiny_mnist_study()
    broken = tiny_mnist_study(repeats=0)
    unknown = tiny_mnist_study(workload="no_such_workload")
    config = {"studies": {"good": good, "broken": broken, "unknown": unknown}, "only": ["good"]}
    broken_repeats, unknown_workload = not_selected_problems(copy.deepcopy(config), SCHEMA, REPO)
    assert broken_repeats == "config key studies.broken.repeats: 0 is less than the minimum of 1"
    assert unknown_workload.startswith(
        "config key studies.unknown.workload: unknown workload 'no_such_workload'"
    )
    assert list(checked_config(copy.deepcopy(config), SCHEMA, REPO)["studies"]) == ["good"]
    workflow.write_config(config)
    dry = workflow.snakemake("-n")  # runs: the left-out studies are noted
    assert "The studies that only: leaves out have 2 problems" in dry.output
    assert "studies.broken.repeats: 0 is less than" in dry.output
    # a problem of the selected study stops the run, listed first, the others after
    config["studies"]["good"]["repeats"] = 0
    workflow.write_config(config)
    proc = workflow.snakemake("-n", check=False)
    assert proc.returncode != 0
    first, notes = proc.output.split("The studies that only: leaves out have 2 problems")
    assert "The config has a problem; no job was run:" in first
    assert "config key studies.good.repeats: 0 is less than the minimum of 1" in first
    assert "studies.broken" not in first and "studies.broken.repeats" in notes
    assert_no_traceback(proc.output)


@pytest.mark.parametrize("written", [".inf", ".nan", "-.inf"])
def test_a_budget_that_is_not_a_finite_positive_number_is_refused_by_the_schema(written):
    # the fault probe: `budget_su: .inf` was accepted for an adaptive study, and .nan
    # was caught only by the price check
    import yaml

    budget = yaml.safe_load(f"budget_su: {written}")["budget_su"]
    study = tiny_mnist_study(budget_su=budget, adaptive={"target_ci": 0.5})
    study["recommend"] = {"budget_su": budget}
    found = problems({"studies": {"a": study}})
    assert found == [
        f"config key studies.a.budget_su: {budget} is not a finite number",
        f"config key studies.a.recommend.budget_su: {budget} is not a finite number",
    ]
