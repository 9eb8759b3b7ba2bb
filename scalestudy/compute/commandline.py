"""The user's own command as a workload: safe placeholder substitution and metric parsing.
Never run by a shell: a value substituted into an argument stays that one argument,
whatever it holds (config/README.md, "Workload `command`: your own program").
"""

import json
import math
import os
import re
import shlex
import statistics
import string
from pathlib import Path

# Values of the point every command may use.
POINT_PLACEHOLDERS = {
    "threads": "CPU threads of each process",
    "devices": "processes (GPUs, or CPU slots) per node",
    "nodes": "nodes",
    "tasks": "processes in all (world size)",
    "gpus": "GPUs in all",
    "n": "the point's N",
    "rank": "this process's rank",
    "local_rank": "this process's rank on its node",
    "study": "the study's name",
    "point": "the point's label",
    "repeat": "the repeat number",
    "run_dir": "a private folder for this run's files (removed afterwards)",
}
NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# What a program may report of its own run, in seconds, under these names (through
# metrics_regex or metrics_json): each becomes a phase of its record, of this kind
# (harness.PHASE_KINDS), in place of the command's whole run. epoch_s once per epoch, the
# others once a run (config/README.md, "Your program's own phases").
PROGRAM_PHASES = {
    "startup_s": "startup",
    "data_s": "data",
    "train_s": "train",
    "epoch_s": "epoch",
    "eval_s": "eval",
}
# the phases each time basis rests on, and the words for them
TIME_PHASES = {"train": ("train_s", "epoch_s"), "steady": ("epoch_s",)}


def command_argv(command: str | list[str]) -> list[str]:
    """The command as arguments; a string is split like a shell would, before any
    value is substituted, so values can never add or split arguments."""
    return shlex.split(command) if isinstance(command, str) else [str(a) for a in command]


def placeholders_in(text: str) -> list[str]:
    """Names of the {placeholders} in one argument; anything but a plain name is refused."""
    names = []
    for _literal, field, spec, conversion in string.Formatter().parse(text):
        if field is None:
            continue
        if not NAME.match(field) or spec or conversion:
            raise ValueError(
                f"{{{field}{'!' + conversion if conversion else ''}{':' + spec if spec else ''}}}"
                " is not a plain placeholder (write {{ and }} for literal braces)"
            )
        names.append(field)
    return names


def substitute(text: str, values: dict) -> str:
    """Fill one argument's placeholders with str(value): text in, text out, no shell."""
    parts = []
    for literal, field, _spec, _conversion in string.Formatter().parse(text):
        parts.append(literal)
        if field is not None:
            parts.append(str(values[field]))
    return "".join(parts)


def command_params_problems(
    params: dict, time: str, workflow_dir: str | os.PathLike | None = None
) -> list[str]:
    """Every problem the schema cannot see, each naming its key. With `workflow_dir`
    (where the command runs when it has no workdir) a workdir must be a folder. `time`:
    the study's time basis, which a command's own phases must give (TIME_PHASES)."""
    problems = []
    needs = TIME_PHASES.get(time, ())
    reported = set(params.get("metrics_regex", {}))
    # a JSON file may hold train_s (one figure a name: no epochs)
    if needs and not reported & set(needs) and not (time == "train" and params.get("metrics_json")):
        problems.append(
            f"time: {time} rests on your program's own phases, which it reports as "
            f"{' or '.join(needs)}: add a pattern for one under params.metrics_regex "
            f"(e.g. {needs[-1]}: '{needs[-1]}=([0-9.]+)'), or use time: wall (the whole job)"
        )
    values = params.get("values", {})
    clash = sorted(set(values) & set(POINT_PLACEHOLDERS))
    if clash:
        problems.append(f"params.values: {clash} are the point's own placeholders")
    known = set(POINT_PLACEHOLDERS) | set(values)
    try:
        argv = command_argv(params["command"])
    except ValueError as e:  # shlex: unbalanced quotes
        problems.append(f"params.command: cannot split it into arguments ({e})")
        argv = None
    if argv == []:
        problems.append("params.command: empty")
    templated = [("params.command", a) for a in argv or []]
    templated += [(f"params.env.{k}", v) for k, v in params.get("env", {}).items()]
    if params.get("metrics_json"):
        templated.append(("params.metrics_json", params["metrics_json"]))
    for key, text in templated:
        try:
            unknown = sorted(set(placeholders_in(text)) - known)
        except ValueError as e:
            problems.append(f"{key}: {e}")
            continue
        if unknown:
            problems.append(
                f"{key}: unknown placeholder(s) {unknown}; known: {sorted(known)} "
                "(add your own under params.values)"
            )
    for name, pattern in params.get("metrics_regex", {}).items():
        try:
            compiled = re.compile(pattern, re.MULTILINE)
        except re.error as e:
            problems.append(f"params.metrics_regex.{name}: not a regular expression ({e})")
            continue
        if compiled.groups != 1 and "value" not in compiled.groupindex:
            problems.append(
                f"params.metrics_regex.{name}: needs exactly one group, or a group named "
                "'value', around the number"
            )
    if params.get("workdir") is not None and workflow_dir is not None:
        problems += workdir_problems(params["workdir"], Path(workflow_dir))
    return problems


def workdir_problems(workdir: str, workflow_dir: Path) -> list[str]:
    """A command's workdir must be a folder; a relative one is relative to the workflow
    folder, where the command runs (no placeholder or ~ is expanded in it)."""
    path = workflow_dir / workdir  # an absolute workdir stays as it is
    if not path.exists():
        hint = " (~ is not expanded)" if workdir.startswith("~") else ""
        return [f"params.workdir: no such folder: {path}{hint}"]
    if not path.is_dir():
        return [f"params.workdir: not a folder: {path}"]
    return []


def as_number(name: str, value) -> float:
    """A metric's value as a finite float; anything else is an error, never a guess."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"metric {name}: {value!r} is not a number")
    try:
        number = float(value)
    except ValueError:
        raise ValueError(f"metric {name}: {value!r} is not a number") from None
    if not math.isfinite(number):
        raise ValueError(f"metric {name}: {value!r} is not finite")
    return number


def metrics_from_output(
    output: str, patterns: dict[str, str]
) -> tuple[dict[str, float], dict[str, list[float]]]:
    """Named figures from the command's output: its metrics, and its own phases
    (PROGRAM_PHASES: every epoch_s, the others found once, else refused with their
    lines). Each metric is its pattern's last match; with several matches (one per
    epoch, say) the median and count are kept too, because the first epoch often
    carries warm-up."""
    metrics, phases = {}, {}
    for name, pattern in patterns.items():
        compiled = re.compile(pattern, re.MULTILINE)
        group = "value" if "value" in compiled.groupindex else 1
        matches = list(compiled.finditer(output))
        found = [as_number(name, m.group(group)) for m in matches]
        if not found:
            raise ValueError(f"metric {name}: the pattern {pattern!r} never matched the output")
        if name in PROGRAM_PHASES:
            if len(found) > 1 and name != "epoch_s":
                lines = " and ".join(repr(line_of(output, m)) for m in matches[:2])
                raise ValueError(
                    f"phase {name}: the program reported it {len(found)} times in one run "
                    f"({lines}); report it once (epoch_s once an epoch)"
                )
            phases[name] = found
            continue
        metrics[name] = found[-1]
        if len(found) > 1:
            metrics[f"{name}_median"] = statistics.median(found)
            metrics[f"{name}_count"] = float(len(found))
    return metrics, phases


def line_of(text: str, match: re.Match) -> str:
    """The line a match is on (at most 200 characters of it)."""
    start = text.rfind("\n", 0, match.start()) + 1
    end = text.find("\n", match.end())
    return text[start : end if end >= 0 else len(text)][:200]


def metrics_from_json(text: str, source: str) -> dict[str, float]:
    """A flat JSON object of numbers, as the command wrote it."""
    try:
        data = json.loads(text)
    except ValueError as e:
        raise ValueError(f"{source}: not valid JSON ({e})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{source}: must hold one JSON object of name: number")
    return {str(k): as_number(f"{k} (in {source})", v) for k, v in data.items()}
