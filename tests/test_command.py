"""Your own command as a workload: placeholders, metrics, failures and no shell injection."""

import io
import json
import os
import sys
import threading

import pytest

from scalestudy.analysis.tables import record_row
from scalestudy.compute import processes
from scalestudy.compute.launch import launch, probe_failure, worker_processes
from scalestudy.study.run_spec import probe_spec, run_spec
from tests.test_studies import config_error, model
from workloads import command as command_workload

# times runs or loads both cores: in line with the others that do (tests/conftest.py)
pytestmark = pytest.mark.measures

PY = sys.executable
# Every shell metacharacter we could think of, and placeholder-looking text.
NASTY = "a'b\"c; touch PWNED1 && echo $(touch PWNED2) `touch PWNED3` | cat > PWNED4 {x} $HOME *"


def command_study(processes: int = 1, **params) -> dict:
    return {
        "workload": "command",
        "params": params,
        "scaling": {"axis": "devices", "points": [processes]},
        "repeats": 1,
    }


def run_command_point(tmp_path, processes: int = 1, **params) -> dict:
    study = model({"studies": {"own": command_study(processes, **params)}}, "own")
    spec = run_spec(study, processes, 1)
    spec["data_dir"] = str(tmp_path)
    return launch(spec, tmp_path / "rep1.json")


@pytest.fixture(autouse=True)
def one_thread(monkeypatch, tmp_path):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.chdir(tmp_path)  # where an injected `touch` would land


def test_metrics_from_a_json_file_and_placeholders(tmp_path):
    script = (
        "import json, sys; threads, tasks, out = sys.argv[1:];"
        "json.dump({{'time_per_epoch_s': 0.5, 'val_loss': 0.25, 'threads_seen': int(threads),"
        " 'tasks_seen': int(tasks)}}, open(out, 'w'))"  # {{ }}: literal braces
    )
    record = run_command_point(
        tmp_path,
        command=[PY, "-c", script, "{threads}", "{tasks}", "{run_dir}/m.json"],
        metrics_json="{run_dir}/m.json",
    )
    assert record["status"] == "ok", record["reason"]
    m = record["metrics"]
    assert m["time_per_epoch_s"] == 0.5 and m["val_loss"] == 0.25
    assert m["threads_seen"] == 1 and m["tasks_seen"] == 1
    assert [p["name"] for p in record["phases"]] == ["startup", "command"]


def test_metrics_from_regexes_over_the_output(tmp_path):
    script = (
        "for e in (1, 2, 3): print('epoch %d took %.2f s' % (e, 0.1 * e))\nprint('val_loss=0.125')"
    )
    record = run_command_point(
        tmp_path,
        command=f'{PY} -c "{script}"',
        metrics_regex={"took": r"took ([0-9.]+) s", "val_loss": r"val_loss=(?P<value>\S+)"},
        samples=1000,
    )
    assert record["status"] == "ok", record["reason"]
    m = record["metrics"]
    assert m["took"] == pytest.approx(0.3)  # the last match
    assert m["took_median"] == pytest.approx(0.2) and m["took_count"] == 3
    assert m["val_loss"] == 0.125 and m["samples_per_s"] > 0


@pytest.mark.parametrize("form", ["list", "string"])
def test_values_full_of_shell_metacharacters_stay_one_argument(tmp_path, form):
    argv_file = tmp_path / "argv.json"
    script = "import json, sys; json.dump(sys.argv[1:], open(sys.argv[1], 'w'))"
    if form == "list":
        command = [PY, "-c", script, str(argv_file), "--label", "{label}", "{param}"]
    else:
        command = f'{PY} -c "{script}" {argv_file} --label {{label}} {{param}}'
    record = run_command_point(
        tmp_path, command=command, values={"label": NASTY, "param": NASTY + " 2>&1"}
    )
    assert record["status"] == "ok", record["reason"]
    assert json.loads(argv_file.read_text()) == [str(argv_file), "--label", NASTY, NASTY + " 2>&1"]
    assert not list(tmp_path.rglob("PWNED*"))


def test_a_failing_command_is_a_failed_point_with_its_reason(tmp_path):
    script = "import sys; print('loss went NaN'); sys.exit(3)"
    record = run_command_point(tmp_path, command=[PY, "-c", script])
    assert record["status"] == "failed"
    assert record["reason"] == "RuntimeError: command exited with status 3: loss went NaN"


def test_a_missing_figure_or_a_non_number_fails_the_run(tmp_path):
    record = run_command_point(
        tmp_path, command=[PY, "-c", "print('done')"], metrics_regex={"loss": r"loss=(\S+)"}
    )
    assert record["status"] == "failed" and "never matched" in record["reason"]
    script = "import json; json.dump(dict(loss='low'), open('m.json', 'w'))"
    record = run_command_point(tmp_path, command=[PY, "-c", script], metrics_json="m.json")
    assert record["status"] == "failed" and "'low' is not a number" in record["reason"]
    record = run_command_point(tmp_path, command=["no-such-program-here"])
    assert record["status"] == "failed" and "command not found" in record["reason"]


def test_every_process_runs_the_command_and_rank_0_reports(tmp_path):
    script = "import os; print('world', os.environ['WORLD_SIZE'], 'rank', os.environ['RANK'])"
    record = run_command_point(
        tmp_path, 2, command=[PY, "-c", script], metrics_regex={"world": r"world (\d+) rank 0"}
    )
    assert record["status"] == "ok", record["reason"]
    assert record["metrics"]["world"] == 2
    assert record["resources"]["received"]["world_size"] == 2


def test_one_process_gets_torchruns_environment_too(tmp_path):
    # a program joining its group from env:// failed at N = 1: MASTER_ADDR was not set
    names = "RANK LOCAL_RANK WORLD_SIZE LOCAL_WORLD_SIZE GROUP_RANK ROLE_RANK MASTER_ADDR"
    script = f"import os; print('env', *(os.environ[k] for k in {names.split()!r}))"
    script = script.replace("{", "{{").replace("}", "}}")  # literal braces for placeholders
    record = run_command_point(
        tmp_path, 1, command=[PY, "-c", script], metrics_regex={"seen": r"env 0 0 1 1 0 0 (1)27"}
    )
    assert record["status"] == "ok", record["reason"]


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"command": "train {epochs}"}, "params.command: unknown placeholder(s) ['epochs']"),
        ({"command": "train {threads!r}"}, "is not a plain placeholder"),
        ({"command": "train {threads.real}"}, "is not a plain placeholder"),
        ({"command": "train 'unbalanced"}, "params.command: cannot split"),
        ({"command": "t", "values": {"threads": 3}}, "params.values: ['threads']"),
        ({"command": "t", "metrics_regex": {"x": "(a)(b)"}}, "params.metrics_regex.x: needs"),
        ({"command": "t", "metrics_regex": {"x": "(a"}}, "params.metrics_regex.x: not a regular"),
        ({"command": "t", "env": {"A": "{nope}"}}, "params.env.A: unknown placeholder"),
    ],
)
def test_bad_commands_are_refused_before_any_job(params, message):
    error = config_error({"studies": {"own": command_study(**params)}})
    assert "studies.own.params" in error and message in error


def test_a_command_study_needs_a_command():
    error = config_error({"studies": {"own": command_study()}})
    assert "command" in error


CHATTY = "import sys\nfor i in range(300000): print('line', i)\nsys.exit(4)"


def test_under_slurm_the_worker_passes_the_programs_output_on_itself(capfd):
    # srun's tasks cannot get the launcher's pipes: the worker reads and passes it on
    code, tail, seconds = command_workload.run_command([PY, "-c", CHATTY], dict(os.environ), None)
    assert code == 4 and tail.endswith("line 299999\n") and seconds > 0
    assert capfd.readouterr().err.endswith("line 299998\nline 299999\n")


def test_locally_the_launcher_reads_the_output_and_hands_its_tail_back():
    out_r, out_w = os.pipe()
    tail_r, tail_w = os.pipe()
    received = processes.OutputTail(io.BytesIO(), keep=100)

    def launcher() -> None:
        processes.pump(out_r, received)
        processes.hand_over(tail_w, received.value())

    reader = threading.Thread(target=launcher)
    reader.start()
    code, tail, _ = command_workload.run_command(
        [PY, "-c", CHATTY], dict(os.environ), None, (out_w, tail_r)
    )
    reader.join()
    assert code == 4 and tail == received.text() and tail.endswith("line 299999\n")
    assert received.out.getvalue().startswith(b"line 0\nline 1\n")
    assert len(received.out.getvalue()) == sum(len(f"line {i}\n") for i in range(300000))


def test_only_local_command_workers_are_offered_the_launchers_pipes(tmp_path):
    study = model({"studies": {"own": command_study(2, command="true")}}, "own")
    spec = run_spec(study, 2, 1)
    local = worker_processes(spec, tmp_path / "spec.json", tmp_path, environ={})
    assert [env.get("SCALESTUDY_DIRECT_OUTPUT") for _, env in local] == ["1", "1"]
    slurm = {"SLURM_JOB_ID": "7", "SLURM_CPUS_PER_TASK": "1"}
    ((_, env),) = worker_processes(spec, tmp_path / "spec.json", tmp_path, environ=slurm)
    assert "SCALESTUDY_DIRECT_OUTPUT" not in env


def test_a_torch_distributed_command_on_gloo_reports_from_rank_0(tmp_path):
    # each rank's output goes to the launcher in one hop; rank 0's tail still comes back
    script = (
        "import torch, torch.distributed as dist\n"
        "dist.init_process_group('gloo', init_method='env://')\n"
        "x = torch.ones(1) * (dist.get_rank() + 1)\n"
        "dist.all_reduce(x)\n"
        "print('rank', dist.get_rank(), 'sum', int(x.item()))\n"
        "dist.destroy_process_group()"
    )
    record = run_command_point(
        tmp_path, 2, command=[PY, "-c", script], metrics_regex={"sum": r"rank 0 sum (\d+)"}
    )
    assert record["status"] == "ok", record["reason"]
    assert record["metrics"]["sum"] == 3


# a program that sleeps (start-up), then trains, and prints both as it timed them
OWN_PHASES = (
    "import time; t = time.perf_counter(); time.sleep(0.3); s = time.perf_counter() - t;"
    " time.sleep(0.2); print('startup_s=%.4f' % s);"
    " print('train_s=%.4f' % (time.perf_counter() - t - s))"
)
PHASES = {"startup_s": r"startup_s=([0-9.]+)", "train_s": r"train_s=([0-9.]+)"}


def test_a_programs_own_phases_are_its_records_phases(tmp_path):
    record = run_command_point(tmp_path, command=[PY, "-c", OWN_PHASES], metrics_regex=PHASES)
    assert record["status"] == "ok", record["reason"]
    phases = {p["name"]: p for p in record["phases"]}
    assert phases["train"]["kind"] == "train" and 0.19 < phases["train"]["seconds"] < 0.5
    assert phases["startup"]["kind"] == "startup" and phases["command (rest)"]["kind"] == "other"
    # they are phases, not metrics, and no epoch is claimed
    assert "train_s" not in record["metrics"] and not any(
        p["kind"] == "epoch" for p in phases.values()
    )
    row = record_row(record)
    assert row["train_s"] == pytest.approx(phases["train"]["seconds"]) and row["epochs"] == 0
    # epoch by epoch: each an epoch, and the steady epoch from them
    epochs = "[print('epoch_s=%s' % s) for s in (0.3, 0.1, 0.1)]"
    record = run_command_point(
        tmp_path,
        command=[PY, "-c", f"import time; time.sleep(0.6); {epochs}"],
        metrics_regex={"epoch_s": r"epoch_s=([0-9.]+)"},
    )
    assert record["status"] == "ok", record["reason"]
    row = record_row(record)
    assert row["epochs"] == 3 and row["steady_epoch_s"] == pytest.approx(0.1)


@pytest.mark.parametrize(
    ("prints", "reason"),
    [
        (
            "print('train_s=0.1'); print('train_s=0.2')",
            "phase train_s: the program reported it 2 times in one run "
            "('train_s=0.1' and 'train_s=0.2')",
        ),
        ("print('train_s=0.1'); print('epoch_s=0.1')", "reports train_s and epoch_s"),
        ("print('train_s=50')", "the program reports 50.000 s of phases (train_s) in a run of"),
    ],
)
def test_phases_that_cannot_be_fail_the_run_with_their_lines(tmp_path, prints, reason):
    patterns = {k: rf"{k}=([0-9.]+)" for k in ("train_s", "epoch_s") if k in prints}
    record = run_command_point(tmp_path, command=[PY, "-c", prints], metrics_regex=patterns)
    assert record["status"] == "failed" and reason in record["reason"], record["reason"]


def test_time_train_for_a_command_that_reports_no_training_is_refused_before_any_job():
    for time, needs in (("train", "train_s or epoch_s"), ("steady", "epoch_s")):
        error = config_error({"studies": {"own": command_study(command="t") | {"time": time}}})
        assert f"studies.own.time: {time} rests on your program's own phases" in error
        assert f"which it reports as {needs}" in error
    study = command_study(command="t", metrics_regex={"train_s": "t=(.*)"}) | {"time": "train"}
    assert model({"studies": {"own": study}}, "own").time == "train"


def test_a_probe_passes_a_program_that_runs_and_names_one_that_fails_at_once(tmp_path):
    study = model(
        {"studies": {"own": command_study(command=[PY, "-c", "import time; time.sleep(30)"])}},
        "own",
    )
    spec = probe_spec(study, 1, "", str(tmp_path)) | {
        "budget_limit_min": 0.02,
        "time_limit_min": 0.02,
    }
    record = launch(spec, tmp_path / "probe.json")
    assert record["reason"].startswith("probe limit") and probe_failure(record) is None
    failing = run_command_point(tmp_path, command=["no-such-program-here"])
    assert probe_failure(failing) == (
        "study own: its command failed at once, so none of its runs starts: "
        "RuntimeError: command not found: 'no-such-program-here'"
    )
