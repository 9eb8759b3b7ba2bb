"""Least-squares linear regression by plain gradient descent, jit-compiled, on ctx.device.

Data: X (`samples` x `variables`, standard normal), true weights standard
normal, y = X w + 0.1 noise, all float32 and generated on the device that
computes ("generate data", kind data). From w = 0, `iterations` steps of
w <- w - lr * 2/n * X^T (X w - y); `final_mse` is the mean squared error after
them (about 0.01, the noise, once converged).

Backends (`backend`: auto picks JAX when it is installed and can use
ctx.device, else torch):
  jax    the whole loop is one program, jax.jit of lax.fori_loop, compiled ahead
         of time (jit(...).lower(...).compile()): "compile" is exactly the
         compilation, "run" exactly the execution.
  torch  torch.compile of one step, called `iterations` times from Python.
         Compiling the whole loop unrolls it: 46 s for 100 iterations on this
         project's 2-core test machine, growing with `iterations`, against 5-8 s
         for one step. If torch.compile fails (no C compiler, unsupported
         platform) or `torch_compile` is false, the step runs eagerly and the run
         records `compiled: 0`. "compile" is then the first (warm-up) call.

Timed: "run" (kind epoch): the iterations, synchronised (its `samples` are rows
of X visited, samples x iterations). Reported apart:
"compile" (kind other, metric `compile_s`): tracing and code generation plus
one step on a throw-away copy of w, so "run" still does exactly `iterations`
steps. torch.compile keeps a code cache on disk (/tmp/torchinductor_$USER), so
the first run on a node compiles slower than later ones (7.6 s vs 4.8 s here).
JAX on CPU uses XLA's own thread pool, sized from the CPUs the process may run
on (its affinity, which Slurm sets to the allocation), not torch's threads; and
this module asks JAX not to preallocate 75 % of the GPU
(XLA_PYTHON_CLIENT_PREALLOCATE=false unless set), so that GPU memory figures
mean something.
"""

from __future__ import annotations

import os
import sys

from scalestudy.compute.telemetry import gpu_telemetry
from workloads import complete

WORKLOAD = {
    "distributed": False,
    "steps": False,
    "devices": ["cpu", "gpu"],
    "params": {
        "properties": {
            "samples": {
                "description": "rows of X",
                "type": "integer",
                "minimum": 1,
                "default": 100000,
            },
            "variables": {
                "description": "columns of X (weights to fit)",
                "type": "integer",
                "minimum": 1,
                "default": 100,
            },
            "iterations": {
                "description": "gradient-descent steps",
                "type": "integer",
                "minimum": 1,
                "default": 100,
            },
            "lr": {
                "description": "step size",
                "type": "number",
                "exclusiveMinimum": 0,
                "default": 0.1,
            },
            "seed": {
                "description": "seed of X, the true weights and the noise",
                "type": "integer",
                "default": 1,
            },
            "backend": {
                "description": "`jax`, `torch`, or `auto`: JAX when it is installed and "
                "usable on the point's device, else torch",
                "enum": ["auto", "jax", "torch"],
                "default": "auto",
            },
            "torch_compile": {
                "description": "torch backend: `torch.compile` one step; `false` (or a failed "
                "compile) runs it eagerly",
                "type": "boolean",
                "default": True,
            },
        },
    },
}


NOISE = 0.1


def jax_device(jax, device):
    """The JAX device that is ctx.device, or None when JAX cannot use it."""
    kind = getattr(device, "type", "cpu")
    try:
        if kind == "cuda":
            devices = jax.devices("gpu")
            index = device.index or 0
            return devices[index] if index < len(devices) else None
        return jax.devices("cpu")[0]
    except RuntimeError:  # no such backend in this jaxlib
        return None


def import_jax():
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    try:
        import jax
    except ImportError:
        return None
    return jax


def choose_backend(requested: str, device) -> tuple[str, object]:
    """("jax", jax device) or ("torch", None)."""
    if requested == "torch":
        return "torch", None
    jax = import_jax()
    target = jax_device(jax, device) if jax is not None else None
    if target is not None:
        return "jax", target
    if requested == "jax":
        why = "JAX is not installed" if jax is None else f"JAX cannot use {device}"
        raise RuntimeError(f"backend 'jax': {why}; use backend 'auto' or 'torch'")
    return "torch", None


def gradient_rows(p: dict) -> int:
    """What the "run" phase counts as its samples: rows of X visited, samples x iterations."""
    return p["samples"] * p["iterations"]


def result(compiled: bool, compile_phase, run_phase, mse: float) -> dict:
    return {
        "compiled": compiled,
        "compile_s": compile_phase.seconds,
        "run_s": run_phase.seconds,
        "final_mse": mse,
    }


# --- torch ---------------------------------------------------------------------------


def gd_step(x, y, w, lr: float):
    residual = x @ w - y
    return w - lr * (2.0 / x.shape[0]) * (x.T @ residual)


def torch_data(p: dict, device):
    import torch

    g = torch.Generator(device=device).manual_seed(p["seed"])
    n, m = p["samples"], p["variables"]
    x = torch.randn(n, m, generator=g, device=device)
    w_true = torch.randn(m, generator=g, device=device)
    y = x @ w_true + NOISE * torch.randn(n, generator=g, device=device)
    return x, y


def compile_torch_step(enabled: bool):
    """(step function, compiled?) — torch.compile's function, or the eager one."""
    if not enabled:
        return gd_step, False
    import torch

    try:
        return torch.compile(gd_step, dynamic=False, fullgraph=True), True
    except Exception as e:  # torch.compile raises lazily too: see first_call
        print(f"torch.compile unavailable, running eagerly: {e}", file=sys.stderr)
        return gd_step, False


def run_torch(p: dict, ctx) -> dict:
    import torch

    with ctx.phase("generate data", kind="data"):
        x, y = torch_data(p, ctx.device)
    w0 = torch.zeros(p["variables"], device=ctx.device)
    step, compiled = compile_torch_step(p["torch_compile"])
    lr = float(p["lr"])
    with ctx.phase("compile", kind="other") as compile_phase:
        try:
            step(x, y, w0.clone(), lr)
        except Exception as e:  # compilation errors surface on the first call
            if not compiled:
                raise
            print(f"torch.compile failed, running eagerly: {e}", file=sys.stderr)
            step, compiled = gd_step, False
            step(x, y, w0.clone(), lr)
    # the phase synchronises the device when it ends, before telemetry stops
    with gpu_telemetry(ctx), ctx.phase("run", kind="epoch", samples=gradient_rows(p)) as run_phase:
        w = w0
        for _ in range(p["iterations"]):
            w = step(x, y, w, lr)
    mse = float(torch.mean((x @ w - y) ** 2))
    return result(compiled, compile_phase, run_phase, mse)


# --- jax -----------------------------------------------------------------------------


def jax_program(jax, iterations: int):
    def gd(x, y, w, lr):
        n = x.shape[0]

        def body(_, w):
            return w - lr * (2.0 / n) * (x.T @ (x @ w - y))

        return jax.lax.fori_loop(0, iterations, body, w)

    return jax.jit(gd)


def run_jax(p: dict, ctx, device) -> dict:
    import jax
    import jax.numpy as jnp

    with ctx.phase("generate data", kind="data"), jax.default_device(device):
        kx, kw, kn = jax.random.split(jax.random.PRNGKey(p["seed"]), 3)
        n, m = p["samples"], p["variables"]
        x = jax.random.normal(kx, (n, m), dtype=jnp.float32)
        y = x @ jax.random.normal(kw, (m,), dtype=jnp.float32)
        y = y + NOISE * jax.random.normal(kn, (n,), dtype=jnp.float32)
        w0 = jnp.zeros((m,), dtype=jnp.float32)
        lr = jnp.float32(p["lr"])
        # default_device leaves arrays uncommitted, and jit runs uncommitted arrays on
        # the default backend: on a GPU node a "CPU" point would copy X to the GPU and
        # run there. Committed arrays pin the program to `device`.
        x, y, w0, lr = jax.block_until_ready(jax.device_put((x, y, w0, lr), device))
    with ctx.phase("compile", kind="other") as compile_phase:
        program = jax_program(jax, p["iterations"]).lower(x, y, w0, lr).compile()
    with gpu_telemetry(ctx), ctx.phase("run", kind="epoch", samples=gradient_rows(p)) as run_phase:
        w = jax.block_until_ready(program(x, y, w0, lr))
    check_ran_on(w, device)
    mse = float(jnp.mean((x @ w - y) ** 2))
    return result(True, compile_phase, run_phase, mse)


def check_ran_on(array, device) -> None:
    """Refuse a result computed anywhere but on the point's device."""
    where = set(array.devices())
    if where != {device}:
        raise RuntimeError(f"JAX ran on {sorted(map(str, where))}, not on {device}")


def run(params: dict, ctx) -> None:
    p = complete(WORKLOAD, params)
    backend, jax_target = choose_backend(p["backend"], ctx.device)
    result = run_jax(p, ctx, jax_target) if backend == "jax" else run_torch(p, ctx)
    ctx.metric("backend_jax", 1 if backend == "jax" else 0)
    ctx.metric("compiled", 1 if result["compiled"] else 0)
    ctx.metric("compile_s", result["compile_s"])
    ctx.metric("run_s", result["run_s"])
    ctx.metric("iterations_per_s", p["iterations"] / result["run_s"] if result["run_s"] else None)
    ctx.metric("final_mse", result["final_mse"])
    ctx.metric("final_loss", result["final_mse"])
    ctx.metric("samples", p["samples"])
    ctx.metric("variables", p["variables"])
