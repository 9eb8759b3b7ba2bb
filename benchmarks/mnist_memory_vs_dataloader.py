"""MNIST CNN training: our in-memory batches vs the pytorch/examples DataLoader loop.

Same model, optimiser, batch size and number of batches; the example's loop
reads through a DataLoader with per-sample ToTensor + Normalize transforms.
Run: .venv/bin/python benchmarks/mnist_memory_vs_dataloader.py [--batches 150 --rounds 5]
"""

from __future__ import annotations

import argparse
import itertools
from functools import partial

import torch
import torch.nn.functional as F
from torchvision import datasets, transforms

from benchmarks.common import alternate, fashion_root
from scalestudy.compute.data import DATASETS, load_prepared
from workloads.mnist_cnn import Net, train_epoch


def dataloader_loop(model, optimizer, loader, batches):
    """pytorch/examples mnist/main.py's train() loop, stopped after `batches`."""
    model.train()
    for data, target in itertools.islice(loader, batches):
        optimizer.zero_grad()
        loss = F.nll_loss(model(data), target)
        loss.backward()
        optimizer.step()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--batches", type=int, default=150)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    root = fashion_root()
    mean, std = DATASETS["fashion_mnist"]["mean"], DATASETS["fashion_mnist"]["std"]
    dataset = datasets.FashionMNIST(
        str(root),
        train=True,
        download=False,
        transform=transforms.Compose(
            [transforms.ToTensor(), transforms.Normalize((mean,), (std,))]
        ),
    )
    images, labels = load_prepared(root, "train")
    results = {}
    for threads in (1, 2):
        torch.set_num_threads(threads)
        torch.manual_seed(1)
        model = Net()
        optimizer = torch.optim.Adadelta(model.parameters(), lr=1.0)
        loader = torch.utils.data.DataLoader(dataset, batch_size=args.batch_size, shuffle=True)
        generator = torch.Generator().manual_seed(1)
        results[threads] = alternate(
            {
                "dataloader": partial(dataloader_loop, model, optimizer, loader, args.batches),
                "in_memory": partial(
                    train_epoch,
                    model,
                    optimizer,
                    images,
                    labels,
                    args.batch_size,
                    args.batches,
                    generator,
                    "cpu",
                ),
            },
            args.rounds,
        )
    print(
        f"{args.batches} batches of {args.batch_size}, median of {args.rounds} alternating rounds"
    )
    for threads, r in results.items():
        gain = r["dataloader"] / r["in_memory"]
        print(
            f"threads={threads}: dataloader {r['dataloader']:.3f} s, in-memory "
            f"{r['in_memory']:.3f} s -> in-memory is {gain:.3f}x as fast"
        )
    print(f"in-memory, 2 threads vs 1: {results[1]['in_memory'] / results[2]['in_memory']:.3f}x")
    print(f"dataloader, 2 threads vs 1: {results[1]['dataloader'] / results[2]['dataloader']:.3f}x")


if __name__ == "__main__":
    main()
