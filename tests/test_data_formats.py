"""Data formats: what is written is read back byte for byte, staging, and the workload."""

from __future__ import annotations

import ctypes
import ctypes.util
import io
import mmap
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np
import pytest
import torch

from scalestudy.compute.harness import Context
from tests.test_studies import config_error, validated
from workloads import data_formats
from workloads.data_formats import formats

# times runs or loads both cores: in line with the others that do (tests/conftest.py)
pytestmark = pytest.mark.measures


@pytest.fixture(scope="module")
def sample_set():
    """Payloads of awkward sizes (empty, under, at and over a 512-byte tar block)."""
    rng = np.random.default_rng(7)
    sizes = [0, 1, 511, 512, 513, 3072] + rng.integers(1, 4000, size=44).tolist()
    images = [rng.integers(0, 256, size=n, dtype=np.uint8).tobytes() for n in sizes]
    labels = rng.integers(0, 10, size=len(images)).tolist()
    return images, labels


@pytest.fixture(scope="module")
def written(sample_set, tmp_path_factory):
    images, labels = sample_set
    root = tmp_path_factory.mktemp("formats")
    return {
        "folder": formats.write("folder", images, labels, root / "images"),
        "tar": formats.write("tar", images, labels, root / "images"),
        "shards": formats.write("shards", images, labels, root / "shards", shards=3),
    }


def expected(sample_set, order):
    images, labels = sample_set
    return [(images[i], labels[i]) for i in order]


def test_shards_read_back_in_write_order(sample_set, written):
    got = list(formats.read_shards(written["shards"]))
    assert got == expected(sample_set, range(len(sample_set[0])))
    assert len(formats.shard_paths(written["shards"])) == 3


@pytest.mark.parametrize("reader", ["tarfile", "fast"])
def test_tar_read_back_in_folder_order(sample_set, written, reader):
    order = formats.folder_order(sample_set[1])
    assert list(formats.read_tar(written["tar"], reader=reader)) == expected(sample_set, order)


def test_folder_read_back(sample_set, written):
    order = formats.folder_order(sample_set[1])
    assert list(formats.read_folder(written["folder"])) == expected(sample_set, order)
    shuffled = list(formats.read_folder(written["folder"], shuffle_seed=3))
    assert shuffled != expected(sample_set, order)
    assert sorted(shuffled) == sorted(expected(sample_set, order))


@pytest.mark.parametrize("fmt", ["folder", "shards"])
def test_reader_passes_the_shuffle_on(written, fmt):
    # the workload reads through formats.reader: its shuffle must reach the format's reader
    plain = list(formats.reader(fmt, written[fmt]))
    shuffled = list(formats.reader(fmt, written[fmt], shuffle_seed=3))
    assert shuffled != plain and sorted(shuffled) == sorted(plain)
    assert shuffled == list(formats.reader(fmt, written[fmt], shuffle_seed=3))


def test_shards_are_webdataset_layout(written):
    first = formats.shard_paths(written["shards"])[0]
    with tarfile.open(first) as tf:
        names = tf.getnames()
    assert names[:4] == ["00000000.bin", "00000000.cls", "00000001.bin", "00000001.cls"]


def test_iter_tar_matches_tarfile_for_long_names_and_dirs(tmp_path):
    """GNU long names, pax paths and directory entries, as other tools write them."""
    long = "d" * 90 + "/" + "x" * 120 + ".bin"
    for fmt in (tarfile.GNU_FORMAT, tarfile.PAX_FORMAT):
        path = tmp_path / f"a{fmt}.tar"
        with tarfile.open(path, "w", format=fmt) as tf:
            tf.addfile(_dir("somedir"))
            for name, payload in [(long, b"abc" * 300), ("somedir/short.cls", b"7")]:
                info = tarfile.TarInfo(name)
                info.size = len(payload)
                tf.addfile(info, io.BytesIO(payload))
        assert list(formats.iter_tar(path)) == [(long, b"abc" * 300), ("somedir/short.cls", b"7")]


def test_header_numbers_in_every_spelling():
    assert formats._number(b"012345\0 ", 6) == 0o12345  # tar's checksum field
    assert formats._number(b"0012345\0", 6) == 0o12345  # seven digits, NUL
    assert formats._number(b"   12345 ", 6) == 0o12345  # space padded
    assert formats._number(b"777777777777", 11) == 0o777777777777  # no terminator
    assert formats._number(b"\x80" + (9 * 2**30).to_bytes(11, "big"), 11) == 9 * 2**30
    assert formats._number(b"\0" * 12, 11) == 0


@pytest.mark.skipif(shutil.which("tar") is None, reason="no tar command")
def test_iter_tar_reads_what_the_tar_command_writes(written, tmp_path):
    archive = tmp_path / "cmd.tar"
    folder = written["folder"]
    subprocess.run(["tar", "cf", archive, "-C", folder.parent, folder.name], check=True)
    with tarfile.open(archive) as tf:
        want = [(m.name, tf.extractfile(m).read()) for m in tf if m.isfile()]
    assert list(formats.iter_tar(archive)) == want and len(want) == 50


def _dir(name):
    info = tarfile.TarInfo(name)
    info.type = tarfile.DIRTYPE
    return info


def test_iter_tar_refuses_a_damaged_header(tmp_path, written):
    shard = formats.shard_paths(written["shards"])[0]
    data = bytearray(shard.read_bytes())
    data[10] ^= 0xFF  # inside the first member's name
    damaged = tmp_path / "damaged.tar"
    damaged.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="checksum"):
        list(formats.iter_tar(damaged))


def test_iter_samples_groups_by_key():
    members = [("a/1.bin", b"x"), ("a/1.cls", b"2"), ("a/2.bin", b"y"), ("2.cls", b"3")]
    samples = list(formats.iter_samples(iter(members)))
    assert [s["__key__"] for s in samples] == ["a/1", "a/2", "2"]
    assert samples[0] == {"__key__": "a/1", "bin": b"x", "cls": b"2"}


def test_scratch_dir_resolution(tmp_path):
    a, b, c = (tmp_path / n for n in "abc")
    for d in (a, b, c):
        d.mkdir()
    env = {"SLURM_TMPDIR": str(b), "TMPDIR": str(c)}
    assert formats.scratch_dir(a, env) == a
    assert formats.scratch_dir(None, env) == b
    assert formats.scratch_dir(None, {"TMPDIR": str(c)}) == c
    assert formats.scratch_dir(None, {}).is_dir()
    with pytest.raises(FileNotFoundError):
        formats.scratch_dir(tmp_path / "missing", env)


@pytest.mark.parametrize(
    "fmt, extract, read_as",
    [
        ("folder", False, "folder"),
        ("tar", False, "tar"),
        ("tar", True, "folder"),  # extracted: read as a folder
        ("shards", False, "shards"),
    ],
)
def test_stage_puts_a_readable_copy_in_scratch(
    sample_set, written, tmp_path, fmt, extract, read_as
):
    scratch = tmp_path / "scratch"
    seconds = formats.stage(written[fmt], scratch, fmt, extract=extract)
    assert seconds > 0
    staged = formats.staged_path(written[fmt], scratch, fmt, extract)
    assert staged.exists() and staged.parent == scratch
    original = sorted(formats.reader(fmt, written[fmt]))
    assert sorted(formats.reader(read_as, staged)) == original
    if extract:
        assert not (scratch / written["tar"].name).exists()  # the archive is gone


def test_stage_parallel_returns_k_times_and_k_copies(sample_set, written, tmp_path):
    seconds = formats.stage_parallel(written["shards"], tmp_path, "shards", 3)
    assert len(seconds) == 3 and all(s > 0 for s in seconds)
    want = list(formats.read_shards(written["shards"]))
    for i in range(3):
        staged = formats.staged_path(written["shards"], tmp_path / f"stager{i}", "shards")
        assert list(formats.read_shards(staged)) == want


# --- the page cache ------------------------------------------------------------------


def test_evict_from_page_cache_counts_files_and_bytes(sample_set, written):
    images, _ = sample_set
    assert formats.evict_from_page_cache(written["folder"]) == {
        "files": len(images),
        "bytes": sum(len(image) for image in images),
    }
    tar = written["tar"]
    assert formats.evict_from_page_cache(tar) == {"files": 1, "bytes": tar.stat().st_size}
    shards = formats.shard_paths(written["shards"])
    both = formats.evict_from_page_cache([str(tar), written["shards"]])
    assert both == {"files": 4, "bytes": sum(f.stat().st_size for f in [tar, *shards])}
    # evicting changes what is cached, never what is read
    assert list(formats.read_shards(written["shards"])) == expected(sample_set, range(len(images)))


def test_evict_from_page_cache_refuses_what_is_not_there(tmp_path, written):
    missing = tmp_path / "missing"
    with pytest.raises(FileNotFoundError, match="no such file or folder") as info:
        formats.evict_from_page_cache([written["tar"], missing])
    assert info.value.filename == str(missing)
    with pytest.raises(FileNotFoundError):
        formats.evict_from_page_cache(str(missing))


def test_evict_from_page_cache_skips_links_and_takes_dirty_files(tmp_path, written):
    folder = tmp_path / "set"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "a.bin").write_bytes(b"x" * 5000)  # just written: dirty pages
    (folder / "b.bin").write_bytes(b"")
    (folder / "link.bin").symlink_to(written["tar"])
    (folder / "linked").symlink_to(written["folder"], target_is_directory=True)
    assert formats.evict_from_page_cache(folder) == {"files": 2, "bytes": 5000}
    assert (folder / "sub" / "a.bin").read_bytes() == b"x" * 5000


def resident_pages(path: Path) -> tuple[int, int]:
    """(pages of the file in the page cache, pages of the file), by mincore(2)."""
    size = path.stat().st_size
    page = os.sysconf("SC_PAGE_SIZE")
    pages = -(-size // page)
    vec = (ctypes.c_ubyte * pages)()
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    with open(path, "rb") as f, mmap.mmap(f.fileno(), size, prot=mmap.PROT_READ) as mm:
        view = np.frombuffer(mm, dtype=np.uint8)  # for the mapping's address
        rc = libc.mincore(ctypes.c_void_p(view.ctypes.data), ctypes.c_size_t(size), vec)
        del view
    if rc != 0:
        raise OSError(ctypes.get_errno(), "mincore failed")
    return sum(v & 1 for v in vec), pages


def file_system_type(path: Path) -> str:
    """The type of the file system that holds `path`, from /proc/self/mounts."""
    best, kind = "", ""
    for line in Path("/proc/self/mounts").read_text().splitlines():
        mount, fs = (field.replace("\\040", " ") for field in line.split()[1:3])
        inside = str(path).startswith(mount.rstrip("/") + "/")
        if inside and len(mount) >= len(best):
            best, kind = mount, fs
    return kind


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mincore via Linux libc")
def test_evict_from_page_cache_leaves_no_page_resident(tmp_path):
    path = (tmp_path / "data.bin").resolve()
    path.write_bytes(np.random.default_rng(1).bytes(64 * 4096 + 100))
    if file_system_type(path) in ("tmpfs", "ramfs"):
        pytest.skip(f"{path} is in memory (tmpfs): nothing can be evicted")
    path.read_bytes()
    resident, pages = resident_pages(path)
    assert pages == 65 and resident == pages  # written, then read: all cached
    formats.evict_from_page_cache(tmp_path)
    assert resident_pages(path) == (0, pages)


# --- the workload --------------------------------------------------------------------


def run_workload(tmp_path, **params):
    params = {"images": 300, "batch_size": 64, "scratch": str(tmp_path)} | params
    ctx = Context(params=params, data_dir=tmp_path / "data", threads=1)
    ctx.device = torch.device("cpu")
    data_formats.run(params, ctx)
    return ctx, {p.name: p for p in ctx.phases}


@pytest.mark.parametrize("fmt", ["folder", "tar", "shards"])
def test_workload_phases_and_metrics(tmp_path, fmt):
    ctx, phases = run_workload(tmp_path, format=fmt)
    assert [p.name for p in ctx.phases] == ["write", "stage", "first batch", "stream"]
    assert [p.kind for p in ctx.phases] == ["data", "data", "epoch", "epoch"]
    assert phases["first batch"].samples == 64 and phases["stream"].samples == 300 - 64
    m = ctx.metrics
    read_s = phases["first batch"].seconds + phases["stream"].seconds
    assert m["samples_per_s"] == pytest.approx(300 / read_s)
    assert m["time_to_first_batch_s"] == phases["first batch"].seconds
    assert 0 < m["stage_s"] <= phases["stage"].seconds and m["stagers"] == 1
    assert m["files"] == {"folder": 300, "tar": 1, "shards": 4}[fmt]
    assert "wait_s" not in m  # only when training
    # the staged copy was removed, the source kept for later runs
    assert not list(tmp_path.glob("scalestudy-formats-*"))
    assert (tmp_path / "data" / "formats" / fmt).is_dir()


def test_workload_training_splits_wait_and_compute(tmp_path):
    ctx, phases = run_workload(tmp_path, format="shards", train=True, images=640)
    m = ctx.metrics
    read_s = phases["first batch"].seconds + phases["stream"].seconds
    assert m["wait_s"] > 0 and m["compute_s"] > 0
    assert m["wait_s"] + m["compute_s"] == pytest.approx(read_s, rel=0.1, abs=0.01)
    assert m["wait_fraction"] == pytest.approx(m["wait_s"] / (m["wait_s"] + m["compute_s"]))
    assert np.isfinite(m["final_loss"])


def test_workload_reuses_the_written_set_and_stages_in_parallel(tmp_path):
    run_workload(tmp_path, format="shards")
    shard = next((tmp_path / "data" / "formats" / "shards").rglob("shard-000000.tar"))
    written_at = shard.stat().st_mtime_ns
    ctx, _ = run_workload(tmp_path, format="shards", parallel_stagers=2)
    assert shard.stat().st_mtime_ns == written_at
    m = ctx.metrics
    assert m["stagers"] == 2
    assert m["stage_s_max"] >= m["stage_s_median"] > 0
    assert m["stage_s"] == m["stage_s_max"]


def test_workload_reads_an_extracted_tar_as_a_folder(tmp_path):
    ctx, phases = run_workload(tmp_path, format="tar", extract_tar=True, shuffle=True)
    assert phases["stream"].samples + phases["first batch"].samples == 300


def test_workload_without_staging_reads_the_source(tmp_path):
    ctx, phases = run_workload(tmp_path, format="folder", stage=False)
    assert "stage" not in phases and "stage_s" not in ctx.metrics
    assert ctx.metrics["samples_per_s"] > 0


def test_workload_cold_read_evicts_outside_the_timed_phases(tmp_path):
    warm, warm_phases = run_workload(tmp_path, format="shards")
    cold, cold_phases = run_workload(tmp_path, format="shards", cache="cold")
    assert [(p.name, p.kind) for p in cold.phases] == [
        ("write", "data"),
        ("evict page cache", "other"),  # the source, before staging
        ("stage", "data"),
        ("evict page cache", "other"),  # the staged copy, before the first batch
        ("first batch", "epoch"),
        ("stream", "epoch"),
    ]
    assert warm.metrics["cold_read"] == 0 and "evicted_mb" not in warm.metrics
    assert cold.metrics["cold_read"] == 1
    # the source and the staged copy: twice the data set
    assert cold.metrics["evicted_mb"] == pytest.approx(2 * cold.metrics["dataset_mb"])
    assert cold.metrics["evicted_mb"] > 0
    assert set(cold.metrics) == set(warm.metrics) | {"evicted_mb"}
    assert cold_phases["first batch"].samples == warm_phases["first batch"].samples == 64
    assert cold_phases["stream"].samples == warm_phases["stream"].samples == 300 - 64
    read_s = cold_phases["first batch"].seconds + cold_phases["stream"].seconds
    assert cold.metrics["samples_per_s"] == pytest.approx(300 / read_s)
    assert cold.metrics["time_to_first_batch_s"] == cold_phases["first batch"].seconds
    assert 0 < cold.metrics["stage_s"] <= cold_phases["stage"].seconds
    assert not list(tmp_path.glob("scalestudy-formats-*"))


def test_workload_cold_read_without_staging_evicts_the_source_once(tmp_path):
    ctx, phases = run_workload(tmp_path, format="folder", stage=False, cache="cold")
    assert [p.name for p in ctx.phases] == ["write", "evict page cache", "first batch", "stream"]
    assert phases["evict page cache"].kind == "other"
    assert ctx.metrics["evicted_mb"] == pytest.approx(ctx.metrics["dataset_mb"])
    assert ctx.metrics["cold_read"] == 1 and ctx.metrics["files"] == 300


def test_workload_refuses_an_unknown_cache_mode(tmp_path):
    with pytest.raises(ValueError, match=r"params\.cache: 'lukewarm' is not one of"):
        run_workload(tmp_path, cache="lukewarm")


def formats_config(**params) -> dict:
    study = {
        "workload": "data_formats",
        "params": {"images": 300, "format": "folder"} | params,
        "scaling": {"axis": "threads", "points": [1]},
    }
    return {"studies": {"formats": study}}


def test_schema_knows_the_cache_modes():
    config = validated(formats_config(cache="cold"))
    assert config["studies"]["formats"]["params"]["cache"] == "cold"
    config = validated(formats_config())
    assert config["studies"]["formats"]["params"]["cache"] == "warm"
    message = config_error(formats_config(cache="lukewarm"))
    assert "studies.formats.params.cache: 'lukewarm' is not one of ['warm', 'cold']" in message
