"""The same image set as a folder of small files, one tar, or WebDataset shards:
staging to node-local scratch, time to the first batch, streaming rate.

Samples: `images` random payloads of `image_bytes` bytes (default 3072: a raw
32x32x3 uint8 image, so that nothing but I/O and parsing is measured) with
labels 0-9, from `seed`. Formats and readers are those of formats.py beside this file.

Phases
  write        (kind data, not a result) the data set in `format`, under
               ctx.data_dir/formats/, written once and reused by later runs with the
               same images/image_bytes/shards/seed (written to a temporary name and
               renamed, so concurrent jobs never read a half-written set).
  stage        (kind data; metric stage_s) copy into a fresh folder under the scratch
               folder (`scratch`, else $SLURM_TMPDIR, else $TMPDIR, else the system's
               temporary folder), and extract it when the format is tar and
               `extract_tar` is set. With `parallel_stagers` k > 1, k copies run at
               once in k processes (formats.stage_parallel), like k jobs staging on
               one node; metrics stage_s_median, stage_s_max, stagers.
               stage_s is the slowest copy's own time; the phase also includes
               starting the k processes. With `stage` false, the stream reads the
               source directly.
  evict page cache
               (kind other, not a result; only with `cache: cold`; metric evicted_mb,
               the MB of both evictions) drop the source from the page cache before
               staging, and the copy to be read (the staged copy, or the source with
               `stage` false) after it; see "What this measures". Each eviction is a
               phase of its own, so that it is in no timed phase and no result.
  first batch  (kind epoch; metric time_to_first_batch_s) open the reader and read
               the first `batch_size` samples.
  stream       (kind epoch) the remaining samples. samples_per_s = all samples over
               first batch + stream.

`shuffle`: the folder (and an extracted tar) is read in a random file order, as
a shuffled map-style Dataset reads it; shards are read in a random shard order;
a tar archive read as one (extract_tar false) is always read in order. Without
it the folder is read class by class, its best case on disk.

With `train`, each batch is also decoded into a float tensor on ctx.device and
fed to a tiny model (one hidden layer of 64, SGD), and each step is split into
waiting (reading and decoding the batch, copying it to the device) and
computing (forward, backward, step, then a device synchronisation on CUDA):
metrics wait_s, compute_s, wait_fraction, final_loss. Labels are random, so the
loss says nothing about learning (read class by class, it even drops: each batch
holds one label).

What this measures, by `cache` (metric cold_read: 0 warm, 1 cold):
  warm  (the default) the staged copy was just written, so the stream usually
        reads it from the page cache, and staging reads the source from there too
        unless another node wrote it. The stream rate is thus the reader's own cost.
  cold  the data set's files are evicted from the page cache (fsync, then
        posix_fadvise DONTNEED on each file: formats.evict_from_page_cache,
        no root needed) before staging and again before the first batch, so that
        staging and the stream read from the disk. The limits: only this data set's
        clean pages are dropped (the fsync cleans them first); other processes' pages,
        directory entries and inodes stay cached (opening a folder's many small files
        is thus cheaper than truly cold, as in benchmarks/data_formats.py without
        root), the disk's own cache is untouched, files on tmpfs (a RAM-backed
        scratch, /dev/shm) cannot be evicted at all, and on network file systems (NFS,
        Lustre, GPFS) the client cache may not honour the advice.
        benchmarks/data_formats.py drops the whole page cache as root (echo 3 >
        /proc/sys/vm/drop_caches), inodes included.
"""

from __future__ import annotations

import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from scalestudy.compute.telemetry import gpu_telemetry
from workloads import complete
from workloads.data_formats import formats

WORKLOAD = {
    "distributed": False,
    "steps": False,
    "devices": ["cpu", "gpu"],
    "params": {
        "properties": {
            "format": {
                "description": "`folder` (one file per sample, ImageFolder layout), `tar` "
                "(that folder as one tar archive) or `shards` (a few tar files in WebDataset "
                "layout)",
                "enum": ["folder", "tar", "shards"],
                "default": "shards",
            },
            "images": {
                "description": "samples in the set",
                "type": "integer",
                "minimum": 1,
                "default": 10000,
            },
            "image_bytes": {
                "description": "raw payload per sample (3072 = 32×32×3 bytes)",
                "type": "integer",
                "minimum": 1,
                "default": 3072,
            },
            "shards": {
                "description": "shard files (`format: shards`)",
                "type": "integer",
                "minimum": 1,
                "default": 4,
            },
            "batch_size": {
                "description": "samples per batch",
                "type": "integer",
                "minimum": 1,
                "default": 64,
            },
            "scratch": {
                "description": "node-local scratch folder; `null` = `$SLURM_TMPDIR`, then "
                "`$TMPDIR`, then the system's temporary folder",
                "type": ["string", "null"],
                "default": None,
            },
            "seed": {
                "description": "seed of payloads and labels, and of the order with `shuffle`",
                "type": "integer",
                "default": 1,
            },
            "train": {
                "description": "also train a tiny model on the stream, to split waiting from "
                "computing",
                "type": "boolean",
                "default": False,
            },
            "parallel_stagers": {
                "description": "staging copies run at once (separate processes)",
                "type": "integer",
                "minimum": 1,
                "default": 1,
            },
            "stage": {
                "description": "`false` = stream straight from the source, without staging",
                "type": "boolean",
                "default": True,
            },
            "extract_tar": {
                "description": "`format: tar`: extract after staging and read it as a folder",
                "type": "boolean",
                "default": False,
            },
            "tar_reader": {
                "description": "reader of a tar read as one archive: `tarfile` (Python's "
                "tarfile in stream mode) or `fast` (the project's sequential parser)",
                "enum": ["tarfile", "fast"],
                "default": "fast",
            },
            "shuffle": {
                "description": "read the folder (and an extracted tar) in random file order, "
                "shards in random shard order; a tar read as one archive is always read in "
                "order. Without it the folder is read class by class, its best case on disk",
                "type": "boolean",
                "default": False,
            },
            "cache": {
                "description": "`warm` or `cold` (above)",
                "enum": ["warm", "cold"],
                "default": "warm",
            },
        },
    },
}


CLASSES = 10


def samples(count: int, image_bytes: int, seed: int) -> tuple[list[bytes], list[int]]:
    rng = np.random.default_rng(seed)
    pixels = rng.integers(0, 256, size=(count, image_bytes), dtype=np.uint8)
    return [row.tobytes() for row in pixels], rng.integers(0, CLASSES, size=count).tolist()


def source_path(p: dict, data_dir: Path) -> Path:
    """Where the data set of these parameters lives (and what stage() copies)."""
    name = f"{p['images']}x{p['image_bytes']}-seed{p['seed']}"
    if p["format"] == "shards":
        name += f"-{p['shards']}shards"
    base = Path(data_dir) / "formats" / p["format"] / name
    return base / "images.tar" if p["format"] == "tar" else base / "images"


def ensure_written(p: dict, data_dir: Path) -> Path:
    """Write the data set unless a complete one is there; return its path."""
    target = source_path(p, data_dir)
    done = target.parent / "complete.json"
    if done.exists():
        return target
    target.parent.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.parent.name}.", dir=target.parent.parent))
    try:
        images, labels = samples(p["images"], p["image_bytes"], p["seed"])
        formats.write(p["format"], images, labels, tmp / "images", shards=p["shards"])
        (tmp / "complete.json").write_text(json.dumps({k: p[k] for k in sorted(p)}))
        try:
            tmp.rename(target.parent)
        except OSError:
            if not done.exists():  # not another job's complete copy: a real failure
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def read_options(p: dict, read_fmt: str) -> dict:
    if read_fmt == "tar":
        return {"reader": p["tar_reader"]}
    return {"shuffle_seed": p["seed"]} if p["shuffle"] else {}


def stage_data(p: dict, source: Path, ctx, workdir: Path) -> tuple[str, Path]:
    """Stage as asked; return (format to read, path to read)."""
    extract = p["format"] == "tar" and bool(p["extract_tar"])
    read_fmt = "folder" if extract else p["format"]
    if not p["stage"]:
        return p["format"], source
    k = p["parallel_stagers"]
    with ctx.phase("stage", kind="data"):
        seconds = formats.stage_parallel(source, workdir, p["format"], k, extract=extract)
    ctx.metric("stage_s", max(seconds))
    ctx.metric("stage_s_median", statistics.median(seconds))
    ctx.metric("stage_s_max", max(seconds))
    ctx.metric("stagers", k)
    return read_fmt, formats.staged_path(source, workdir / "stager0", p["format"], extract)


def batched(iterator, size: int):
    batch = []
    for item in iterator:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


class TinyModel:
    """What a step of training costs, on the stream's own bytes."""

    def __init__(self, image_bytes: int, device, seed: int):
        import torch
        from torch import nn

        torch.manual_seed(seed)
        self.torch, self.device = torch, device
        self.model = nn.Sequential(
            nn.Linear(image_bytes, 64), nn.ReLU(), nn.Linear(64, CLASSES)
        ).to(device)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.01)

    def decode(self, batch):
        torch = self.torch
        raw = np.frombuffer(b"".join(image for image, _ in batch), dtype=np.uint8)
        x = torch.from_numpy(raw.reshape(len(batch), -1).astype(np.float32) / 255)
        y = torch.tensor([label for _, label in batch])
        return x.to(self.device), y.to(self.device)

    def step(self, x, y) -> float:
        self.optimizer.zero_grad()
        loss = self.torch.nn.functional.cross_entropy(self.model(x), y)
        loss.backward()
        self.optimizer.step()
        if self.device.type == "cuda":
            self.torch.cuda.synchronize(self.device)
        return loss.detach()


def stream(p: dict, read_fmt: str, path: Path, ctx, model: TinyModel | None) -> dict:
    """Read everything, the first batch in its own phase; with a model, train on it."""
    totals = {"samples": 0, "wait_s": 0.0, "compute_s": 0.0, "loss": None}

    def consume(batch, started):
        if model is None:
            totals["samples"] += len(batch)
            return
        x, y = model.decode(batch)
        t1 = time.perf_counter()
        loss = model.step(x, y)
        totals["wait_s"] += t1 - started
        totals["compute_s"] += time.perf_counter() - t1
        totals["samples"] += len(batch)
        totals["loss"] = loss

    with ctx.phase("first batch", kind="epoch") as first:
        t0 = time.perf_counter()
        batches = batched(
            formats.reader(read_fmt, path, **read_options(p, read_fmt)), p["batch_size"]
        )
        batch = next(batches, [])
        consume(batch, t0)
    first.samples = totals["samples"]
    with gpu_telemetry(ctx), ctx.phase("stream", kind="epoch") as rest:
        mark = time.perf_counter()
        for batch in batches:
            consume(batch, mark)
            mark = time.perf_counter()
    rest.samples = totals["samples"] - first.samples
    totals["first_s"], totals["stream_s"] = first.seconds, rest.seconds
    return totals


def evict(path: Path, ctx) -> int:
    """Drop a data set from the page cache in a phase of its own; return the bytes."""
    with ctx.phase("evict page cache", kind="other"):
        return formats.evict_from_page_cache(path)["bytes"]


def run(params: dict, ctx) -> None:
    p = complete(WORKLOAD, params)
    cold = p["cache"] == "cold"
    with ctx.phase("write", kind="data"):
        source = ensure_written(p, ctx.data_dir)
    scratch = formats.scratch_dir(p["scratch"])
    workdir = Path(tempfile.mkdtemp(prefix="scalestudy-formats-", dir=scratch))
    evicted = 0
    try:
        if cold and p["stage"]:
            evicted += evict(source, ctx)  # staging reads the source from disk
        read_fmt, path = stage_data(p, source, ctx, workdir)
        if cold:
            evicted += evict(path, ctx)  # the stream reads what it reads from disk
        model = TinyModel(p["image_bytes"], ctx.device, p["seed"]) if p["train"] else None
        totals = stream(p, read_fmt, path, ctx, model)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    record_metrics(p, source, totals, ctx)
    ctx.metric("cold_read", 1 if cold else 0)
    if cold:
        ctx.metric("evicted_mb", evicted / 1e6)


def record_metrics(p: dict, source: Path, totals: dict, ctx) -> None:
    if totals["samples"] != p["images"]:
        raise RuntimeError(f"read {totals['samples']} samples, wrote {p['images']}")
    read_s = totals["first_s"] + totals["stream_s"]
    files = formats.data_files(p["format"], source)
    ctx.metric("time_to_first_batch_s", totals["first_s"])
    ctx.metric("samples_per_s", totals["samples"] / read_s if read_s > 0 else None)
    ctx.metric("files", len(files))
    ctx.metric("dataset_mb", sum(f.stat().st_size for f in files) / 1e6)
    if p["train"]:
        wait, compute = totals["wait_s"], totals["compute_s"]
        ctx.metric("wait_s", wait)
        ctx.metric("compute_s", compute)
        ctx.metric("wait_fraction", wait / (wait + compute) if wait + compute > 0 else None)
        ctx.metric("final_loss", float(totals["loss"]))
