"""Data preparation, done once by a local rule before any timed job (docs/measuring.md).

Files come from a local folder that has them (data_sources), else from torchvision's
download, each checked against a reference md5; each split is then written once more,
normalised, as a tensor file that a run maps into memory (load_prepared), so its data
phase takes milliseconds instead of the seconds torchvision's parsing takes.
"""

import gzip
import hashlib
import shutil
import struct
from pathlib import Path

from scalestudy.records import write_json_atomic

# The data sets the workflow prepares, written here once: name -> torchvision's class
# of it, and the per-channel mean and std of its training images (normalisation).
# Where a name must be written again as a literal (the config schema's data_sources, a
# workload's params enum: neither can import this), tests/test_data.py checks it.
DATASETS = {
    "mnist": {"class": "MNIST", "mean": 0.1307, "std": 0.3081},
    "fashion_mnist": {"class": "FashionMNIST", "mean": 0.2860, "std": 0.3530},
}
CLASS_NAMES = {name: d["class"] for name, d in DATASETS.items()}

# md5 of the uncompressed IDX files, for copies whose .gz differs from the
# original archive (Debian recompresses them). Measured from Debian's
# dataset-fashion-mnist; its .gz files decompress to the original data.
UNCOMPRESSED_MD5 = {
    "fashion_mnist": {
        "train-images-idx3-ubyte": "f4a8712d7a061bf5bd6d2ca38dc4d50a",
        "train-labels-idx1-ubyte": "9018921c3c673c538a1fc5bad174d6f9",
        "t10k-images-idx3-ubyte": "8181f5470baa50b63fa0f6fddb340f0a",
        "t10k-labels-idx1-ubyte": "15d484375f8d13e6eb1aabb0c3f46965",
    },
}

# (magic, item count) of each IDX file: a structural check that holds for
# every copy of either data set.
IDX_SHAPES = {
    "train-images-idx3-ubyte": (2051, 60000),
    "train-labels-idx1-ubyte": (2049, 60000),
    "t10k-images-idx3-ubyte": (2051, 10000),
    "t10k-labels-idx1-ubyte": (2049, 10000),
}


# The prepared tensor file of each split, under the data set's root; what
# load_prepared maps into memory (rules/data.smk names them as the rule's outputs).
PREPARED_FILES = {"train": "train.pt", "test": "test.pt"}


class DataError(RuntimeError):
    pass


def md5(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "md5").hexdigest()


def torchvision_class(dataset: str):
    import torchvision.datasets

    return getattr(torchvision.datasets, CLASS_NAMES[dataset])


def check_idx(path: Path, name: str | None = None) -> None:
    name = name or path.name
    with open(path, "rb") as f:
        header = f.read(8)
    if len(header) < 8:
        raise DataError(f"{path}: truncated IDX file")
    magic, count = struct.unpack(">II", header)
    if (magic, count) != IDX_SHAPES[name]:
        raise DataError(f"{path}: IDX header {magic}/{count} is not {IDX_SHAPES[name]}")


def find_local_copy(dataset: str, sources: list[str]) -> Path | None:
    """The first source folder holding all four files (.gz or uncompressed)."""
    for folder in map(Path, sources):
        if all((folder / f"{n}.gz").is_file() or (folder / n).is_file() for n in IDX_SHAPES):
            return folder
    return None


def place_from_folder(dataset: str, folder: Path, raw: Path) -> dict[str, str]:
    """Copy (decompressing) into raw/; return how each file was verified."""
    gz_md5 = dict(torchvision_class(dataset).resources)  # torchvision's, of the original .gz
    known = UNCOMPRESSED_MD5.get(dataset, {})
    how = {}
    raw.mkdir(parents=True, exist_ok=True)
    for name in IDX_SHAPES:
        target = raw / name
        tmp = raw / f".{name}.tmp"
        gz = folder / f"{name}.gz"
        if gz.is_file():
            original = md5(gz) == gz_md5[f"{name}.gz"]
            with gzip.open(gz, "rb") as src, open(tmp, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
        else:
            original = False
            shutil.copyfile(folder / name, tmp)
        if original:
            how[name] = "md5 of the original .gz (torchvision's reference)"
        elif name in known:
            if md5(tmp) != known[name]:
                tmp.unlink()
                raise DataError(
                    f"{folder / name}: md5 does not match the reference for {dataset}; "
                    "the copy is damaged or is another data set"
                )
            how[name] = "md5 of the uncompressed file"
        else:
            how[name] = "IDX header only (no reference md5 for this copy)"
        check_idx(tmp, name)
        tmp.replace(target)
    return how


def download(dataset: str, root: Path) -> dict[str, str]:
    # torchvision checks the md5 of what it downloads
    torchvision_class(dataset)(root=str(root), train=True, download=True)
    return dict.fromkeys(IDX_SHAPES, "md5 checked by torchvision's download")


def how_to_get(dataset: str, sources: list[str], root: Path) -> str:
    cls = torchvision_class(dataset)
    files = ", ".join(name for name, _ in cls.resources)
    debian = "apt-get install dataset-fashion-mnist (Debian) or "
    hint = debian if dataset == "fashion_mnist" else ""
    return (
        f"{CLASS_NAMES[dataset]} is not available: no local copy in {sources or '[]'} and the "
        f"download failed. To get it: {hint}download {files} from {cls.mirrors[0]} into one "
        f"of the folders listed under data_sources.{dataset} in config/config.yaml (or into "
        f"{root / CLASS_NAMES[dataset] / 'raw'}), then run the workflow again."
    )


def normalised(dataset: str, images):
    """Images of `dataset` (uint8, N x 28 x 28) as the (N, 1, 28, 28) floats a
    workload trains on: scaled to [0, 1], then by the training set's mean and std."""
    mean, std = DATASETS[dataset]["mean"], DATASETS[dataset]["std"]
    return images.unsqueeze(1).float().div_(255).sub_(mean).div_(std)


def write_prepared(dataset: str, root: Path) -> dict[str, dict]:
    """Each split from the raw IDX files under `root` into its tensor file, atomically."""
    import torch

    written = {}
    for split, name in PREPARED_FILES.items():
        ds = torchvision_class(dataset)(root=str(root), train=split == "train", download=False)
        target = Path(root) / name
        tmp = target.with_name(f".{name}.tmp")
        torch.save({"images": normalised(dataset, ds.data), "labels": ds.targets.clone()}, tmp)
        tmp.replace(target)
        written[split] = {"file": name, "md5": md5(target)}
    return written


def load_prepared(root: Path, split: str):
    """(images, labels) of a prepared split, mapped into memory: pages are read when
    a batch first touches them, so loading costs no copy of the file."""
    import torch

    path = Path(root) / PREPARED_FILES[split]
    if not path.is_file():
        raise DataError(
            f"{path} is missing: the data set is not prepared, or was by a version before "
            "its tensor files; run the workflow again (its prepare_data step writes them)"
        )
    tensors = torch.load(path, mmap=True, weights_only=True)
    return tensors["images"], tensors["labels"]


def prepare(dataset: str, sources: list[str], root: Path, marker: Path) -> dict:
    """Make `dataset` readable by torchvision under `root`; write `marker` when done."""
    root = Path(root)
    raw = root / CLASS_NAMES[dataset] / "raw"
    folder = find_local_copy(dataset, sources)
    if folder is not None:
        how, source = place_from_folder(dataset, folder, raw), str(folder)
    else:
        try:
            how, source = download(dataset, root), "torchvision download"
        except Exception as e:  # no network, mirror down, bad md5: all end here
            raise DataError(how_to_get(dataset, sources, root) + f" (download error: {e})") from e
        for name in IDX_SHAPES:
            check_idx(raw / name)
    info = {
        "dataset": dataset,
        "source": source,
        "root": str(root),
        "files": {name: {"md5": md5(raw / name), "verified_by": how[name]} for name in IDX_SHAPES},
        "prepared": write_prepared(dataset, root),
    }
    write_json_atomic(marker, info)
    return info
