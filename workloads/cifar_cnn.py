"""The small CIFAR-10 CNN of PyTorch's "Training a classifier" tutorial, with the input
pipeline as the variable: where the data live and how batches reach the model.

Model, loss and optimiser are the tutorial's: conv 3-6-5, max-pool 2, conv 6-16-5,
max-pool 2, fc 400-120-84-10 with ReLU; cross-entropy; SGD lr 0.001, momentum 0.9.
Images are normalised as in the tutorial ((x - 0.5) / 0.5 per channel).

`placement`
  loader       a DataLoader over a per-sample Dataset (PIL image -> ToTensor ->
               Normalize, as in the tutorial), `num_workers` worker processes,
               `prefetch_factor` batches each in flight, shuffled.
  host_memory  the whole training set as one normalised tensor in host RAM, batches
               sliced from it with a shuffled index, then copied to the device.
  device       the same tensor on ctx.device, batches sliced there.

Data: CIFAR-10's training split from ctx.data_dir/"cifar10" (torchvision's
cifar-10-batches-py), read with download=False, never downloaded in a run.
When the files are absent, or `dataset` is "synthetic", a deterministic
synthetic set of the same shape (`synthetic_samples` x 3x32x32 uint8, 10
classes, a per-class pattern under uniform noise, so it can be learned) is
used instead and the run records `synthetic_data: 1`.

Timed ("epoch K", kind epoch): the training epochs. Inside them, each step is
split into waiting for the batch (`wait_s`: next() on the iterator, including
the iterator's creation and the workers' start, plus the copy to the device)
and computing (`compute_s`: zero_grad, forward, backward, step, then a device
synchronisation on CUDA, so that asynchronous kernels are charged to compute and
not to the next wait). The sync per step costs a little GPU throughput; it is
what makes the split true. With `pin_memory` on CUDA the copy is asynchronous,
and what of it is still running when the step starts is charged to compute.
The remainder of an epoch (the final next(), worker shutdown) is
`unaccounted_s`. Not timed: loading or generating the data ("load data", kind
data) and one warm-up step on a throw-away copy of the model ("warm-up", kind
other: cuDNN/kernel selection and first allocations).

Threads: DataLoader workers run one thread each (PyTorch sets it in every
worker), so a run with W workers uses W + torch threads cores. `torch_threads`
gives the training process what the workers leave, max(1, granted - W), and
`check_oversubscription` refuses a run whose total exceeds the allocation:
oversubscribed cores would make the loader look slower than it is. The
process's torch thread count is restored after the run, so the record's
received resources still show the allocation.
"""

from __future__ import annotations

import copy
import statistics
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from scalestudy.compute.telemetry import gpu_telemetry
from workloads import complete

WORKLOAD = {
    "distributed": False,
    "steps": False,
    "devices": ["cpu", "gpu"],
    "params": {
        "properties": {
            "batch_size": {
                "description": "training batch size",
                "type": "integer",
                "minimum": 1,
                "default": 64,
            },
            "num_workers": {
                "description": "DataLoader worker processes (`placement: loader`); workers "
                "plus torch threads must fit in the allocation",
                "type": "integer",
                "minimum": 0,
                "default": 0,
            },
            "prefetch_factor": {
                "description": "batches in flight per worker (with `num_workers` > 0)",
                "type": "integer",
                "minimum": 1,
                "default": 2,
            },
            "placement": {
                "description": "`loader`, `host_memory` or `device` (above)",
                "enum": ["loader", "host_memory", "device"],
                "default": "loader",
            },
            "max_batches": {
                "description": "training batches per epoch (0 = all)",
                "type": "integer",
                "minimum": 0,
                "default": 0,
            },
            "epochs": {
                "description": "training epochs",
                "type": "integer",
                "minimum": 1,
                "default": 1,
            },
            "seed": {
                "description": "seed of weights and shuffling (the synthetic set is the same "
                "whatever the seed)",
                "type": "integer",
                "default": 1,
            },
            "dataset": {
                "description": "`cifar10` reads `data_dir/cifar10` (never downloads) and falls "
                "back to the synthetic set without its files; `synthetic` always uses it",
                "enum": ["cifar10", "synthetic"],
                "default": "cifar10",
            },
            "synthetic_samples": {
                "description": "images in the synthetic set",
                "type": "integer",
                "minimum": 1,
                "default": 50000,
            },
            "lr": {
                "description": "SGD learning rate",
                "type": "number",
                "exclusiveMinimum": 0,
                "default": 0.001,
            },
            "momentum": {
                "description": "SGD momentum",
                "type": "number",
                "minimum": 0,
                "default": 0.9,
            },
            "pin_memory": {
                "description": "pinned host memory in the DataLoader on CUDA: the copy to the "
                "device is then asynchronous, and what of it is still running when the step "
                "starts is charged to compute",
                "type": "boolean",
                "default": False,
            },
        },
    },
}


SYNTHETIC_SEED = 20240610  # fixed: the synthetic set is the same whatever the run's seed
CLASSES = 10


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


# --- threads -------------------------------------------------------------------------


def check_oversubscription(threads_granted: int, torch_threads: int, num_workers: int) -> None:
    """Raise ValueError when the training process and its loader workers need more
    cores than the allocation: torch_threads + num_workers <= threads_granted."""
    if threads_granted < 1 or torch_threads < 1 or num_workers < 0:
        raise ValueError(
            f"threads granted ({threads_granted}) and torch threads ({torch_threads}) must be "
            f"at least 1, num_workers ({num_workers}) at least 0"
        )
    if num_workers >= threads_granted:
        raise ValueError(
            f"num_workers={num_workers} DataLoader workers need {num_workers} core(s) "
            f"and the training process one more, but the run was given {threads_granted}: "
            f"use num_workers <= {threads_granted - 1} or ask for more threads"
        )
    if torch_threads + num_workers > threads_granted:
        raise ValueError(
            f"{torch_threads} torch threads + {num_workers} DataLoader workers = "
            f"{torch_threads + num_workers} busy threads on {threads_granted} granted cores "
            "(oversubscribed): lower one of them"
        )


def torch_threads(threads_granted: int, num_workers: int) -> int:
    """Threads for the training process: the cores the workers (one thread each) leave,
    at least one (check_oversubscription then says whether that fits)."""
    return max(1, threads_granted - num_workers)


# --- data ----------------------------------------------------------------------------


class ArrayImages(torch.utils.data.Dataset):
    """Images held as (N, 32, 32, 3) uint8 with per-sample PIL conversion and transform,
    exactly as torchvision's CIFAR10 serves them, so that a synthetic set costs the
    loader what the real one does."""

    def __init__(self, data: np.ndarray, targets: list[int], transform=None):
        self.data, self.targets, self.transform = data, targets, transform

    def __len__(self) -> int:
        return len(self.data)

    def __getitem__(self, index: int):
        from PIL import Image

        image = Image.fromarray(self.data[index])
        if self.transform is not None:
            image = self.transform(image)
        return image, self.targets[index]


def tutorial_transform():
    from torchvision import transforms

    return transforms.Compose(
        [transforms.ToTensor(), transforms.Normalize((0.5, 0.5, 0.5), (0.5, 0.5, 0.5))]
    )


def synthetic_cifar(samples: int, seed: int = SYNTHETIC_SEED) -> tuple[np.ndarray, list[int]]:
    """(samples, 32, 32, 3) uint8 images and labels: a random pattern per class in
    [0, 128) plus uniform noise in [0, 128)."""
    rng = np.random.default_rng(seed)
    patterns = rng.integers(0, 128, size=(CLASSES, 32, 32, 3), dtype=np.uint8)
    labels = rng.integers(0, CLASSES, size=samples)
    data = rng.integers(0, 128, size=(samples, 32, 32, 3), dtype=np.uint8)
    data += patterns[labels]
    return data, labels.tolist()


def cifar_present(root) -> bool:
    return (root / "cifar-10-batches-py").is_dir()


def load_dataset(p: dict, data_dir) -> tuple[torch.utils.data.Dataset, bool]:
    """(dataset with .data and .targets, synthetic?). Never downloads."""
    root = data_dir / "cifar10"
    if p["dataset"] == "cifar10" and cifar_present(root):
        from torchvision.datasets import CIFAR10

        # files present but damaged: torchvision raises, and so does the run
        return CIFAR10(str(root), train=True, download=False, transform=tutorial_transform()), False
    data, targets = synthetic_cifar(p["synthetic_samples"])
    return ArrayImages(data, targets, tutorial_transform()), True


def as_tensors(dataset) -> tuple[torch.Tensor, torch.Tensor]:
    """The whole set as normalised (N, 3, 32, 32) float32 and int64 labels (what the
    tutorial's transform gives, without going through PIL per image)."""
    images = torch.from_numpy(np.ascontiguousarray(dataset.data)).permute(0, 3, 1, 2)
    images = images.float().div_(255).sub_(0.5).div_(0.5).contiguous()
    return images, torch.as_tensor(dataset.targets, dtype=torch.long)


class SlicedBatches:
    """Batches sliced from tensors already in memory, shuffled each epoch."""

    def __init__(self, images, labels, batch_size: int, generator: torch.Generator):
        self.images, self.labels = images, labels
        self.batch_size, self.generator = batch_size, generator

    def __len__(self) -> int:
        return (len(self.images) + self.batch_size - 1) // self.batch_size

    def __iter__(self):
        order = torch.randperm(len(self.images), generator=self.generator)
        order = order.to(self.images.device)
        for start in range(0, len(order), self.batch_size):
            idx = order[start : start + self.batch_size]
            yield self.images[idx], self.labels[idx]


def make_batches(p: dict, dataset, device, workers: int):
    """An iterable of (images, labels) batches for the placement."""
    generator = torch.Generator().manual_seed(p["seed"])
    if p["placement"] == "loader":
        extra = {"prefetch_factor": p["prefetch_factor"]} if workers > 0 else {}
        return torch.utils.data.DataLoader(
            dataset,
            batch_size=p["batch_size"],
            shuffle=True,
            num_workers=workers,
            pin_memory=bool(p["pin_memory"]) and device.type == "cuda",
            generator=generator,
            **extra,
        )
    images, labels = as_tensors(dataset)
    if p["placement"] == "device":
        images, labels = images.to(device), labels.to(device)
    return SlicedBatches(images, labels, p["batch_size"], generator)


# --- training ------------------------------------------------------------------------


def synchronize(device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def train_step(model, optimizer, x, y):
    optimizer.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.detach()


def train_epoch(model, optimizer, batches, device, max_batches: int) -> dict:
    """One epoch, the time of each step split into waiting for data and computing."""
    wait = compute = 0.0
    first_batch = None
    seen, steps, total_loss = 0, 0, torch.zeros((), device=device)
    start = mark = time.perf_counter()
    iterator = iter(batches)  # starts the workers: charged to the first wait
    while not max_batches or steps < max_batches:
        try:
            x, y = next(iterator)
        except StopIteration:
            break
        non_blocking = device.type == "cuda" and x.is_pinned()
        x = x.to(device, non_blocking=non_blocking)
        y = y.to(device, non_blocking=non_blocking)
        t1 = time.perf_counter()
        if first_batch is None:
            first_batch = t1 - start
        wait += t1 - mark
        loss = train_step(model, optimizer, x, y)
        total_loss += loss * len(y)
        synchronize(device)
        mark = time.perf_counter()
        compute += mark - t1
        seen += len(y)
        steps += 1
    del iterator  # shuts the workers down inside the epoch, as a real epoch end would
    return {
        "wait_s": wait,
        "compute_s": compute,
        "samples": seen,
        "steps": steps,
        "loss": float(total_loss) / seen if seen else float("nan"),
        "first_batch_s": first_batch,
    }


def warm_up(model, optimizer_factory, batches, device) -> None:
    """One step on copies: first-call costs leave the timed epochs, the model does not learn."""
    shadow = copy.deepcopy(model)
    optimizer = optimizer_factory(shadow)
    x, y = next(iter(batches))
    train_step(shadow, optimizer, x.to(device), y.to(device))
    synchronize(device)


def run(params: dict, ctx) -> None:
    p = complete(WORKLOAD, params)
    # workers exist only for the loader placement; the others slice tensors in-process
    workers = p["num_workers"] if p["placement"] == "loader" else 0
    threads = torch_threads(ctx.threads, workers)
    check_oversubscription(ctx.threads, threads, workers)
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        train(p, ctx, workers)
    finally:
        torch.set_num_threads(previous)
    ctx.metric("torch_threads", threads)
    ctx.metric("num_workers", workers)


def train(p: dict, ctx, workers: int) -> None:
    torch.manual_seed(p["seed"])
    device = torch.device(ctx.device)
    with ctx.phase("load data", kind="data"):
        dataset, synthetic = load_dataset(p, ctx.data_dir)
        batches = make_batches(p, dataset, device, workers)
    ctx.metric("synthetic_data", 1 if synthetic else 0)
    model = Net().to(device)

    def optimizer_factory(m):
        return torch.optim.SGD(m.parameters(), lr=p["lr"], momentum=p["momentum"])

    optimizer = optimizer_factory(model)
    with ctx.phase("warm-up", kind="other"):
        warm_up(model, optimizer_factory, batches, device)
    epochs = []
    with gpu_telemetry(ctx):
        for epoch in range(1, p["epochs"] + 1):
            with ctx.phase(f"epoch {epoch}", kind="epoch") as phase:
                stats = train_epoch(model, optimizer, batches, device, p["max_batches"])
            phase.samples = stats["samples"]
            stats["seconds"] = phase.seconds
            epochs.append(stats)
    record_metrics(ctx, epochs)
    # the share of a full-length run this one did (max_batches shortens it): the report
    # scales the time to ask for (--time) by it
    ctx.metric("train_fraction", sum(e["samples"] for e in epochs) / (len(dataset) * p["epochs"]))


def record_metrics(ctx, epochs: list[dict]) -> None:
    seconds = sum(e["seconds"] for e in epochs)
    samples = sum(e["samples"] for e in epochs)
    wait = statistics.fmean(e["wait_s"] for e in epochs)
    compute = statistics.fmean(e["compute_s"] for e in epochs)
    ctx.metric("samples_per_s", samples / seconds if seconds > 0 else None)
    ctx.metric("time_to_first_batch_s", epochs[0]["first_batch_s"])
    ctx.metric("wait_s", wait)
    ctx.metric("compute_s", compute)
    ctx.metric("wait_fraction", wait / (wait + compute) if wait + compute > 0 else None)
    rest = statistics.fmean(e["seconds"] - e["wait_s"] - e["compute_s"] for e in epochs)
    ctx.metric("unaccounted_s", rest)
    ctx.metric("final_loss", epochs[-1]["loss"])
    ctx.metric("steps_per_epoch", epochs[-1]["steps"])
