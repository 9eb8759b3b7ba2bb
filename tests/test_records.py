"""Record writing (atomic) and strict reading."""

import json
import os
import threading
from datetime import datetime, timedelta

import pytest

from scalestudy.records import RecordError, parse_record_text, read_record, write_json_atomic


def good_record(**overrides) -> dict:
    record = {
        "schema_version": 1,
        "study": "s",
        "point": "t1",
        "repeat": 1,
        "workload": "mnist_cnn",
        "n": 1,
        "params": {},
        "status": "ok",
        "reason": None,
        "exit_code": 0,
        "wall_s": 2.5,
        "phases": [
            {"name": "startup", "kind": "startup", "seconds": 0.5},
            {"name": "epoch 1", "kind": "epoch", "seconds": 1.5, "samples": 96},
        ],
        "metrics": {"samples_per_s": 64.0, "test_accuracy": 0.5, "peak_rss_mb": 300.0},
        "resources": {
            "requested": {
                "threads": 1,
                "tasks_per_node": 1,
                "nodes": 1,
                "gpus_per_node": 0,
                "mem_mb": 1000,
            },
            "received": {
                "cpus_usable": 2,
                "threads_given": 1,
                "torch_threads": 1,
                "omp_num_threads": "1",
            },
            "mismatch": False,
            "mismatches": [],
        },
        "environment": {"host": "h", "python": "3.11.7"},
        "started_at": "2026-01-01T00:00:00.000+00:00",
        "finished_at": "2026-01-01T00:00:02.500+00:00",
        "rerun_token": "first",
    }
    record.update(overrides)
    wall_s = overrides.get("wall_s")
    if "finished_at" not in overrides and isinstance(wall_s, float | int) and 0 <= wall_s < 1e9:
        # a record's own times agree (records.self_inconsistency): it ends wall_s after it began
        record["finished_at"] = finished_after(record["started_at"], wall_s)
    return record


def finished_after(started_at: str, wall_s: float) -> str:
    end = datetime.fromisoformat(started_at) + timedelta(seconds=wall_s)
    return end.isoformat(timespec="milliseconds")


def test_round_trip(tmp_path):
    path = tmp_path / "deep" / "rep1.json"
    write_json_atomic(path, good_record())
    assert read_record(path) == good_record()
    assert [p.name for p in path.parent.iterdir()] == ["rep1.json"]  # no temp file left
    assert oct(path.stat().st_mode & 0o777) == "0o644"


def test_writer_refuses_nan_and_keeps_old_file(tmp_path):
    path = tmp_path / "rep1.json"
    write_json_atomic(path, good_record())
    with pytest.raises(ValueError):
        write_json_atomic(path, good_record(wall_s=float("nan")))
    assert read_record(path)["wall_s"] == 2.5
    assert len(os.listdir(tmp_path)) == 1


def test_readers_never_see_a_partial_file(tmp_path):
    path = tmp_path / "rep1.json"
    big = good_record(params={"blob": "x" * 2_000_000})
    write_json_atomic(path, big)
    stop, seen = threading.Event(), []

    def reader():
        while not stop.is_set():
            seen.append(len(json.loads(path.read_text())["params"]["blob"]))

    t = threading.Thread(target=reader)
    t.start()
    for _ in range(20):
        write_json_atomic(path, big)
    stop.set()
    t.join()
    assert seen and set(seen) == {2_000_000}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"schema_version": 1, "study": "s"', "not a complete JSON record"),
        ("", "not a complete JSON record"),
        ("[1, 2]", "must be a JSON object"),
    ],
)
def test_truncated_or_malformed_text(text, expected):
    with pytest.raises(RecordError, match=expected):
        parse_record_text(text, "results/s/runs/t1/rep1.json")


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_are_refused(constant, tmp_path):
    text = json.dumps(good_record()).replace('"wall_s": 2.5', f'"wall_s": {constant}')
    path = tmp_path / "rep1.json"
    path.write_text(text)
    with pytest.raises(RecordError, match=f"{path}.*non-numeric constant {constant}"):
        read_record(path)


@pytest.mark.parametrize(
    ("overrides", "where"),
    [
        ({"wall_s": "12.3"}, "wall_s"),
        ({"metrics": {"samples_per_s": "fast"}}, "metrics.samples_per_s"),
        ({"status": "maybe"}, "status"),
        ({"schema_version": 2}, "schema_version"),
        ({"point": "t1; rm -rf /"}, "point"),
    ],
)
def test_schema_violations_name_the_field(overrides, where, tmp_path):
    path = tmp_path / "rep1.json"
    path.write_text(json.dumps(good_record(**overrides)))
    with pytest.raises(RecordError, match=f"{path}: invalid record at {where}"):
        read_record(path)


def test_missing_field(tmp_path):
    record = good_record()
    del record["wall_s"]
    path = tmp_path / "rep1.json"
    path.write_text(json.dumps(record))
    with pytest.raises(RecordError, match="'wall_s' is a required property"):
        read_record(path)


def test_messages_print_plain_numbers():
    import numpy as np

    from scalestudy.records import plain

    assert f"N={plain(np.int64(0))}" == "N=0"
    assert f"time_s={plain(np.float64('nan'))}" == "time_s=nan"
    assert plain([np.int64(2), np.float64(2.5), "fast"]) == "[2, 2.5, 'fast']"
    assert plain((np.int64(1), "a")) == "(1, 'a')" and plain(None) == "None"


def test_jsonable_gives_json_values_and_null_for_what_is_not_finite():
    import numpy as np

    from scalestudy.records import jsonable

    found = jsonable({1: np.array([1.5, np.nan]), "ok": np.bool_(True), "n": np.int64(3),
                      "t": (np.float32(2.5), float("inf")), "s": "x", "b": False})  # fmt: skip
    assert found == {"1": [1.5, None], "ok": True, "n": 3, "t": [2.5, None], "s": "x", "b": False}
    assert json.dumps(found, allow_nan=False)  # strict JSON: nothing left to refuse


def test_a_record_with_a_wall_time_of_zero_is_refused_naming_file_and_value(tmp_path):
    # the fault probe: a record with wall_s 0 was used, its point's fastest run took 0.0 s
    # and its interval was NaN, and the report called the point only "unstable"
    path = tmp_path / "rep1.json"
    path.write_text(json.dumps(good_record(wall_s=0, phases=[])))
    with pytest.raises(RecordError) as info:
        read_record(path)
    assert str(info.value) == (
        f"{path}: invalid record at wall_s: 0 is less than or equal to the minimum of 0"
    )
