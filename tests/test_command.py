"""Your own command as a workload: placeholders, metrics, failures and no shell injection."""

import io
import json
import os
import sys
import threading

import pytest

from scalestudy.compute import processes
from scalestudy.compute.launch import launch, worker_processes
from scalestudy.study.run_spec import run_spec
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
