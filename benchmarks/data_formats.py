"""Cold reads of one image set as a folder of small files, one tar, and WebDataset shards.

Writes --files samples of --image-bytes random bytes (default 20,000 x 3072 B, a
CIFAR-sized raw image each) in the three formats of the data_formats workload
(workloads/data_formats/formats.py), then, for --rounds rounds, drops the page
cache before each read and reads each format cold from disk, alternating the
order every round. Prints the median samples/s
of each reader and the ratios over the folder read in name order (its best
case; "folder shuffled" reads the files in random order, as a shuffled Dataset
does). The goal: shards >= 3x the folder.

The page cache is dropped with `sync; echo 3 > /proc/sys/vm/drop_caches` (needs
root). Without root it falls back to posix_fadvise(DONTNEED) on every data file,
which evicts file contents but not the cached directory entries and inodes, so
the folder then looks faster than truly cold; the output says which was used.

Run from the repository root:
  .venv/bin/python -m benchmarks.data_formats [--files 20000 --rounds 3 --dir PATH]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.common import REPO
from workloads.data_formats import formats


def drop_caches(files: list[Path]) -> str:
    """Evict the page cache; return how."""
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return "sync; echo 3 > /proc/sys/vm/drop_caches"
    except OSError as e:
        for path in files:
            fd = os.open(path, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
        return f"posix_fadvise(DONTNEED) per file (drop_caches failed: {e}); inodes stay cached"


def consume(samples) -> int:
    n = 0
    for image, _label in samples:
        n += 1 if image else 0
    return n


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=20000)
    parser.add_argument("--image-bytes", type=int, default=3072)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--dir", default=None, help="where to write the data (default: a temporary folder)"
    )
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="formats-bench-", dir=args.dir or REPO / "data"))
    try:
        rng = np.random.default_rng(1)
        pixels = rng.integers(0, 256, size=(args.files, args.image_bytes), dtype=np.uint8)
        images = [row.tobytes() for row in pixels]
        labels = rng.integers(0, 10, size=args.files).tolist()
        t0 = time.perf_counter()
        folder = formats.write("folder", images, labels, root / "images")
        tar = formats.write("tar", images, labels, root / "images")
        shards = formats.write("shards", images, labels, root / "shards", shards=args.shards)
        print(
            f"wrote {args.files} samples x {args.image_bytes} B in {time.perf_counter() - t0:.1f} s"
        )
        files = {
            "folder": formats.data_files("folder", folder),
            "tar": formats.data_files("tar", tar),
            "shards": formats.data_files("shards", shards),
        }
        every_file = [p for group in files.values() for p in group]
        for name, group in files.items():
            mb = sum(p.stat().st_size for p in group) / 1e6
            print(f"  {name}: {len(group)} file(s), {mb:.1f} MB")
        readers = {
            "folder": lambda: formats.read_folder(folder),
            "folder shuffled": lambda: formats.read_folder(folder, shuffle_seed=1),
            "tar (tarfile)": lambda: formats.read_tar(tar, reader="tarfile"),
            "tar (fast)": lambda: formats.read_tar(tar, reader="fast"),
            "shards": lambda: formats.read_shards(shards),
        }
        rates = {name: [] for name in readers}
        how = None
        order = list(readers.items())
        for k in range(args.rounds):
            for name, make in order if k % 2 == 0 else reversed(order):
                how = drop_caches(every_file)
                start = time.perf_counter()
                n = consume(make())
                seconds = time.perf_counter() - start
                if n != args.files:
                    raise RuntimeError(f"{name} read {n} samples, not {args.files}")
                rates[name].append(n / seconds)
        print(f"cache dropped before every read with: {how}")
        print(f"cold reads, median of {args.rounds} alternating rounds:")
        median = {name: statistics.median(r) for name, r in rates.items()}
        for name, rate in median.items():
            spread = ", ".join(f"{r:.0f}" for r in rates[name])
            print(f"  {name:16s} {rate:10.0f} samples/s   (rounds: {spread})")
        base = median["folder"]
        for name in ("shards", "tar (tarfile)", "tar (fast)", "folder shuffled"):
            print(f"ratio {name}/folder: {median[name] / base:.2f}x")
        verdict = "met" if median["shards"] / base >= 3 else "NOT met"
        print(f"goal shards >= 3x folder: {verdict}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
