"""MLP on a synthetic 2-D spiral classification set, data-parallel with DDP.

The data set (default 10,000 points, 3 arms) is generated from a seed, so every
rank and every run sees the same data without any download. Each rank trains on
its shard of the training split (DistributedSampler-style striding); gradients
are averaged by DistributedDataParallel over gloo (CPU) or NCCL (GPU).
`batch_size` is per process: a study that keeps it fixed while adding processes
scales weakly; `global_batch_size` instead keeps the global batch (strong scaling).
"""

from __future__ import annotations

import math
import time

import torch

# torch's optimizers (and DDP) import torch._dynamo when first used: 1-3 s on a CPU.
# Imported here, that time is start-up (imports), not an untimed gap before training.
import torch._dynamo  # noqa: F401
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

WORKLOAD = {
    "distributed": True,
    "steps": True,
    "devices": ["cpu", "gpu"],
    "params": {
        "properties": {
            "samples": {
                "description": "points in the data set",
                "type": "integer",
                "minimum": 10,
                "default": 10000,
            },
            "classes": {
                "description": "spiral arms (one class each)",
                "type": "integer",
                "minimum": 2,
                "default": 3,
            },
            "noise": {
                "description": "angular noise of the arms",
                "type": "number",
                "minimum": 0,
                "default": 0.2,
            },
            "val_fraction": {
                "description": "share held out for validation",
                "type": "number",
                "exclusiveMinimum": 0,
                "exclusiveMaximum": 1,
                "default": 0.2,
            },
            "hidden": {
                "description": "hidden layer widths",
                "type": "array",
                "items": {"type": "integer", "minimum": 1},
                "minItems": 1,
                "default": [64, 32, 16],
            },
            "epochs": {
                "description": "training epochs",
                "type": "integer",
                "minimum": 1,
                "default": 5,
            },
            "batch_size": {
                "description": "batch per process: kept when processes are added (weak scaling)",
                "type": "integer",
                "minimum": 1,
                "default": 64,
            },
            "global_batch_size": {
                "description": "when > 0, the batch over all processes, split among them "
                "(strong scaling)",
                "type": "integer",
                "minimum": 0,
                "default": 0,
            },
            "lr": {
                "description": "Adam learning rate",
                "type": "number",
                "exclusiveMinimum": 0,
                "default": 0.01,
            },
            "seed": {
                "description": "seed of data, weights and shuffling",
                "type": "integer",
                "default": 1,
            },
        },
    },
}


def spiral(samples: int, arms: int, noise: float, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """`samples` points on `arms` interleaved spiral arms, labelled by arm."""
    g = torch.Generator().manual_seed(seed)
    per_arm = samples // arms
    xs, ys = [], []
    for arm in range(arms):
        r = torch.linspace(0.05, 1.0, per_arm)
        theta = r * 4 * math.pi + arm * 2 * math.pi / arms
        theta = theta + noise * torch.randn(per_arm, generator=g)
        xs.append(torch.stack([r * torch.cos(theta), r * torch.sin(theta)], dim=1))
        ys.append(torch.full((per_arm,), arm, dtype=torch.long))
    x, y = torch.cat(xs), torch.cat(ys)
    order = torch.randperm(len(x), generator=g)
    return x[order], y[order]


def mlp(hidden: list[int], classes: int) -> nn.Module:
    layers, width = [], 2
    for h in hidden:
        layers += [nn.Linear(width, h), nn.ReLU()]
        width = h
    layers.append(nn.Linear(width, classes))
    return nn.Sequential(*layers)


def init_process_group(ctx) -> None:
    """Join the job's process group (gloo on CPUs, NCCL on GPUs)."""
    backend = "nccl" if getattr(ctx.device, "type", "cpu") == "cuda" else "gloo"
    dist.init_process_group(backend, rank=ctx.rank, world_size=ctx.world_size, init_method="env://")


def all_mean(value: float, ctx, distributed: bool) -> float:
    if not distributed:
        return value
    t = torch.tensor([value], dtype=torch.float64, device=ctx.device)
    dist.all_reduce(t)
    return t.item() / ctx.world_size


def run(params: dict, ctx) -> None:
    torch.manual_seed(params["seed"])
    model = mlp(params["hidden"], params["classes"]).to(ctx.device)
    distributed = ctx.world_size > 1
    if distributed:
        # phases of their own, so that no part of a DDP run's start or end goes untimed:
        # the rendezvous waits for the slowest rank's start-up, and DDP's constructor
        # broadcasts rank 0's weights
        with ctx.phase("process group set-up", kind="other"):
            init_process_group(ctx)
            model = nn.parallel.DistributedDataParallel(model)
    try:
        train_and_evaluate(params, ctx, model, distributed)
    finally:
        if distributed:
            with ctx.phase("process group teardown", kind="other"):
                dist.destroy_process_group()


def per_process_batch(params: dict, world_size: int) -> int:
    if params.get("global_batch_size"):
        return max(1, params["global_batch_size"] // world_size)
    return params["batch_size"]


def train_and_evaluate(params: dict, ctx, model: nn.Module, distributed: bool) -> None:
    with ctx.phase("generate data", kind="data"):
        x, y = spiral(params["samples"], params["classes"], params["noise"], params["seed"])
        n_val = int(len(x) * params["val_fraction"])
        val_x, val_y = x[:n_val].to(ctx.device), y[:n_val].to(ctx.device)
        # each rank takes every world_size-th sample, like DistributedSampler
        train_x = x[n_val + ctx.rank :: ctx.world_size].to(ctx.device)
        train_y = y[n_val + ctx.rank :: ctx.world_size].to(ctx.device)
    optimizer = torch.optim.Adam(model.parameters(), lr=params["lr"])
    batch = per_process_batch(params, ctx.world_size)
    g = torch.Generator().manual_seed(params["seed"] + ctx.rank)
    step_times = []
    first_step_s = None
    for epoch in range(1, params["epochs"] + 1):
        with ctx.phase(f"epoch {epoch}", kind="epoch") as phase:
            model.train()
            order = torch.randperm(len(train_x), generator=g).to(ctx.device)
            steps = len(order) // batch
            total = 0.0
            for s in range(steps):
                t0 = time.perf_counter()
                idx = order[s * batch : (s + 1) * batch]
                optimizer.zero_grad()
                loss = F.cross_entropy(model(train_x[idx]), train_y[idx])
                loss.backward()
                optimizer.step()
                ctx.step()
                total += loss.item()
                dt = time.perf_counter() - t0
                step_times.append(dt)
                if first_step_s is None:
                    first_step_s = dt
            train_loss = all_mean(total / max(steps, 1), ctx, distributed)
        phase.samples = steps * batch * ctx.world_size
        with ctx.phase(f"validate {epoch}", kind="eval"):
            val_loss, val_acc = validate(model, val_x, val_y)
        ctx.metric(f"val_loss_epoch_{epoch}", val_loss)
        ctx.metric(f"val_accuracy_epoch_{epoch}", val_acc)
    epochs = [p for p in ctx.phases if p.kind == "epoch"]
    train_s = sum(p.seconds for p in epochs)
    ctx.metric("samples_per_s", sum(p.samples for p in epochs) / train_s if train_s else None)
    ctx.metric("final_loss", train_loss)
    ctx.metric("val_loss", val_loss)
    ctx.metric("val_accuracy", val_acc)
    ctx.metric("test_accuracy", val_acc)
    ctx.metric("time_to_first_step_s", first_step_s)
    steady = sorted(step_times[1:]) or step_times
    ctx.metric("step_time_median_s", steady[len(steady) // 2])
    ctx.metric("per_process_batch", batch)
    ctx.metric("world_size", ctx.world_size)


@torch.no_grad()
def validate(model, x, y) -> tuple[float, float]:
    model.eval()
    out = model(x)
    return F.cross_entropy(out, y).item(), (out.argmax(1) == y).float().mean().item()
