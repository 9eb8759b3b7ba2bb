"""Data preparation: local copies verified by md5, damage refused, clear message when missing."""

import gzip
import json
import shutil

import pytest

from scalestudy.compute import data
from tests.conftest import FASHION_DIR

needs_fashion = pytest.mark.skipif(
    not FASHION_DIR.is_dir(), reason="Debian's dataset-fashion-mnist is not installed"
)


@pytest.fixture(scope="session")
def fashion_root(tmp_path_factory):
    """Fashion-MNIST prepared once for the whole session, as the workflow would."""
    if not FASHION_DIR.is_dir():
        pytest.skip("Debian's dataset-fashion-mnist is not installed")
    root = tmp_path_factory.mktemp("data") / "fashion_mnist"
    data.prepare("fashion_mnist", [str(FASHION_DIR)], root, root / "ready.json")
    return root


@needs_fashion
def test_prepare_from_debian_copy(fashion_root):
    info = json.loads((fashion_root / "ready.json").read_text())
    assert info["source"] == str(FASHION_DIR)
    assert {f["verified_by"] for f in info["files"].values()} == {"md5 of the uncompressed file"}
    import torchvision

    ds = torchvision.datasets.FashionMNIST(str(fashion_root), train=False, download=False)
    assert len(ds) == 10000 and tuple(ds.data.shape[1:]) == (28, 28)


@needs_fashion
def test_prepared_splits_are_the_source_data(fashion_root):
    """The tensor files a run maps hold the IDX files' own images and labels, only
    normalised, read here from the files' bytes without torchvision."""
    import numpy as np
    import torch

    raw = fashion_root / "FashionMNIST" / "raw"
    for split, prefix in (("train", "train"), ("test", "t10k")):
        images, labels = data.load_prepared(fashion_root, split)
        pixels = np.frombuffer((raw / f"{prefix}-images-idx3-ubyte").read_bytes()[16:], np.uint8)
        source = torch.from_numpy(pixels.copy()).view(-1, 28, 28)
        assert torch.equal(images, data.normalised("fashion_mnist", source))
        source_labels = np.frombuffer(
            (raw / f"{prefix}-labels-idx1-ubyte").read_bytes()[8:], np.uint8
        )
        assert torch.equal(labels, torch.from_numpy(source_labels.astype(np.int64)))


def test_a_data_set_prepared_without_tensor_files_says_what_to_do(tmp_path):
    with pytest.raises(data.DataError, match="train.pt is missing.*run the workflow again"):
        data.load_prepared(tmp_path, "train")


@needs_fashion
def test_damaged_copy_is_refused(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(FASHION_DIR, src)
    labels = src / "t10k-labels-idx1-ubyte.gz"
    raw = bytearray(gzip.decompress(labels.read_bytes()))
    raw[100] ^= 0xFF
    labels.write_bytes(gzip.compress(bytes(raw)))
    root = tmp_path / "out"
    with pytest.raises(data.DataError, match="md5 does not match"):
        data.prepare("fashion_mnist", [str(src)], root, root / "ready.json")
    assert not (root / "ready.json").exists()


def test_missing_data_says_how_to_get_it(tmp_path, monkeypatch):
    def offline(dataset, root):
        raise OSError("network is unreachable")

    monkeypatch.setattr(data, "download", offline)
    root = tmp_path / "mnist"
    with pytest.raises(data.DataError) as info:
        data.prepare("mnist", [str(tmp_path / "nowhere")], root, root / "ready.json")
    message = str(info.value)
    assert "MNIST is not available" in message
    assert "train-images-idx3-ubyte.gz" in message and "data_sources.mnist" in message
    assert "network is unreachable" in message
    assert not (root / "ready.json").exists()


def test_idx_header_is_checked(tmp_path):
    path = tmp_path / "t10k-labels-idx1-ubyte"
    path.write_bytes(b"\x00\x00\x08\x01\x00\x00\x00\x05")
    with pytest.raises(data.DataError, match="IDX header"):
        data.check_idx(path)


def test_the_data_set_names_are_the_data_modules():
    """The prepared data sets are written once (scalestudy.compute.data.DATASETS); the
    literals that must repeat their names, the config schema's data_sources and the
    `dataset` enum of each workload that reads them, agree with it."""
    import yaml

    import workloads
    from scalestudy.compute.data import DATASETS
    from tests.conftest import SCHEMA

    schema = yaml.safe_load(SCHEMA.read_text())
    assert list(schema["properties"]["data_sources"]["properties"]) == list(DATASETS)
    readers = {
        name: w.params["properties"]["dataset"]
        for name, w in workloads.discover().items()
        if "dataset" in w.params.get("properties", {})
    }
    prepared = {
        name: spec["enum"] for name, spec in readers.items() if set(spec["enum"]) & set(DATASETS)
    }
    assert set(prepared) == {"mnist_cnn", "lightning_autoencoder"}
    assert all(enum == list(DATASETS) for enum in prepared.values()), prepared
