"""The PyTorch Lightning autoencoder of the benchmarking tutorial, trained with DDP.

Encoder 784-128-3, decoder 3-128-784, Adam (lr 1e-3), MSE loss, one epoch, the
60,000 training images split 55,000 / 5,000, batch size 1 as in the source.
Processes are started by the launcher (locally, or one srun task each), so
Lightning only joins them: gloo on CPU, NCCL on GPU. Epoch, validation and step
times come from a callback; data loading is timed before training starts.
"""

from __future__ import annotations

import time

import pytorch_lightning as pl
import torch
import torch.nn.functional as F
from lightning_fabric.plugins.environments import LightningEnvironment
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from scalestudy.compute.harness import Phase

WORKLOAD = {
    "distributed": True,
    "steps": True,
    "devices": ["cpu", "gpu"],
    "params": {
        "properties": {
            "dataset": {
                "description": "`mnist` or `fashion_mnist`",
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
                "description": "batch per process (1 in the source)",
                "type": "integer",
                "minimum": 1,
                "default": 1,
            },
            "global_batch_size": {
                "description": "when > 0, the batch over all processes, split among them "
                "(strong scaling)",
                "type": "integer",
                "minimum": 0,
                "default": 0,
            },
            "max_batches": {
                "description": "training batches per epoch and process (0 = all)",
                "type": "integer",
                "minimum": 0,
                "default": 0,
            },
            "max_val_batches": {
                "description": "validation batches (0 = all)",
                "type": "integer",
                "minimum": 0,
                "default": 0,
            },
            "train_size": {
                "description": "of the 60,000 training images, those trained on",
                "type": "integer",
                "minimum": 1,
                "maximum": 59999,
                "default": 55000,
            },
            "val_size": {
                "description": "of the rest, those validated on",
                "type": "integer",
                "minimum": 1,
                "default": 5000,
            },
            "lr": {
                "description": "Adam learning rate",
                "type": "number",
                "exclusiveMinimum": 0,
                "default": 0.001,
            },
            "seed": {
                "description": "seed of split, weights and shuffling",
                "type": "integer",
                "default": 1,
            },
            "reference_steps": {
                "description": "after training, rank 0 times this many steps of the same "
                "module in a plain PyTorch loop (not timed for speedups), so the report "
                "shows the framework's share of a step (0 = skip)",
                "type": "integer",
                "minimum": 0,
                "default": 200,
            },
        },
    },
}


class LitAutoEncoder(pl.LightningModule):
    def __init__(self, lr: float = 1e-3):
        super().__init__()
        self.lr = lr
        self.encoder = nn.Sequential(nn.Linear(28 * 28, 128), nn.ReLU(), nn.Linear(128, 3))
        self.decoder = nn.Sequential(nn.Linear(3, 128), nn.ReLU(), nn.Linear(128, 28 * 28))

    def _loss(self, batch):
        x = batch[0].view(batch[0].size(0), -1)
        return F.mse_loss(self.decoder(self.encoder(x)), x)

    def training_step(self, batch, batch_idx):
        loss = self._loss(batch)
        self.log("train_loss", loss, on_step=False, on_epoch=True, sync_dist=True)
        return loss

    def validation_step(self, batch, batch_idx):
        self.log("val_loss", self._loss(batch), on_epoch=True, sync_dist=True)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.lr)


class PhaseTimer(pl.Callback):
    """Puts Lightning's epochs and validations into the harness's phases, and
    times every training step (the first one separately: it pays for set-up)."""

    def __init__(self, ctx, device):
        self.ctx, self.device = ctx, device
        self.step_times: list[float] = []
        self.fit_start = self.step_start = 0.0
        self.epoch_start = self.val_start = None  # harness Marks: clock and energy
        self.time_to_first_step = None
        self.samples = 0
        self.world_size = 1

    def _now(self) -> float:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        return time.perf_counter()

    def on_fit_start(self, trainer, module):
        self.fit_start = self._now()

    def on_train_epoch_start(self, trainer, module):
        self.world_size = trainer.world_size  # a property chain: not looked up every step
        self._now()  # the epoch starts after the device's queued work
        self.epoch_start, self.samples = self.ctx.mark(), 0
        self.step_start = self.epoch_start.at

    # One hook per step, not two: Lightning's dispatch of each callback hook costs
    # about as much as a small step's arithmetic. A step is the time from the end of
    # the previous step (fetching the batch included) to the end of this one.
    def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
        now = self._now()
        self.ctx.step()
        self.step_times.append(now - self.step_start)
        self.samples += len(batch[0]) * self.world_size
        if self.time_to_first_step is None:
            self.time_to_first_step = now - self.fit_start
        self.step_start = now

    def on_train_epoch_end(self, trainer, module):
        epoch = trainer.current_epoch + 1
        self.ctx.end_phase(Phase(f"epoch {epoch}", "epoch", 0.0, self.samples), self.epoch_start)

    def on_validation_epoch_start(self, trainer, module):
        self._now()
        self.val_start = self.ctx.mark()

    def on_validation_epoch_end(self, trainer, module):
        if not trainer.sanity_checking:
            self.ctx.end_phase(Phase("validate", "eval", 0.0), self.val_start)


def load_images(dataset: str, root) -> torch.Tensor:
    """The training images as (60000, 784) floats in [0, 1], held in memory."""
    from scalestudy.compute.data import torchvision_class

    ds = torchvision_class(dataset)(root=str(root), train=True, download=False)
    return ds.data.view(len(ds.data), -1).float().div_(255)


def plain_step_times(images: torch.Tensor, params: dict, batch: int, device) -> list[float]:
    """The same module's steps in a plain PyTorch loop (no Trainer, no callbacks, one
    process): what a step costs without the framework, on the same images and batch
    size. Runs after training and outside every timed phase."""
    torch.manual_seed(params["seed"])
    model = LitAutoEncoder(params["lr"]).to(device)
    optimizer = model.configure_optimizers()
    times = []
    for s in range(params["reference_steps"]):
        x = images[(s * batch) % len(images) :][:batch].to(device)
        start = time.perf_counter()
        optimizer.zero_grad()
        loss = model._loss((x,))
        loss.backward()
        optimizer.step()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        times.append(time.perf_counter() - start)
    return times


def median_after_first(times: list[float]) -> float | None:
    """Median step time without the first step, which pays for set-up."""
    steady = sorted(times[1:]) or sorted(times)
    return steady[len(steady) // 2] if steady else None


def run(params: dict, ctx) -> None:
    pl.seed_everything(params["seed"], verbose=False)
    with ctx.phase("load data", kind="data"):
        images = load_images(params["dataset"], ctx.data_dir / params["dataset"])
        split = torch.Generator().manual_seed(params["seed"])
        order = torch.randperm(len(images), generator=split)
        n_train = params["train_size"]
        train = TensorDataset(images[order[:n_train]])
        val = TensorDataset(images[order[n_train : n_train + params["val_size"]]])
    batch = params["batch_size"]
    if params.get("global_batch_size"):
        batch = max(1, params["global_batch_size"] // ctx.world_size)
    gpu = getattr(ctx.device, "type", "cpu") == "cuda"
    nodes = max(1, ctx.world_size // ctx.local_world_size)
    timer = PhaseTimer(ctx, ctx.device)
    trainer = pl.Trainer(
        accelerator="gpu" if gpu else "cpu",
        devices=[ctx.device.index] if gpu else ctx.local_world_size,
        num_nodes=nodes,
        strategy="ddp" if ctx.world_size > 1 else "auto",
        plugins=[LightningEnvironment()] if ctx.world_size > 1 else None,
        max_epochs=params["epochs"],
        limit_train_batches=params["max_batches"] or 1.0,
        limit_val_batches=params["max_val_batches"] or 1.0,
        num_sanity_val_steps=0,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[timer],
    )
    if trainer.world_size != ctx.world_size:  # a silent fall-back would fake a speedup
        raise RuntimeError(
            f"Lightning runs {trainer.world_size} process(es), the launcher started "
            f"{ctx.world_size}"
        )
    model = LitAutoEncoder(params["lr"])
    trainer.fit(
        model,
        DataLoader(train, batch_size=batch, shuffle=True),
        DataLoader(val, batch_size=max(batch, 256)),
    )
    train_s = sum(p.seconds for p in ctx.phases if p.kind == "epoch")
    ctx.metric("samples_per_s", timer.samples / train_s if train_s else None)
    ctx.metric("time_to_first_step_s", timer.time_to_first_step)
    ctx.metric("step_time_median_s", median_after_first(timer.step_times))
    if ctx.rank == 0 and params["reference_steps"]:
        plain = plain_step_times(train.tensors[0], params, batch, ctx.device)
        ctx.metric("plain_step_time_median_s", median_after_first(plain))
    ctx.metric("train_loss", trainer.callback_metrics.get("train_loss"))
    ctx.metric("final_loss", trainer.callback_metrics.get("train_loss"))
    ctx.metric("val_loss", trainer.callback_metrics.get("val_loss"))
    ctx.metric("world_size", ctx.world_size)
    ctx.metric("per_process_batch", batch)
