"""A PyTorch profiler trace of a few training steps, in Chrome trace format.

Asked for per study (`profile:`); runs as an extra job of one point whose timings are not
used, as profiling slows the steps it records. Steps come from the workload's `ctx.step()`
calls: one skipped, one warm-up, then `steps` recorded. Open the trace in chrome://tracing
or https://ui.perfetto.dev.
"""

import os
from contextlib import contextmanager, nullcontext
from pathlib import Path

WAIT_STEPS, WARMUP_STEPS = 1, 1


def maybe_profiled(ctx, spec: dict, torch):
    """The profiler for rank 0 of a profiling run, else nothing."""
    profile = spec.get("profile")
    if not profile or ctx.rank != 0:
        return nullcontext()
    return profiled_steps(ctx, profile["trace"], profile["steps"], torch)


@contextmanager
def profiled_steps(ctx, trace_path: str | Path, steps: int, torch):
    """Profile `steps` training steps of the run; write the trace atomically."""
    from torch.profiler import ProfilerActivity, profile, schedule

    trace_path = Path(trace_path)
    written = []

    def export(prof):
        trace_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = trace_path.with_name(f".{trace_path.name}.tmp")
        prof.export_chrome_trace(str(tmp))
        os.replace(tmp, trace_path)  # a reader sees no trace or the whole trace
        written.append(trace_path)

    activities = [ProfilerActivity.CPU]
    if getattr(ctx.device, "type", "cpu") == "cuda":
        activities.append(ProfilerActivity.CUDA)
    prof = profile(
        activities=activities,
        schedule=schedule(wait=WAIT_STEPS, warmup=WARMUP_STEPS, active=steps, repeat=1),
        on_trace_ready=export,
        record_shapes=True,
    )
    prof.start()
    ctx.step_hook = prof.step
    try:
        yield
    finally:
        ctx.step_hook = None
        prof.stop()
    if written:
        # the report links the trace from the record alone (it reads nothing undeclared)
        ctx.metric("trace_mb", trace_path.stat().st_size / 2**20)
    else:
        raise RuntimeError(
            f"the profiled run made fewer than {WAIT_STEPS + WARMUP_STEPS + steps} training "
            "steps; lower profile.steps or raise the workload's batches"
        )
