"""One image set in three storage formats: write, stage to node-local scratch, read back.

The I/O of the data_formats workload (its run() is in __init__.py beside this file).
It imports the standard library only: stage_parallel runs this file as a script.

The payload of a sample is opaque bytes (the data-format workload uses raw
uint8 pixels, 32x32x3 = 3072 bytes, like a CIFAR image, so that nothing is
measured but I/O), and its label is a small integer. Keys are the sample's
index, zero-padded to 8 digits, so that name order is write order.

Formats
  folder  one small file per sample, ImageFolder layout: <dest>/<label>/<key>.bin.
          Read in sorted (label, key) order, which is not write order and is the
          folder's best case on disk, or shuffled (as a shuffled Dataset reads it).
  tar     that folder as one tar archive (members <stem>/<label>/<key>.bin, in the
          same sorted order), as `tar cf` would make it. Read with Python's tarfile in
          stream mode (reader="tarfile", what people usually write), or with the
          sequential parser below (reader="fast"); or staged with extract=True and read
          as a folder (the "copy the tar to $TMPDIR and untar it" practice).
  shards  a few tar files in WebDataset layout: <dest>/shard-000000.tar ..., each holding
          <key>.bin and <key>.cls (the label as ASCII digits) for a contiguous run of
          samples, in write order. Read with `iter_tar`, a sequential parser with large
          buffered reads and checksum checks, not tarfile: tarfile builds a TarInfo per
          member and was the bottleneck (2.6x over the folder, where >= 3x is wanted).

Staging copies a data set into a scratch folder on the node (`scratch_dir` says
which). It stops timing when the copy is in the page cache, without fsync: a job
reads its staged copy from there, and write-back to the local disk overlaps the
run.

The page cache: `evict_from_page_cache` drops the cached contents of a data set's
files, so that the next read of them comes from the disk (a cold read) without
root; see its docstring for what it cannot drop.
"""

from __future__ import annotations

import argparse
import errno
import io
import os
import random
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zlib
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

FORMATS = ("folder", "tar", "shards")
IMAGE_EXT = "bin"
LABEL_EXT = "cls"
BLOCK = 512
ZERO_BLOCK = bytes(BLOCK)
CHECKSUM_SPACES = b" " * 8
READ_BUFFER = 1 << 20  # large reads: one syscall per MiB, and readahead keeps up


def key_of(index: int) -> str:
    return f"{index:08d}"


def _check(images: Sequence[bytes], labels: Sequence[int]) -> None:
    if len(images) != len(labels):
        raise ValueError(f"{len(images)} images but {len(labels)} labels")


def _tarinfo(name: str, size: int) -> tarfile.TarInfo:
    # fixed metadata: the same samples give the same archive bytes
    info = tarfile.TarInfo(name)
    info.size = size
    info.mtime = 0
    info.mode = 0o644
    info.uname = info.gname = ""
    return info


def _add(tf: tarfile.TarFile, name: str, payload: bytes) -> None:
    tf.addfile(_tarinfo(name, len(payload)), io.BytesIO(payload))


def folder_order(labels: Sequence[int]) -> list[int]:
    """Sample indices in the order the folder (and the tar of it) are read: by label, then key."""
    return sorted(range(len(labels)), key=lambda i: (str(labels[i]), key_of(i)))


def write_folder(images: Sequence[bytes], labels: Sequence[int], dest: str | os.PathLike) -> Path:
    """One file per sample, <dest>/<label>/<key>.bin."""
    _check(images, labels)
    dest = Path(dest)
    for label in sorted(set(labels)):
        (dest / str(label)).mkdir(parents=True, exist_ok=True)
    for i, (image, label) in enumerate(zip(images, labels, strict=True)):
        (dest / str(label) / f"{key_of(i)}.{IMAGE_EXT}").write_bytes(image)
    return dest


def write_tar(images: Sequence[bytes], labels: Sequence[int], dest: str | os.PathLike) -> Path:
    """The folder layout as one archive, rooted at <stem>/ so that extracting it in a
    folder gives <folder>/<stem>/<label>/<key>.bin."""
    _check(images, labels)
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    root = dest.name.removesuffix(".tar")
    with tarfile.open(dest, "w", format=tarfile.USTAR_FORMAT) as tf:
        for i in folder_order(labels):
            _add(tf, f"{root}/{labels[i]}/{key_of(i)}.{IMAGE_EXT}", images[i])
    return dest


def shard_name(index: int) -> str:
    return f"shard-{index:06d}.tar"


def write_shards(
    images: Sequence[bytes], labels: Sequence[int], dest: str | os.PathLike, shards: int = 4
) -> list[Path]:
    """`shards` tar files of contiguous samples in WebDataset layout ({key}.bin, {key}.cls)."""
    _check(images, labels)
    if shards < 1:
        raise ValueError(f"shards must be at least 1, not {shards}")
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    n = len(images)
    shards = min(shards, max(n, 1))
    paths = []
    for s in range(shards):
        lo, hi = s * n // shards, (s + 1) * n // shards
        path = dest / shard_name(s)
        with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as tf:
            for i in range(lo, hi):
                _add(tf, f"{key_of(i)}.{IMAGE_EXT}", images[i])
                _add(tf, f"{key_of(i)}.{LABEL_EXT}", str(int(labels[i])).encode())
        paths.append(path)
    return paths


def write(fmt: str, images, labels, dest: str | os.PathLike, shards: int = 4) -> Path:
    """Write in `fmt`; return what a reader or stage() takes (a folder, or the .tar)."""
    if fmt == "folder":
        return write_folder(images, labels, dest)
    if fmt == "tar":
        return write_tar(images, labels, Path(dest).with_suffix(".tar"))
    if fmt == "shards":
        write_shards(images, labels, dest, shards)
        return Path(dest)
    raise ValueError(f"format must be one of {FORMATS}, not {fmt!r}")


# --- reading -------------------------------------------------------------------------


def read_folder(
    path: str | os.PathLike, shuffle_seed: int | None = None
) -> Iterator[tuple[bytes, int]]:
    """(image, label) for every <label>/<key>.bin, in sorted (label, key) order, or in a
    random order from `shuffle_seed` (what a shuffled map-style Dataset reads)."""
    with os.scandir(path) as it:
        label_dirs = sorted((e.name, e.path) for e in it if e.is_dir() and e.name.isdigit())
    files = []
    for label, folder in label_dirs:
        with os.scandir(folder) as it:
            names = sorted(e.path for e in it if e.name.endswith(f".{IMAGE_EXT}"))
        value = int(label)
        files += [(name, value) for name in names]
    if shuffle_seed is not None:
        random.Random(shuffle_seed).shuffle(files)
    for file, value in files:
        # unbuffered: one open, one fstat, one read per file and no copy
        with open(file, "rb", buffering=0) as f:
            yield f.readall(), value


def _octal(field: bytes) -> int:
    if field[0] & 0x80:  # GNU base-256 for sizes of 8 GiB and more
        return int.from_bytes(field[1:], "big")
    field = field.split(b"\0", 1)[0].strip()
    return int(field, 8) if field else 0


def _number(field: bytes, digits: int) -> int:
    """A numeric header field. tar, GNU tar and Python write `digits` octal digits and
    a NUL or space; parsing just those skips the general case's work."""
    if field[digits] in (0, 32):
        try:
            return int(field[:digits], 8)
        except ValueError:
            pass
    return _octal(field)


def _checksum_ok(header: bytes) -> bool:
    """tar's checksum: the sum of the header's bytes with the checksum field as spaces.

    Computed with zlib.adler32, whose low half is (1 + that sum) mod 65521, in C: six
    times faster than sum(header), which was half the shard reader's time. A damaged
    header passes only if its sum moved by a multiple of 65521 (over 256 bytes changed).
    """
    adler = zlib.adler32(header[156:], zlib.adler32(CHECKSUM_SPACES, zlib.adler32(header[:148])))
    return (adler & 0xFFFF) == (1 + _number(header[148:156], 6)) % 65521


def _pax_path(data: bytes) -> str | None:
    # records are "<length> key=value\n"
    for line in data.decode("utf-8", "replace").splitlines():
        _, _, record = line.partition(" ")
        key, _, value = record.partition("=")
        if key == "path":
            return value
    return None


def iter_tar(path: str | os.PathLike) -> Iterator[tuple[str, bytes]]:
    """(name, content) of each regular file of a tar archive, in archive order.

    A sequential parser of ustar/GNU/pax headers that reads the file once, in large
    buffered reads; it checks every header's checksum, skips directories and links,
    and honours GNU long names and pax `path` records.
    """
    long_name = None
    with open(path, "rb", buffering=READ_BUFFER) as f:
        if hasattr(os, "posix_fadvise"):
            # a larger readahead window for a file read once from start to end
            os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_SEQUENTIAL)
        read = f.read
        while True:
            header = read(BLOCK)
            if len(header) < BLOCK:
                if header:
                    raise ValueError(f"{path}: truncated tar header")
                return
            if header == ZERO_BLOCK:
                return  # end-of-archive marker
            if not _checksum_ok(header):
                raise ValueError(f"{path}: bad tar header checksum")
            size = _number(header[124:136], 11)
            data = read(size)
            if len(data) < size:
                raise ValueError(f"{path}: truncated tar member")
            pad = -size % BLOCK
            if pad:
                read(pad)
            kind = header[156:157]
            if kind == b"L":
                long_name = data.rstrip(b"\0").decode()
                continue
            if kind in (b"x", b"g"):
                if kind == b"x":
                    long_name = _pax_path(data) or long_name
                continue
            if long_name is not None:
                name, long_name = long_name, None
            else:
                name = header[:100].split(b"\0", 1)[0].decode()
                if header[257:262] == b"ustar":
                    prefix = header[345:500].split(b"\0", 1)[0].decode()
                    if prefix:
                        name = f"{prefix}/{name}"
            if kind in (b"0", b"\0", b"7"):
                yield name, data


def _label_from_name(name: str) -> int:
    # <stem>/<label>/<key>.bin
    return int(name.rsplit("/", 2)[-2])


def read_tar(path: str | os.PathLike, reader: str = "tarfile") -> Iterator[tuple[bytes, int]]:
    """(image, label) from the single archive, in archive order, label from the folder name.

    reader="tarfile": the standard library in stream mode ("r|"), one pass, no seeks;
    reader="fast": `iter_tar`.
    """
    suffix = f".{IMAGE_EXT}"
    if reader == "fast":
        for name, data in iter_tar(path):
            if name.endswith(suffix):
                yield data, _label_from_name(name)
        return
    if reader != "tarfile":
        raise ValueError(f"reader must be 'tarfile' or 'fast', not {reader!r}")
    with open(path, "rb", buffering=READ_BUFFER) as f, tarfile.open(fileobj=f, mode="r|") as tf:
        for member in tf:
            if member.isfile() and member.name.endswith(suffix):
                yield tf.extractfile(member).read(), _label_from_name(member.name)


def iter_samples(members: Iterator[tuple[str, bytes]]) -> Iterator[dict]:
    """Group consecutive members with the same key into WebDataset samples:
    {"__key__": key, ext: content, ...}; the key is the name up to the first dot of
    its last path component."""
    sample = None
    for name, data in members:
        folder, _, base = name.rpartition("/")
        stem, _, ext = base.partition(".")
        key = f"{folder}/{stem}" if folder else stem
        if sample is None or sample["__key__"] != key:
            if sample is not None:
                yield sample
            sample = {"__key__": key}
        sample[ext] = data
    if sample is not None:
        yield sample


def shard_paths(path: str | os.PathLike) -> list[Path]:
    return sorted(Path(path).glob("shard-*.tar"))


def read_shards(
    path: str | os.PathLike, shuffle_seed: int | None = None
) -> Iterator[tuple[bytes, int]]:
    """(image, label) of every sample of every shard, shards in name order (write order),
    or the shards in a random order from `shuffle_seed` (samples stay in shard order;
    WebDataset adds a shuffle buffer in memory on top, which costs no I/O)."""
    shards = shard_paths(path)
    if not shards:
        raise FileNotFoundError(f"{path}: no shard-*.tar files")
    if shuffle_seed is not None:
        random.Random(shuffle_seed).shuffle(shards)
    for shard in shards:
        for sample in iter_samples(iter_tar(shard)):
            try:
                yield sample[IMAGE_EXT], int(sample[LABEL_EXT])
            except KeyError as e:
                raise ValueError(f"{shard}: sample {sample['__key__']} has no .{e.args[0]}") from e


def reader(fmt: str, path: str | os.PathLike, **options) -> Iterator[tuple[bytes, int]]:
    """The reader of a format; an extracted tar (a folder) is read with fmt="folder".
    Options: shuffle_seed (folder, shards), reader (tar)."""
    if fmt == "folder":
        return read_folder(path, **options)
    if fmt == "tar":
        return read_tar(path, **options)
    if fmt == "shards":
        return read_shards(path, **options)
    raise ValueError(f"format must be one of {FORMATS}, not {fmt!r}")


def data_files(fmt: str, path: str | os.PathLike) -> list[Path]:
    """Every file a format consists of (for sizes, and to evict them from the cache)."""
    path = Path(path)
    if fmt == "tar":
        return [path]
    if fmt == "shards":
        return shard_paths(path)
    return sorted(p for p in path.rglob(f"*.{IMAGE_EXT}"))


# --- staging -------------------------------------------------------------------------


def scratch_dir(configured: str | os.PathLike | None = None, environ=os.environ) -> Path:
    """Node-local scratch, first of: `configured` (the workload's `scratch` param),
    $SLURM_TMPDIR (a per-job folder on sites that provide one), $TMPDIR (what most
    Slurm sites point at local disk for the job), the system temporary folder."""
    for candidate in (configured, environ.get("SLURM_TMPDIR"), environ.get("TMPDIR")):
        if candidate:
            path = Path(candidate)
            break
    else:
        path = Path(tempfile.gettempdir())
    if not path.is_dir():
        raise FileNotFoundError(f"scratch folder {path} does not exist")
    return path


def staged_path(
    source: str | os.PathLike, scratch: str | os.PathLike, fmt: str, extract: bool = False
) -> Path:
    """Where stage() puts the data: scratch/<name>; an extracted tar is the folder
    scratch/<stem> (read it with fmt="folder")."""
    source = Path(source)
    if fmt == "tar" and extract:
        return Path(scratch) / source.name.removesuffix(".tar")
    return Path(scratch) / source.name


def stage(
    source: str | os.PathLike, scratch: str | os.PathLike, fmt: str, extract: bool = False
) -> float:
    """Copy a data set into `scratch` (and extract a tar when `extract`); return seconds."""
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, not {fmt!r}")
    source, scratch = Path(source), Path(scratch)
    scratch.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    target = scratch / source.name
    if fmt == "tar":
        shutil.copyfile(source, target)
        if extract:
            with tarfile.open(target) as tf:
                tf.extractall(scratch, filter="data")
            target.unlink()  # as a job would, to keep scratch small
    else:
        # copyfile, not copy2: data only, as `cp -r` without -p
        shutil.copytree(source, target, copy_function=shutil.copyfile)
    return time.perf_counter() - start


def stage_parallel(
    source: str | os.PathLike,
    scratch: str | os.PathLike,
    fmt: str,
    k: int,
    extract: bool = False,
    timeout_s: float = 3600,
) -> list[float]:
    """k stagings of the same source at once, into scratch/stager<i>/; seconds of each.

    Each staging runs in its own process, `python formats.py stage ...` (this file):
    k jobs staging on one node are k processes, and a folder copy is mostly Python
    work per file, which threads would serialise on the GIL. Plain subprocesses,
    not multiprocessing: spawn re-imports the caller's main module and fork copies
    its threads' locks (torch's pools). Every process starts, imports, then waits
    for a line on stdin; all are released together, so the copies overlap and
    start-up is in none of the times.
    """
    if k < 1:
        raise ValueError(f"k must be at least 1, not {k}")
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, not {fmt!r}")
    targets = [Path(scratch) / f"stager{i}" for i in range(k)]
    if k == 1:
        return [stage(source, targets[0], fmt, extract)]
    # this file as a script: it needs the standard library only, and `-m` would first
    # import the workload package around it (numpy, telemetry) in every stager
    script = str(Path(__file__).resolve())
    procs = []
    try:
        for target in targets:
            cmd = [sys.executable, script, "stage", str(source), str(target), fmt]
            cmd += ["--extract"] if extract else []
            procs.append(
                subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            )
        for proc in procs:  # every child is ready when it has printed "ready"
            if proc.stdout.readline().strip() != "ready":
                raise RuntimeError(f"stager did not start: {' '.join(proc.args)}")
        for proc in procs:
            proc.stdin.write("go\n")
            proc.stdin.flush()
        seconds = []
        for i, proc in enumerate(procs):
            out, _ = proc.communicate(timeout=timeout_s)
            if proc.returncode != 0:
                raise RuntimeError(f"stager {i} failed (exit {proc.returncode}); see stderr")
            seconds.append(float(out.strip().splitlines()[-1]))
        return seconds
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


# --- the page cache ------------------------------------------------------------------


def _evict_file(path: str) -> int:
    """fsync one file (dirty pages cannot be evicted), drop its pages; return its size."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        return os.fstat(fd).st_size
    finally:
        os.close(fd)


def evict_from_page_cache(
    paths: str | os.PathLike | Iterable[str | os.PathLike],
) -> dict:
    """Drop every regular file under `paths` (files, and folders walked recursively)
    from the page cache, so that the next read of them is from the disk; return
    {"files": how many, "bytes": their total size}.

    Each file is opened read-only, fsync'ed (dirty pages, such as those of a copy just
    written, cannot be evicted) and given posix_fadvise(POSIX_FADV_DONTNEED). This needs
    no root, unlike drop_caches, and touches only these files. It cannot drop: directory
    entries and inodes (opening many small files stays cheaper than truly cold), pages
    another process has mapped or locked, the disk's own cache, files on tmpfs (they
    live in memory), and a network file system's client may ignore the advice.
    Symbolic links inside folders are not followed. Every path is checked before
    anything is evicted: one that does not exist raises FileNotFoundError, one that is
    neither a regular file nor a folder ValueError.
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    paths = [os.fspath(path) for path in paths]
    if not hasattr(os, "posix_fadvise"):
        raise NotImplementedError("evicting from the page cache needs os.posix_fadvise (Linux)")
    folders, files = [], []
    for path in paths:
        if os.path.isdir(path):
            folders.append(path)
        elif os.path.isfile(path):
            files.append(path)
        elif not os.path.exists(path):
            raise FileNotFoundError(
                errno.ENOENT, "cannot evict from the page cache: no such file or folder", path
            )
        else:
            raise ValueError(f"{path}: not a regular file or a folder, cannot evict it")
    count = total = 0
    for path in files:
        total += _evict_file(path)
        count += 1
    while folders:  # one pass, depth first, with scandir's cached entry types
        with os.scandir(folders.pop()) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    folders.append(entry.path)
                elif entry.is_file(follow_symlinks=False):
                    total += _evict_file(entry.path)
                    count += 1
    return {"files": count, "bytes": total}


def main(argv=None) -> int:
    """`stage SOURCE TARGET FORMAT [--extract]`: print "ready", wait for a line on stdin,
    stage, print the seconds (the child of stage_parallel)."""
    parser = argparse.ArgumentParser(description="stage a data set (child of stage_parallel)")
    sub = parser.add_subparsers(dest="command", required=True)
    cmd = sub.add_parser("stage")
    cmd.add_argument("source")
    cmd.add_argument("target")
    cmd.add_argument("format", choices=FORMATS)
    cmd.add_argument("--extract", action="store_true")
    args = parser.parse_args(argv)
    print("ready", flush=True)
    sys.stdin.readline()
    print(stage(args.source, args.target, args.format, args.extract), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
