"""The report's sections, one folder each (scalestudy/sections/<name>/), and analysis.json,
the findings with every section's data (Analysis). A section's files, its plugin
interface: contract.py's DATA, produce.py's produce(given), view.py's view(data) and
PLACE (RANK, asks, drawn and SHOWS where it has them), figure.py's figure(data, xlabel)
and NOTHING, partial.html.j2 and line.html.j2. What each holds and how to add a
section: docs/architecture.md (tests/test_architecture.py checks each file's layer by
its name, and adds a toy section this way)."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from importlib import import_module
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from scalestudy.contract import (
    VERSION,
    Comparison,
    ContractError,
    Findings,
    parse,
    read_json,
    versioned,
)
from scalestudy.records import write_text_atomic

# each section's package, in the report's order
SECTIONS = {
    name: f"{__name__}.{name}"
    for name in (
        "time_to_result",
        "formats",
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
    """A section's contract, produce, view or figure module."""
    return import_module(f"{SECTIONS[name]}.{module}")


def has(name: str, module: str) -> bool:
    """Whether a section has that module (its producer, its figure), not importing it."""
    return find_spec(f"{SECTIONS[name]}.{module}") is not None


# The figures every study gets: the report's own (scalestudy.report.plots draws them), then
# each section's that has a figure.py, named after it (the report shows it where its
# view's drawn(data) says). Here, not in the plots, so that the workflow names them
# without importing matplotlib when it is parsed.
FIGURES = (
    *("times", "speedup", "efficiency", "cost", "pareto", "phases"),
    *(name for name in SECTIONS if has(name, "figure")),
)


@dataclass(frozen=True)
class Analysis:
    """A study's analysis.json: the findings, and each section's data under its name."""

    comparisons: list[Comparison]
    findings: Findings
    # each section's data, in the file under the section's name
    sections: dict[str, Any] = dataclasses.field(default_factory=dict)
    version: int = VERSION

    def to_json(self) -> str:
        found = dataclasses.asdict(self)
        return json.dumps(found | found.pop("sections"), indent=1, allow_nan=False)

    @classmethod
    def from_json(cls, text: str, source: str = "analysis.json") -> Analysis:
        return cls.from_values(json.loads(text), source)

    @classmethod
    def from_values(cls, data, source: str = "analysis.json") -> Analysis:
        """analysis.json's JSON values as the contract, strictly: each section's data
        under its name, as its contract says (ContractError names a key)."""
        versioned(data, source, VERSION, {})  # another version's is made again, not read
        missing = [name for name in SECTIONS if name not in data]
        if missing:
            raise ContractError(f"{source}: missing key 'Analysis.{missing[0]}'")
        found = {
            n: parse(part(n, "contract").DATA, data[n], source, path=f"Analysis.{n}")
            for n in SECTIONS
        }
        rest = {k: v for k, v in data.items() if k not in SECTIONS}
        return parse(cls, rest | {"sections": found}, source)

    def section(self, name: str):
        """A section's data, by its name in the registry."""
        return self.sections[name]

    def dump(self, path: str | Path) -> None:
        """analysis.json written, atomically (strict JSON: a NaN left is an error)."""
        write_text_atomic(path, self.to_json())

    @classmethod
    def load(cls, path: str | Path) -> Analysis:
        """analysis.json as the contract, strictly (ContractError names a key)."""
        return cls.from_values(read_json(path), str(path))
