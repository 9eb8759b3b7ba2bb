"""Does the harness distort what it measures, and what does Lightning cost per step?

(a) the lightning_autoencoder workload through the harness (Context, phase timer
    callback, metrics) against the same LightningModule under a bare Trainer with
    no callback; (b) Lightning against a plain PyTorch loop doing the same steps.
One process, 1 CPU thread, batch 1 as in the source. Steady-state time per step
is the slope between a short and a long run, (T(long) - T(short)) / (extra
steps), so set-up, data loading and the first steps cancel out. Each round
measures both candidates' slopes back to back (order flipped every round) and
gives one ratio; the median ratio over rounds is the result, with its range,
because this machine's speed drifts by more than the effect between rounds.
Run: .venv/bin/python -m benchmarks.lightning_overhead [--rounds 5 --short 100 --long 600]
"""

from __future__ import annotations

import argparse
import logging
import statistics
import warnings

import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader, TensorDataset

from benchmarks.common import alternate, fashion_root
from scalestudy.compute.harness import Context
from workloads import lightning_autoencoder as wl

PARAMS = {
    "dataset": "fashion_mnist",
    "epochs": 1,
    "batch_size": 1,
    "global_batch_size": 0,
    "max_val_batches": 1,
    "train_size": 55000,
    "val_size": 5000,
    "lr": 1e-3,
    "seed": 1,
    "reference_steps": 0,
}


def through_harness(steps: int) -> None:
    ctx = Context(params=PARAMS, data_dir=fashion_root().parent, threads=1)
    ctx.device = torch.device("cpu")
    wl.run(PARAMS | {"max_batches": steps}, ctx)


def bare_trainer(steps: int) -> None:
    pl.seed_everything(1, verbose=False)
    images = wl.load_images("fashion_mnist", fashion_root())
    order = torch.randperm(len(images), generator=torch.Generator().manual_seed(1))
    train = TensorDataset(images[order[:55000]])
    val = TensorDataset(images[order[55000:60000]])
    trainer = pl.Trainer(
        accelerator="cpu",
        devices=1,
        max_epochs=1,
        limit_train_batches=steps,
        limit_val_batches=1,
        num_sanity_val_steps=0,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(wl.LitAutoEncoder(1e-3), DataLoader(train, batch_size=1, shuffle=True),
                DataLoader(val, batch_size=256))  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--short", type=int, default=100)
    parser.add_argument("--long", type=int, default=600)
    args = parser.parse_args()
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore")
    logging.getLogger("pytorch_lightning").setLevel(logging.ERROR)
    fashion_root()
    through_harness(10), bare_trainer(10)  # warm caches and imports
    extra = args.long - args.short
    candidates = {"harness": through_harness, "bare": bare_trainer}
    slopes = {name: [] for name in candidates}
    for k in range(args.rounds):
        for name, fn in candidates.items() if k % 2 == 0 else reversed(candidates.items()):
            t = alternate({"short": lambda f=fn: f(args.short), "long": lambda f=fn: f(args.long)},
                          1)  # fmt: skip
            slopes[name].append((t["long"] - t["short"]) / extra)
    ratios = sorted(h / b for h, b in zip(slopes["harness"], slopes["bare"], strict=True))
    harness, bare = statistics.median(slopes["harness"]), statistics.median(slopes["bare"])
    images = wl.load_images("fashion_mnist", fashion_root())
    plains = [
        statistics.median(wl.plain_step_times(images, PARAMS | {"reference_steps": args.long},
                                              1, torch.device("cpu"))[1:])
        for _ in range(args.rounds)
    ]  # fmt: skip
    plain = statistics.median(plains)
    print(f"steady-state step time, batch 1, 1 thread, {args.rounds} rounds, slope {extra} steps")
    print(f"  (a) workload through the harness: {harness * 1e3:.3f} ms/step")
    print(f"      same module, bare Trainer:    {bare * 1e3:.3f} ms/step")
    spread = f"range {ratios[0]:.3f}-{ratios[-1]:.3f}"
    print(f"      ratio harness / bare:         {statistics.median(ratios):.3f} median of "
          f"{len(ratios)} rounds ({spread}; goal <= 1.05)")  # fmt: skip
    print(f"  (b) plain PyTorch loop:           {plain * 1e3:.3f} ms/step")
    print(f"      Lightning (bare) / plain:     {bare / plain:.2f}x")


if __name__ == "__main__":
    main()
