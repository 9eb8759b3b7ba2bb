"""What to ask the scheduler for, per point: the whole request, memory and time too,
and how much of what the runs were given they used (seff-style, from the runs' own
records: no accounting needed).

- Layout: the point's nodes, processes, threads and GPUs, as the workflow's own jobs
  asked for them (scalestudy.studies.slurm_resources).
- `--mem` per node: the largest peak measured at the point, plus `request.mem_margin`,
  rounded up to whole GB (whole MB below 1 GB). A node's peak is the larger of the
  resident memory of all of the run's processes (sampled by the launcher every few
  seconds, local runs) and the largest process's peak times the processes per node.
- `--time`: the slowest successful run's whole-job time plus `request.time_margin`,
  rounded up to whole minutes. Where the runs were shortened (a workload's
  `train_fraction` / `eval_fraction` metrics below 1: a batch limit), their training
  and evaluation are scaled to full length first, and the time is marked as a scaled
  estimate.
- The `#SBATCH` lines come from the Slurm executor plugin's own submit command for
  those resources (the flags the workflow's jobs were submitted with), and the
  Snakemake `resources:` from the same dict.
"""

from __future__ import annotations

import math
import shlex

import numpy as np
import pandas as pd

from scalestudy.model import Study, base_series
from scalestudy.studies import point_for, slurm_resources

MB_PER_GB = 1024
SECONDS_PER_MINUTE = 60
# below these a point's use is called waste in the report's words
BUSY_WARNING = 0.5
MEMORY_WARNING = 0.5
# the plugin's flags that are the request (the rest name the job and its log)
REQUEST_FLAGS = (
    "--nodes", "--ntasks", "--ntasks-per-node", "--ntasks-per-gpu", "--cpus-per-task",
    "--gpus", "--gres", "--mem", "-t", "--constraint", "-C",
)  # fmt: skip


def _numbers(frame: pd.DataFrame, column: str) -> pd.Series:
    if column not in frame:
        return pd.Series(np.nan, index=frame.index, dtype=float)
    return pd.to_numeric(frame[column], errors="coerce")


def node_peak_mb(runs: pd.DataFrame, tasks_per_node: int) -> float | None:
    """The largest memory one node of the point held, over its runs (None: unmeasured)."""
    tree = _numbers(runs, "usage_peak_rss_mb")
    per_process = _numbers(runs, "peak_rss_mb") * tasks_per_node
    peak = pd.concat([tree, per_process]).max()
    return None if pd.isna(peak) else float(peak)


def full_length_seconds(run: pd.Series) -> tuple[float, bool]:
    """A run's whole-job time at full length, and whether it was scaled to it: training
    and evaluation divided by the share of a full run the workload says it did."""
    seconds = float(run["elapsed_s"])
    scaled = False
    for phase, share in (("train_s", "train_fraction"), ("eval_s", "eval_fraction")):
        fraction = pd.to_numeric(run.get(share), errors="coerce")
        part = pd.to_numeric(run.get(phase), errors="coerce")
        if pd.notna(fraction) and 0 < fraction < 1 and pd.notna(part):
            seconds += part * (1 / fraction - 1)
            scaled = True
    return seconds, scaled


def memory_request_mb(peak_mb: float, margin: float) -> int:
    """Peak plus margin, rounded up as sites take it: whole GB, whole MB below 1 GB."""
    wanted = peak_mb * (1 + margin)
    if wanted < MB_PER_GB:
        return max(1, math.ceil(wanted))
    return math.ceil(wanted / MB_PER_GB) * MB_PER_GB


def sbatch_lines(resources: dict) -> list[str]:
    """`#SBATCH` lines for Snakemake resources, from the Slurm plugin's own submit
    command (its resource flags only; `-t` minutes become --time=H:MM:00)."""
    from snakemake_executor_plugin_slurm.submit_string import get_submit_command
    from snakemake_executor_plugin_slurm.utils import set_gres_string

    job = _Job(resources)
    names = {"run_uuid": "job", "slurm_logfile": "log", "comment_str": "", "account": "",
             "partition": "", "workdir": "."}  # fmt: skip
    words = shlex.split(get_submit_command(job, names) + set_gres_string(job))
    lines = []
    for i, word in enumerate(words):
        flag, _, value = word.partition("=")
        if flag not in REQUEST_FLAGS:
            continue
        if not value:
            value = words[i + 1]
        if flag == "-t":
            minutes = int(value)
            flag, value = "--time", f"{minutes // 60}:{minutes % 60:02d}:00"
        elif flag == "--mem":
            mb = int(value)
            value = f"{mb // MB_PER_GB}G" if mb % MB_PER_GB == 0 else f"{mb}M"
        lines.append(f"#SBATCH {flag}={value}")
    return lines


class _Resources(dict):
    """Snakemake's job resources as the plugin reads them: a mapping with attributes."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


class _Job:
    """What the plugin reads of a job: its resources (unset ones absent) and threads."""

    def __init__(self, resources: dict):
        self.resources = _Resources({k: v for k, v in resources.items() if v is not None})
        self.threads = resources["cpus_per_task"]


def point_request(study: Study, series: str, n: int, runs: pd.DataFrame) -> dict:
    """What to ask for at one point, from its runs, and how much of it they used."""
    point = point_for(study, n, series)
    own = study.for_series(series)
    ok = runs[(runs["status"] == "ok") & _numbers(runs, "elapsed_s").notna()]
    found = {"point": point.label, "series": series, "n": n} | {
        k: v for k, v in point.as_dict().items() if k not in ("study", "label", "n", "series")
    }
    asked_mb = own.resources.mem_mb
    peak = node_peak_mb(ok, point.tasks_per_node)
    cores_used = _numbers(ok, "cores_used")
    cpu_busy = cores_used / point.cores if point.cores else cores_used * np.nan
    found |= {
        "runs": len(ok),
        "asked_mem_mb": asked_mb,
        "peak_mem_mb": peak,
        "memory_used": None if peak is None else peak / asked_mb,
        "cpu_busy": None if cpu_busy.isna().all() else float(cpu_busy.median()),
        "gpu_util_pct": None
        if _numbers(ok, "gpu_util_mean_pct").isna().all()
        else float(_numbers(ok, "gpu_util_mean_pct").median()),
    }
    if ok.empty:
        unmeasured = ("mem_mb", "mem_from", "time_min", "slowest_s", "resources")
        return found | dict.fromkeys(unmeasured) | {"time_scaled": False, "sbatch": [], "waste": []}
    full = [full_length_seconds(r) for _, r in ok.iterrows()]
    slowest, scaled = max(full)
    time_min = max(1, math.ceil(slowest * (1 + study.request.time_margin) / SECONDS_PER_MINUTE))
    mem_mb = None if peak is None else memory_request_mb(peak, study.request.mem_margin)
    resources = slurm_resources(point, study) | {
        "mem_mb": mem_mb if mem_mb is not None else asked_mb,
        "runtime": time_min,
    }
    snakemake = {k: v for k, v in resources.items() if v not in (None, "")}
    return found | {
        "slowest_s": slowest,
        "time_scaled": any(s for _, s in full),
        "time_min": time_min,
        "mem_mb": mem_mb,
        "mem_from": "measured" if mem_mb is not None else "asked",
        "sbatch": sbatch_lines(resources),
        "resources": snakemake,
        "waste": waste(point, found),
    }


def waste(point, found: dict) -> list[str]:
    """Which of the point's allocation its runs left unused (keys the template words)."""
    flags = []
    if found["cpu_busy"] is not None and found["cpu_busy"] < BUSY_WARNING:
        flags.append("cpu")
    if found["memory_used"] is not None and found["memory_used"] < MEMORY_WARNING:
        flags.append("memory")
    gpu_util = found["gpu_util_pct"]
    if point.gpus and gpu_util is not None and gpu_util < 100 * BUSY_WARNING:
        flags.append("gpu")
    return flags


def study_requests(study: Study, summary: pd.DataFrame, runs: pd.DataFrame) -> list[dict]:
    """point_request for every point of the summary (a study that ran jobs)."""
    if study.workload is None:
        return []
    requests = []
    for row in summary.itertuples():
        series = base_series(row.series if isinstance(row.series, str) else "")
        mine = runs[runs["point"] == row.point]
        # the summary's own names: a series split by provenance keeps its tag
        requests.append(
            point_request(study, series, int(row.n), mine)
            | {"point": row.point, "series": row.series if isinstance(row.series, str) else ""}
        )
    return requests
