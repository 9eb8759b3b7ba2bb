"""Nothing wrong reaches the report: record identity, local limits, bounded output, clean
kills, overlaps across studies, shared CPUs, and errors that reach the user."""

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import asdict
from pathlib import Path

import pandas as pd
import psutil
import pytest

from scalestudy.analysis.pipeline import aggregate
from scalestudy.analysis.tables import (
    disturbed_reasons,
    runs_from_measured,
    runs_from_records,
    summarise,
)
from scalestudy.compute import launch as launch_module
from scalestudy.compute import ledger as ledger_module
from scalestudy.compute import processes
from scalestudy.compute.launch import launch
from scalestudy.compute.processes import CappedLog
from scalestudy.records import RecordError, self_inconsistency, write_json_atomic
from scalestudy.report import plots
from scalestudy.report.plots import write_figures
from scalestudy.sections import Analysis
from scalestudy.study.run_spec import run_spec
from scalestudy.study.validation import study_models
from tests.conftest import REPO, on_the_quietest_cpu, study_model
from tests.test_analysis import RTX_STUDY
from tests.test_records import good_record
from tests.test_studies import validated

# times runs or loads both cores: in line with the others that do (tests/conftest.py)
pytestmark = pytest.mark.measures

PY = sys.executable


def command_spec(tmp_path, command, threads=1, **study):
    config = {
        "studies": {
            "own": {
                "workload": "command",
                "params": {"command": command},
                "scaling": {"axis": "threads", "points": [threads]},
                "repeats": 1,
            }
            | study
        }
    }
    spec = run_spec(study_models(validated(config))["own"], threads, 1)
    spec["data_dir"] = str(tmp_path)
    return spec


@pytest.fixture(autouse=True)
def one_thread(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")


def place(root: Path, study: str, point: str, repeat: int, **fields) -> Path:
    path = root / "results" / study / "runs" / point / f"rep{repeat}.json"
    minute = f"{repeat:02d}"  # runs of one point one after the other
    times = {
        "started_at": f"2026-01-01T00:{minute}:00.000+00:00",
        "finished_at": f"2026-01-01T00:{minute}:02.500+00:00",
    }
    record = good_record(study=study, point=point, repeat=repeat, series="", **times | fields)
    record.setdefault("run_id", uuid.uuid4().hex)
    write_json_atomic(path, record)
    return path


# ------------------------------------------------------------ a record matches its place


def test_a_record_copied_over_another_is_refused_naming_the_file(tmp_path):
    t1 = place(tmp_path, "s", "t1", 1, n=1)
    t2 = place(tmp_path, "s", "t2", 2, n=2, wall_s=1.0)
    shutil.copy(t2, t1)  # the fault probe's case: t2's run now also counts for t1
    with pytest.raises(RecordError) as info:
        runs_from_records([t1, t2], {"t1": "", "t2": ""})
    message = str(info.value)
    assert str(t1) in message and "point 't2' (its path says 't1')" in message
    assert "repeat 2 (its path says 1)" in message


def test_a_record_of_another_study_or_series_is_refused(tmp_path):
    other = place(tmp_path, "s", "t1", 1)
    record = json.loads(other.read_text()) | {"study": "elsewhere"}
    write_json_atomic(other, record)
    with pytest.raises(RecordError, match="study 'elsewhere' \\(its path says 's'\\)"):
        runs_from_records([other], {"t1": ""})
    write_json_atomic(other, record | {"study": "s", "series": "fast"})
    with pytest.raises(RecordError, match="series 'fast' \\(its path says ''\\)"):
        runs_from_records([other], {"t1": ""})


def test_the_same_run_in_two_files_is_refused_naming_both(tmp_path):
    first = place(tmp_path, "s", "t1", 1, run_id="run-0123456789")
    second = place(tmp_path, "s", "t1", 2, run_id="run-0123456789")
    with pytest.raises(RecordError) as info:
        runs_from_records([first, second], {"t1": ""})
    assert str(first) in str(info.value) and str(second) in str(info.value)


def test_a_repeated_run_in_a_measured_csv_is_refused_naming_the_lines(tmp_path):
    csv = tmp_path / "times.csv"
    csv.write_text("N,time_s,repeat\n1,10,1\n2,6,1\n1,11,1\n")
    study = {"scaling": {"axis": "threads", "threads": 1, "devices": 1, "nodes": 1}}
    with pytest.raises(RecordError, match=r"lines 2, 4 are the same run \(N=1, repeat=1\)"):
        runs_from_measured(csv, study_model(study, "m"))


def test_an_ok_record_without_a_time_does_not_count_as_a_repeat(tmp_path):
    paths = [place(tmp_path, "s", "t1", 1), place(tmp_path, "s", "t1", 2, wall_s=None)]
    runs = runs_from_records(paths, {"t1": ""})
    summary = summarise(runs, study_model({}))
    assert summary.loc[0, "repeats"] == 2 and summary.loc[0, "repeats_ok"] == 1
    assert "the record says ok but holds no time" in summary.loc[0, "status"]


# ------------------------------------------------------------ a record agrees with itself


@pytest.mark.parametrize("wall_s", [1e6, 1e308])
def test_a_record_whose_wall_time_its_own_times_deny_is_refused_naming_both(tmp_path, wall_s):
    # the fault probe's case: a 1-s run edited to wall_s 1e6 gave "speedup 914385.87",
    # and 1e308 a matplotlib traceback instead of a report
    base = place(tmp_path, "s", "t1", 1, n=1)
    edited = place(tmp_path, "s", "t2", 1, n=2, wall_s=1.0)
    write_json_atomic(edited, json.loads(edited.read_text()) | {"wall_s": wall_s})
    with pytest.raises(RecordError) as info:
        runs_from_records([base, edited], {"t1": "", "t2": ""})
    figure = "1000000" if wall_s == 1e6 else "1e+308"
    assert str(info.value) == (
        f"{edited}: wall_s {figure} s is longer than its started_at and finished_at, 2.5 s apart"
    )


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        (
            {"wall_s": 0.5},
            "wall_s 0.5 s is far shorter than its started_at and finished_at, 100 s apart",
        ),  # fmt: skip
        (
            {"phases": [{"name": "epoch 1", "kind": "epoch", "seconds": 60.0}]},
            "its phases take 60 s together, longer than wall_s, 2.5 s",
        ),  # fmt: skip
        (
            {"wall_s": None, "phases": [{"name": "e", "kind": "epoch", "seconds": 900.0}]},
            "its phases take 900 s together, longer than its started_at and finished_at, "
            "100 s apart",
        ),  # fmt: skip
        (
            {
                "finished_at": "2026-01-01T00:00:00.000+00:00",
                "started_at": "2026-01-01T00:01:00.000+00:00",
            },
            "finished_at is 60 s before started_at",
        ),  # fmt: skip
        ({"started_at": "yesterday"}, "started_at 'yesterday' is not an ISO 8601 time"),
        (
            {"finished_at": "2026-01-01T00:00:02"},
            "finished_at '2026-01-01T00:00:02' has no time zone (records are in UTC)",
        ),
    ],
)
def test_a_record_whose_own_figures_disagree_is_refused_saying_why(tmp_path, fields, expected):
    times = {"started_at": "2026-01-01T00:00:00.000+00:00"}
    if "wall_s" in fields:
        times["finished_at"] = "2026-01-01T00:01:40.000+00:00"  # 100 s later
    path = place(tmp_path, "s", "t1", 1, **times | fields)
    with pytest.raises(RecordError) as info:
        runs_from_records([path], {"t1": ""})
    assert str(info.value) == f"{path}: {expected}"


@pytest.mark.parametrize(
    ("wall_s", "span_s"),
    [
        (2.5, 2.5),
        (2.5009, 2.5),  # the timestamps are cut to the millisecond
        (100.9, 100.0),  # the wall clock slewed, or stepped back a little, during the run
        (1.0, 21.0),  # finished_at comes after the record's bookkeeping (git, the ledger)
        (3600.0, 3900.0),  # ... which grows with the run's length
    ],
)
def test_a_good_record_is_never_refused_for_its_clocks(tmp_path, wall_s, span_s):
    finished = pd.Timestamp("2026-01-01T00:00:00+00:00") + pd.Timedelta(seconds=span_s)
    path = place(
        tmp_path, "s", "t1", 1, wall_s=wall_s, started_at="2026-01-01T00:00:00.000+00:00",
        finished_at=finished.isoformat(timespec="milliseconds"),
        phases=[{"name": "startup", "kind": "startup", "seconds": 0.2},
                {"name": "epoch 1", "kind": "epoch", "seconds": wall_s - 0.2 + 0.5}],
    )  # fmt: skip
    assert runs_from_records([path], {"t1": ""}).loc[0, "wall_s"] == wall_s


def test_a_launched_runs_record_agrees_with_itself(tmp_path):
    spec = command_spec(tmp_path, [PY, "-c", "import time; time.sleep(0.3)"])
    record = launch(spec, tmp_path / "results/own/runs/t1/rep1.json")
    assert record["status"] == "ok", record["reason"]
    assert self_inconsistency(record) is None


def rtx_outputs(tmp_path):
    """The published RTX study aggregated, and read back as the plot step reads it."""
    out = {k: tmp_path / f"{k}.{ext}" for k, ext in
           [("runs", "csv"), ("summary", "csv"), ("analysis", "json")]}  # fmt: skip
    aggregate(study_model(RTX_STUDY, "rtx"), [str(REPO / RTX_STUDY["measured"])]).write(out)
    summary, runs = pd.read_csv(out["summary"]), pd.read_csv(out["runs"])
    return summary, runs, Analysis.from_json(out["analysis"].read_text())


@pytest.mark.parametrize("value", [float("inf"), -float("inf"), 1e308, float("nan"), -1e308])
def test_the_figures_are_drawn_whatever_the_numbers(tmp_path, value):
    # wall_s 1e308 once made the plot step fail: "Axis limits cannot be NaN or Inf"
    summary, runs, analysis = rtx_outputs(tmp_path)
    for table in (summary, runs):
        for column in table.select_dtypes("number"):
            if column != "n" and table[column].notna().any():
                table[column] = table[column].astype(float)
                table.loc[table.index[:2], column] = value
    figures = write_figures(summary, runs, "devices", tmp_path / "figures", analysis)
    assert all(path.stat().st_size > 0 for path in figures)
    svgs = [path.read_text() for path in figures if path.suffix == ".svg"]
    assert not any("could not be drawn" in svg for svg in svgs)


def test_a_figure_matplotlib_cannot_draw_says_so_and_the_rest_are_drawn(tmp_path, monkeypatch):
    def broken(*args):
        raise ValueError("Axis limits cannot be NaN or Inf")

    monkeypatch.setattr(plots, "cost_figure", broken)
    summary, runs, analysis = rtx_outputs(tmp_path)
    plots.write_figures(summary, runs, "devices", tmp_path / "figures", analysis)
    cost = (tmp_path / "figures" / "cost.svg").read_text()
    assert "could not be drawn" in cost and "Axis limits cannot be NaN or Inf" in cost
    assert "could not be drawn" not in (tmp_path / "figures" / "speedup.svg").read_text()


# ------------------------------------------------------------ limits hold locally


@pytest.mark.parametrize("pidfds", [True, False], ids=["pidfd", "without-pidfd"])
def test_a_runs_wall_time_ends_when_its_processes_end_not_at_the_next_look(
    tmp_path, monkeypatch, pidfds
):
    # the launcher looked at its processes every 0.5 s and took the time after the look
    # that found them ended: every wall time was rounded up to the next half second (a
    # 0.1 s and a 0.35 s program took the same time, or 0.5 s apart). A kernel before
    # Linux 5.3 has no pidfds: Popen.wait's polling instead
    if not pidfds:
        monkeypatch.delattr(os, "pidfd_open", raising=False)
    walls = []
    for seconds, repeat in ((0.1, 1), (0.35, 2)):
        spec = command_spec(tmp_path, [PY, "-c", f"import time; time.sleep({seconds})"])
        spec["repeat"] = repeat
        walls.append(launch(spec, tmp_path / f"rep{repeat}.json")["wall_s"])
    assert 0.1 < walls[1] - walls[0] < 0.45, walls


def test_a_local_run_is_stopped_at_its_time_limit(tmp_path, monkeypatch):
    monkeypatch.setattr(launch_module, "GRACE_S", 1.0)
    # a program that ignores SIGTERM: the group gets SIGKILL after the grace period
    stubborn = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"
    spec = command_spec(tmp_path, [PY, "-c", stubborn])
    spec["time_limit_min"] = 0.05  # 3 s
    start = time.monotonic()
    record = launch(spec, tmp_path / "rep1.json", log_path=tmp_path / "rep1.log")
    assert time.monotonic() - start < 20
    assert record["status"] == "failed"
    assert record["reason"] == "time limit (0.05 min) exceeded"
    assert "stopping the run" in (tmp_path / "rep1.log").read_text()


@pytest.mark.parametrize("limit", ["budget_limit_min", "time_limit_min"])
def test_a_run_at_its_limit_ends_within_the_slack_its_round_held_back(tmp_path, limit):
    # the fault probe: 0.17089 SU spent against budget_su 0.17: the rounds' limits held
    # nothing back for a run to end after its limit. A program that ignores SIGTERM is
    # killed at once at either limit, within STOP_SLACK_S of it (a grace period of 10 s
    # after SIGTERM followed a time limit).
    stubborn = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"
    program = f"import os; os.execvp({PY!r}, [{PY!r}, '-c', {stubborn!r}])"
    spec = command_spec(tmp_path, [PY, "-c", program])
    spec["time_limit_min"] = spec[limit] = 0.02  # 1.2 s
    record = launch(spec, tmp_path / "rep1.json")
    assert record["reason"] == f"{limit.split('_limit')[0]} limit (0.02 min) exceeded"
    assert record["wall_s"] <= 1.2 + launch_module.STOP_SLACK_S, record["wall_s"]


def test_a_local_run_is_stopped_at_its_memory_limit(tmp_path):
    hungry = (
        "import time; x = bytearray(400 * 2**20); x[::4096] = b'1' * len(x[::4096]); time.sleep(30)"
    )
    spec = command_spec(tmp_path, [PY, "-c", hungry], resources={"mem_mb": 200})
    record = launch(spec, tmp_path / "rep1.json")
    assert record["status"] == "failed"
    assert record["reason"].startswith("memory limit (200 MB) exceeded")
    assert record["wall_s"] < 25


# ------------------------------------------------------------ output


def test_a_chatty_program_ends_in_bounded_time_with_a_capped_log(tmp_path):
    lines = 1_000_000
    chatty = f"import sys\nfor i in range({lines}): sys.stdout.write('line %d of output\\n' % i)"
    spec = command_spec(tmp_path, [PY, "-c", chatty])
    spec["params"]["metrics_regex"] = {"last": r"line (\d+) of output"}
    log = tmp_path / "rep1.log"
    start = time.monotonic()
    record = launch(spec, tmp_path / "rep1.json", log_path=log, log_limit_mb=1)
    elapsed = time.monotonic() - start
    assert record["status"] == "ok", record["reason"]
    assert elapsed < 60, f"1 M lines took {elapsed:.1f} s"
    assert record["metrics"]["last"] == lines - 1  # the tail was kept for the patterns
    text = log.read_text()
    assert log.stat().st_size < 1.1 * 2**20
    # (after the launcher's note when another timed run on this machine held it back)
    assert text.startswith("line 0 of output") or "run on this machine to end]\nline 0 " in text
    assert f"line {lines - 1} of output" in text
    assert "bytes of output cut here" in text


# The processes other than itself that hold the program's stdout pipe open.
PIPE_HOLDERS = """
import os

pipe = os.readlink("/proc/self/fd/1")
holders = set()
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        fds = os.listdir("/proc/%s/fd" % pid)  # no braces: they are placeholders
        if any(os.readlink("/proc/%s/fd/%s" % (pid, fd)) == pipe for fd in fds):
            holders.add(int(pid))
    except OSError:
        pass  # ended meanwhile, or not ours to read
holders.discard(os.getpid())
print("holders", *sorted(holders))
"""


def test_a_local_programs_output_goes_straight_to_the_launcher(tmp_path):
    # one hop: the program writes into a pipe that only the launcher (this process) holds;
    # its worker neither reads nor keeps a copy of it (two hops cost a chatty program
    # 1.10-1.18x the bare pipe's time: benchmarks/command_output.py)
    spec = command_spec(tmp_path, [PY, "-c", PIPE_HOLDERS])
    log = tmp_path / "rep1.log"
    record = launch(spec, tmp_path / "rep1.json", log_path=log)
    assert record["status"] == "ok", record["reason"]
    holders = re.search(r"^holders(.*)$", log.read_text(), re.MULTILINE).group(1).split()
    assert holders == [str(os.getpid())]


def test_a_runs_program_leads_its_own_group_in_the_users_session(tmp_path):
    # a session of its own is a scheduling group of its own (autogroups): beside it a
    # program the user started at nice 19 took 0.4-0.5 of a CPU from the run, not 0.01
    # (benchmarks/default_study.py --hog)
    where = "import os; print('ids', os.getsid(0), os.getpgid(0), os.getpid())"
    spec = command_spec(tmp_path, [PY, "-c", where])
    log = tmp_path / "rep1.log"
    assert launch(spec, tmp_path / "rep1.json", log_path=log)["status"] == "ok"
    sid, pgid, pid = re.search(r"^ids (\d+) (\d+) (\d+)$", log.read_text(), re.M).groups()
    assert int(sid) == os.getsid(0)
    assert pgid != str(os.getpgid(0))  # a group of its own: the run is stopped as one


def test_a_failed_programs_output_and_its_last_line_reach_the_log_and_the_reason(tmp_path):
    script = "import sys\nfor i in range(200000): print('step', i)\nprint('diverged'); sys.exit(2)"
    spec = command_spec(tmp_path, [PY, "-c", script])
    log = tmp_path / "rep1.log"
    record = launch(spec, tmp_path / "rep1.json", log_path=log, log_limit_mb=1)
    assert record["reason"] == "RuntimeError: command exited with status 2: diverged"
    text = log.read_text()
    assert text.index("step 0\nstep 1\n") < text.index("bytes of output cut here")
    # the program's output first, then its worker's traceback
    assert text.index("step 199999\ndiverged\n") < text.index("Traceback")


def test_the_reader_naps_less_than_a_fast_writer_takes_to_fill_the_pipe():
    # 200 KB arrived in 1 ms: the 1 MB pipe is half full 2.6 ms later, before a 5 ms nap ends
    assert processes.nap_s(200_000, 0.001) * 200_000 / 0.001 <= processes.PIPE_BYTES / 2
    assert processes.nap_s(100, 0.001) == processes.NAP_S  # a slow writer: the whole nap
    assert processes.nap_s(processes.BLOCK, 0.001) == 0  # a full read: read on at once


def test_capped_log_keeps_head_and_tail(tmp_path):
    log = CappedLog(tmp_path / "log", limit=100)
    for i in range(1000):
        log.write(f"{i:04d}\n".encode())
    log.close()
    text = (tmp_path / "log").read_text()
    assert text.startswith("0000\n0001\n") and text.endswith("0998\n0999\n")
    assert "bytes of output cut here" in text
    assert len(text.encode()) < 400


# ------------------------------------------------------------ kills leave no orphans


def marker_sleep() -> str:
    return f"{300 + uuid.uuid4().int % 1000}.{uuid.uuid4().int % 10**6:06d}"


def alive(marker: str) -> list[psutil.Process]:
    """The live `sleep MARKER` processes."""
    return [
        p
        for p in psutil.process_iter(["cmdline", "status"])
        if p.info["cmdline"] == ["sleep", marker] and p.info["status"] != psutil.STATUS_ZOMBIE
    ]


def descendants(pid: int, cmdline: list[str]) -> list[psutil.Process]:
    """The live processes below `pid` that run `cmdline`."""
    found = []
    for child in psutil.Process(pid).children(recursive=True):
        with contextlib.suppress(psutil.Error):  # one that ended meanwhile
            if child.cmdline() == cmdline:
                found.append(child)
    return found


def launcher_cli(spec: dict, record: Path, log: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [PY, "-m", "scalestudy.compute.launch", "--spec", json.dumps(spec), "--record", str(record),
         "--log", str(log)],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def wait_for(marker: str, count: int = 1, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while len(alive(marker)) < count:
        assert time.monotonic() < deadline, f"{marker} never started"
        time.sleep(0.1)


@pytest.fixture
def temp_folder(tmp_path, monkeypatch) -> Path:
    """The temporary folder of this test's runs (TMPDIR), to see what they leave there."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setenv("TMPDIR", str(folder))
    monkeypatch.setattr(tempfile, "tempdir", None)  # read TMPDIR again
    return folder


@pytest.mark.parametrize("detached", [False, True], ids=["background", "setsid"])
@pytest.mark.parametrize("victim", ["launcher", "worker"])
def test_no_process_of_a_run_survives_a_kill(tmp_path, temp_folder, victim, detached):
    marker = marker_sleep()
    # the program leaves a background child of its own, which no death signal reaches,
    # and with `setsid` no signal to the run's groups either; its {run_dir} has a file
    setsid = "setsid " if detached else ""
    command = ["sh", "-c", f"touch {{run_dir}}/f; {setsid}sleep {marker} & sleep {marker}"]
    spec = command_spec(tmp_path, command)
    launcher = launcher_cli(spec, tmp_path / "rep1.json", tmp_path / "rep1.log")
    try:
        wait_for(marker, count=2)
        assert list(temp_folder.glob("scalestudy-run-*/**/f"))
        if victim == "launcher":
            launcher.kill()
        else:
            worker = next(
                c
                for c in psutil.Process(launcher.pid).children()
                if "scalestudy.compute.worker" in " ".join(c.cmdline())
            )
            worker.kill()
        deadline = time.monotonic() + 10
        while (alive(marker) or list(temp_folder.iterdir())) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert alive(marker) == []
        assert list(temp_folder.iterdir()) == []
    finally:
        launcher.kill()  # not left holding the machine's timed-run lock
        launcher.wait(30)


@pytest.mark.parametrize("output", ["kept", "elsewhere"])
def test_a_detached_child_of_the_program_ends_with_its_run(tmp_path, temp_folder, output):
    # `setsid sleep &`: in a session of its own, which no signal to the run's groups
    # reaches. It held the run's output open to the time limit ("failed: time limit"
    # although `sh` exited at once), or, its output sent elsewhere, ran on after an "ok"
    # run, adopted by init
    marker = marker_sleep()
    redirect = " >/dev/null 2>&1" if output == "elsewhere" else ""
    spec = command_spec(tmp_path, ["sh", "-c", f"setsid sleep {marker}{redirect} & echo hi"])
    spec["time_limit_min"] = 0.2  # 12 s: a run held by the child fails
    record = launch(spec, tmp_path / "rep1.json")
    assert record["status"] == "ok", record["reason"]
    assert alive(marker) == []
    assert list(temp_folder.iterdir()) == []


def test_a_run_ends_when_its_program_does_whatever_a_background_child_holds_open(tmp_path):
    # `sh` exits at once; its background `sleep` kept the output pipe open, and the run
    # was recorded as a time-limit failure (and re-run at every invocation)
    marker = marker_sleep()
    spec = command_spec(tmp_path, ["sh", "-c", f"sleep {marker} & echo hi"])
    spec["time_limit_min"] = 0.2  # 12 s
    log = tmp_path / "rep1.log"
    record = launch(spec, tmp_path / "rep1.json", log_path=log)
    assert record["status"] == "ok", record["reason"]
    assert "hi\n" in log.read_text()
    assert alive(marker) == []


def test_a_run_killed_at_its_time_limit_leaves_no_run_dir(tmp_path, temp_folder, monkeypatch):
    # the killed worker could not remove its {run_dir}: it stayed in the temporary folder
    monkeypatch.setattr(launch_module, "GRACE_S", 1.0)
    command = ["sh", "-c", "echo made {run_dir}; touch {run_dir}/f; exec sleep 60"]
    spec = command_spec(tmp_path, command)
    spec["time_limit_min"] = 0.02  # 1.2 s
    log = tmp_path / "rep1.log"
    record = launch(spec, tmp_path / "rep1.json", log_path=log)
    assert record["reason"] == "time limit (0.02 min) exceeded"
    assert f"made {temp_folder}" in log.read_text()
    assert list(temp_folder.iterdir()) == []


def test_a_second_launcher_of_the_same_run_stops_with_a_clear_message(tmp_path):
    marker = marker_sleep()
    spec = command_spec(tmp_path, ["sh", "-c", f"sleep {marker}; sleep 1"])
    record = tmp_path / "runs" / "t1" / "rep1.json"
    first = launcher_cli(spec, record, tmp_path / "first.log")
    wait_for(marker)
    second = launcher_cli(spec, record, tmp_path / "second.log")
    _, err = second.communicate(timeout=60)
    assert second.returncode == 1
    assert "another launcher is running this run" in err and f"pid {first.pid}" in err
    for p in alive(marker):
        p.kill()  # let the first run finish now
    first.communicate(timeout=60)
    assert json.loads(record.read_text())["status"] == "ok"
    assert not (record.parent / ".rep1.work").exists()


def test_two_local_launches_never_time_at_once(tmp_path):
    specs = [command_spec(tmp_path, [PY, "-c", "import time; time.sleep(1.5)"]) for _ in "ab"]
    specs[1]["study"] = "other"
    procs = [
        launcher_cli(s, tmp_path / f"{s['study']}" / "rep1.json", tmp_path / f"{s['study']}.log")
        for s in specs
    ]
    for p in procs:
        p.communicate(timeout=60)
    records = [json.loads((tmp_path / s["study"] / "rep1.json").read_text()) for s in specs]
    spans = sorted((pd.Timestamp(r["started_at"]), pd.Timestamp(r["finished_at"])) for r in records)
    assert spans[0][1] <= spans[1][0], "the second run timed while the first was timing"
    logs = (tmp_path / "own.log").read_text() + (tmp_path / "other.log").read_text()
    assert "waiting for another timed run on this machine" in logs


def test_the_host_ledger_sees_overlaps_across_studies_both_ways(tmp_path):
    ledger = ledger_module.Ledger(tmp_path / "ledger.jsonl", host="node1")
    a_start = time.time()
    assert ledger.begin("run-a", "study1/t1/rep1", [0, 1]) == []
    b_start = time.time()
    running = ledger.begin("run-b", "study2/t2/rep1", [1])
    assert [e["run"] for e in running] == ["study1/t1/rep1"]  # a still runs: b sees it
    assert ledger.finish("run-b", b_start) == []
    during = ledger.finish("run-a", a_start)
    assert [e["run"] for e in during] == ["study2/t2/rep1"]  # b started while a ran
    assert ledger_module.overlaps([0, 1], during) == [
        {"run": "study2/t2/rep1", "run_id": "run-b", "same_cpus": True}
    ]
    # a later run sees neither: both ended
    later = time.time()
    assert ledger.begin("run-c", "study3/t1/rep1", [0]) == []
    assert ledger.finish("run-c", later) == []
    # another host's runs are not ours
    assert ledger_module.Ledger(ledger.path, host="node2").begin("run-d", "x", [0]) == []


def test_overlaps_from_the_ledger_mark_runs_and_keep_same_cpu_ones_out(tmp_path):
    other = {"run": "elsewhere/t1/rep1", "run_id": "run-x", "same_cpus": True}
    apart = {"run": "elsewhere/t2/rep1", "run_id": "run-y", "same_cpus": False}
    paths = [
        place(tmp_path, "s", "t1", 1, overlaps=[other]),
        place(tmp_path, "s", "t1", 2, overlaps=[apart]),
        place(tmp_path, "s", "t1", 3),
    ]
    runs = runs_from_records(paths, {"t1": ""})
    assert runs["overlapped"].tolist() == [True, True, False]
    reasons = disturbed_reasons(runs, validated_study())
    assert reasons.tolist()[1:] == ["", ""]
    assert reasons[0] == "ran on the same CPUs at the same time as elsewhere/t1/rep1"


def validated_study(**extra):
    config = {
        "studies": {
            "s": {
                "workload": "command",
                "params": {"command": "true"},
                "scaling": {"axis": "threads", "points": [1, 2]},
            }
            | extra
        }
    }
    return study_models(validated(config))["s"]


# ------------------------------------------------------------ shared CPUs


SPIN = "import time\nuntil = time.time() + 3\nwhile time.time() < until: pass\n"


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 CPUs")
def test_a_run_whose_cpus_another_program_used_is_flagged_and_left_out(tmp_path):
    """A busy 1-thread run on the quietest CPU, alone and then beside a rival pinned to
    that CPU. The rest of the machine may be busy (CI's other core): the run watches
    only its own CPU, so only the rival disturbs it."""
    study = validated_study()

    def run(repeat: int, competitor: bool) -> dict:
        spec = command_spec(tmp_path, [PY, "-c", SPIN], threads=1)
        spec["repeat"] = repeat
        with on_the_quietest_cpu() as cpu:
            rival = None
            if competitor:
                rival = subprocess.Popen(
                    [PY, "-c", f"import os, time\nos.sched_setaffinity(0, {{{cpu}}})\n"
                     "end = time.time() + 30\nwhile time.time() < end: pass"]
                )  # fmt: skip
                time.sleep(0.3)
            try:
                return launch(spec, tmp_path / "runs" / "t1" / f"rep{repeat}.json")
            finally:
                if rival:
                    rival.kill()
                    rival.wait()

    # a loaded machine may leave no CPU quiet for a while: measure again, as a user
    # would (a run beside others is what the rest of the test flags)
    for _ in range(5):
        quiet = run(1, competitor=False)
        if quiet["resources"]["usage"]["others_cores"] < 0.1:
            break
        (tmp_path / "runs" / "t1" / "rep1.json").unlink()
    shared = run(2, competitor=True)
    usage = shared["resources"]["usage"]
    # the rival took 0.5 of the run's CPU on a quiet machine, 0.39 with the other core busy
    assert usage["cpus_watched"] == 1 and usage["others_cores"] > 0.3, usage
    assert quiet["resources"]["usage"]["cores_used"] > 0.75, quiet["resources"]["usage"]
    assert quiet["resources"]["usage"]["others_cores"] < 0.1, quiet["resources"]["usage"]

    runs = runs_from_records(sorted((tmp_path / "runs").rglob("rep*.json")))
    runs["disturbed"] = disturbed_reasons(runs, study)
    flagged = runs.set_index("repeat")["disturbed"]
    assert flagged[1] == ""
    assert re.fullmatch(r"other processes used [0-9.]+ cores of its 1 CPUs during this run "
                        r"\(tolerance 10%\)", flagged[2])  # fmt: skip
    summary = summarise(runs, study)
    assert summary.loc[0, "status"].startswith("shared CPUs: rep2: other processes used")
    assert summary.loc[0, "status"].endswith("(left out of speedups)")
    # only the quiet run measures the point
    assert summary.loc[0, "time_s"] == pytest.approx(runs.set_index("repeat").loc[1, "wall_s"])


# ------------------------------------------------------------ errors reach the user


@pytest.mark.skipif(os.geteuid() != 0, reason="mounts a small tmpfs as root")
def test_a_full_disk_cleans_up_and_says_so_on_stderr(tmp_path):
    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(disk)]).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        filler = f"open({str(disk / 'filler')!r}, 'wb').write(b'x' * 2**20)"
        spec = command_spec(tmp_path, [PY, "-c", filler])
        launcher = launcher_cli(spec, disk / "runs" / "t1" / "rep1.json", tmp_path / "rep1.log")
        _, err = launcher.communicate(timeout=120)
        assert launcher.returncode == 1
        assert "No space left on device" in err
        assert "No space left on device" in (tmp_path / "rep1.log").read_text()
        assert not list((disk / "runs" / "t1").glob(".rep1.work"))
    finally:
        subprocess.run(["umount", str(disk)], check=False)


def test_signal_handling_still_records_a_terminated_run(tmp_path):
    spec = command_spec(tmp_path, ["sleep", "30"])
    launcher = launcher_cli(spec, tmp_path / "rep1.json", tmp_path / "rep1.log")
    # its own program started (not any `sleep 30` on the machine: another test's, or a
    # user's, ended this wait before the launcher had set its handlers up)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not descendants(launcher.pid, ["sleep", "30"]):
        time.sleep(0.1)
    launcher.send_signal(signal.SIGTERM)
    launcher.communicate(timeout=60)
    record = json.loads((tmp_path / "rep1.json").read_text())
    assert record["status"] == "failed" and record["reason"].startswith("terminated by SIGTERM")


def test_a_thread_can_still_call_launch(tmp_path):
    spec = command_spec(tmp_path, ["true"])
    result = {}
    t = threading.Thread(target=lambda: result.update(r=launch(spec, tmp_path / "rep1.json")))
    t.start()
    t.join(60)
    assert result["r"]["status"] == "ok"


def test_the_report_shows_shared_runs_in_red_with_the_reason(tmp_path):
    from scalestudy.report.views import study_view

    quiet = {"cpu_time_s": 2.0, "window_s": 2.0, "cores_used": 1.0, "cpus_watched": 1,
             "others_cpu_s": 0.0, "others_cores": 0.0}  # fmt: skip
    busy = quiet | {"others_cpu_s": 1.8, "others_cores": 0.9}
    paths = [
        place(tmp_path, "s", point, k, n=n, resources=good_record()["resources"] | {"usage": use})
        for point, n in (("t1", 1), ("t2", 2))
        for k, use in ((1, quiet), (2, busy if point == "t2" else quiet))
    ]
    study = validated_study()
    result = aggregate(study, paths)
    context = study_view(result.analysis_as_read(), result.summary, {})
    t2 = context["rows"][1]
    assert t2["status_class"] == "bad"
    assert t2["cells"][-1].startswith("shared CPUs: rep2: other processes used 0.9 cores of its 1")
    assert [asdict(d) for d in context["disturbed"]] == [
        {"point": "t2", "repeat": 2,
         "what": "other processes used 0.9 cores of its 1 CPUs during this run (tolerance 10%)"}
    ]  # fmt: skip
