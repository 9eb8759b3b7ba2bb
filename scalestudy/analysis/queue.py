"""When each job of a plan would start: Slurm's own prediction, before anything runs.

For every distinct shape of job in the plans (one call each, as each call takes the
controller's job write lock), the Slurm executor plugin's own submit command
(`get_submit_command`, `set_gres_string`: the very sbatch line a run would be
submitted with) is run with `--test-only`: sbatch then submits nothing and says
"Job N to start at TIME using X processors on nodes ... in partition P". That
prediction is no bound either way: it may miss pending jobs of higher priority (too
early), and takes every job ahead to run to its time limit (too late; on the test
cluster it came late, benchmarks/queue_prediction.py).

Beside it, the waits of past jobs of the same shape (nodes, GPUs, CPUs,
partition, time limit), from one sacct call: Start minus Eligible of every user's
jobs over the last `queue_history_days`, as median and 90th percentile with the
number of jobs.

Locally there is no queue: every job's wait is 0, basis "local".

The parser (`parse_test_only`, `read_prediction`) is pure; `predict` asks Slurm
through `run` (subprocess.run, or a stand-in in tests).
"""

from __future__ import annotations

import re
import shlex
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from snakemake_interface_common.exceptions import WorkflowError

LOCAL = "local"
TEST_ONLY = "sbatch --test-only"
# what a row or the page says of --test-only's figure
NOT_A_BOUND = (
    "sbatch --test-only's start is Slurm's estimate now, not a bound either way: it may "
    "miss pending jobs of higher priority (too early) and takes every job ahead to run "
    "to its time limit (too late, as it came on the test cluster)"
)
UNREADABLE = "could not read the start time"
# the profile's default resources that every job, and so its sbatch line, gets
SITE_RESOURCES = ("slurm_partition", "slurm_account", "constraint", "qos", "gpu_model")

# sbatch: Job 123 to start at 2024-05-01T10:00:00 using 64 processors on nodes
# n[01-02] in partition gpu. Since Slurm 25.05 a stray "a" follows the time
# ("... at TIME a using ..."), and " on cluster C" may follow the time too.
_LINE = re.compile(
    r"Job (?P<job>\d+) to start at (?P<start>\S+)"
    r"(?:\s+(?:on cluster (?P<cluster>\S+)|a(?=\s)))*"
    r"\s+using (?P<cpus>\d+) processors on nodes? (?P<nodes>\S+) in partition (?P<partition>\S+)"
)
# sbatch's words when it cannot reach the controller at all (not a refusal of a shape)
_UNREACHABLE = (
    "unable to contact slurm controller",
    "socket timed out",
    "connection refused",
    "could not establish a configuration source",
    "can't find an address",
    "unable to establish controller",
)


def parse_test_only(text: str) -> dict | None:
    """The prediction in sbatch --test-only's output (any Slurm since 22.05: with or
    without 25.05's stray "a" and " on cluster C"), or None where no line reads as one:
    job, start (the text as printed), start_time (a datetime, None where the time is
    not an ISO time), cluster, cpus, nodes, partition."""
    match = _LINE.search(text)
    if not match:
        return None
    found = match.groupdict()
    try:
        start_time = datetime.fromisoformat(found["start"])
    except ValueError:
        start_time = None
    return found | {
        "job": int(found["job"]),
        "cpus": int(found["cpus"]),
        "start_time": start_time,
    }


def last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


def unreachable(text: str) -> bool:
    """Whether sbatch's words say the controller could not be asked at all."""
    low = text.lower()
    return any(words in low for words in _UNREACHABLE)


NO_PREDICTION = {"predicted_start": None, "predicted_wait_s": None, "start_basis": None}
NO_HISTORY = {"history_wait_median_s": None, "history_wait_p90_s": None, "history_jobs": 0}


def read_prediction(returncode: int, output: str, now: datetime) -> dict:
    """One --test-only answer as a row's queue fields: predicted_start (ISO text),
    predicted_wait_s (seconds from `now`, never below 0), start_basis, and a note
    where Slurm refused the shape or its line could not be read."""
    if returncode != 0:
        why = last_line(output) or f"exit status {returncode}"
        return NO_PREDICTION | {"queue_note": f"Slurm refused this job: {why}"}
    found = parse_test_only(output)
    if found is None or found["start_time"] is None:
        raw = last_line(output) or "(no output)"
        return NO_PREDICTION | {"queue_note": f"{UNREADABLE}: {raw}"}
    start = found["start_time"]
    if start.tzinfo is not None:  # Slurm prints local time; keep to the same clock
        start = start.astimezone().replace(tzinfo=None)
    return {
        "predicted_start": start.isoformat(timespec="seconds"),
        "predicted_wait_s": float(max(0, round((start - now).total_seconds()))),
        "start_basis": TEST_ONLY,
        "queue_note": None,
    }


class _Resources(dict):
    """A job's resources as the plugin reads them: .get and attribute access."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


class _PlannedJob:
    """What the plugin's submit-command functions read of a Snakemake job."""

    def __init__(self, resources: dict):
        given = {k: v for k, v in resources.items() if v is not None}
        self.resources = _Resources(given)
        self.threads = given.get("cpus_per_task", 1)
        self.name = "run_point"

    def is_group(self) -> bool:
        return False


def probe_command(resources: dict, site: dict) -> list[str]:
    """The sbatch command the Slurm executor plugin would submit a job of these
    resources with (its own get_submit_command and set_gres_string), the site's
    partition and account added as the plugin adds them, and --test-only: nothing is
    submitted. `resources`: the run's (scalestudy.study.slurm.slurm_resources, with
    the job's runtime); `site`: the profile's default resources (slurm_partition,
    slurm_account, constraint, qos, gpu_model), the study's own winning."""
    from snakemake_executor_plugin_slurm.submit_string import get_submit_command
    from snakemake_executor_plugin_slurm.utils import set_gres_string

    merged = {k: v for k, v in site.items() if v not in (None, "")}
    merged |= {k: v for k, v in resources.items() if v is not None}
    job = _PlannedJob(merged)
    account = merged.get("slurm_account")
    partition = merged.get("slurm_partition")
    params = {
        "run_uuid": "scalestudy-plan",
        "slurm_logfile": "/dev/null",
        "comment_str": "rule_run_point",
        "account": f"-A {shlex.quote(str(account))}" if account else "",
        "partition": f"-p {shlex.quote(str(partition))}" if partition else "",
        "workdir": None,
    }
    call = get_submit_command(job, params) + set_gres_string(job)
    return [*shlex.split(call), "--test-only", "--wrap=true"]


# sacct's fields of a past job, in this order (one line each, -P: "|"-separated)
HISTORY_FIELDS = ("JobID", "NNodes", "ReqTRES", "Partition", "Timelimit", "Eligible", "Start")


def history_command(days: int) -> list[str]:
    """sacct's allocations (-X: no steps) of every user (-a) that started over the
    last `days` days."""
    return ["sacct", "-a", "-X", "-n", "-P", "-S", f"now-{days}days", "-E", "now",
            f"--format={','.join(HISTORY_FIELDS)}"]  # fmt: skip


def tres(text: str) -> dict[str, str]:
    """sacct's ReqTRES (billing=2,cpu=2,mem=1000M,node=1,gres/gpu=2) as a dict."""
    pairs = (part.partition("=") for part in text.split(",") if "=" in part)
    return {key: value for key, _, value in pairs}


def parse_history(text: str) -> list[dict]:
    """The past jobs in sacct's output (history_command) that started: each one's
    shape (nodes, gpus, cpus, partition, minutes: its time limit) and wait_s (Start
    minus Eligible, never below 0). Lines that do not read are left out."""
    from scalestudy.analysis.request import slurm_seconds

    jobs = []
    for line in text.splitlines():
        fields = line.strip().split("|")
        if len(fields) != len(HISTORY_FIELDS):
            continue
        _, nodes, req, partition, limit, eligible, start = fields
        try:
            waited = datetime.fromisoformat(start) - datetime.fromisoformat(eligible)
        except ValueError:  # Unknown, None: not started (or never eligible)
            continue
        asked = tres(req)
        seconds = slurm_seconds(limit)
        cpus, gpus = asked.get("cpu", ""), asked.get("gres/gpu", "0")
        jobs.append({
            "nodes": int(nodes) if nodes.isdigit() else None,
            "gpus": int(gpus) if gpus.isdigit() else None,
            "cpus": int(cpus) if cpus.isdigit() else None,
            "partition": partition,
            "minutes": None if seconds is None else int(seconds // 60),
            "wait_s": max(0.0, waited.total_seconds()),
        })  # fmt: skip
    return jobs


def job_shape(row: dict, partition: str | None) -> dict:
    """A plan row's job as sacct's history describes one: nodes, GPUs, CPUs, partition
    (None: the default, whichever it is) and time limit in minutes."""
    return {
        "nodes": row["nodes"],
        "gpus": row["gpus"],
        "cpus": row["cores"],
        "partition": partition or None,
        "minutes": row["slurm_resources"]["runtime"],
    }


def same_shape(job: dict, shape: dict) -> bool:
    """Whether a past job has the shape (any partition where the shape's is None)."""
    if shape["partition"] is not None and job["partition"] != shape["partition"]:
        return False
    return all(job[key] == shape[key] for key in ("nodes", "gpus", "cpus", "minutes"))


def past_waits(jobs: list[dict], shape: dict) -> dict:
    """The waits of the past jobs of this shape: median, 90th percentile and count (no
    figures, count 0, where none matched)."""
    import numpy as np

    waits = [job["wait_s"] for job in jobs if same_shape(job, shape)]
    if not waits:
        return dict(NO_HISTORY)
    return {
        "history_wait_median_s": float(np.median(waits)),
        "history_wait_p90_s": float(np.percentile(waits, 90)),
        "history_jobs": len(waits),
    }


def history(days: int, run=None) -> tuple[list[dict], str | None]:
    """The past jobs sacct knows of (parse_history), and a note instead where it
    cannot be asked (no sacct, accounting disabled)."""
    try:
        proc = (run or subprocess.run)(
            history_command(days), capture_output=True, text=True, timeout=60
        )
    except FileNotFoundError:
        return [], "no past waits: sacct is not installed here"
    except (OSError, subprocess.TimeoutExpired) as e:
        return [], f"no past waits: sacct failed ({e})"
    if proc.returncode != 0:
        why = last_line(proc.stderr or proc.stdout) or f"exit status {proc.returncode}"
        return [], f"no past waits: sacct was not available ({why})"
    return parse_history(proc.stdout), None


def predict(plans: list[dict], queue: str, site: dict | None = None, run=None,
            now=None, history_days: int | None = None) -> dict:  # fmt: skip
    """Each plan row's predicted start and wait (added to the row in place), and the
    plan's machine-readable form: per study, per job to run, its nodes, layout,
    predicted_start, predicted_wait_s and start_basis. `queue`: "slurm" asks sbatch
    --test-only once per distinct shape; "local" gives every job a wait of 0.
    `run`: a stand-in for subprocess.run (tests); `now`: the clock to wait from."""
    now = now or datetime.now()
    site = site or {}
    note = None
    answers: dict[tuple, dict] = {}
    past, history_note = [], None
    if queue == "slurm" and history_days:
        past, history_note = history(history_days, run)
    for plan in plans:
        for row in plan["rows"]:
            if queue != "slurm":
                row |= NO_HISTORY | {"predicted_start": None, "predicted_wait_s": 0.0,
                                     "start_basis": LOCAL, "queue_note": None}  # fmt: skip
                continue
            row |= past_waits(past, job_shape(row, site.get("slurm_partition")))
            row |= NO_PREDICTION | {"queue_note": None}
            if note is not None:  # Slurm could not be asked: one note, no rows' reasons
                continue
            try:
                command = probe_command(row["slurm_resources"], site)
            except WorkflowError as e:  # the plugin would refuse to submit it too
                row["queue_note"] = f"the Slurm plugin would not submit this job: {e}"
                continue
            key = tuple(command)
            if key not in answers:
                answers[key], note = ask(command, run, now)
            row |= answers[key] if note is None else {}
            row["sbatch_test_only"] = shlex.join(command)
    return {
        "queue": queue,
        "asked_at": now.isoformat(timespec="seconds"),
        "calls": len(answers),
        "note": note,
        "bound": NOT_A_BOUND if queue == "slurm" and note is None else None,
        "history_days": history_days if queue == "slurm" else None,
        "history_note": history_note,
        # whether the rows carry past waits (sacct answered)
        "history": queue == "slurm" and bool(history_days) and history_note is None,
        "studies": [{"study": plan["study"], "jobs": planned_jobs(plan, queue)} for plan in plans],
    }


def ask(command: list[str], run, now: datetime) -> tuple[dict, str | None]:
    """One --test-only call: the row's queue fields, and a note (instead) when Slurm
    could not be asked at all."""
    try:
        proc = (run or subprocess.run)(command, capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        return {}, "Slurm could not be asked for start times: sbatch is not installed here"
    except (OSError, subprocess.TimeoutExpired) as e:
        return {}, f"Slurm could not be asked for start times ({e})"
    output = "\n".join(filter(None, [proc.stderr, proc.stdout]))
    if proc.returncode != 0 and unreachable(output):
        return {}, f"Slurm could not be asked for start times ({last_line(output)})"
    return read_prediction(proc.returncode, output, now), None


def planned_jobs(plan: dict, queue: str) -> list[dict]:
    """The jobs a plan will submit: one per run to come, or on Slurm one per packed
    point (its repeats share a job), each with its layout and predicted start."""
    packed = queue == "slurm" and plan["totals"]["slurm_jobs"] is not None
    jobs = []
    for row in plan["rows"]:
        if not row["to_run"]:
            continue
        for runs in [row["to_run"]] if packed else [1] * row["to_run"]:
            jobs.append({
                "point": row["label"],
                "series": row["series"],
                "n": row["n"],
                "runs": runs,
                "nodes": row["nodes"],
                "layout": {key: row[key] for key in
                           ("nodes", "tasks_per_node", "threads", "gpus_per_node")},
                "seconds": row["seconds"] * runs,
                "predicted_start": row["predicted_start"],
                "predicted_wait_s": row["predicted_wait_s"],
                "start_basis": row["start_basis"],
                "queue_note": row["queue_note"],
                "sbatch_test_only": row.get("sbatch_test_only"),
                "history_wait_median_s": row["history_wait_median_s"],
                "history_wait_p90_s": row["history_wait_p90_s"],
                "history_jobs": row["history_jobs"],
            })  # fmt: skip
    return jobs


# --- the waits of a study's requests, at aggregation (time to result) -------

# which wait a point's time to result adds (scalestudy.analysis.result_time)
NOW = "now"  # sbatch --test-only, asked at aggregation
TYPICAL = "typical"  # the median of past jobs of the shape (sacct), enough of them
UNKNOWN = "unknown wait"  # Slurm could not be asked, or refused the shape


@dataclass(frozen=True)
class QueueAsk:
    """Where a study's jobs queue, and how aggregation asks for their waits: `queue`
    "slurm" (the workflow submits to Slurm) or "local" (no queue: every wait 0);
    `site`: the profile's default resources (SITE_RESOURCES); `history_days`,
    `min_jobs`: config keys queue_history_days, queue_history_min_jobs (None: no
    history asked); `run`, `now`: stand-ins for subprocess.run and the clock (tests)."""

    queue: str = LOCAL
    site: dict = field(default_factory=dict)
    history_days: int | None = None
    min_jobs: int | None = None
    run: Callable | None = None
    now: datetime | None = None


def request_shape(request: dict, partition: str | None) -> dict:
    """A point's request (scalestudy.analysis.request.point_request) as sacct's history
    describes a job (job_shape's keys)."""
    return {"nodes": request["nodes"], "gpus": request["gpus"], "cpus": request["cores"],
            "partition": partition or None, "minutes": request["time_min"]}  # fmt: skip


def request_waits(requests: list[dict], ask_how: QueueAsk) -> dict:
    """What Slurm says of the waits of the study's requests, one --test-only call per
    distinct sbatch line (the first that cannot reach Slurm stops the asking: one note)
    and one sacct call for the past waits. Per point (label): wait_now_s (None: no
    figure), its queue_note, and the past waits of its shape (past_waits). Locally:
    every wait_now_s 0 and no call."""
    now = ask_how.now or datetime.now()
    local = ask_how.queue != "slurm"
    past, history_note = [], None
    if not local and ask_how.history_days and requests:
        past, history_note = history(ask_how.history_days, ask_how.run)
    answers: dict[tuple, dict] = {}
    note = None
    points = {}
    for r in requests:
        found = dict(NO_HISTORY) | {"wait_now_s": 0.0 if local else None, "queue_note": None}
        points[r["point"]] = found
        if local or r["resources"] is None:  # no run measured: no request to ask about
            continue
        found |= past_waits(past, request_shape(r, ask_how.site.get("slurm_partition")))
        if note is not None:
            continue
        try:
            command = probe_command(r["resources"], ask_how.site)
        except WorkflowError as e:  # the plugin would refuse to submit it too
            found["queue_note"] = f"the Slurm plugin would not submit this job: {e}"
            continue
        key = tuple(command)
        if key not in answers:
            answers[key], note = ask(command, ask_how.run, now)
        if note is None:
            answer = answers[key]
            found |= {"wait_now_s": answer["predicted_wait_s"], "queue_note": answer["queue_note"]}
    return {
        "queue": LOCAL if local else "slurm",
        "asked_at": None if local else now.isoformat(timespec="seconds"),
        "calls": len(answers),
        "note": note,
        "history_note": history_note,
        "history_days": None if local else ask_how.history_days,
        "points": points,
    }
