"""What the workflow asks Slurm, and its one adapter to the Slurm executor plugin's
submit command (private API: ADAPTED_TO is the version tests/test_slurm_mapping.py
checked), so that an sbatch line the workflow shows is the very one a run is submitted
with. Each command has a timeout and its answer is kept raw: aggregation reads Slurm's
facts as data and starts no process (docs/slurm.md, "Time to result, at aggregation").
"""

from __future__ import annotations

import json
import shlex
import subprocess
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from snakemake_interface_common.exceptions import WorkflowError

from scalestudy.contract import checked, read_json, versioned
from scalestudy.records import write_text_atomic

ADAPTED_TO = "2.8.0"
# the profile's default resources that every job, and so its sbatch line, gets
SITE_RESOURCES = ("slurm_partition", "slurm_account", "constraint", "qos", "gpu_model")
# no Slurm command may hold up the workflow longer than this (seconds each)
TIMEOUT_S = 60
LOCAL, SLURM = "local", "slurm"
# sacct's fields of a past job, in this order (one line each, -P: "|"-separated); Elapsed
# and State give ended jobs' run time to time limit (--test-only's correction)
HISTORY_FIELDS = (
    "JobID",
    "NNodes",
    "ReqTRES",
    "Partition",
    "Timelimit",
    "Eligible",
    "Start",
    "Elapsed",
    "State",
)
ACCOUNTING_FIELDS = ("JobID", "TotalCPU", "Elapsed", "AllocCPUS", "MaxRSS", "ConsumedEnergyRaw")
# sbatch's words when it cannot reach the controller at all (not a refusal of a shape)
_UNREACHABLE = (
    "unable to contact slurm controller",
    "socket timed out",
    "connection refused",
    "could not establish a configuration source",
    "can't find an address",
    "unable to establish controller",
)


class PluginResources(dict):
    """Snakemake's job resources as the plugin reads them: a mapping with attributes."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


class PluginJob:
    """What the plugin reads of a Snakemake job: its resources (unset ones absent),
    threads, and whether it is a group."""

    def __init__(self, resources: dict):
        given = {k: v for k, v in resources.items() if v is not None}
        self.resources = PluginResources(given)
        self.threads = given.get("cpus_per_task", 1)
        self.name = "run_point"

    def is_group(self) -> bool:
        return False


def submit_words(resources: dict, names: dict) -> list[str]:
    """The plugin's sbatch command for a job of these resources, as words. `names`: the
    plugin's params (run_uuid, slurm_logfile, comment_str, account, partition, workdir).
    WorkflowError where the plugin would refuse to submit it."""
    from snakemake_executor_plugin_slurm.submit_string import get_submit_command
    from snakemake_executor_plugin_slurm.utils import set_gres_string

    job = PluginJob(resources)
    return shlex.split(get_submit_command(job, names) + set_gres_string(job))


def probe_command(resources: dict, site: dict) -> list[str]:
    """The sbatch command the plugin would submit a job of these resources with, the
    site's partition and account added as the plugin adds them, and --test-only:
    nothing is submitted. `resources`: the run's (scalestudy.study.resources.slurm_resources,
    with the job's runtime); `site`: the profile's default resources (SITE_RESOURCES),
    the study's own winning."""
    merged = {k: v for k, v in site.items() if v not in (None, "")}
    merged |= {k: v for k, v in resources.items() if v is not None}
    account, partition = merged.get("slurm_account"), merged.get("slurm_partition")
    names = {
        "run_uuid": "scalestudy-plan",
        "slurm_logfile": "/dev/null",
        "comment_str": "rule_run_point",
        "workdir": None,
        "account": f"-A {shlex.quote(str(account))}" if account else "",
        "partition": f"-p {shlex.quote(str(partition))}" if partition else "",
    }
    return [*submit_words(merged, names), "--test-only", "--wrap=true"]


def probe_commands(resources: list[dict], site: dict) -> list[list[str]]:
    """The distinct probe commands of these resources, in order; those the plugin would
    refuse are left out (the analysis says so of their rows)."""
    found = {}
    for r in resources:
        try:
            command = probe_command(r, site)
        except WorkflowError:
            continue
        found.setdefault(shlex.join(command), command)
    return list(found.values())


def history_command(days: int) -> list[str]:
    """sacct's allocations (-X: no steps) of every user (-a) that started over the
    last `days` days."""
    return [
        "sacct",
        "-a",
        "-X",
        "-n",
        "-P",
        "-S",
        f"now-{days}days",
        "-E",
        "now",
        f"--format={','.join(HISTORY_FIELDS)}",
    ]


def accounting_command(job_ids: list[str]) -> list[str]:
    """sacct's figures of these jobs and their steps."""
    return ["sacct", "-n", "-P", "-j", ",".join(job_ids), f"--format={','.join(ACCOUNTING_FIELDS)}"]


def ask(command: list[str], run: Callable | None = None, timeout: float | None = None) -> dict:
    """Slurm's answer to one command, raw: command, returncode, stdout, stderr, and
    error (why it could not run: not installed, no answer within `timeout`, default
    TIMEOUT_S), None where it ran. `run`: a stand-in for subprocess.run (tests)."""
    timeout = TIMEOUT_S if timeout is None else timeout
    answer = {"command": command, "returncode": None, "stdout": "", "stderr": "", "error": None}
    try:
        proc = (run or subprocess.run)(command, capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        return answer | {"error": f"{command[0]} is not installed here"}
    except subprocess.TimeoutExpired:
        return answer | {"error": f"{command[0]} did not answer within {timeout:g} s"}
    except OSError as e:
        return answer | {"error": f"{command[0]} failed ({e})"}
    return answer | {
        "returncode": proc.returncode,
        "stdout": proc.stdout or "",
        "stderr": proc.stderr or "",
    }


def output_of(answer: dict) -> str:
    """An answer's stderr and stdout together (sbatch --test-only speaks on stderr)."""
    return "\n".join(filter(None, [answer["stderr"], answer["stdout"]]))


def last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


def unreachable(answer: dict) -> bool:
    """Whether Slurm could not be asked at all (not a refusal of one job)."""
    if answer["error"] is not None:
        return True
    low = output_of(answer).lower()
    return answer["returncode"] != 0 and any(words in low for words in _UNREACHABLE)


@dataclass(frozen=True)
class ClusterFacts:
    """What Slurm said of a study, results/<study>/cluster.json (rules/cluster.smk), each
    answer raw (ask): what aggregation reads as data. Its one dump and its one load,
    checked against schemas/cluster.schema.json (a bad file is named and made again)."""

    queue: str
    asked_at: str | None
    site: dict[str, Any]
    accounting: dict | None
    history: dict | None
    history_days: int | None
    test_only: dict[str, dict]
    version: int = 2

    def dump(self, path: str | Path) -> None:
        """Atomically, keys sorted: the same facts are the same bytes (aggregation reruns
        on a change only)."""
        write_text_atomic(path, json.dumps(asdict(self), indent=1, sort_keys=True) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> ClusterFacts:
        """ContractError names the file, and the line of one cut short or the bad key."""
        data = read_json(path)
        versioned(data, str(path), cls.version, {1: dict})  # 1: the same, before versions
        return cls(**checked(data, "cluster.schema.json", str(path)))


def local_facts() -> ClusterFacts:
    """Where jobs run on this machine: no queue, nothing asked."""
    return ClusterFacts(LOCAL, None, {}, None, None, None, {})


def gather(
    site: dict,
    history_days: int | None,
    job_ids: list[str],
    commands_for: Callable[[dict | None], list[list[str]]],
    run: Callable | None = None,
    now: datetime | None = None,
) -> ClusterFacts:
    """What Slurm says, each command asked once with a timeout: sacct's accounting of
    `job_ids` (none: not asked); where `commands_for(accounting's answer)` gives any
    sbatch --test-only command, sacct's past waits over `history_days` (None: not
    asked; not asked again where sacct could not run for the accounting: its answer
    says so), then each command (the first that cannot reach Slurm stops the asking)."""
    now = now or datetime.now()
    accounting = ask(accounting_command(job_ids), run) if job_ids else None
    commands = commands_for(accounting)
    history = None
    if history_days and commands:
        command = history_command(history_days)
        if accounting is not None and accounting["error"] is not None:
            # a sacct slow or missing once would cost its timeout again, for nothing
            why = f"{accounting['error']} (not asked again)"
            history = accounting | {"command": command, "error": why}
        else:
            history = ask(command, run)
    test_only = {}
    for command in commands:
        answer = ask(command, run)
        test_only[shlex.join(command)] = answer
        if unreachable(answer):
            break
    site = {k: v for k, v in site.items() if v not in (None, "")}
    asked_at = now.isoformat(timespec="seconds")
    return ClusterFacts(SLURM, asked_at, site, accounting, history, history_days, test_only)


def slurm_seconds(text: str) -> float | None:
    """Slurm's [D-]HH:MM:SS[.mmm] or MM:SS.mmm as seconds."""
    days, _, clock = text.rpartition("-")
    try:
        parts = [float(p) for p in clock.split(":")]
    except ValueError:
        return None
    seconds = sum(p * 60**i for i, p in enumerate(reversed(parts)))
    return seconds + (int(days) * 86400 if days else 0)


def partition_time_limits(run: Callable | None = None) -> tuple[dict[str, int | None], str | None]:
    """Each partition's time limit in minutes as sinfo gives it (None: infinite), the
    default partition also under "" (`run`: a stand-in for subprocess.run, for tests);
    and why Slurm could not be asked (None when sinfo answered): no sinfo here, or none
    that reaches the controller."""
    answer = ask(["sinfo", "-h", "-o", "%P %l"], run, timeout=30)
    if answer["error"] is not None:
        return {}, answer["error"]
    if answer["returncode"] != 0:
        return {}, f"sinfo failed ({last_line(output_of(answer)) or 'no reason given'})"
    limits: dict[str, int | None] = {}
    for line in answer["stdout"].splitlines():
        name, _, text = line.strip().partition(" ")
        seconds = slurm_seconds(text.strip())  # "infinite" is no number: None
        minutes = None if seconds is None else int(seconds // 60)
        if name.endswith("*"):  # sinfo marks the default partition
            name = name[:-1]
            limits[""] = minutes
        limits[name] = minutes
    return limits, None
