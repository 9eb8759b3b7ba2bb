"""Energy to result in the analysis, the cost and the report: per point from the runs'
counters (or Slurm's ConsumedEnergy, parsed from sample sacct lines), against the base
case, and said by the report only where it was measured."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pandas as pd
import pytest

from scalestudy.analysis.cost.cost import Cost
from scalestudy.analysis.decisions.request import consumed_energy, read_accounting
from scalestudy.analysis.pipeline import aggregate
from scalestudy.analysis.run_energy import with_energy
from scalestudy.analysis.stats.intervals import median_ci
from scalestudy.compute.energy import RAPL_SCOPE, measured, not_measured
from scalestudy.records import write_json_atomic
from scalestudy.report.rendering import render
from scalestudy.report.views import study_view
from scalestudy.slurm import accounting_command, ask
from tests.conftest import study_model
from tests.test_records import good_record
from tests.test_views import text_of

# t1: 2.5 s per run, about 110 J; t2: 1.5 s, about 75 J (threads: the node's packages)
RUNS = {("t1", 1): (2.5, [100.0, 110.0, 120.0]), ("t2", 2): (1.5, [70.0, 75.0, 80.0])}


def energy_part(joules) -> dict | None:
    if joules is None:
        return None
    return {
        "window": "the workload's run, after start-up",
        "gpu": not_measured("no counter: the run used no GPU"),
        "node": measured(joules, "rapl", RAPL_SCOPE)
        if joules
        else not_measured("no counter: no RAPL powercap interface on this node"),
    }


def records(folder, with_energy: bool = True) -> list:
    paths = []
    for (point, n), (wall, joules) in RUNS.items():
        for k, j in enumerate(joules, 1):
            record = good_record(point=point, n=n, repeat=k, wall_s=wall)
            record["run_id"] = f"run-of-{point}-rep{k}"
            record["phases"] = [{"name": "epoch 1", "kind": "epoch", "seconds": wall - 0.2}]
            record["resources"]["requested"]["threads"] = n
            record["resources"]["received"] |= {"threads_given": n, "torch_threads": n}
            record["resources"]["received"]["cpus_usable"] = n
            energy = energy_part(j if with_energy else 0)
            record["energy"] = energy
            path = folder / "results" / "s" / "runs" / point / f"rep{k}.json"
            write_json_atomic(path, record)
            paths.append(path)
    return paths


def study(**cost):
    return study_model({"scaling": {"axis": "threads"}, "cost": cost}, "s")


def test_energy_per_result_against_the_base_case(tmp_path):
    result = aggregate(study(), records(tmp_path))
    energy = json.loads(result.analysis_json())["energy"]
    assert energy["measured"] is True and energy["weight_su_per_kwh"] == 0
    t1, t2 = energy["points"]
    assert (t1["energy_j"], t1["runs"], t1["source"]) == (110.0, 3, "rapl")
    # n = 3: a t interval on log energies (intervals.median_ci)
    assert (t1["energy_ci_lo"], t1["energy_ci_hi"]) == median_ci([100.0, 110.0, 120.0])[1:]
    # a ratio of the medians, never an average of ratios
    assert t2["relative_energy"] == pytest.approx(75 / 110)
    assert t2["relative_ci_lo"] <= 75 / 110 <= t2["relative_ci_hi"]
    assert t2["least"] and not t1["least"] and t2["pareto"] and not t1["pareto"]
    (answer,) = energy["answers"]
    assert answer["point"] == "t2" and answer["base_point"] == "t1"
    assert answer["speedup"] == pytest.approx(2.5 / 1.5)
    assert answer["relative_energy"] == pytest.approx(75 / 110)
    runs = result.runs
    assert list(runs["energy_source"].unique()) == ["rapl"]
    assert runs["energy_j"].tolist() == [100.0, 110.0, 120.0, 70.0, 75.0, 80.0]


def test_the_report_says_the_answer_in_energy_and_shows_the_figure(tmp_path):
    result = aggregate(study(), records(tmp_path))
    figures = {"energy": tmp_path / "energy.svg", "times": tmp_path / "times.svg"}
    for path in figures.values():
        path.write_text('<svg xmlns="http://www.w3.org/2000/svg"/>')
    view = study_view(result.analysis_as_read(), result.summary, figures)
    assert set(view["figures"]) == {"energy", "times"}
    text = text_of(render("t", [view]))
    assert "t2 is 1.67x faster for 0.68x the energy of the base case t1" in text
    assert "least energy per result: t2 (0.68x the base case's)" in text
    assert "Energy to result" in text and "0.110 [0.087, 0.138]" in text  # kJ, one precision
    assert "0.68 [" in text  # relative energy with its interval
    assert "RAPL (CPU packages of the node)" in text


def test_without_energy_the_report_says_not_measured_and_hides_the_figure(tmp_path):
    result = aggregate(study(), records(tmp_path, with_energy=False))
    energy = result.analysis.section("energy")
    assert energy.measured is False
    assert energy.not_measured == "node: no counter: no RAPL powercap interface on this node"
    assert all(p.energy_j is None and p.relative_energy is None for p in energy.points)
    figures = {"energy": tmp_path / "energy.svg"}
    figures["energy"].write_text('<svg xmlns="http://www.w3.org/2000/svg"/>')
    view = study_view(result.analysis_as_read(), result.summary, figures)
    assert view["figures"] == {}
    text = text_of(render("t", [view]))
    assert "Energy was not measured: node: no counter: no RAPL powercap" in text
    assert "the energy of the base case" not in text


def test_records_without_any_energy_reading_say_so(tmp_path):
    paths = records(tmp_path)
    for path in paths:
        record = json.loads(path.read_text())
        del record["energy"]
        path.write_text(json.dumps(record))
    energy = aggregate(study(), paths).analysis.section("energy")
    assert not energy.measured and "the record holds no energy reading" in energy.not_measured


def test_energy_is_charged_only_where_the_centre_charges_for_it(tmp_path):
    plain = aggregate(study(), records(tmp_path / "a")).summary.set_index("n")["su"]
    charged = aggregate(study(energy_weight=1000), records(tmp_path / "b"))
    su = charged.summary.set_index("n")["su"]
    # 1000 SU per kWh on the median measured energy of each point
    assert su[1] - plain[1] == pytest.approx(1000 * 110 / 3.6e6)
    assert su[2] - plain[2] == pytest.approx(1000 * 75 / 3.6e6)
    assert charged.analysis.findings.cost.energy == "1000 SU per kWh of measured energy"
    cost = Cost.from_config({"core_weight": 1, "gpu_weight": 2, "partitions": {}})
    assert cost.su(1, 0, 3600, energy_j=3.6e6) == 1.0  # no weight: no energy charged


# sacct -n -P --format=JobID,TotalCPU,Elapsed,AllocCPUS,MaxRSS,ConsumedEnergyRaw
SACCT = (
    "31|00:01:00|00:01:00|4||5200\n31.batch|00:00:01|00:01:00|4|20K|100\n"
    "31.0|00:00:59|00:00:59|4|1G|5100\n"
    "32|00:01:00|00:01:00|4||0\n32.0|00:00:59|00:00:59|4|1G|0\n"
    "33|00:01:00|00:01:00|4||\n"
    "34|00:02:00|00:02:00|4||9000\n34.0|00:01:00|00:01:00|4|1G|4000\n"
    "34.1|00:01:00|00:01:00|4|1G|18446744073709551614\n"
)


def accounting(job_ids: list[str], run) -> tuple[dict, str | None]:
    """sacct's accounting of the jobs, asked as the cluster rule asks it, read as data."""
    return read_accounting(ask(accounting_command(job_ids), run))


def sacct(out: str):
    def run(command, **_):
        assert command[-1].endswith("ConsumedEnergyRaw")
        return SimpleNamespace(returncode=0, stdout=out, stderr="")

    return run


def test_consumed_energy_parser_on_sample_lines():
    assert consumed_energy("5200") == {"joules": 5200.0, "source": "slurm", "not_measured": None}
    for empty in ("", "0", "18446744073709551614"):
        part = consumed_energy(empty)
        assert part["joules"] is None and part["source"] is None
        assert part["not_measured"].startswith("no counter: Slurm accounting gathered no energy")
    jobs, note = accounting(["31", "32", "33", "34"], sacct(SACCT))
    assert note is None
    assert jobs["31"]["energy"]["joules"] == 5200.0
    assert jobs["31.0"]["energy"]["joules"] == 5100.0
    assert jobs["32"]["energy"]["joules"] is None  # accounting gathers no energy
    assert jobs["33"]["energy"]["joules"] is None
    assert jobs["34.0"]["energy"]["joules"] == 4000.0
    assert jobs["34.1"]["energy"]["not_measured"]  # a step without energy data
    # the old five columns still read (no energy column: not measured)
    jobs, _ = accounting(["31"], sacct("31|00:01:00|00:01:00|4|\n"))
    assert jobs["31"]["energy"]["joules"] is None and jobs["31"]["cpus"] == 4


def test_slurm_energy_counts_only_for_jobs_that_had_their_nodes_to_themselves():
    jobs, _ = accounting(["31", "32", "34"], sacct(SACCT))
    runs = pd.DataFrame(
        {
            "status": ["ok"] * 5,
            "slurm_job_id": ["31", "31", "32", "34", "34"],  # as records give them
            "slurm_step_id": [None, None, None, 0, 1],
            "slurm_oversubscribe": ["NO", "OK", "NO", "NO", "NO"],
            "energy_gpu_j": [None, None, None, 50.0, None],
            "energy_gpu_why": ["no counter: the run used no GPU"] * 3 + [None, "x"],
            "energy_node_j": [None] * 5,
            "energy_node_why": ["shared node: ..."] * 5,
        }
    ).iloc[[0, 2, 3, 4]]
    runs.loc[runs.index[0], "slurm_oversubscribe"] = "NO"
    found = with_energy(runs.reset_index(drop=True), jobs, "wall")
    # job 31 (a job of its own, exclusive): its ConsumedEnergy; 32: accounting gathers none
    assert found.loc[0, ["energy_j", "energy_source"]].tolist() == [5200.0, "slurm"]
    assert found.loc[1, "energy_j"] != found.loc[1, "energy_j"]  # NaN: not measured
    why = found.loc[1, "energy_why"]
    assert "Slurm: no counter: Slurm accounting gathered no energy (0 J)" in why
    # packed runs of job 34: each its own step; Slurm's figure is not added to NVML's
    assert found.loc[2, ["energy_j", "energy_source"]].tolist() == [4000.0, "slurm"]
    assert pd.isna(found.loc[3, "energy_j"])
    shared = with_energy(runs.reset_index(drop=True).assign(slurm_oversubscribe="OK"), jobs, "wall")
    assert shared.loc[0, "energy_slurm_why"].startswith("shared node")
    assert shared.loc[2, ["energy_j", "energy_source"]].tolist() == [50.0, "nvml"]


def test_a_point_leaves_out_the_runs_its_time_leaves_out():
    from scalestudy.sections.energy.produce import point_energy

    runs = pd.DataFrame(
        {
            "status": ["ok", "ok", "ok", "failed"],
            "mismatch": [False, True, False, False],
            "disturbed": [None, None, "others used 0.9 cores", None],
            "energy_result_j": [10.0, 99.0, 50.0, None],
            "energy_result_source": ["rapl"] * 3 + [None],
            "energy_result_why": [None, None, None, "the run failed"],
        }
    )
    values, source, why = point_energy(runs)
    assert values.tolist() == [10.0] and source == "rapl" and why is None
    kept, _, _ = point_energy(runs, keep_mismatched=True, keep_disturbed=True)
    assert kept.tolist() == [10.0, 99.0, 50.0]


def test_a_base_case_on_a_shared_node_leaves_the_answer_without_a_ratio(tmp_path):
    paths = records(tmp_path)
    for path in paths:
        record = json.loads(path.read_text())
        if record["point"] == "t1":  # one thread of two: the node was shared
            record["energy"]["node"] = not_measured("shared node: the run had only a share")
            path.write_text(json.dumps(record))
    result = aggregate(study(), paths)
    energy = result.analysis.section("energy")
    t1, t2 = energy.points
    assert t1.energy_j is None and t1.not_measured == "node: shared node: the run had only a share"
    assert t2.energy_j == 75.0 and t2.relative_energy is None and t2.least
    (answer,) = energy.answers
    assert answer.point == "t2" and answer.relative_energy is None
    assert answer.not_measured == "node: shared node: the run had only a share"
    text = text_of(render("t", [study_view(result.analysis_as_read(), result.summary, {})]))
    assert "In energy: t2 not measured against the base case (node: shared node" in text
    assert "least energy per result: t2." in text
    assert "not measured: node: shared node: the run had only a share" in text  # its row


def train_records(folder, phase_energy: bool = True) -> list:
    """Runs whose workload's whole run used 10x the energy of its two epochs (data
    loading on an idle GPU board, say): t1's epochs 2 s and 40 + 60 J, t2's 1 s and
    30 + 20 J."""
    paths = []
    for point, n, epochs in (("t1", 1, [(1.0, 40.0), (1.0, 60.0)]),
                             ("t2", 2, [(0.5, 30.0), (0.5, 20.0)])):  # fmt: skip
        for k in (1, 2, 3):
            record = good_record(point=point, n=n, repeat=k, wall_s=3.0)
            record["finished_at"] = "2026-01-01T00:00:03.000+00:00"
            record["run_id"] = f"run-of-{point}-rep{k}"
            record["phases"] = [
                {"name": f"epoch {i}", "kind": "epoch", "seconds": s}
                | ({"energy": {"gpu_j": None, "node_j": j}} if phase_energy else {})
                for i, (s, j) in enumerate(epochs, 1)
            ]
            record["resources"]["requested"]["threads"] = n
            record["resources"]["received"] |= {"threads_given": n, "torch_threads": n}
            record["energy"] = energy_part(10 * sum(j for _, j in epochs))
            path = folder / "results" / "s" / "runs" / point / f"rep{k}.json"
            write_json_atomic(path, record)
            paths.append(path)
    return paths


@pytest.mark.parametrize("time, t1_j, t2_j", [("train", 100.0, 50.0), ("steady", 60.0, 20.0),
                                              ("wall", 1000.0, 500.0)])  # fmt: skip
def test_energy_per_result_is_of_the_phases_the_time_uses(tmp_path, time, t1_j, t2_j):
    """Time and energy of a point are of the same work: a study timed by its epochs gets
    its epochs' energy, not the whole run's (which held 10x more here). What a run is
    charged stays its whole run's energy."""
    s = study_model({"scaling": {"axis": "threads"}, "time": time,
                     "cost": {"energy_weight": 1000}}, "s")  # fmt: skip
    result = aggregate(s, train_records(tmp_path))
    energy = result.analysis.section("energy")
    t1, t2 = energy.points
    assert (t1.energy_j, t2.energy_j) == (t1_j, t2_j)
    assert t2.relative_energy == pytest.approx(t2_j / t1_j)
    assert energy.window.startswith({"train": "the training epochs", "steady": "the median epoch",
                                     "wall": "the workload's whole run"}[time])  # fmt: skip
    assert sorted(result.runs["energy_j"].unique()) == [500.0, 1000.0]  # charged: the whole run
    text = text_of(render("t", [study_view(result.analysis_as_read(), result.summary, {})]))
    assert f"one run's energy over {energy.window}" in text


def test_records_without_phase_energy_give_no_energy_per_epoch(tmp_path):
    s = study_model({"scaling": {"axis": "threads"}, "time": "train"}, "s")
    energy = aggregate(s, train_records(tmp_path, phase_energy=False)).analysis.section("energy")
    assert not energy.measured
    assert energy.points[0].not_measured == (
        "node: no energy per phase in the record (it was made before phases were read)"
    )


def test_slurm_energy_serves_only_times_of_the_whole_run():
    jobs, _ = accounting(["31"], sacct(SACCT))
    runs = pd.DataFrame({"status": ["ok"], "slurm_job_id": ["31"], "slurm_step_id": [None],
                         "slurm_oversubscribe": ["NO"], "gpus": [0]})  # fmt: skip
    wall = with_energy(runs, jobs, "wall")
    assert wall.loc[0, ["energy_result_j", "energy_result_source"]].tolist() == [5200.0, "slurm"]
    train = with_energy(runs, jobs, "train")
    assert train.loc[0, ["energy_j", "energy_source"]].tolist() == [5200.0, "slurm"]  # charged
    assert pd.isna(train.loc[0, "energy_result_j"])
    assert train.loc[0, "energy_result_why"] == (
        "Slurm: its figure is the whole job's, not the training epochs"
    )


def test_windows_too_short_for_the_counters_steps_have_no_figure():
    """NVML's counter on an H200 moved every 0.1 s, 12.3 J at a time: a 0.07 s epoch
    read 12.3 J (or 0 J). Such a figure may be off by more than itself: not given."""
    from scalestudy.analysis.run_energy import record_columns

    def record(epoch_s: list[float], update_s: float):
        return good_record(
            wall_s=10.0,
            finished_at="2026-01-01T00:00:10.000+00:00",
            phases=[{"name": "startup", "kind": "startup", "seconds": 3.0}]
            + [{"name": f"epoch {i}", "kind": "epoch", "seconds": s,
                "energy": {"gpu_j": 12.3, "node_j": None}}
               for i, s in enumerate(epoch_s, 1)],
            energy={"window": "w", "node": not_measured("no counter: x"),
                    "gpu": measured(600.0, "nvml", "x") | {"update_s": update_s}},
        )  # fmt: skip

    spiral = record([0.3, 0.07, 0.07], update_s=0.1)
    columns = record_columns(spiral)
    assert columns["energy_gpu_steady_j"] is None
    assert columns["energy_gpu_steady_why"] == (
        "too short for the counter: a phase of 0.07 s from a counter that moves every "
        "0.1 s (up to 286% off)"
    )
    assert columns["energy_gpu_train_j"] is None  # 3 phases, 0.44 s: up to 136 % off
    assert columns["energy_gpu_j"] == 600.0  # the whole run: 7 s, up to 3 % off
    long_epochs = record_columns(record([3.0, 2.0, 2.0], update_s=0.1))
    assert long_epochs["energy_gpu_train_j"] == pytest.approx(36.9)  # 6 reads: 9 % at most
    assert long_epochs["energy_gpu_steady_j"] == pytest.approx(12.3)
    unknown = record_columns(record([0.3, 0.07, 0.07], update_s=None))  # not timed: as read
    assert unknown["energy_gpu_steady_j"] == pytest.approx(12.3)
