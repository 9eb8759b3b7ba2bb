"""Points are layouts: totals (processes, gpus, cores) placed on nodes, layouts given as
such, their labels and N, their Slurm request through the plugin's own builder, and the
launcher's srun step."""

import json
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from scalestudy.analysis.pipeline import analyse
from scalestudy.analysis.tables import runs_from_measured, summarise
from scalestudy.compute.launch import srun_command
from scalestudy.study.config_tables import points_table
from scalestudy.study.points import point_for, series_of_points
from scalestudy.study.resources import slurm_resources
from scalestudy.study.run_spec import run_spec
from tests.conftest import study_model
from tests.test_slurm_mapping import Job, flags
from tests.test_studies import config_error, model


def points(scaling: dict, workload: str = "spiral_mlp") -> list:
    study = model({"studies": {"s": {"workload": workload, "scaling": scaling}}})
    return [point_for(study, n) for n in study.scaling.ns()]


def shape(p) -> tuple:
    return (p.label, p.n, p.nodes, p.tasks_per_node, p.threads, p.gpus_per_node)


def test_gpus_packed_four_per_node():
    """The tutorial's study: 1 GPU, 4 GPUs on one node, 8 GPUs on two nodes."""
    found = points({"axis": "gpus", "device": "gpu", "per_node": 4, "points": [1, 4, 8]})
    assert [shape(p) for p in found] == [
        ("g1", 1, 1, 1, 1, 1),
        ("g4", 4, 1, 4, 1, 4),
        ("g8-n2", 8, 2, 4, 1, 4),
    ]
    assert [(p.gpus, p.world_size) for p in found] == [(1, 1), (4, 4), (8, 8)]


def test_processes_spread_one_per_node_and_cores_of_several_threads():
    spread = points({"axis": "processes", "placement": "spread", "points": [1, 2, 4]})
    assert [shape(p) for p in spread] == [
        ("p1", 1, 1, 1, 1, 0),
        ("p2-n2", 2, 2, 1, 1, 0),
        ("p4-n4", 4, 4, 1, 1, 0),
    ]
    cores = points({"axis": "cores", "threads": 2, "per_node": 8, "points": [2, 8, 16]})
    assert [shape(p) for p in cores] == [
        ("c2", 2, 1, 1, 2, 0),
        ("c8", 8, 1, 4, 2, 0),
        ("c16-n2", 16, 2, 4, 2, 0),
    ]
    assert [p.cores for p in cores] == [2, 8, 16]
    # without per_node or spread, a total stays on one node
    assert shape(points({"axis": "processes", "points": [4]})[0]) == ("p4", 4, 1, 4, 1, 0)


def test_layouts_given_as_such_take_their_n_from_the_axis():
    layouts = [
        {"processes_per_node": 2, "threads": 4},
        {"nodes": 2, "processes_per_node": 1, "threads": 2},
        {"processes_per_node": 1, "threads": 1},
    ]
    found = points({"axis": "cores", "points": layouts})
    assert [shape(p) for p in found] == [
        ("c8-2x4", 8, 1, 2, 4, 0),
        ("c4-n2-1x2", 4, 2, 1, 2, 0),
        ("c1-1x1", 1, 1, 1, 1, 0),
    ]
    gpus = points(
        {"axis": "gpus", "device": "gpu",
         "points": [{"nodes": 2, "processes_per_node": 2, "gpus_per_process": 2, "threads": 4}]}
    )  # fmt: skip
    assert shape(gpus[0]) == ("g8-n2-2x4g2", 8, 2, 2, 4, 4)
    # the base case defaults to the smallest N, whatever the order given
    scaling = {"axis": "cores", "points": layouts}
    study = model({"studies": {"s": {"workload": "spiral_mlp", "scaling": scaling}}})
    assert study.base_n(study.scaling.ns()) == 1


def test_the_existing_axes_are_unchanged():
    found = points({"axis": "devices", "device": "gpu", "nodes": 2, "threads": 4, "points": [4]})
    assert shape(found[0]) == ("g4-n2", 4, 2, 4, 4, 4)
    assert shape(points({"axis": "nodes", "devices": 2, "points": [3]})[0]) == (
        "n3", 3, 3, 2, 1, 0
    )  # fmt: skip
    assert shape(points({"axis": "threads", "points": [8]})[0]) == ("t8", 8, 1, 1, 8, 0)


@pytest.mark.parametrize(
    ("scaling", "message"),
    [
        ({"axis": "gpus", "device": "gpu", "per_node": 4, "points": [4, 6]},
         "studies.s.scaling.per_node: 4 per node does not divide point 6"),
        ({"axis": "gpus", "points": [1, 2]}, "studies.s.scaling.axis: gpus needs device: gpu"),
        ({"axis": "threads", "per_node": 2, "points": [1, 2]},
         "studies.s.scaling.per_node: placement is for the total axes"),
        ({"axis": "cores", "threads": 4, "points": [4, 6]},
         "point 6: 6 cores is not a whole number of processes of 4 threads"),
        ({"axis": "processes", "per_node": 2, "placement": "spread", "points": [2]},
         "per_node packs, placement: spread spreads"),
        ({"axis": "cores", "points": [8, {"processes_per_node": 2, "threads": 4}]},
         "two points have N = 8 on axis cores"),
        ({"axis": "cores", "points": [{"processes_per_node": 0}]}, "studies.s.scaling.points"),
    ],
)  # fmt: skip
def test_layouts_that_cannot_be_placed_are_refused_naming_the_key(scaling, message):
    study = {"workload": "spiral_mlp", "scaling": scaling}
    assert message in config_error({"studies": {"s": study}})


def test_a_layout_beyond_the_partition_is_refused():
    scaling = {"axis": "gpus", "device": "gpu", "per_node": 8, "points": [8]}
    study = {"workload": "spiral_mlp", "scaling": scaling}
    error = config_error({"partition_limits": {"gpus_per_node": 4}, "studies": {"s": study}})
    assert "point g8 needs 8 GPUs per node, the partition has 4" in error


def sbatch(scaling: dict, n: int) -> set[str]:
    from snakemake_executor_plugin_slurm.submit_string import get_submit_command
    from snakemake_executor_plugin_slurm.utils import set_gres_string

    study = model({"studies": {"s": {"workload": "spiral_mlp", "scaling": scaling}}})
    job = Job(slurm_resources(point_for(study, n), study))
    names = {"run_uuid": "job", "slurm_logfile": "log", "comment_str": "c", "account": "",
             "partition": "", "workdir": "."}  # fmt: skip
    line = get_submit_command(job, names) + set_gres_string(job)
    return flags(line + " " + (job.resources.get("slurm_extra") or ""))


def test_every_layout_through_the_plugins_own_submit_builder():
    eight = sbatch({"axis": "gpus", "device": "gpu", "per_node": 4, "points": [8]}, 8)
    assert {"--nodes=2", "--ntasks-per-node=4", "--gpus=8", "--gpus-per-task=1"} <= eight
    # real sbatch refuses --ntasks-per-gpu beside --ntasks-per-node (the test cluster's
    # stand-in GPUs showed it: tests/test_slurm.py)
    assert "--ntasks-per-gpu=1" not in eight
    spread = sbatch({"axis": "processes", "placement": "spread", "points": [4]}, 4)
    assert {"--nodes=4", "--ntasks=4", "--cpus-per-task=1"} <= spread
    hybrid = sbatch({"axis": "cores", "points": [{"processes_per_node": 2, "threads": 4}]}, 8)
    assert {"--nodes=1", "--ntasks-per-node=2", "--cpus-per-task=4"} <= hybrid
    one_node = sbatch({"axis": "gpus", "device": "gpu", "points": [8]}, 8)
    assert {"--nodes=1", "--ntasks-per-node=8", "--gpus=8"} <= one_node
    two_each = sbatch(
        {"axis": "gpus", "device": "gpu",
         "points": [{"processes_per_node": 2, "gpus_per_process": 2}]}, 4
    )  # fmt: skip
    assert {"--gpus=4", "--gpus-per-task=2", "--ntasks-per-node=2"} <= two_each
    assert "--ntasks-per-gpu=1" not in two_each


def test_the_launchers_srun_repeats_the_layout():
    layout = {"nodes": 2, "processes_per_node": 2, "gpus_per_process": 2, "threads": 4}
    scaling = {"axis": "gpus", "device": "gpu", "points": [layout]}
    study = model({"studies": {"s": {"workload": "spiral_mlp", "scaling": scaling}}})
    spec = run_spec(study, 8, 1)
    environ = {"SLURM_CPUS_PER_TASK": "4", "SLURM_JOB_ID": "1"}
    cmd = srun_command(spec, environ, {})
    assert {"--nodes=2", "--ntasks-per-node=2", "--cpus-per-task=4", "--gpus-per-task=2"} <= set(
        cmd
    )
    # an adaptive round's budget limit may be a fraction of a minute: srun takes whole ones
    limited = srun_command(run_spec(study, 8, 1, budget_limit_min=0.25), environ, {})
    assert "--time=1" in limited and "--time=0.25" not in limited


def test_a_measured_table_places_each_row_on_its_nodes(tmp_path):
    """The tutorial's table: 1 GPU, 4 GPUs on 1 node, 8 GPUs on 2 nodes, as one study
    with efficiency against the total GPUs."""
    csv = tmp_path / "tutorial.csv"
    csv.write_text("N,nodes,time_s\n1,1,100\n4,1,30\n8,2,20\n")
    study = study_model({"measured": str(csv), "scaling": {"axis": "gpus", "device": "gpu"}}, "t")
    runs = runs_from_measured(csv, study)
    summary = summarise(runs, study).set_index("n")
    assert list(summary["point"]) == ["g1", "g4", "g8-n2"]
    assert list(summary["nodes"]) == [1, 1, 2] and list(summary["gpus"]) == [1, 4, 8]
    assert summary.loc[8, "speedup"] == pytest.approx(5.0)
    assert summary.loc[8, "efficiency"] == pytest.approx(5.0 / 8)
    bad = tmp_path / "bad.csv"
    bad.write_text("N,nodes,time_s\n6,4,10\n")
    with pytest.raises(Exception, match="N=6 does not spread evenly on 4 nodes"):
        runs_from_measured(bad, study)


@pytest.mark.slow
def test_a_point_on_several_nodes_is_refused_locally_before_any_job(workflow):
    study = {"workload": "spiral_mlp", "params": {"epochs": 1},
             "scaling": {"axis": "processes", "placement": "spread", "points": [1, 2]},
             "repeats": 1}  # fmt: skip
    workflow.write_config({"studies": {"s": study}})
    proc = workflow.snakemake("--profile", "profiles/local", check=False)
    assert proc.returncode != 0
    assert "studies.s: point p2-n2 runs on 2 nodes" in proc.output
    assert "--profile profiles/slurm" in proc.output
    assert not (workflow.root / "results").exists()


def test_a_layout_not_received_is_flagged():
    """The allocation check compares nodes, processes per node, threads and GPUs per
    process: 4 processes asked 2 per node on 2 nodes, run 4 on one host."""
    from scalestudy.compute.harness import allocation_mismatches

    requested = {"threads": 2, "tasks_per_node": 2, "nodes": 2, "gpus_per_node": 4}
    packed = {"threads_given": 2, "cpus_usable": 2, "world_size": 4, "tasks_per_node": 4,
              "gpus_visible": 2}  # fmt: skip
    assert allocation_mismatches(requested, packed, hosts=1) == [
        "processes per node: asked for 2, 4 ran on one node",
        "nodes: asked for 2, ran on 1 host(s)",
    ]
    one_gpu_each = packed | {"tasks_per_node": 2, "gpus_visible": 1}
    assert allocation_mismatches(requested, one_gpu_each, hosts=2) == [
        "gpus: asked for 2 per process, 1 visible"
    ]
    assert allocation_mismatches(requested, packed | {"tasks_per_node": 2}, hosts=2) == []


# --- two-dimensional studies ------------------------------------------------------------
def grid_study(**scaling):
    return model({"studies": {"s": {"workload": "spiral_mlp",
                                    "scaling": {"axis": "cores"} | scaling}}})  # fmt: skip


def test_a_grid_becomes_one_series_per_line_with_its_layouts():
    study = grid_study(grid={"processes_per_node": [1, 2, 4], "threads": [1, 2, 4]}, max_total=8)
    table = points_table({"s": study}).set_index("point")
    assert study.series_names == ["p1", "p2", "p4"]
    assert list(table.index) == [
        "p1-c1-1x1", "p1-c2-1x2", "p1-c4-1x4",
        "p2-c2-2x1", "p2-c4-2x2", "p2-c8-2x4",
        "p4-c4-4x1", "p4-c8-4x2",  # 4 x 4 = 16 cores is above max_total
    ]  # fmt: skip
    assert list(table["cores"]) == [1, 2, 4, 2, 4, 8, 4, 8]
    assert table.loc["p4-c8-4x2", ["tasks_per_node", "threads"]].tolist() == [4, 2]


@pytest.mark.parametrize(
    ("scaling", "message"),
    [
        ({"axis": "threads", "grid": {"threads": [1, 2], "nodes": [1, 2]}},
         "studies.s.scaling.grid: a grid needs a total axis"),
        ({"grid": {"threads": [1, 2, 3, 4, 5, 6, 7], "processes_per_node": [1, 2, 3, 4, 5, 6]}},
         "studies.s.scaling.grid: 42 cells, more than max_cells (36)"),
        ({"grid": {"threads": [4], "processes_per_node": [4]}, "max_total": 8},
         "studies.s.scaling.max_total: 8 leaves no cell of the grid"),
        ({"grid": {"threads": [1, 2]}}, "studies.s.scaling.grid"),
        ({"grid": {"threads": [1], "nodes": [1]}, "points": [1]}, "studies.s.scaling"),
    ],
)  # fmt: skip
def test_grids_that_cannot_run_are_refused_naming_the_key(scaling, message):
    study = {"workload": "spiral_mlp", "scaling": {"axis": "cores"} | scaling}
    assert message in config_error({"studies": {"s": study}})


def test_a_grid_runs_as_many_cells_as_max_cells_allows_when_raised():
    grid = {"threads": [1, 2, 3, 4, 5, 6, 7], "processes_per_node": [1, 2, 3, 4, 5, 6]}
    study = grid_study(grid=grid, max_cells=42)
    assert len(points_table({"s": study})) == 42


def runs_of(times: dict) -> pd.DataFrame:
    """Runs of made times: point -> (series, n, [seconds])."""
    rows = [
        {"point": point, "series": series, "n": n, "repeat": k + 1, "status": "ok",
         "wall_s": t, "mismatch": False}
        for point, (series, n, ts) in times.items()
        for k, t in enumerate(ts)
    ]  # fmt: skip
    return pd.DataFrame(rows)


def test_the_best_layout_per_total_with_its_interval():
    from scalestudy.sections.layouts.produce import best_layouts

    study = grid_study(grid={"processes_per_node": [1, 2, 8], "threads": [1, 4, 8]})
    summary = pd.DataFrame({
        "point": ["p1-c8-1x8", "p2-c8-2x4", "p8-c8-8x1", "p2-c2-2x1"],
        "series": ["p1", "p2", "p8", "p2"], "n": [8, 8, 8, 2],
    })  # fmt: skip
    runs = runs_of({
        "p1-c8-1x8": ("p1", 8, [12.0, 12.2, 11.9]),
        "p2-c8-2x4": ("p2", 8, [10.0, 10.1, 9.9, 10.2]),
        "p8-c8-8x1": ("p8", 8, [13.1, 13.0, 13.2]),
        "p2-c2-2x1": ("p2", 2, [30.0]),
    })  # fmt: skip
    (eight,) = best_layouts(summary, runs, "wall_s", study)  # N = 2 has one layout only
    assert eight.n == 8 and eight.best.point == "p2-c8-2x4"
    assert (eight.best.tasks_per_node, eight.best.threads) == (2, 4)
    first, second = eight.others
    assert first.point == "p1-c8-1x8" and second.point == "p8-c8-8x1"
    assert second.ratio == pytest.approx(13.1 / 10.05)
    assert second.lo > 1 and second.told_apart
    assert second.lo <= second.ratio <= second.hi


def test_packed_and_spread_placements_are_compared_as_series():
    study = model({"studies": {"s": {"workload": "spiral_mlp", "scaling": {
        "axis": "processes", "points": [1, 2, 4]},
        "series": {"packed": {"scaling": {"per_node": 2}},
                   "spread": {"scaling": {"placement": "spread"}}}}}})  # fmt: skip
    labels = series_of_points(study)
    assert set(labels) == {"packed-p1", "packed-p2", "packed-p4-n2",
                           "spread-p1", "spread-p2-n2", "spread-p4-n4"}  # fmt: skip
    rng = np.random.default_rng(0)
    made = {}
    for label, series in labels.items():
        n = int(label.split("-")[1][1:])
        slow = 1.3 if series == "spread" and n > 1 else 1.0
        made[label] = (series, n, list(100 / n * slow * np.exp(rng.normal(0, 0.02, 3))))
    runs = runs_of(made).assign(
        study="s", reason=None, mismatches="", cores=lambda r: r["n"], gpus=0, overlapped=False,
        elapsed_s=lambda r: r["wall_s"], train_s=lambda r: r["wall_s"],
    )  # fmt: skip
    pred = json.loads(analyse(study, runs).analysis_json())
    (comparison,) = pred["comparisons"]
    assert (comparison["a"], comparison["b"]) == ("packed", "spread")
    four = next(c for c in pred["layouts"]["totals"] if c["n"] == 4)
    assert four["best"]["series"] == "packed" and four["others"][0]["told_apart"]


def test_a_grid_as_the_rows_and_columns_of_its_heat_map():
    from scalestudy.sections.layouts.produce import grid_cells

    study = grid_study(grid={"processes_per_node": [1, 2], "threads": [1, 2, 4]}, max_total=4)
    table = points_table({"s": study})
    summary = table.assign(time_s=[8.0, 4.5, 2.6, 4.2, 2.4])
    best = [SimpleNamespace(best=SimpleNamespace(point=p)) for p in ("p2-c2-2x1", "p2-c4-2x2")]
    found = grid_cells(study, summary, best)
    assert (found.line_key, found.along_key, found.columns) == (
        "processes_per_node", "threads", [1, 2, 4]
    )  # fmt: skip
    one, two = found.rows
    assert [c.point for c in one.cells] == ["p1-c1-1x1", "p1-c2-1x2", "p1-c4-1x4"]
    assert [c.point for c in two.cells] == ["p2-c2-2x1", "p2-c4-2x2", None]  # capped
    assert [c.best for c in two.cells] == [True, True, False]
    assert two.cells[1].n == 4 and two.cells[1].time_s == 2.4
    # efficiency against the grid's one base, 1 core at 8 s: 4 cores at 2.4 s is 83 %
    assert found.base == "p1-c1-1x1"
    assert two.cells[1].efficiency == pytest.approx(8 / (2.4 * 4))
    assert two.cells[1].band == "good"  # 83 %: the heat map's colour
    plain = model({"studies": {"s": {"workload": "spiral_mlp", "scaling": {"points": [1]}}}})
    assert grid_cells(plain, summary, []) is None


@pytest.mark.slow
@pytest.mark.browser
def test_a_threads_by_processes_grid_end_to_end(workflow):
    """Locally, a 2 x 2 grid of processes x threads (capped at this machine's 2 cores):
    the report shows the heat map and the best layout per total, and opens in Chromium
    with its figures loaded and a clean console."""
    import sys

    from tests.browser import open_report

    # each process works 0.4 s of CPU spread over its threads' share: 2 processes of 1
    # thread finish as fast as 1 of 2 threads, give or take the start-up
    program = "import sys, time; time.sleep(0.4 / int(sys.argv[1]))"
    study = {
        "workload": "command",
        "params": {"command": [sys.executable, "-c", program, "{n}"]},
        "scaling": {"axis": "cores", "grid": {"processes_per_node": [1, 2],
                                              "threads": [1, 2]}, "max_total": 2},
        "repeats": 2,
        "include_shared": True,  # other tests may run beside this one; not under test here
    }  # fmt: skip
    workflow.write_config({"studies": {"grid": study}})
    workflow.snakemake("--profile", "profiles/local")
    points = set(pd.read_csv(workflow.root / "results" / "grid" / "summary.csv")["point"])
    assert points == {"p1-c1-1x1", "p1-c2-1x2", "p2-c2-2x1"}
    page = open_report(workflow.root / "results" / "report.html")
    assert page["console"] == [] and page["external_requests"] == []
    assert page["images"] and all(i["ok"] for i in page["images"])
    assert "The best layout for each total" in page["text"]
    assert "For 2 cores:" in page["text"]
    assert page["html"].count('class="band-') == 4  # 3 cells and the capped one
    assert 'data-figure="layouts"' in page["html"]  # the heat map figure, with N = 2 line


def test_on_slurm_the_launcher_enforces_a_rounds_budget_limit_itself():
    # Slurm keeps whole minutes (srun --time rounds a round's 0.25 min up to 1) and stops
    # a step late: the launcher stops a run at its budget limit, as every local run
    from scalestudy.compute.launch import enforced_minutes

    limited = {"time_limit_min": 0.25, "budget_limit_min": 0.25}
    assert enforced_minutes(limited, local=False) == 0.25
    # a whole-minute budget limit too: Slurm stops a step late, and with the job's slack
    assert enforced_minutes({"time_limit_min": 2, "budget_limit_min": 2}, local=False) == 2
    assert enforced_minutes({"time_limit_min": 10}, local=False) is None
    assert enforced_minutes({"time_limit_min": 10}, local=True) == 10
