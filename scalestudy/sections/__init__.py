"""The report's sections, one folder each (scalestudy/sections/<name>/: contract.py's
DATA, produce.py's produce(given), view.py's view(data), PLACE and RANK, partial.html.j2
and line.html.j2, its line of the first table).
What each file holds and how to add a section: docs/architecture.md (tests/test_architecture.py
checks each file's layer by its name, and adds a toy section this way)."""

from importlib import import_module

# each section's package, in the report's order
SECTIONS = {
    name: f"{__name__}.{name}"
    for name in (
        "time_to_result",
        "staging",
        "energy",
        "baseline",
        "history",
        "references",
        "jobs",
        "received",
        "layouts",
        "requests",
        "gpu_verdict",
        "telemetry",
        "series",
        "paired",
    )
}


def part(name: str, module: str):
    """A section's contract, produce or view module."""
    return import_module(f"{SECTIONS[name]}.{module}")
