"""The checks before any job runs, called directly with plain inputs (what
rules/startup.smk reads from Snakemake): each returns its problems as strings."""

from scalestudy.analysis.cost.budgets import budget_problems
from scalestudy.study.config_tables import points_table
from scalestudy.study.errors import startup_problems_text
from scalestudy.study.startup_checks import (
    local_cpu_problems,
    local_gpu_problems,
    packing_problems,
    partition_time_problems,
    visible_gpus,
)
from scalestudy.study.validation import study_models
from tests.test_studies import validated


def studies_and_points(**studies):
    models = study_models(validated({"studies": studies}))
    return models, points_table(models).set_index(["study", "point"], drop=False)


def threads_study(points, **extra):
    return {"workload": "spiral_mlp", "scaling": {"axis": "threads", "points": points},
            "repeats": 3, "resources": {"mem_mb": 1500, "runtime": 10}} | extra  # fmt: skip


def test_a_point_needing_more_cpus_than_usable_is_refused_naming_its_key():
    studies, points = studies_and_points(c=threads_study([1, 4]))
    needed = {("c", "t1"), ("c", "t4")}
    (problem,) = local_cpu_problems(studies, points, needed, usable=2, cores=8)
    assert problem.startswith("studies.c: point t4 needs 4 CPUs")
    assert "use 2 (usable CPUs 2, --cores 8)" in problem
    # said in plain words, no template's placeholder left in it
    assert "{" not in problem and "gives such a job 2 threads, not its N" in problem
    assert local_cpu_problems(studies, points, {("c", "t1")}, usable=2, cores=8) == []
    # --cores below the usable CPUs is the limit
    assert local_cpu_problems(studies, points, {("c", "t4")}, usable=8, cores=2)


def test_an_oversubscribed_point_of_a_fixed_study_passes():
    studies, points = studies_and_points(c=threads_study([1, 4], oversubscribe=True))
    assert local_cpu_problems(studies, points, {("c", "t4")}, usable=2, cores=2) == []


def test_packing_with_too_few_group_components_is_refused():
    studies, _ = studies_and_points(p=threads_study([1, 2], submission={"pack_repeats": True}))
    (problem,) = packing_problems(studies, {"p"}, components=2, timed_runs=1, group="pack")
    assert problem.startswith("studies.p.submission.pack_repeats packs 3 runs in one job")
    assert "--group-components pack=2" in problem
    assert packing_problems(studies, {"p"}, components=100, timed_runs=1, group="pack") == []
    (timed,) = packing_problems(studies, {"p"}, components=100, timed_runs=2, group="pack")
    assert "--resources timed_runs=1" in timed and timed.endswith("not 2")
    assert packing_problems(studies, set(), components=1, timed_runs=2, group="pack") == []


def test_a_comparison_s_job_is_checked_as_a_packed_one():
    # the fault probe: a comparison packs a's and b's repeats in one job (6 runs here),
    # but only pack_repeats was checked: 4 group components split it silently
    from tests.test_paired import paired_study

    studies, _ = studies_and_points(c=paired_study())
    (problem,) = packing_problems(studies, {"c"}, components=4, timed_runs=1, group="pack")
    assert problem.startswith("studies.c.compare packs 6 runs in one job")
    assert packing_problems(studies, {"c"}, components=6, timed_runs=1, group="pack") == []
    (timed,) = packing_problems(studies, {"c"}, components=100, timed_runs=2, group="pack")
    assert timed.startswith("studies.c.compare needs one timed run at a time")


def test_a_job_longer_than_its_partition_is_refused():
    studies, points = studies_and_points(c=threads_study([1, 2]))
    needed = {("c", "short"): {"t1"}}
    problems = partition_time_problems(studies, points, needed, {"short": 5})
    assert problems and "studies.c" in problems[0] and "partition short" in problems[0]
    assert partition_time_problems(studies, points, needed, {"short": 60}) == []


def test_a_study_over_its_budget_is_reported(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no earlier results: every job priced at its limit
    studies, points = studies_and_points(c=threads_study([1, 2, 4], budget_su=1))
    (problem,) = budget_problems(studies, points, {"c"})
    assert problem.startswith("studies.c.budget_su: the plan is estimated at")
    assert budget_problems(studies, points, set()) == []


def gpu_study(**extra):
    return {"workload": "linear_solve", "params": {"systems": 4, "size": 16, "backend": "torch"},
            "scaling": {"points": [1], "device": "gpu"}, "repeats": 1} | extra  # fmt: skip


def test_a_gpu_point_on_a_machine_without_enough_gpus_is_refused_unless_oversubscribed():
    studies, points = studies_and_points(g=gpu_study(), c=threads_study([1]))
    needed = {("g", "t1"), ("c", "t1")}
    (problem,) = local_gpu_problems(studies, points, needed, gpus=0)
    assert problem.startswith("studies.g: point t1 needs 1 GPU, and this machine has no GPU")
    assert "oversubscribe: true" in problem
    assert local_gpu_problems(studies, points, needed, gpus=1) == []
    studies, points = studies_and_points(g=gpu_study(oversubscribe=True))
    assert local_gpu_problems(studies, points, {("g", "t1")}, gpus=0) == []


def test_the_gpus_here_are_the_drivers_within_cuda_visible_devices(tmp_path):
    driver = tmp_path / "gpus"
    assert visible_gpus({}, driver) == 0  # no NVIDIA driver
    for bus in ("0000:17:00.0", "0000:65:00.0"):
        (driver / bus).mkdir(parents=True)
    assert visible_gpus({}, driver) == 2
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": "1"}, driver) == 1
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": ""}, driver) == 0  # hides them all
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": "0,1,2,3"}, driver) == 2
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": "-1"}, driver) == 0  # hides them all too
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": "1,-1,0"}, driver) == 1


def test_the_startup_problems_are_printed_together_with_plain_numbers():
    text = startup_problems_text(["studies.a: point t4 needs 4 CPUs", "studies.g: needs 1 GPU"])
    assert text == (
        "Found 2 problems before any job; no job was run:\n"
        "  studies.a: point t4 needs 4 CPUs\n  studies.g: needs 1 GPU"
    )
    studies, points = studies_and_points(c=threads_study([1, 4]))
    (problem,) = local_cpu_problems(studies, points, {("c", "t4")}, usable=2, cores=None)
    assert "use 2 (usable CPUs 2)." in problem  # a dry run: no --cores to name


def test_a_long_list_of_refused_points_is_shortened():
    studies, points = studies_and_points(c=threads_study(list(range(1, 101))))
    needed = set(points.index)
    (problem,) = local_cpu_problems(studies, points, needed, usable=2, cores=2)
    assert problem.startswith(
        "studies.c: point t3 needs 3 CPUs; studies.c: point t4 needs 4 CPUs; "
    )
    assert "; ... 91 more; studies.c: point t100 needs 100 CPUs, and this machine" in problem
