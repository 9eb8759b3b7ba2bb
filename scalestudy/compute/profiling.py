"""A PyTorch profiler trace of a few training steps, in Chrome trace format.

Asked for per study (`profile:`); runs as an extra job of one point whose timings are not
used, as profiling slows the steps it records. Steps come from the workload's `ctx.step()`
calls: one skipped, one warm-up, then `steps` recorded. Open the trace in chrome://tracing
or https://ui.perfetto.dev.
"""

import os
from contextlib import contextmanager
from pathlib import Path

WAIT_STEPS, WARMUP_STEPS = 1, 1


@contextmanager
def profiled(ctx, spec: dict):
    """In rank 0 of a profiling run, profile its spec's `steps` training steps and write
    the trace atomically; any other run goes unprofiled."""
    if "profile" not in spec or ctx.rank != 0:
        yield
        return
    from torch.profiler import ProfilerActivity, profile, schedule

    trace_path, steps = Path(spec["profile"]["trace"]), spec["profile"]["steps"]
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
