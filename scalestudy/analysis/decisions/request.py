"""What to ask the scheduler for, per point (layout, `--mem`, `--time`, the `#SBATCH`
lines from the Slurm plugin's own submit command), and how much of what the runs
were given they used (seff-style, from the runs' own records; Slurm accounting beside
them). The rules: docs/report.md, "the whole request", and config/README.md's request.*.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from scalestudy.analysis.cost.cost import SECONDS_PER_MINUTE
from scalestudy.contract import PointRequest, Requests
from scalestudy.model import Study, base_series
from scalestudy.records import jsonable
from scalestudy.slurm import last_line, output_of, probe_commands, slurm_seconds, submit_words
from scalestudy.study.points import point_for
from scalestudy.study.resources import slurm_resources

MB_PER_GB = 1024
# the request's line where no run's peak memory was measured
UNMEASURED_MEM = "# --mem: not measured (no run's peak memory was recorded): set it yourself"
# below these a point's use is called waste in the report's words
BUSY_WARNING = 0.5
MEMORY_WARNING = 0.5
# the plugin's flags that are the request (the rest name the job and its log)
REQUEST_FLAGS = (
    "--nodes",
    "--ntasks",
    "--ntasks-per-node",
    "--ntasks-per-gpu",
    "--cpus-per-task",
    "--gpus",
    "--gres",
    "--mem",
    "-t",
    "--constraint",
    "-C",
)


def _numbers(frame: pd.DataFrame, column: str) -> pd.Series:
    if column not in frame:
        return pd.Series(np.nan, index=frame.index, dtype=float)
    return pd.to_numeric(frame[column], errors="coerce")


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


def node_peaks_mb(runs: pd.DataFrame, per_node: int, workload: str | None) -> pd.Series:
    """Each run's largest memory on one node, NaN where unmeasured: its record's own
    (usage.peak_rss_mb, which it gives with its per-node figures). A record from before
    those: its largest process times the processes per node, but never a command's,
    whose figure was the harness's alone (docs/measuring.md, memory)."""
    own = _numbers(runs, "usage_peak_rss_mb")
    older = pd.concat([own, _numbers(runs, "peak_rss_mb") * per_node], axis=1).max(axis=1)
    if workload == "command":
        older[:] = np.nan
    return own.where(runs.get("node_peak_rss_mb", pd.Series(index=runs.index)).notna(), older)


def memory_request_mb(peak_mb: float, margin: float) -> int:
    """Peak plus margin, rounded up as sites take it: whole GB, whole MB below 1 GB."""
    wanted = peak_mb * (1 + margin)
    if wanted < MB_PER_GB:
        return max(1, math.ceil(wanted))
    return math.ceil(wanted / MB_PER_GB) * MB_PER_GB


def mem_amount(mb: int) -> tuple[int, str]:
    """--mem as sites write it: whole GB where it is, else MB (the amount, and "G" or
    "M"): the #SBATCH line and the report's words both say it so."""
    return (mb // MB_PER_GB, "G") if mb % MB_PER_GB == 0 else (mb, "M")


def mem_text(mb: int | None) -> str | None:
    """--mem in words: "2 GB", "1536 MB" (None: no figure)."""
    return None if mb is None else "{} {}B".format(*mem_amount(mb))


def sbatch_lines(resources: dict) -> list[str]:
    """`#SBATCH` lines for Snakemake resources, from the Slurm plugin's own submit
    command (its resource flags only; `-t` minutes become --time=H:MM:00)."""
    names = {
        "run_uuid": "job",
        "slurm_logfile": "log",
        "comment_str": "",
        "account": "",
        "partition": "",
        "workdir": ".",
    }
    words = submit_words(resources, names)
    lines = []
    for i, word in enumerate(words):
        flag, _, value = word.partition("=")
        if flag not in REQUEST_FLAGS:
            continue
        value = value or words[i + 1]
        if flag == "-t":  # minutes
            flag, value = "--time", "{}:{:02d}:00".format(*divmod(int(value), 60))
        elif flag == "--mem":
            value = "".join(map(str, mem_amount(int(value))))
        lines.append(f"#SBATCH {flag}={value}")
    return lines


def point_request(
    study: Study, series: str, n: int, runs: pd.DataFrame, sacct_peak_mb: float | None = None
) -> dict:
    """What to ask for at one point, from its runs, and how much of it they used.
    `sacct_peak_mb`: Slurm accounting's largest peak of one task of the point's runs.
    Slurm enforces --mem on its own count, which can be higher than the runs' own (its
    jobacct_gather/linux sums the RSS of every process of a step, shared pages and
    all): --mem then covers Slurm's count (mem_from "sacct")."""
    point = point_for(study, n, series)
    own = study.for_series(series)
    ok = runs[(runs["status"] == "ok") & _numbers(runs, "elapsed_s").notna()]
    found = {"point": point.label, "series": series, "n": n} | {
        k: v for k, v in point.as_dict().items() if k not in ("study", "label", "n", "series")
    }
    asked_mb = own.resources.mem_mb
    peak = node_peaks_mb(ok, point.tasks_per_node, own.workload).max()
    peak = None if pd.isna(peak) else float(peak)
    slurm_peak = None if sacct_peak_mb is None else sacct_peak_mb * point.tasks_per_node
    counted_by_slurm = slurm_peak is not None and (peak is None or slurm_peak > peak)
    request_peak = slurm_peak if counted_by_slurm else peak
    cores_used = _numbers(ok, "cores_used")
    cpu_busy = cores_used / point.cores if point.cores else cores_used * np.nan
    gpu_util = _numbers(ok, "gpu_util_mean_pct")
    found |= {
        "runs": len(ok),
        "asked_mem_mb": asked_mb,
        "asked_mem_text": mem_text(asked_mb),
        "peak_mem_mb": peak,
        "memory_used": None if peak is None else peak / asked_mb,
        "cpu_busy": None if cpu_busy.isna().all() else float(cpu_busy.median()),
        "gpu_util_pct": None if gpu_util.isna().all() else float(gpu_util.median()),
    }
    if ok.empty:
        unmeasured = ("mem_mb", "mem_text", "mem_from", "time_min", "slowest_s", "resources")
        return found | dict.fromkeys(unmeasured) | {"time_scaled": False, "sbatch": [], "waste": []}
    full = [full_length_seconds(r) for _, r in ok.iterrows()]
    slowest, scaled = max(full)
    time_min = max(1, math.ceil(slowest * (1 + study.request.time_margin) / SECONDS_PER_MINUTE))
    margin = study.request.mem_margin
    mem_mb = None if request_peak is None else memory_request_mb(request_peak, margin)
    # unmeasured: no figure to paste (the study's own request would be a guess)
    resources = slurm_resources(point, study) | {"mem_mb": mem_mb, "runtime": time_min}
    snakemake = {k: v for k, v in resources.items() if v not in (None, "")}
    return found | {
        "slowest_s": slowest,
        "time_scaled": any(s for _, s in full),
        "time_min": time_min,
        "mem_mb": mem_mb,
        "mem_text": mem_text(mem_mb),
        "mem_from": "unmeasured" if mem_mb is None else "sacct" if counted_by_slurm else "measured",
        "sbatch": sbatch_lines(snakemake) + ([UNMEASURED_MEM] if mem_mb is None else []),
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


def study_requests(
    study: Study,
    summary: pd.DataFrame,
    runs: pd.DataFrame,
    slurm_accounting: tuple[dict[str, dict], str | None] = ({}, None),
) -> Requests:
    """point_request for every point of the summary (a study that ran jobs), with Slurm
    accounting's figures (`slurm_accounting`: read_accounting) beside the runs' own
    where sacct answered, and its note where it did not."""
    if study.workload is None:
        return Requests([], None)
    jobs, note = slurm_accounting
    points = []
    for row in summary.itertuples():
        series = row.series if isinstance(row.series, str) else ""
        mine = runs[runs["point"] == row.point]
        slurm = accounted(mine, jobs)
        found = point_request(
            study, base_series(series), int(row.n), mine, slurm["sacct_peak_mem_mb"]
        )
        # the summary's own names: a series split by provenance keeps its tag
        found |= {"point": row.point, "series": series} | slurm
        points.append(PointRequest(**jsonable(found)))
    return Requests(points, note)


def accounted(runs: pd.DataFrame, jobs: dict[str, dict]) -> dict:
    """Slurm accounting's CPU busy share (median over the point's jobs) and peak memory
    (largest), None where it has no figure."""
    ok = runs[runs["status"] == "ok"]
    mine = [jobs[key] for key in run_accounting_keys(ok) if key in jobs]  # None: no job
    busy = [
        j["cpu_s"] / (j["elapsed_s"] * j["cpus"])
        for j in mine
        if j["cpu_s"] is not None and j["elapsed_s"] and j["cpus"]
    ]
    peaks = [j["peak_mem_mb"] for j in mine if j["peak_mem_mb"] is not None]
    return {
        "sacct_cpu_busy": float(np.median(busy)) if busy else None,
        "sacct_peak_mem_mb": max(peaks) if peaks else None,
    }


def run_accounting_keys(runs: pd.DataFrame) -> list[str | None]:
    """The sacct entry of each run, in its row's place (None: no Slurm job): its job, or
    its own srun step (JOB.STEP) where several runs shared the job (packed repeats),
    whose totals would mix them and the pauses between them."""
    none = pd.Series([None] * len(runs), index=runs.index, dtype=object)
    ids = runs.get("slurm_job_id", none)
    steps = runs.get("slurm_step_id", none)
    shared = ids.dropna().astype(str).value_counts()
    keys: list[str | None] = []
    for job, step in zip(ids, steps, strict=True):
        job = None if pd.isna(job) else str(job)
        packed = job is not None and shared.get(job, 0) > 1 and not pd.isna(step)
        keys.append(f"{job}.{int(float(step))}" if packed else job)
    return keys


def probe_commands_of(
    study: Study, runs: pd.DataFrame, accounting: dict | None, site: dict
) -> list[list[str]]:
    """The sbatch --test-only commands of the study's requests, the ones aggregation
    looks up in its cluster facts (`accounting`: sacct's answer, which sizes --mem): of
    each point its runs measured (a series split by provenance asks the same)."""
    if study.elsewhere:
        return []
    points = runs[["series", "point", "n"]].drop_duplicates()
    requests = study_requests(study, points, runs, read_accounting(accounting)).points
    return probe_commands([r.resources for r in requests if r.resources], site)


def job_ids(runs: pd.DataFrame) -> list[str]:
    """The Slurm jobs of a runs table, each once, as sacct is asked for them."""
    return sorted({str(j) for j in runs.get("slurm_job_id", pd.Series(dtype=object)).dropna()})


def slurm_megabytes(text: str) -> float | None:
    """sacct's MaxRSS (1234K, 56M, 2G) as MB."""
    units = {"K": 1 / 1024, "M": 1, "G": 1024, "T": 1024**2}
    if not text:
        return None
    try:
        return float(text[:-1]) * units[text[-1]] if text[-1] in units else float(text) / 2**20
    except ValueError:
        return None


# Slurm's "no value" markers (NO_VAL64 and its neighbours): no figure, not a huge one
SLURM_NO_VALUE = 2**63


def consumed_energy(text: str) -> dict:
    """sacct's ConsumedEnergyRaw (joules) of one job or step, as an energy part: a figure
    with its source, or "not measured" with why. Where accounting gathers no energy
    (AcctGatherEnergyType=acct_gather_energy/none) sacct prints 0 or nothing: no job
    ran on no energy, so 0 is no figure. Whether the job had its nodes to itself is the
    caller's to judge (only then is a node figure the run's)."""
    text = text.strip()
    if not text.isdigit() or int(text) >= SLURM_NO_VALUE or int(text) == 0:
        why = "no counter: Slurm accounting gathered no energy" + (" (0 J)" if text == "0" else "")
        return {"joules": None, "source": None, "not_measured": why}
    return {"joules": float(text), "source": "slurm", "not_measured": None}


def read_accounting(answer: dict | None) -> tuple[dict[str, dict], str | None]:
    """What Slurm's accounting said of a study's jobs (`answer`: sacct's, asked by
    scalestudy.slurm.gather; None: no job to ask about): job id -> cpu_s, elapsed_s,
    cpus, peak_mem_mb, the largest over its steps, and energy (consumed_energy); each
    srun step also under JOB.STEP. And a note where sacct could not answer (not
    installed, accounting disabled, no answer in time): the runs' own figures stand
    then."""
    own = "CPU and memory use are the runs' own figures"
    if answer is None:
        return {}, None
    if answer["error"] is not None:
        return {}, f"{answer['error']}: {own}"
    if answer["returncode"] != 0:
        why = last_line(output_of(answer)) or "no reason given"
        return {}, f"sacct was not available ({why}): {own}"
    jobs: dict[str, dict] = {}
    for line in answer["stdout"].splitlines():
        fields = line.split("|")
        if len(fields) not in (5, 6):
            continue
        # the job's or the step's energy where accounting gathers it (sixth field)
        used = consumed_energy(fields[5] if len(fields) == 6 else "")
        job = fields[0].split(".")[0]
        empty = dict.fromkeys(("cpu_s", "elapsed_s", "cpus", "peak_mem_mb"))
        found = jobs.setdefault(job, empty | {"energy": consumed_energy("")})
        cpu, elapsed = slurm_seconds(fields[1]), slurm_seconds(fields[2])
        cpus, mem = int(fields[3]) if fields[3].isdigit() else None, slurm_megabytes(fields[4])
        figures = {"cpu_s": cpu, "elapsed_s": elapsed, "cpus": cpus, "energy": used}
        if "." not in fields[0]:  # the job's own line: its totals
            found |= figures
        elif fields[0].split(".")[1].isdigit():  # an srun step: one run of a shared job
            jobs[fields[0]] = figures | {"peak_mem_mb": mem}
        if mem is not None:
            found["peak_mem_mb"] = max(found["peak_mem_mb"] or 0.0, mem)
    return jobs, None
