"""The report's sections, one folder each (scalestudy/sections/<name>/):

- contract.py: DATA, the type of what analysis.json holds under the section's name
  (dataclasses shared by both sides: it imports neither);
- produce.py: produce(given) -> DATA, the analysis side, from the aggregation so far
  (scalestudy.analysis.pipeline.Given); it imports no report;
- view.py: view(data) -> the dict its partial reads as `v` (None: not shown), the
  report side; it imports no analysis;
- partial.html.j2: the section's part of each study's report, after the fits, or where
  view.py's PLACE says ("answers": after them; "layouts": after their rounds;
  "telemetry": after the results' notes; "cost": with the cost; "environment": before it).

Adding a section is its folder and its line in SECTIONS (tests/test_architecture.py
checks each file's layer by its name, and adds a toy section this way)."""

from importlib import import_module
from pathlib import Path

# each section's package, in the report's order
SECTIONS = {
    name: f"{__name__}.{name}"
    for name in ("time_to_result", "staging", "energy", "baseline", "history", "references", "jobs",
                 "received", "layouts", "requests", "gpu_verdict", "telemetry", "series", "paired")
}  # fmt: skip


def part(name: str, module: str):
    """A section's contract, produce or view module."""
    return import_module(f"{SECTIONS[name]}.{module}")


def partial(name: str) -> str:
    """A section's template."""
    return Path(part(name, "contract").__file__).with_name("partial.html.j2").read_text()
