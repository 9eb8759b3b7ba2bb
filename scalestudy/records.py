"""Timing records: the one file each run leaves, its schema, writing and reading; and
the files of values a rule hands its script (values_file), written the same way.

Writing is atomic (temporary file in the same folder, then rename), so a reader never sees
half a record. Reading is strict: truncated JSON, NaN or Infinity, or anything the schema
rejects raises RecordError naming the file, so aggregation never averages garbage.
"""

import hashlib
import json
import math
import numbers
import os
import tempfile
from datetime import datetime
from functools import lru_cache
from pathlib import Path

from scalestudy.paths import VALUES, identity_from_path

SCHEMA_VERSION = 1
SCHEMA_PATH = Path(__file__).with_name("schemas") / "record.schema.json"
# the longest a run can take, in seconds (about 32 years): a longer time measured elsewhere
# is refused (a record's own times bound it), before its statistics overflow (1e308 did)
LONGEST_S = 1e9

# How far a record's own times may disagree (self_inconsistency). The launcher takes
# started_at just before its timer starts and finished_at once the record is assembled,
# after the timer stops: wall_s lies inside that span. Both are wall-clock times cut to
# the millisecond, and that clock may be slewed (NTP: at most 0.05 %) while the timer
# (a monotonic clock) is not; rank 0's start-up phase is timed from the launcher's clock.
# So wall_s, and the phases together, may exceed the span, or wall_s, by no more than
CLOCK_TOLERANCE_S = 1.0
CLOCK_TOLERANCE_FRACTION = 0.01  # of the longer of the two
# and the span may exceed wall_s by the launcher's work after its timer stops (reading
# the ranks' results, the host's ledger, a git call of up to 2 x 10 s), by no more than
BOOKKEEPING_S = 60.0
BOOKKEEPING_FRACTION = 0.1  # of the span


class RecordError(ValueError):
    """A record that must not be aggregated; the message names the file."""


def write_text_atomic(path: str | os.PathLike, text) -> None:
    """Write so that `path` holds either the old file or the whole new one. `text`: the
    text, or what writes it to a file it is given (a large table, never held whole)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o644)  # mkstemp's 0600 would hide results from the group
        with os.fdopen(fd, "w") as f:
            text(f) if callable(text) else f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json_atomic(path: str | os.PathLike, obj) -> None:
    write_text_atomic(path, json.dumps(obj, indent=1, allow_nan=False) + "\n")


def finite(value) -> float | None:
    """A number as a finite float; None for null, NaN, infinity, a bool or a non-number."""
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        return None
    return float(value) if math.isfinite(value) else None


def jsonable(value):
    """Plain JSON values: numpy arrays and scalars become Python ones, NaN and inf None."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if hasattr(value, "tolist"):  # a numpy array or scalar
        return jsonable(value.tolist())
    return finite(value) if isinstance(value, float) else value


@lru_cache(maxsize=1)
def _validator():
    from jsonschema import Draft202012Validator

    return Draft202012Validator(json.loads(SCHEMA_PATH.read_text()))


@lru_cache(maxsize=1)
def _fast_validator():
    """The same schema compiled to Python by fastjsonschema: about 50x faster than
    jsonschema, which matters at 10,000 records. It knows drafts up to 7; the record
    schema uses nothing newer, so it is compiled as draft 7."""
    import fastjsonschema

    schema = json.loads(SCHEMA_PATH.read_text())
    schema["$schema"] = "http://json-schema.org/draft-07/schema#"
    schema.pop("$id", None)
    return fastjsonschema.compile(schema)


def schema_errors(record: dict) -> str | None:
    """None for a valid record, else where and why it is not."""
    fast = _fast_validator()
    try:
        fast(record)
        return None
    except Exception as e:  # JsonSchemaValueException; described below
        fast_message = str(e)
    # jsonschema says it better: the path of the first bad key
    errors = sorted(_validator().iter_errors(record), key=lambda e: list(e.absolute_path))
    if errors:
        err = errors[0]
        where = ".".join(str(p) for p in err.absolute_path) or "(top level)"
        return f"invalid record at {where}: {err.message}"
    return f"invalid record: {fast_message}"


# the counters a record's energy may come from (scalestudy/compute/energy.py); a figure
# from anything else (a TDP estimate, power x time) is no measurement
ENERGY_SOURCES = ("nvml", "rapl")


def unsourced_energy(record: dict) -> str | None:
    """Why a record's energy cannot stand (None: it can): a figure must name its counter,
    and a part without a figure must say why it was not measured."""
    energy = record.get("energy")
    if not isinstance(energy, dict):
        return None
    for name in ("gpu", "node"):
        part = energy.get(name)
        if not isinstance(part, dict):
            continue
        joules, source = part.get("joules"), part.get("source")
        if joules is not None and source not in ENERGY_SOURCES:
            return (
                f"energy.{name} claims {plain(joules)} J without a source "
                f"(source {plain(source)}; a figure must come from one of "
                f"{', '.join(ENERGY_SOURCES)})"
            )
        if joules is None and not part.get("not_measured"):
            return f"energy.{name} has no figure and does not say why it was not measured"
    return phase_energy_problem(record, energy)


# the phases' energy may exceed their run's by this much: each phase is read inside the
# run's own reads of a counter that only rises, so only rounding can add to their sum
PHASE_ENERGY_SLACK = (1.0, 0.01)  # joules, fraction of the run's


def phase_energy_problem(record: dict, energy: dict) -> str | None:
    """Why the phases' energy cannot stand: a phase claims a part the run did not
    measure, or the phases together claim more than the run's whole figure."""
    phases = record.get("phases") if isinstance(record.get("phases"), list) else []
    for name in ("gpu", "node"):
        part = energy.get(name) if isinstance(energy.get(name), dict) else {}
        figures = [
            (p.get("name"), p["energy"].get(f"{name}_j"))
            for p in phases
            if isinstance(p, dict) and isinstance(p.get("energy"), dict)
        ]
        figures = [(phase, j) for phase, j in figures if isinstance(j, int | float)]
        if not figures:
            continue
        whole = part.get("joules")
        if whole is None:
            return (
                f"phase {plain(figures[0][0])} claims {plain(figures[0][1])} J of "
                f"energy.{name}, which the run did not measure"
            )
        total = sum(j for _, j in figures)
        joules, fraction = PHASE_ENERGY_SLACK
        if total > whole * (1 + fraction) + joules:
            return (
                f"its phases claim {plain(round(total, 3))} J of energy.{name}, more than "
                f"the run's {plain(round(whole, 3))} J"
            )
    return None


def _reject_constant(name: str):
    raise ValueError(f"non-numeric constant {name} (NaN/Infinity are not allowed)")


def parse_record_text(text: str, source: str) -> dict:
    try:
        record = json.loads(text, parse_constant=_reject_constant)
    except ValueError as e:  # JSONDecodeError is a ValueError
        raise RecordError(f"{source}: not a complete JSON record ({e})") from None
    if not isinstance(record, dict):
        raise RecordError(f"{source}: a record must be a JSON object")
    problem = unsourced_energy(record) or schema_errors(record) or self_inconsistency(record)
    if problem:
        raise RecordError(f"{source}: {problem}")
    return record


def plain(value) -> str:
    """A value as a message shows it: numbers plain (0, 2.5, nan; never np.int64(0) or
    np.float64(nan), which repr gives numpy's scalars), text quoted ('fast'), lists
    and tuples of them likewise."""
    if isinstance(value, list | tuple):
        inner = ", ".join(plain(v) for v in value)
        return f"[{inner}]" if isinstance(value, list) else f"({inner})"
    if hasattr(value, "item") and getattr(value, "ndim", None) == 0:
        value = value.item()  # a numpy scalar as the Python value it holds
    return repr(value) if isinstance(value, str) else str(value)


def seconds(value: float) -> str:
    """A figure of seconds as a person reads it: 2.5, 0.001, 1000000, 1e+308."""
    if not abs(value) < 1e15:
        return f"{value:.3g}"
    return f"{value:.3f}".rstrip("0").rstrip(".")


def _timestamp(record: dict, key: str) -> datetime:
    try:
        when = datetime.fromisoformat(record[key])
    except ValueError:
        raise RecordError(f"{key} {record[key]!r} is not an ISO 8601 time") from None
    if when.tzinfo is None:
        raise RecordError(f"{key} {record[key]!r} has no time zone (records are in UTC)")
    return when


def self_inconsistency(record: dict) -> str | None:
    """Why a record's own figures disagree (None: they agree): its wall_s with its
    started_at..finished_at, and its phases with its wall time. Such a record was edited
    or damaged (a 1-s run with wall_s 1e6 once gave a speedup of 914385): none of its
    figures can be trusted. The tolerances are those above (CLOCK_TOLERANCE_S ...)."""
    try:
        started, finished = (_timestamp(record, k) for k in ("started_at", "finished_at"))
    except RecordError as e:
        return str(e)
    span = (finished - started).total_seconds()
    wall = record["wall_s"]
    phases = sum(p["seconds"] for p in record["phases"])

    def slack(*figures: float) -> float:
        return CLOCK_TOLERANCE_S + CLOCK_TOLERANCE_FRACTION * max(figures)

    where = f"its started_at and finished_at, {seconds(span)} s apart"
    if span < -slack(0.0):
        return f"finished_at is {seconds(-span)} s before started_at"
    if wall is not None:
        if not math.isfinite(wall) or wall > span + slack(wall, span):
            return f"wall_s {seconds(wall)} s is longer than {where}"
        if wall < span - (BOOKKEEPING_S + BOOKKEEPING_FRACTION * span):
            return f"wall_s {seconds(wall)} s is far shorter than {where}"
    limit, what = (wall, f"wall_s, {seconds(wall)} s") if wall is not None else (span, where)
    if not math.isfinite(phases) or phases > limit + slack(phases, limit):
        return f"its phases take {seconds(phases)} s together, longer than {what}"
    return None


def read_record(path: str | os.PathLike) -> dict:
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as e:
        raise RecordError(f"{path}: cannot read ({e.strerror})") from None
    return parse_record_text(text, str(path))


def misplacement(record: dict, path: str | os.PathLike, series: str | None = None) -> str | None:
    """Why a record does not belong where it lies (None: it does): its study, point and
    repeat must be those its path names, and its series the one the config gives its
    point. A record copied or moved by hand would otherwise count for another run."""
    expected = identity_from_path(path) or {}
    if series is not None and "series" in record:
        expected = expected | {"series": series}
    wrong = [
        f"{key} {record.get(key)!r} (its path says {value!r})"
        for key, value in expected.items()
        if record.get(key) != value
    ]
    if not wrong:
        return None
    return (
        f"{path}: this record is not the run its path names: it holds {', '.join(wrong)}. "
        "Was it copied or moved by hand? The run is redone on the next invocation."
    )


def read_placed_record(path: str | os.PathLike, series: str | None = None) -> dict:
    """read_record, and refuse a record that does not match its path."""
    record = read_record(path)
    if problem := misplacement(record, path, series):
        raise RecordError(problem)
    return record


def values_file(values) -> str:
    """The path of a file holding `values` as JSON (written once: its name is their
    hash, so a rule's param changes only where they do)."""
    text = json.dumps(values, sort_keys=True, allow_nan=False)
    path = Path(VALUES.format(digest=hashlib.sha256(text.encode()).hexdigest()[:20]))
    if not path.exists():
        write_text_atomic(path, text)
    return str(path)


def read_values(path: str | Path):
    """The JSON values of a values_file."""
    return json.loads(Path(path).read_text())
