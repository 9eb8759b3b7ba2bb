"""Timed programs, and the registry that finds them.

A workload is one module of this folder, `workloads/<name>.py` (or a package,
`workloads/<name>/__init__.py`, when it brings code of its own); its file name is
its name in the config (`workload: <name>`), and the worker imports it as
`workloads.<name>`. It holds two things:

    WORKLOAD = {
        "distributed": False,  # runs several processes (DDP): may scale over devices, nodes
        "steps": True,         # calls ctx.step() after each training step (profiling)
        "devices": ["cpu", "gpu"],  # what a point may compute on (default: both)
        "params": {            # JSON Schema (draft 2020-12) of its params, with defaults
            "properties": {
                "epochs": {"type": "integer", "minimum": 1, "default": 1,
                           "description": "training epochs"},
            },
        },
    }

    def run(params: dict, ctx: scalestudy.compute.harness.Context) -> None: ...

`params` is an object schema: `type: object` and `additionalProperties: false` are
implied (an unknown parameter is an error), `required` lists parameters without a
default. Each property's `description` is its line in config/README.md, which
`python -m workloads` writes from these declarations (a test fails when they
drift). Adding a workload is adding its module: nothing else lists workloads.

`run` does the work inside `ctx.phase(name, kind=...)` blocks and reports figures
with `ctx.metric(name, value)`. `ctx.device`, `ctx.rank`, `ctx.world_size` and
`ctx.data_dir` say where and how to run. Workloads never write records, read Slurm
variables or set thread counts: the harness does. The workflow validates a study's
params against the declaration and fills in every default before any job runs
(scalestudy.study.validation.normalise_config), so `run` reads `params[...]` directly; one
that is also called directly with partial params (tests, benchmarks) starts with
`params = complete(WORKLOAD, params)`, which validates and completes those.

Why a Python literal read with `ast`, not an import and not a side file: the
workflow needs every workload's capabilities and schema when Snakemake parses the
DAG, and importing the modules would import torch (seconds, at every invocation);
parsing them costs milliseconds and runs none of their code. Unlike a YAML file
beside each module, the declaration cannot be separated from its module (a
package moves with it, a copied module brings it) and the module reads the same
object at run time. The price: `WORKLOAD` must be a plain literal (no names, no
calls, no comprehensions), which `discover` checks and reports with the file.
"""

from __future__ import annotations

import copy
import functools
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

FOLDER = Path(__file__).resolve().parent
DECLARATION = "WORKLOAD"
DEVICES = ("cpu", "gpu")
DECLARATION_KEYS = {"distributed", "steps", "devices", "params"}


class WorkloadError(ValueError):
    """A workload module whose declaration is missing or malformed, or an unknown name."""


class ParamsError(ValueError):
    """Parameters that the workload's schema refuses. `path` is the (first) bad key's
    path inside params ("" for params as a whole); `errors` lists every (path, message),
    and str() gives one line each."""

    def __init__(self, path: str, message: str, more: list[tuple[str, str]] = ()):
        self.path, self.message = path, message
        self.errors = [(path, message), *more]
        self.lines = [f"params{'.' + p if p else ''}: {m}" for p, m in self.errors]
        super().__init__("\n".join(self.lines))


@dataclass(frozen=True)
class Workload:
    """One workload as its declaration describes it (its module is not imported)."""

    name: str
    path: Path
    distributed: bool
    steps: bool
    devices: tuple[str, ...]
    params: dict = field(repr=False)  # the complete JSON Schema of its params object

    @property
    def capabilities(self) -> dict:
        return {"distributed": self.distributed, "steps": self.steps, "devices": self.devices}

    def complete(self, params: dict) -> dict:
        """params validated against the schema, with every default filled in (a copy)."""
        from jsonschema.exceptions import SchemaError

        try:
            return validate_params(self.params, params)
        except SchemaError as e:
            raise WorkloadError(
                f"{self.path}: {DECLARATION}['params'] is no valid JSON Schema: {e.message}"
            ) from None


# --- reading declarations -------------------------------------------------------------


def folder_for(workdir: str | os.PathLike | None = None) -> Path:
    """The workloads folder of the workflow in `workdir`: its own `workloads/` when it has
    one (the worker runs there, so that is what `import workloads.<name>` finds), else
    this installed package's folder."""
    if workdir is not None:
        own = Path(workdir) / "workloads"
        if (own / "__init__.py").is_file():
            return own.resolve()
    return FOLDER


def module_files(folder: Path) -> dict[str, Path]:
    """name -> file holding the declaration: every `<name>.py` and `<name>/__init__.py`
    of the folder; names starting with `_` (this file, `__main__`, helpers) are not
    workloads."""
    found = {}
    for entry in sorted(Path(folder).iterdir()):
        name = entry.stem if entry.suffix == ".py" else entry.name
        if name.startswith("_") or not name.isidentifier():
            continue
        if entry.suffix == ".py" and entry.is_file():
            found[name] = entry
        elif entry.is_dir() and (entry / "__init__.py").is_file():
            found[name] = entry / "__init__.py"
    return found


def read_declaration(path: Path) -> dict:
    """The `WORKLOAD = {...}` literal at the top level of a module, without running it."""
    stat = path.stat()
    return copy.deepcopy(_read_declaration(str(path), stat.st_mtime_ns, stat.st_size))


@functools.lru_cache(maxsize=256)
def _read_declaration(path: str, mtime_ns: int, size: int) -> dict:
    import ast

    source = Path(path).read_text(encoding="utf-8")
    try:
        tree = ast.parse(source, filename=path)
    except SyntaxError as e:
        raise WorkloadError(f"{path}:{e.lineno}: cannot parse the module: {e.msg}") from None
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        if any(isinstance(t, ast.Name) and t.id == DECLARATION for t in targets):
            try:
                return ast.literal_eval(value)
            except ValueError:
                raise WorkloadError(
                    f"{path}:{value.lineno}: {DECLARATION} must be a plain literal (dicts, "
                    "lists, strings, numbers, True/False/None): it is read without "
                    "importing the module"
                ) from None
    raise WorkloadError(
        f"{path}: no {DECLARATION} = {{...}} declaration at the top level (see "
        "workloads/__init__.py); a helper module's name must start with '_'"
    )


def load(name: str, path: Path) -> Workload:
    """A workload from its module's declaration, checked for shape."""
    decl = read_declaration(path)
    where = f"{path}: {DECLARATION}"
    if not isinstance(decl, dict):
        raise WorkloadError(f"{where} must be a dict")
    unknown = sorted(set(decl) - DECLARATION_KEYS)
    if unknown:
        raise WorkloadError(
            f"{where} has unknown keys {unknown}; it may hold {sorted(DECLARATION_KEYS)}"
        )
    for key in ("distributed", "steps"):
        if not isinstance(decl.get(key), bool):
            raise WorkloadError(f"{where}[{key!r}] must be True or False")
    devices = decl.get("devices", list(DEVICES))
    if not isinstance(devices, list) or not devices or not set(devices) <= set(DEVICES):
        raise WorkloadError(f"{where}['devices'] must be a non-empty list of {list(DEVICES)}")
    schema = decl.get("params", {})
    if not isinstance(schema, dict) or not isinstance(schema.get("properties", {}), dict):
        raise WorkloadError(f"{where}['params'] must be a JSON Schema with 'properties'")
    return Workload(
        name=name,
        path=path,
        distributed=decl["distributed"],
        steps=decl["steps"],
        devices=tuple(devices),
        params=params_schema(schema),
    )


def params_schema(fragment: dict) -> dict:
    """The declaration's params fragment as a whole schema (object, no unknown keys)."""
    return {"type": "object", "additionalProperties": False, "properties": {}} | fragment


def discover(folder: str | os.PathLike | None = None) -> dict[str, Workload]:
    """Every workload of the folder (default: this package's), by name."""
    return {name: load(name, path) for name, path in module_files(Path(folder or FOLDER)).items()}


def find(name: str, folder: str | os.PathLike | None = None) -> Workload:
    """One workload; an unknown name is a WorkloadError that lists the known ones."""
    known = discover(folder)
    if name not in known:
        raise WorkloadError(unknown_message(name, known, Path(folder or FOLDER)))
    return known[name]


def unknown_message(name, known: dict, folder=None) -> str:
    where = f" (modules of {folder})" if folder else ""
    near = suggestion(name, known)
    guess = f"; did you mean `{near}`?" if near else ""
    return f"unknown workload {name!r}; the workloads are {', '.join(sorted(known))}{where}{guess}"


# --- parameters -----------------------------------------------------------------------


@functools.lru_cache(maxsize=64)
def _validator(schema_json: str):
    """A draft 2020-12 validator that fills in defaults, as snakemake.utils.validate
    does, but with a copy of each default, so that no two studies share one object."""
    from jsonschema import Draft202012Validator, validators

    schema = json.loads(schema_json)
    Draft202012Validator.check_schema(schema)
    check_properties = Draft202012Validator.VALIDATORS["properties"]

    def properties_with_defaults(validator, properties, instance, schema):
        if isinstance(instance, dict):
            for key, sub in properties.items():
                if "default" in sub and key not in instance:
                    instance[key] = copy.deepcopy(sub["default"])
        yield from check_properties(validator, properties, instance, schema)

    extended = validators.extend(Draft202012Validator, {"properties": properties_with_defaults})
    return extended(schema)


def suggestion(name: str, known) -> str | None:
    """The known name nearest to a misspelt one, if any is near enough."""
    import difflib

    close = difflib.get_close_matches(str(name), [str(k) for k in known], n=1, cutoff=0.6)
    return close[0] if close else None


def _class_in_words(body: str) -> list[str] | None:
    """The characters of a regex class body (`A-Za-z0-9_-`) as words, or None."""
    words = []
    for chars, word in (("A-Za-z", "letters"), ("a-z", "lower-case letters"), ("0-9", "digits")):
        if chars in body:
            words.append(word)
            body = body.replace(chars, "", 1)
    if "A-Z" in body:
        return None
    if "-" in body.strip("-") or "\\" in body or "^" in body or "[" in body:
        return None  # another range, an escape, a negation: say it as the regex
    return words + [f"'{c}'" for c in body]


def _and(words: list[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def pattern_in_words(pattern: str) -> str:
    """A name pattern as words: `^[A-Za-z0-9][A-Za-z0-9_-]*$` is "only letters, digits,
    '_' and '-', starting with a letter or digit"; one it cannot read stays a regex."""
    import re

    match = re.fullmatch(r"\^(?:\[([^]]+)\])?\[([^]]+)\]([*+])\$", pattern)
    if match:
        first = _class_in_words(match[1]) if match[1] else []
        rest = _class_in_words(match[2])
        if first is not None and rest is not None:
            words = f"only {_and(rest)}"
            if first:
                singular = [w.removesuffix("s") if w[0] != "'" else w for w in first]
                words += f", starting with a {' or '.join(singular)}"
            return words
    return f"text matching the regular expression {pattern}"


# jsonschema's words for these leave the limit out ("'...' is too long"): each said
# with its value, as "(what is counted, which way the limit goes)"
SIZE_LIMITS = {
    "maxLength": ("characters", "at most"),
    "minLength": ("characters", "at least"),
    "maxItems": ("items", "at most"),
    "minItems": ("items", "at least"),
    "maxProperties": ("keys", "at most"),
    "minProperties": ("keys", "at least"),
}


def limit_in_words(error) -> str | None:
    """A size limit broken, with the size and the limit ("200 characters, at most 64
    allowed"); None for any other error."""
    if error.validator not in SIZE_LIMITS or not hasattr(error.instance, "__len__"):
        return None
    unit, way = SIZE_LIMITS[error.validator]
    return f"{len(error.instance)} {unit}, {way} {error.validator_value} allowed"


def describe_error(error, names_of=None, listing: str | None = None) -> list[tuple[list[str], str]]:
    """One jsonschema error as (key path, message in words) pairs, one per bad key: an
    unknown key is named in the path and the nearest known one suggested, a name or
    value that does not match a pattern is told what may be in it. `names_of(path)`
    says what the names under `path` are ("study names"); `listing`, when given, lists
    the known keys of the top level ("the parameters are ...")."""
    from jsonschema.exceptions import best_match

    err = error
    while True:  # oneOf/anyOf: say which alternative came closest
        alternatives = one_of_keys(err)
        if alternatives:
            return [([str(p) for p in err.absolute_path], alternatives)]
        if not err.context:
            break
        err = best_match(err.context)
    path = [str(p) for p in err.absolute_path]
    if err.validator == "additionalProperties" and isinstance(err.instance, dict):
        allowed = err.schema.get("properties", {})
        extra = [k for k in err.instance if k not in allowed]
        if allowed and extra:
            found = []
            for key in extra:
                message = f"Additional properties are not allowed ({key!r} was unexpected)"
                near = suggestion(key, allowed)
                names = ", ".join(sorted(allowed))
                if listing and not path:
                    tail = f"({listing} {names})"
                    message += f"; did you mean `{near}`? {tail}" if near else f"; {tail[1:-1]}"
                elif near:
                    message += f"; did you mean `{near}`?"
                else:
                    message += f"; the keys here are {names}"
                found.append(([*path, str(key)], message))
            return found
    schema_path = list(err.relative_schema_path)
    if len(schema_path) > 1 and schema_path[-2] == "propertyNames":
        what = names_of(path) if names_of else "names here"
        path.append(str(err.instance))
        if err.validator == "pattern":
            rule = pattern_in_words(err.validator_value)
            return [(path, f"{err.instance!r} does not match the rule for {what}: {rule}")]
        return [(path, f"{what}: {limit_in_words(err) or err.message}")]
    if err.validator == "pattern":
        rule = pattern_in_words(err.validator_value)
        return [(path, f"{err.instance!r} does not match the rule for this value: {rule}")]
    if isinstance(err.instance, float) and not math.isfinite(err.instance):
        return [(path, f"{err.instance} is not a finite number")]
    return [(path, limit_in_words(err) or err.message)]


def one_of_keys(error) -> str | None:
    """For alternatives that each require a key (`workload` or `measured`: oneOf, anyOf,
    or `not` both): which one to give, in words; None for any other error."""
    if not isinstance(error.instance, dict):
        return None
    if error.validator == "not" and set(error.validator_value) == {"required"}:
        keys = " or ".join(f"`{k}`" for k in error.validator_value["required"])
        return f"give {keys}, not both"
    alternatives = error.validator_value if error.validator in ("oneOf", "anyOf") else None
    if not alternatives:
        return None
    keys = []
    for alternative in alternatives:
        if not isinstance(alternative, dict) or not set(alternative) <= {"required", "not"}:
            return None
        keys += alternative.get("required", [])
    choice = " or ".join(f"`{k}`" for k in keys)
    present = [k for k in keys if k in error.instance]
    if len(present) > 1:
        return f"give {choice}, not both"
    return f"needs {choice}" if not present else None


def params_errors(errors) -> list[tuple[str, str]]:
    """Every error of `errors` as (path inside params, message), one per bad key; the
    path of an unknown key names that key."""
    found = []
    for err in errors:
        for path, message in describe_error(err, listing="the parameters are"):
            found.append((".".join(path), message))
    return list(dict.fromkeys(found))


def first_error(errors):
    """jsonschema's most relevant error of `errors` as (path inside params, message);
    the path of an unknown key names that key."""
    from jsonschema.exceptions import best_match

    err = best_match(errors)
    return None if err is None else params_errors([err])[0]


def validate_params(schema: dict, params: dict) -> dict:
    """A copy of params, validated against `schema` and completed with its defaults;
    ParamsError names every bad key."""
    instance = copy.deepcopy(params)
    validator = _validator(json.dumps(schema))
    errors = params_errors(validator.iter_errors(instance))
    if errors:
        raise ParamsError(*errors[0], more=errors[1:])
    return instance


def complete(declaration: dict, params: dict) -> dict:
    """params as `run` reads them. From the workflow they arrive validated with every
    default filled in, and are returned as they are, at no cost (no jsonschema import
    in the timed process); from a direct call (a test, a benchmark) with parameters
    left out they are validated against the declaration and completed here."""
    schema = params_schema(declaration.get("params", {}))
    defaults = [k for k, v in schema["properties"].items() if "default" in v]
    if all(k in params for k in (*defaults, *schema.get("required", ()))):
        return params
    return validate_params(schema, params)


# --- config/README.md ---------------------------------------------------------------

BEGIN = "<!-- params of {name}: written by `python -m workloads` from its WORKLOAD -->"
END = "<!-- end of params -->"


def markdown_value(value) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(", ", ": "))


def params_table(workload: Workload) -> str:
    """The markdown table of a workload's parameters, from its schema."""
    required = set(workload.params.get("required", ()))
    lines = ["| key | default | meaning |", "|---|---|---|"]
    for key, prop in workload.params["properties"].items():
        if "default" in prop:
            default = f"`{markdown_value(prop['default'])}`"
        else:
            default = "(required)" if key in required else "unset"
        meaning = " ".join(prop.get("description", "").split()).replace("|", "\\|")
        lines.append(f"| `{key}` | {default} | {meaning} |")
    return "\n".join(lines)


def readme_with_tables(text: str, workloads: dict[str, Workload]) -> str:
    """`text` (config/README.md) with every workload's table rewritten between its
    markers; WorkloadError when a workload has no markers or markers name no workload."""
    import re

    pattern = re.compile(
        re.escape(BEGIN).replace(re.escape("{name}"), r"(?P<name>\w+)") + r"\n.*?" + re.escape(END),
        flags=re.DOTALL,
    )
    seen = []

    def table(match) -> str:
        name = match["name"]
        seen.append(name)
        if name not in workloads:
            raise WorkloadError(f"config/README.md documents {name!r}, which is no workload")
        return f"{BEGIN.format(name=name)}\n{params_table(workloads[name])}\n{END}"

    text = pattern.sub(table, text)
    missing = sorted(set(workloads) - set(seen))
    if missing:
        raise WorkloadError(
            f"config/README.md has no parameter table of {', '.join(missing)}: add a "
            f"'## Workload `NAME`' section holding the two lines\n"
            f"{BEGIN.format(name=missing[0])}\n{END}\nand run `python -m workloads`"
        )
    return text
