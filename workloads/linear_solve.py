"""Batched dense linear solves: `systems` independent systems A x = b of `size` unknowns.

Backends: `numpy` (LAPACK gesv through numpy, on the CPU, whatever the point's
device), `torch` (torch.linalg.solve on ctx.device), `cupy` (cupy.linalg.solve
on ctx.device, which must be a GPU; a clear error when CuPy is not installed).

Timed ("solve 1".."solve R", kind epoch): `repeats_inner` solves of the whole
batch, each synchronised with the device; `solve_s` is their median. Not
timed for results: generating the systems ("generate systems", kind data), one
warm-up solve ("warm-up", kind other: library loading, cuSOLVER handles, first
allocations) and the residual check ("check", kind eval). With `data_on_host`
on a GPU, the systems are generated on the host and the host-to-device copy
(pageable memory, as `.to(device)` does) is its own phase ("host to device",
kind data, metric `h2d_copy_s`); otherwise they are generated on the device
that solves them, so no copy is hidden anywhere.

The systems are A = G / sqrt(M) + 3 I with G standard normal: the singular
values of A lie in about [1, 5], so a float32 solve is accurate to ~1e-6 and a
residual above 1e-3 means a wrong answer, not an ill-conditioned system; LU
with partial pivoting does the same O(M^3) work as for any dense matrix.

Threads: the numpy backend runs on OpenBLAS's thread pool, which is sized when
numpy is imported, from OPENBLAS_NUM_THREADS or OMP_NUM_THREADS; the launcher's
job environment sets OMP_NUM_THREADS to the point's threads (Snakemake exports
a rule's threads), so the pool is the allocation. This module sets nothing; it
reads the pool's size back (metric `blas_threads`, when the OpenBLAS library can
be found) and warns when it differs from ctx.threads. Note that numpy's
batched solve calls gesv once per system in a loop, so for small systems extra
threads help little; torch's CPU backend threads with torch.set_num_threads.
"""

from __future__ import annotations

import ctypes
import statistics
import sys
from pathlib import Path

import numpy as np

from scalestudy.compute.telemetry import gpu_telemetry
from workloads import complete

WORKLOAD = {
    "distributed": False,
    "steps": False,
    "devices": ["cpu", "gpu"],
    "params": {
        "properties": {
            "backend": {
                "description": "`numpy` (LAPACK on the CPU threads), `torch` "
                "(`torch.linalg.solve` on the point's device) or `cupy` (GPU only)",
                "enum": ["numpy", "torch", "cupy"],
                "default": "numpy",
            },
            "systems": {
                "description": "independent systems per batch (N)",
                "type": "integer",
                "minimum": 1,
                "default": 64,
            },
            "size": {
                "description": "unknowns per system (M)",
                "type": "integer",
                "minimum": 1,
                "default": 256,
            },
            "repeats_inner": {
                "description": "timed solves per run; `solve_s` is their median",
                "type": "integer",
                "minimum": 1,
                "default": 3,
            },
            "seed": {"description": "seed of the systems", "type": "integer", "default": 1},
            "data_on_host": {
                "description": "on a GPU, generate the systems on the host and time the copy "
                "to the device (pageable memory) as a phase of its own; otherwise they are "
                "generated on the device that solves them, so no copy is hidden anywhere",
                "type": "boolean",
                "default": False,
            },
            "dtype": {
                "description": "`float32` or `float64`",
                "enum": ["float32", "float64"],
                "default": "float32",
            },
        },
    },
}


BACKENDS = ("numpy", "torch", "cupy")
RESIDUAL_LIMIT = 1e-3
DIAGONAL_SHIFT = 3.0


# --- backends: generate, copy, solve, synchronise, residual --------------------------


class NumpyBackend:
    name = "numpy"

    def __init__(self, ctx, dtype):
        self.dtype = np.dtype(dtype)

    def generate(self, systems, size, seed):
        return numpy_systems(systems, size, seed, self.dtype)

    def solve(self, a, b):
        # b as (N, M, 1): numpy 2 reads a 2-D b as one matrix, not a stack of vectors
        return np.linalg.solve(a, b[..., None])[..., 0]

    def synchronize(self):
        pass

    def residual(self, a, b, x):
        r = np.linalg.norm(np.einsum("nij,nj->ni", a, x) - b, axis=1)
        return float(np.max(r / np.linalg.norm(b, axis=1)))


def numpy_systems(systems: int, size: int, seed: int, dtype) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((systems, size, size), dtype=np.float64)
    a /= np.sqrt(size)
    a += DIAGONAL_SHIFT * np.eye(size)
    b = rng.standard_normal((systems, size))
    return a.astype(dtype, copy=False), b.astype(dtype, copy=False)


class TorchBackend:
    name = "torch"

    def __init__(self, ctx, dtype):
        import torch

        self.torch = torch
        self.device = ctx.device
        self.dtype = getattr(torch, dtype)

    def generate(self, systems, size, seed):
        torch = self.torch
        g = torch.Generator(device=self.device).manual_seed(seed)
        a = torch.randn(systems, size, size, generator=g, device=self.device, dtype=self.dtype)
        a /= size**0.5
        a += DIAGONAL_SHIFT * torch.eye(size, device=self.device, dtype=self.dtype)
        b = torch.randn(systems, size, generator=g, device=self.device, dtype=self.dtype)
        return a, b

    def from_host(self, a, b):
        return self.torch.from_numpy(a).to(self.device), self.torch.from_numpy(b).to(self.device)

    def solve(self, a, b):
        return self.torch.linalg.solve(a, b.unsqueeze(-1)).squeeze(-1)

    def synchronize(self):
        if self.device.type == "cuda":
            self.torch.cuda.synchronize(self.device)

    def residual(self, a, b, x):
        torch = self.torch
        r = torch.linalg.vector_norm(torch.einsum("nij,nj->ni", a, x) - b, dim=1)
        return float(torch.max(r / torch.linalg.vector_norm(b, dim=1)))


class CupyBackend:
    name = "cupy"

    def __init__(self, ctx, dtype):
        try:
            import cupy
        except ImportError as e:
            raise RuntimeError(
                "backend 'cupy' needs CuPy, which is not installed in this environment "
                "(pip install cupy-cuda12x or cupy-cuda13x, matching the CUDA of the nodes); "
                "use backend 'torch' for the GPU instead"
            ) from e
        if getattr(ctx.device, "type", None) != "cuda":
            raise RuntimeError("backend 'cupy' runs on a GPU: give the study device: gpu")
        self.cp = cupy
        self.dtype = np.dtype(dtype)
        self.device = cupy.cuda.Device(ctx.device.index or 0)
        self.device.use()

    def generate(self, systems, size, seed):
        cp = self.cp
        rs = cp.random.RandomState(seed)
        a = rs.standard_normal((systems, size, size), dtype=self.dtype)
        a /= np.sqrt(size)
        a += DIAGONAL_SHIFT * cp.eye(size, dtype=self.dtype)
        b = rs.standard_normal((systems, size), dtype=self.dtype)
        return a, b

    def from_host(self, a, b):
        return self.cp.asarray(a), self.cp.asarray(b)

    def solve(self, a, b):
        return self.cp.linalg.solve(a, b[..., None])[..., 0]

    def synchronize(self):
        self.device.synchronize()

    def residual(self, a, b, x):
        cp = self.cp
        r = cp.linalg.norm(cp.einsum("nij,nj->ni", a, x) - b, axis=1)
        return float(cp.max(r / cp.linalg.norm(b, axis=1)))


def make_backend(name: str, ctx, dtype: str):
    classes = {"numpy": NumpyBackend, "torch": TorchBackend, "cupy": CupyBackend}
    if name not in classes:
        raise ValueError(f"backend must be one of {BACKENDS}, not {name!r}")
    return classes[name](ctx, dtype)


def solves_on_gpu(backend) -> bool:
    return backend.name == "cupy" or (
        backend.name == "torch" and getattr(backend.device, "type", None) == "cuda"
    )


# --- OpenBLAS thread pool ------------------------------------------------------------

_GET_THREADS = (
    "scipy_openblas_get_num_threads64_",
    "scipy_openblas_get_num_threads",
    "openblas_get_num_threads64_",
    "openblas_get_num_threads",
)


def blas_threads() -> int | None:
    """Size of the thread pool of numpy's OpenBLAS, read (not set) through ctypes;
    None when the library or its getter cannot be found."""
    libs = Path(np.__file__).resolve().parent.parent / "numpy.libs"
    candidates = sorted(libs.glob("*openblas*.so*")) if libs.is_dir() else []
    for path in candidates:
        try:
            # already loaded by numpy: dlopen returns the same library, nothing re-initialised
            lib = ctypes.CDLL(str(path))
        except OSError:
            continue
        for symbol in _GET_THREADS:
            getter = getattr(lib, symbol, None)
            if getter is not None:
                getter.restype = ctypes.c_int
                return int(getter())
    return None


# --- the run -------------------------------------------------------------------------


def prepare_systems(backend, p: dict, ctx):
    """The systems where they are solved; the host-to-device copy timed when asked for."""
    if not (p["data_on_host"] and solves_on_gpu(backend)):
        with ctx.phase("generate systems", kind="data"):
            a, b = backend.generate(p["systems"], p["size"], p["seed"])
            backend.synchronize()
        return a, b
    with ctx.phase("generate systems", kind="data"):
        host_a, host_b = numpy_systems(p["systems"], p["size"], p["seed"], p["dtype"])
    with ctx.phase("host to device", kind="data") as copy:
        a, b = backend.from_host(host_a, host_b)
        backend.synchronize()
    ctx.metric("h2d_copy_s", copy.seconds)
    ctx.metric("h2d_copy_mb", (host_a.nbytes + host_b.nbytes) / 1e6)
    return a, b


def timed_solves(backend, a, b, repeats: int, ctx) -> tuple[list[float], object]:
    with ctx.phase("warm-up", kind="other"):
        backend.solve(a, b)
        backend.synchronize()
    seconds, x = [], None
    with gpu_telemetry(ctx):
        for r in range(1, repeats + 1):
            with ctx.phase(f"solve {r}", kind="epoch", samples=len(b)) as phase:
                x = backend.solve(a, b)
                backend.synchronize()
            seconds.append(phase.seconds)
    return seconds, x


def check_threads(backend, ctx) -> None:
    if backend.name != "numpy":
        return
    pool = blas_threads()
    if pool is None:
        return
    ctx.metric("blas_threads", pool)
    if pool != ctx.threads:
        print(
            f"warning: numpy's OpenBLAS runs {pool} threads but the run was given "
            f"{ctx.threads}: set OMP_NUM_THREADS (or OPENBLAS_NUM_THREADS) to the "
            "allocation before Python starts",
            file=sys.stderr,
        )


def run(params: dict, ctx) -> None:
    p = complete(WORKLOAD, params)
    backend = make_backend(p["backend"], ctx, p["dtype"])
    check_threads(backend, ctx)
    a, b = prepare_systems(backend, p, ctx)
    seconds, x = timed_solves(backend, a, b, p["repeats_inner"], ctx)
    with ctx.phase("check", kind="eval"):
        residual = backend.residual(a, b, x)
    ctx.metric("residual", residual)
    if not residual <= RESIDUAL_LIMIT:  # also catches NaN
        raise RuntimeError(f"max relative residual {residual:.3g} is above {RESIDUAL_LIMIT}")
    solve_s = statistics.median(seconds)
    ctx.metric("solve_s", solve_s)
    ctx.metric("solves_per_s", p["systems"] / solve_s if solve_s > 0 else None)
    ctx.metric("samples_per_s", p["systems"] / solve_s if solve_s > 0 else None)
    ctx.metric("size", p["size"])
    ctx.metric("systems", p["systems"])
