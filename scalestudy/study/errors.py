"""Error wording: the config error, and how the workflow words and prints what it refuses."""

import json
from pathlib import Path

import workloads as registry


class ConfigError(ValueError):
    """Config values that the schema refuses, or accepts but the workflow cannot use.
    `problems` lists every one found, each naming its key; str() gives one a line."""

    def __init__(self, *problems: str):
        self.problems = list(dict.fromkeys(problems))
        super().__init__("\n".join(self.problems))


def names_under(path: list[str]) -> str:
    """What the names (keys) under a config path are, for messages."""
    return {"studies": "study names", "series": "series names"}.get(
        path[-1] if path else "", f"names under {'.'.join(path) or 'the top level'}"
    )


def config_key(path: list[str], message: str) -> str:
    return f"config key {'.'.join(path) or '(top level)'}: {message}"


def describe_validation_error(error: BaseException) -> str:
    """Turn jsonschema's error into lines, one per bad key, each naming its path."""
    from jsonschema.exceptions import ValidationError

    # snakemake.utils.validate raises WorkflowError from inside `except ValidationError`
    err = error
    while err is not None and not isinstance(err, ValidationError):
        err = err.__cause__ or err.__context__
    if err is None:
        return str(error)
    return "\n".join(config_key(*p) for p in registry.describe_error(err, names_under))


def counted(problems: list[str]) -> tuple[str, str]:
    """("a problem" or "N problems", the problems indented one a line), for messages."""
    count = f"{len(problems)} problems" if len(problems) > 1 else "a problem"
    return count, "\n".join(f"  {p}" for p in problems)


def config_error_text(problems: list[str], not_selected: list[str] = ()) -> str:
    """What the workflow prints for a config it refuses: every problem, one a line, the
    selected studies' first, then those of the studies `only:` leaves out."""
    count, lines = counted(problems)
    text = f"The config has {count}; no job was run:\n{lines}"
    return f"{text}\n{not_selected_text(not_selected)}" if not_selected else text


def not_selected_text(problems: list[str]) -> str:
    """The problems of the studies `only:` leaves out: noted, they stop nothing."""
    count, lines = counted(problems)
    return (
        f"The studies that only: leaves out have {count} (they do not run: noted, "
        f"not stopping):\n{lines}"
    )


def not_in_config_text(folders: list[str]) -> str:
    """The results folders of studies the config no longer names: said, they stop nothing."""
    return (
        f"Not in the config: kept, not shown: {', '.join(folders)} (the results of a study "
        "renamed or removed from the config; the workflow and the report do not read them). "
        "Name the study in the config again, or move the folder away when sure."
    )


def startup_problems_text(problems: list[str]) -> str:
    """What the workflow prints when the start-up checks refuse: every problem at once."""
    count, lines = counted(problems)
    return f"Found {count} before any job; no job was run:\n{lines}"


def yaml_problem(path: str | Path) -> str | None:
    """Why a config file is no JSON or YAML, as FILE:LINE:COLUMN: what, with the line and
    a caret under the place, or holds no keys; None when it reads (or is absent:
    Snakemake says so). It reads the file as Snakemake does (JSON first, then YAML with
    yaml.FullLoader), whose own message names neither the file nor the place."""
    import yaml

    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as e:
        return f"{path}: cannot read the config file ({e})"
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    try:
        if data is None:
            data = yaml.load(text, Loader=yaml.FullLoader)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        what = e.problem or e.context or "syntax error"
        if e.context and e.problem and e.context_mark is not None:
            where = e.context_mark
            what += f" ({e.context} at line {where.line + 1}, column {where.column + 1})"
        if mark is None:  # pragma: no cover - PyYAML marks its syntax errors
            return f"{path}: not valid YAML: {what}"
        lines = text.splitlines()
        shown = lines[mark.line] if mark.line < len(lines) else ""
        return (
            f"{path}:{mark.line + 1}:{mark.column + 1}: not valid YAML: {what}\n"
            f"    {shown}\n    {' ' * mark.column}^"
        )
    except yaml.YAMLError as e:  # pragma: no cover - an error without a place
        return f"{path}: not valid YAML: {e}"
    if not isinstance(data, dict):
        what = "nothing" if data is None else f"a {type(data).__name__}"
        return f"{path}: must hold keys and their values (studies: ...), not {what}"
    return None


def stop(message: str) -> None:
    """Print `message` as Snakemake prints errors, and end the run with status 1. Raised
    from a Snakefile, it would come under `WorkflowError in file ..., line N:` and over a
    traceback line, which Snakemake adds to every exception passing through a Snakefile
    (snakemake.exceptions.format_exception_to_string): config errors are the user's."""
    import sys

    from snakemake.logging import logger

    logger.error(message)
    sys.exit(1)


def stop_on_unreadable_config(*paths: str | Path) -> None:
    """Stop before Snakemake loads a config file that is no JSON or YAML, naming its
    file, line and column (Snakemake's own message names none of them)."""
    problems = [p for p in map(yaml_problem, paths) if p]
    if problems:
        stop("\n".join(problems))
