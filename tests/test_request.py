"""The whole request per point (scalestudy.analysis.decisions.request): --mem from the
measured peak per node, --time from the slowest run (scaled to full length when the runs
were shortened), as #SBATCH lines from the Slurm plugin's own submit command, and what
the runs used of their allocation."""

import json
import sys

import pandas as pd
import pytest

from scalestudy.analysis.decisions.request import (
    job_ids,
    memory_request_mb,
    point_request,
    read_accounting,
    study_requests,
)
from scalestudy.analysis.tables import runs_from_records
from scalestudy.compute.launch import launch
from scalestudy.contract import Requests
from scalestudy.slurm import gather, partition_time_limits
from scalestudy.study.run_spec import run_spec
from tests.conftest import on_the_quietest_cpu, study_model
from tests.test_studies import config_error, model

# times runs or loads both cores: in line with the others that do (tests/conftest.py)
pytestmark = pytest.mark.measures

PY = sys.executable


def runs(point: str, **columns) -> pd.DataFrame:
    frame = pd.DataFrame({"point": point, "status": "ok"} | columns)
    return frame.assign(point=point, status=frame.get("status", "ok"))


def threads_study(**extra):
    return study_model(
        {"workload": "spiral_mlp", "scaling": {"axis": "threads", "points": [1, 4]}} | extra
    )


def test_mem_and_time_come_from_the_measured_peak_and_the_slowest_run():
    made = runs("t4", elapsed_s=[100.0, 120.0], peak_rss_mb=[900.0, 950.0],
                usage_peak_rss_mb=[1500.0, 1400.0], cores_used=[3.6, 3.2])  # fmt: skip
    r = point_request(threads_study(), "", 4, made)
    # 1500 MB x 1.2 = 1800 MB -> 2 GB; 120 s x 1.5 = 180 s -> 3 min
    assert (r["peak_mem_mb"], r["mem_mb"], r["time_min"]) == (1500.0, 2048, 3)
    assert not r["time_scaled"] and r["slowest_s"] == 120.0
    assert r["sbatch"] == [
        "#SBATCH --time=0:03:00",
        "#SBATCH --mem=2G",
        "#SBATCH --nodes=1",
        "#SBATCH --ntasks=1",
        "#SBATCH --cpus-per-task=4",
    ]
    assert r["resources"] | {} == r["resources"]
    assert (r["resources"]["mem_mb"], r["resources"]["runtime"]) == (2048, 3)
    assert r["resources"]["cpus_per_task"] == 4 and r["resources"]["nodes"] == 1
    assert r["cpu_busy"] == pytest.approx(3.4 / 4)
    assert r["memory_used"] == pytest.approx(1500 / 4000)  # the schema's 4000 MB asked
    assert r["waste"] == ["memory"]


def test_margins_are_the_studys():
    made = runs("t1", elapsed_s=[59.0], peak_rss_mb=[500.0])
    r = point_request(threads_study(request={"mem_margin": 0, "time_margin": 0}), "", 1, made)
    assert (r["mem_mb"], r["time_min"]) == (500, 1)
    assert memory_request_mb(1000, 0.1) == 2048 and memory_request_mb(100, 0.5) == 150


def test_shortened_runs_are_scaled_to_full_length_and_say_so():
    made = runs("t1", elapsed_s=[120.0], train_s=[50.0], eval_s=[4.0],
                train_fraction=[0.1], eval_fraction=[0.5], peak_rss_mb=[500.0])  # fmt: skip
    r = point_request(threads_study(), "", 1, made)
    # 120 + 50 x 9 + 4 x 1 = 574 s, x 1.5 = 861 s -> 15 min
    assert r["slowest_s"] == pytest.approx(574) and r["time_scaled"]
    assert r["time_min"] == 15


def test_a_node_holds_every_process_of_it():
    study = study_model(
        {"scaling": {"axis": "nodes", "device": "gpu", "devices": 4, "points": [2], "threads": 2}}
    )
    r = point_request(study, "", 2, runs("g4-n2", elapsed_s=[600.0], peak_rss_mb=[3000.0]))
    assert r["peak_mem_mb"] == 12000  # 4 processes per node
    assert r["mem_mb"] == 15 * 1024  # 14400 MB rounded up to whole GB
    assert {"#SBATCH --nodes=2", "#SBATCH --ntasks-per-node=4", "#SBATCH --gpus=8",
            "#SBATCH --mem=15G", "#SBATCH --cpus-per-task=2"} <= set(r["sbatch"])  # fmt: skip


def test_a_records_own_node_peak_stands_and_a_commands_older_figure_is_no_measurement():
    # today's record: the largest node's peak, whatever its processes' figure says
    own = {"usage_peak_rss_mb": [900.0], "node_peak_rss_mb": ["900.0"]}
    made = runs("t1", elapsed_s=[10.0], peak_rss_mb=[50.0], **own)
    command = study_model({"workload": "command", "scaling": {"axis": "threads", "points": [1]}})
    assert point_request(command, "", 1, made)["peak_mem_mb"] == 900.0
    # a command's record from before per-node figures held only the harness's memory
    older = runs("t1", elapsed_s=[10.0], peak_rss_mb=[17.5])
    r = point_request(command, "", 1, older)
    assert r["peak_mem_mb"] is None and r["mem_mb"] is None and r["mem_from"] == "unmeasured"
    assert "mem_mb" not in r["resources"] and not any("--mem=" in line for line in r["sbatch"])
    assert (
        r["sbatch"][-1]
        == "# --mem: not measured (no run's peak memory was recorded): set it yourself"
    )
    # a built-in workload's older figure was its own process's: still its peak per node
    assert point_request(threads_study(), "", 1, older)["peak_mem_mb"] == 17.5


def test_a_point_without_good_runs_asks_for_nothing():
    r = point_request(threads_study(), "", 4, runs("t4", status=["failed"], elapsed_s=[3.0]))
    assert r["sbatch"] == [] and r["mem_mb"] is None and r["waste"] == []


def test_every_point_of_the_summary_gets_its_request():
    study = threads_study()
    summary = pd.DataFrame({"point": ["t1", "t4"], "n": [1, 4], "series": [""] * 2})
    made = pd.concat([runs("t1", elapsed_s=[10.0]), runs("t4", elapsed_s=[4.0])])
    found = study_requests(study, summary, made).points
    assert [(r.point, r.threads, r.time_min) for r in found] == [
        ("t1", 1, 1),
        ("t4", 4, 1),
    ]
    assert study_requests(study_model({"measured": "x.csv"}), summary, made).points == []


def test_a_margin_below_zero_is_refused():
    study = {"workload": "spiral_mlp", "scaling": {"points": [1]},
             "request": {"mem_margin": -0.1}}  # fmt: skip
    assert "studies.s.request.mem_margin" in config_error({"studies": {"s": study}})


SPIN = "import time\nend = time.time() + 1.5\nwhile time.time() < end: pass\n"


def test_cpu_busy_of_a_busy_loop_and_a_sleeper(tmp_path, monkeypatch):
    """Real runs through the launcher: a busy loop against a sleeper, each on one CPU,
    the quietest (CI's other core may be busy: the run's own CPU is judged)."""
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    records = []
    for point, program in (("busy", SPIN), ("sleeper", "import time; time.sleep(1.5)")):
        study = {"workload": "command", "params": {"command": [PY, "-c", program]},
                 "scaling": {"axis": "threads", "points": [1]}, "repeats": 1}  # fmt: skip
        config = {"studies": {"c": study}}
        spec = run_spec(model(config, "c"), 1, 1)
        spec["data_dir"] = str(tmp_path)
        path = tmp_path / point / "runs" / "t1" / "rep1.json"
        with on_the_quietest_cpu():
            record = launch(spec, path)
        assert record["status"] == "ok", record["reason"]
        records.append(path)
    busy, sleeper = (runs_from_records([p]) for p in records)
    study = model(config, "c")
    # of the CPU time that other processes left it: on a loaded machine the quietest
    # CPU may still be shared, and the busy loop then gets only the rest
    others = json.loads(records[0].read_text())["resources"]["usage"]["others_cores"] or 0.0
    assert point_request(study, "", 1, busy)["cpu_busy"] > 0.7 * (1 - min(others, 0.9))
    slept = point_request(study, "", 1, sleeper)
    assert slept["cpu_busy"] < 0.2 and "cpu" in slept["waste"]


class Sacct:
    """What `sacct -n -P` prints, or its refusal on a site without accounting."""

    def __init__(self, out: str = "", code: int = 0, err: str = ""):
        self.out, self.code, self.err = out, code, err
        self.commands = []

    def __call__(self, command, **_):
        self.commands.append(command)
        from types import SimpleNamespace

        return SimpleNamespace(returncode=self.code, stdout=self.out, stderr=self.err)


def requests(study, summary: pd.DataFrame, made: pd.DataFrame, sacct: Sacct) -> Requests:
    """study_requests with sacct's accounting asked as the cluster rule asks it
    (scalestudy.slurm.gather), then read as data."""
    facts = gather({}, None, job_ids(made), lambda _: [], run=sacct)
    return study_requests(study, summary, made, read_accounting(facts.accounting))


def test_slurm_accounting_is_shown_beside_the_runs_own_figures():
    sacct = Sacct(
        "11|00:03:20|00:01:00|4|\n11.batch|00:00:01|00:01:00|4|20K\n11.0|03:19.500|00:00:59|4|1.5G\n"
        "12|02:00.000|00:01:00|4|\n12.0|02:00|00:01:00|4|900M\n"
    )
    made = runs("t4", elapsed_s=[60.0, 60.0], slurm_job_id=[11, 12], cores_used=[3.0, 2.0])
    summary = pd.DataFrame({"point": ["t4"], "n": [4], "series": [""]})
    found = requests(threads_study(), summary, made, sacct)
    assert "-j" in sacct.commands[0] and "11,12" in sacct.commands[0]
    (r,) = found.points
    assert found.accounting_note is None
    # job 11: 200 s of CPU over 60 s x 4 CPUs; job 12: 120 s -> median of 0.833 and 0.5
    assert r.sacct_cpu_busy == pytest.approx((200 / 240 + 120 / 240) / 2)
    assert r.sacct_peak_mem_mb == pytest.approx(1.5 * 1024)
    assert r.cpu_busy == pytest.approx(2.5 / 4)  # the runs' own figure stays


def test_a_site_without_accounting_gets_a_note_never_an_error():
    sacct = Sacct(code=1, err="sacct: error: Slurm accounting storage is disabled")
    made = runs("t4", elapsed_s=[60.0], slurm_job_id=[11])
    summary = pd.DataFrame({"point": ["t4"], "n": [4], "series": [""]})
    found = requests(threads_study(), summary, made, sacct)
    assert (
        "sacct was not available (sacct: error: Slurm accounting storage is disabled)"
        in found.accounting_note
    )
    assert found.points[0].sacct_cpu_busy is None and found.points[0].sbatch
    # local runs have no job ids: sacct is not asked
    local = requests(threads_study(), summary, runs("t4", elapsed_s=[60.0]), sacct)
    assert local.accounting_note is None and len(sacct.commands) == 1


def test_runs_that_shared_a_job_are_accounted_by_their_own_srun_step():
    """Packed repeats (submission.pack_repeats) share one Slurm job: its totals would mix
    the runs and the pauses between them, so each run is read from its own step."""
    sacct = Sacct(
        "21|00:05:00|00:03:00|4|\n21.batch|00:00:09|00:03:00|4|300M\n"
        "21.0|03:00.000|00:01:00|4|1G\n21.1|01:00.000|00:01:00|4|2G\n"
    )
    made = runs(
        "t4", elapsed_s=[60.0, 60.0], slurm_job_id=[21, 21], slurm_step_id=[0, 1],
        cores_used=[3.0, 1.0],
    )  # fmt: skip
    summary = pd.DataFrame({"point": ["t4"], "n": [4], "series": [""]})
    (r,) = requests(threads_study(), summary, made, sacct).points
    # steps: 180 s and 60 s of CPU over 60 s x 4 CPUs (the job's 300 / 720 would say 0.42)
    assert r.sacct_cpu_busy == pytest.approx((180 / 240 + 60 / 240) / 2)
    assert r.sacct_peak_mem_mb == pytest.approx(2 * 1024)


def test_partition_time_limits_as_sinfo_gives_them():
    sinfo = Sacct("debug* infinite\ngpu 2-00:00:00\nshort 30:00\nlong 1:30:00\n")
    limits, unreachable = partition_time_limits(run=sinfo)
    assert sinfo.commands == [["sinfo", "-h", "-o", "%P %l"]]
    assert limits == {"": None, "debug": None, "gpu": 2880, "short": 30, "long": 90}
    assert unreachable is None


def test_partition_time_limits_say_why_slurm_could_not_be_asked():
    down = "slurm_load_partitions: Unable to contact slurm controller (connect failure)"
    assert partition_time_limits(run=Sacct(code=1, err=f"sinfo: error\n{down}\n")) == (
        {},
        f"sinfo failed ({down})",
    )

    def missing(command, **_):
        raise FileNotFoundError(2, "No such file or directory", command[0])

    assert partition_time_limits(run=missing) == (
        {},
        "sinfo is not installed here",
    )


def test_mem_covers_what_slurm_counted_where_it_counted_more_than_the_runs():
    """Slurm stops a job on its own memory count: jobacct_gather/linux sums the RSS of
    every process of a step, shared pages and all (it once counted 2.66 GB for a
    1.3-GB worker). The --mem printed covers that count, and says where it came from."""
    sacct = Sacct("11|00:01:00|00:01:00|4|\n11.0|00:59.000|00:01:00|4|2600M\n")
    made = runs("t4", elapsed_s=[60.0], slurm_job_id=[11], usage_peak_rss_mb=[1300.0])
    summary = pd.DataFrame({"point": ["t4"], "n": [4], "series": [""]})
    (r,) = requests(threads_study(), summary, made, sacct).points
    assert r.peak_mem_mb == 1300.0 and r.sacct_peak_mem_mb == 2600.0
    assert r.mem_from == "sacct" and r.mem_mb == 4096  # 2600 MB + 20 %: 4 GB
    assert "#SBATCH --mem=4G" in r.sbatch
    lower = Sacct("11|00:01:00|00:01:00|4|\n11.0|00:59.000|00:01:00|4|900M\n")
    (r,) = requests(threads_study(), summary, made, lower).points
    assert r.mem_from == "measured" and r.mem_mb == 2048  # 1300 MB + 20 %: 2 GB
