"""GPU utilisation and memory, sampled with NVML in a background thread while a block runs.

    with GpuSampler(device_index, interval_s=0.05) as s:
        ...timed work...
    s.summary()  # {} when nothing could be sampled; s.unavailable_reason says why

`gpu_util_*_pct` is NVML's "GPU utilisation": the share of the last sample period (1/6 s
to 1 s, by GPU) in which any kernel ran, not the share of the GPU's compute used (one tiny
kernel on one SM reads 100 %): a low figure proves an idle GPU (waiting for data, the CPU,
launches), a high one only that something ran. `gpu_mem_*_mb` is the device's used memory
(MiB) as NVML sees it: every process, the CUDA context and the allocator's reserve.

Sampling never fails a run: without NVML (nvidia-ml-py, module `pynvml`) or a readable
device, summary() returns {} (fields absent, not zero, so that no one averages a zero never
measured) and `unavailable_reason` says why. NVML numbers devices by PCI bus, torch within
CUDA_VISIBLE_DEVICES: `nvml_handle` finds the device by the UUID torch gives, else maps the
index through CUDA_VISIBLE_DEVICES.
"""

import os
import statistics
import sys
import threading
from contextlib import contextmanager, suppress

from scalestudy.compute.harness import visible_devices


def _import_pynvml():
    import pynvml

    return pynvml


def nvml_handle(nvml, device_index: int, uuid: str | None = None, environ=os.environ):
    """NVML's handle of the device that CUDA calls `device_index` in this process."""
    if uuid and hasattr(nvml, "nvmlDeviceGetHandleByUUID"):
        try:
            return nvml.nvmlDeviceGetHandleByUUID(uuid)
        except Exception:
            pass  # e.g. a MIG instance whose UUID torch spells differently: map the index
    visible = visible_devices(environ)
    if visible and device_index < len(visible):
        entry = visible[device_index]
        if entry.isdigit():
            return nvml.nvmlDeviceGetHandleByIndex(int(entry))
        if hasattr(nvml, "nvmlDeviceGetHandleByUUID"):
            return nvml.nvmlDeviceGetHandleByUUID(entry)
    return nvml.nvmlDeviceGetHandleByIndex(device_index)


class GpuSampler:
    """Context manager that samples one GPU every `interval_s` seconds in a thread.
    `nvml`: the NVML binding (default pynvml, imported on entry; tests pass a fake)."""

    def __init__(
        self, device_index: int = 0, interval_s: float = 0.05, nvml=None, uuid: str | None = None
    ):
        if interval_s <= 0:
            raise ValueError(f"interval_s must be positive, not {interval_s}")
        self.device_index, self.interval_s, self.uuid = device_index, interval_s, uuid
        self._nvml, self._handle, self._thread, self._initialised = nvml, None, None, False
        self._stop = threading.Event()
        self.util_pct: list[float] = []
        self.mem_mb: list[float] = []
        self.unavailable_reason: str | None = None
        self.warning: str | None = None  # sampling stopped part-way

    def __enter__(self) -> "GpuSampler":
        try:
            nvml = self._nvml if self._nvml is not None else _import_pynvml()
            self._nvml = nvml
            nvml.nvmlInit()
            self._initialised = True
            self._handle = nvml_handle(nvml, self.device_index, self.uuid)
            self._sample()  # fail here, not silently in the thread, if reading does not work
        except Exception as e:  # ImportError, NVMLError_*, anything: never fail the run
            self.unavailable_reason = f"{type(e).__name__}: {e}".strip()
            self.util_pct.clear()
            self.mem_mb.clear()
            self._shutdown()
            return self
        self._thread = threading.Thread(target=self._loop, name="gpu-sampler", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> bool:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None
            self._try_sample()  # the block's last state, however short it was
        self._shutdown()
        return False

    def _sample(self) -> None:
        util = self._nvml.nvmlDeviceGetUtilizationRates(self._handle).gpu
        used = self._nvml.nvmlDeviceGetMemoryInfo(self._handle).used
        self.util_pct.append(float(util))
        self.mem_mb.append(used / 2**20)

    def _try_sample(self) -> bool:
        try:
            self._sample()
        except Exception as e:
            self.warning = f"sampling stopped: {type(e).__name__}: {e}"
        return self.warning is None

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s) and self._try_sample():
            pass

    def _shutdown(self) -> None:
        if self._initialised:
            self._initialised = False
            with suppress(Exception):  # shutting down must not fail the run either
                self._nvml.nvmlShutdown()

    def summary(self) -> dict:
        """Mean and peak utilisation and memory, and the number of samples; {} if none."""
        if not self.util_pct:
            return {}
        return {
            "gpu_util_mean_pct": statistics.fmean(self.util_pct),
            "gpu_util_peak_pct": max(self.util_pct),
            "gpu_mem_mean_mb": statistics.fmean(self.mem_mb),
            "gpu_mem_peak_mb": max(self.mem_mb),
            "gpu_samples": len(self.util_pct),
        }


def torch_uuid(device) -> str | None:
    """NVML's UUID string ("GPU-...") of a torch CUDA device, if torch knows it."""
    try:
        import torch

        uuid = str(torch.cuda.get_device_properties(device).uuid)
    except Exception:
        return None
    if not uuid:
        return None
    return uuid if uuid.startswith(("GPU-", "MIG-")) else f"GPU-{uuid}"


@contextmanager
def gpu_telemetry(ctx, interval_s: float = 0.05, nvml=None):
    """Sample ctx.device while the block runs when it is a CUDA device, then add the
    summary to ctx's metrics; on CPU do nothing. Yields the sampler, or None."""
    device = ctx.device
    if getattr(device, "type", None) != "cuda":
        yield None
        return
    index = device.index if device.index is not None else 0
    sampler = GpuSampler(index, interval_s, nvml=nvml, uuid=torch_uuid(device))
    with sampler:
        yield sampler
    for name, value in sampler.summary().items():
        ctx.metric(name, value)
    if sampler.unavailable_reason:
        print(f"GPU telemetry unavailable: {sampler.unavailable_reason}", file=sys.stderr)
    if sampler.warning:
        print(f"GPU telemetry: {sampler.warning}", file=sys.stderr)
