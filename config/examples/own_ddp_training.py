"""A training of one's own, as a user brings it (docs/studies.md, "Your own program"):
an MLP on random data, data-parallel over gloo, joining its process group through the
environment as under torchrun (init_method="env://"), which the workflow sets at every N,
one process included. The whole data set is split among the processes (strong
scaling). It prints its own phases, which the study's metrics_regex reads."""

import time

started = time.perf_counter()

import torch  # noqa: E402 - the program's start-up is its own phase
import torch.distributed as dist  # noqa: E402
from torch import nn  # noqa: E402

dist.init_process_group("gloo", init_method="env://")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(rank)
SAMPLES, BATCH, EPOCHS = 16384, 2048, 2
x = torch.randn(SAMPLES // world, 512)
y = torch.randint(0, 10, (SAMPLES // world,))
model = nn.Sequential(nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 10))
model = nn.parallel.DistributedDataParallel(model)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
startup_s = time.perf_counter() - started

trained = time.perf_counter()
step = BATCH // world
for _epoch in range(EPOCHS):
    for i in range(0, len(x), step):
        loss = nn.functional.cross_entropy(model(x[i : i + step]), y[i : i + step])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
train_s = time.perf_counter() - trained

if rank == 0:
    print(f"startup_s={startup_s:.4f}")
    print(f"train_s={train_s:.4f}")
    print(f"final_loss={loss.item():.4f}")
dist.destroy_process_group()
