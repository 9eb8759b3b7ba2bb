"""MNIST CNN of pytorch/examples (mnist/main.py), timed phase by phase.

Model, optimiser and schedule are the example's: conv 1-32-3, conv 32-64-3,
max-pool, dropout 0.25, fc 9216-128, dropout 0.5, fc 128-10; Adadelta
(lr 1.0) with StepLR (gamma 0.7). Unlike the example, the data set is one normalised
tensor, prepared once (scalestudy.compute.data) and mapped into memory, and
batches are sliced from it, instead of going through per-sample PIL transforms
in a DataLoader (see benchmarks/mnist_memory_vs_dataloader.py for what that gains).
"""

from __future__ import annotations

import torch

# torch's optimizers (and DDP) import torch._dynamo when first used: 1-3 s on a CPU.
# Imported here, that time is start-up (imports), not an untimed gap before training.
import torch._dynamo  # noqa: F401
import torch.nn.functional as F
from torch import nn

from scalestudy.compute.data import load_prepared

WORKLOAD = {
    "distributed": False,
    "steps": True,
    "devices": ["cpu", "gpu"],
    "params": {
        "properties": {
            "dataset": {
                "description": "`mnist` or `fashion_mnist` (same format and sizes)",
                "enum": ["mnist", "fashion_mnist"],
                "default": "fashion_mnist",
            },
            "epochs": {
                "description": "training epochs",
                "type": "integer",
                "minimum": 1,
                "default": 1,
            },
            "batch_size": {
                "description": "training batch size",
                "type": "integer",
                "minimum": 1,
                "default": 64,
            },
            "test_batch_size": {
                "description": "evaluation batch size",
                "type": "integer",
                "minimum": 1,
                "default": 1000,
            },
            "max_batches": {
                "description": "training batches per epoch (0 = the whole training set); "
                "a batch limit for quick studies",
                "type": "integer",
                "minimum": 0,
                "default": 0,
            },
            "max_test_batches": {
                "description": "evaluation batches (0 = the whole test set)",
                "type": "integer",
                "minimum": 0,
                "default": 0,
            },
            "lr": {
                "description": "Adadelta learning rate",
                "type": "number",
                "exclusiveMinimum": 0,
                "default": 1.0,
            },
            "gamma": {
                "description": "StepLR decay per epoch",
                "type": "number",
                "exclusiveMinimum": 0,
                "default": 0.7,
            },
            "seed": {
                "description": "seed of weights and shuffling",
                "type": "integer",
                "default": 1,
            },
        },
    },
}


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = self.dropout2(x)
        return F.log_softmax(self.fc2(x), dim=1)


def batches(n: int, batch_size: int, limit: int, generator=None):
    """Index tensors of successive batches (shuffled when a generator is given)."""
    order = torch.randperm(n, generator=generator) if generator is not None else torch.arange(n)
    count = (n + batch_size - 1) // batch_size
    if limit:
        count = min(count, limit)
    for b in range(count):
        yield order[b * batch_size : (b + 1) * batch_size]


def train_epoch(
    model, optimizer, images, labels, batch_size, limit, generator, device, on_step=None
):
    model.train()
    total_loss, seen = 0.0, 0
    for idx in batches(len(images), batch_size, limit, generator):
        x, y = images[idx].to(device), labels[idx].to(device)
        optimizer.zero_grad()
        loss = F.nll_loss(model(x), y)
        loss.backward()
        optimizer.step()
        if on_step is not None:
            on_step()
        total_loss += loss.item() * len(idx)
        seen += len(idx)
    return total_loss / seen, seen


@torch.no_grad()
def evaluate(model, images, labels, batch_size, limit, device):
    model.eval()
    loss, correct, seen = 0.0, 0, 0
    for idx in batches(len(images), batch_size, limit):
        x, y = images[idx].to(device), labels[idx].to(device)
        out = model(x)
        loss += F.nll_loss(out, y, reduction="sum").item()
        correct += (out.argmax(dim=1) == y).sum().item()
        seen += len(idx)
    return loss / seen, correct / seen


def run(params: dict, ctx) -> None:
    torch.manual_seed(params["seed"])
    root = ctx.data_dir / params["dataset"]
    with ctx.phase("load data", kind="data"):
        train_x, train_y = load_prepared(root, "train")
        test_x, test_y = load_prepared(root, "test")
    model = Net().to(ctx.device)
    optimizer = torch.optim.Adadelta(model.parameters(), lr=params["lr"])
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=params["gamma"])
    generator = torch.Generator().manual_seed(params["seed"])
    samples = 0
    for epoch in range(1, params["epochs"] + 1):
        with ctx.phase(f"epoch {epoch}", kind="epoch") as phase:
            train_loss, seen = train_epoch(
                model,
                optimizer,
                train_x,
                train_y,
                params["batch_size"],
                params["max_batches"],
                generator,
                ctx.device,
                ctx.step,
            )
            scheduler.step()
        phase.samples = seen
        samples += seen
    with ctx.phase("evaluate", kind="eval"):
        test_loss, accuracy = evaluate(
            model,
            test_x,
            test_y,
            params["test_batch_size"],
            params["max_test_batches"],
            ctx.device,
        )
    train_s = sum(p.seconds for p in ctx.phases if p.kind == "epoch")
    ctx.metric("samples_per_s", samples / train_s if train_s > 0 else None)
    ctx.metric("final_loss", train_loss)
    ctx.metric("test_loss", test_loss)
    ctx.metric("test_accuracy", accuracy)
    # the share of a full-length run this one did (a batch limit shortens it): the
    # report scales the time to ask for (--time) by it
    ctx.metric("train_fraction", samples / (len(train_x) * params["epochs"]))
    test_batches = -(-len(test_x) // params["test_batch_size"])
    limit = params["max_test_batches"] or test_batches
    ctx.metric("eval_fraction", min(limit, test_batches) / test_batches)
