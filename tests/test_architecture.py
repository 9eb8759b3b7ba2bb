"""The package's layers: code that runs on compute nodes (launcher, worker, harness and
what they use) never imports the head-node analysis or the report, so a job's start-up
stays light and a change to the analysis never changes what a run measures. The report
imports no analysis: it formats what aggregation computed (analysis.json)."""

import ast
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

PACKAGE = REPO / "scalestudy"
# compute-node code: what scalestudy.launch and scalestudy.worker run
COMPUTE = {
    "launch", "worker", "harness", "processes", "ledger", "records", "paths", "telemetry",
    "tracker", "profiling", "commandline", "data",
}  # fmt: skip
# head-node analysis and the report
HEAD = {
    "analysis", "predictions", "intervals", "models", "comparison", "recommendation", "cost",
    "verdict", "plots", "studies", "redo", "model", "plan", "findings", "views", "rendering",
}  # fmt: skip
# the report: views of analysis.json and summary.csv, and their rendering
REPORT = {"views", "rendering"}
# what computes: none of it may reach the report
ANALYSIS = {
    "analysis", "predictions", "intervals", "models", "comparison", "recommendation", "cost",
    "verdict", "findings", "studies",
}  # fmt: skip
HEAVY = {"pandas", "scipy", "matplotlib", "seaborn", "jinja2", "numpy", "yaml"}


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports, at any depth of its code (lazy imports too)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            if node.module == "scalestudy":
                names.update(f"scalestudy.{alias.name}" for alias in node.names)
    return names


def test_every_module_is_in_one_layer():
    modules = {p.stem for p in PACKAGE.glob("*.py")} - {"__init__"}
    assert modules == COMPUTE | HEAD, "put a new module in COMPUTE or HEAD"


def test_compute_node_code_never_imports_the_analysis_or_the_report():
    for name in COMPUTE:
        imports = imported_modules(PACKAGE / f"{name}.py")
        head = {m for m in imports if m.split(".")[:2] in [["scalestudy", h] for h in HEAD]}
        assert not head, f"scalestudy/{name}.py imports {sorted(head)}"
        heavy = {m for m in imports if m.split(".")[0] in HEAVY}
        assert not heavy, f"scalestudy/{name}.py imports {sorted(heavy)}"


def test_starting_a_run_loads_no_analysis_library():
    code = (
        "import sys, scalestudy.launch, scalestudy.worker\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in "
        f"{sorted(HEAVY)!r} or m.split('.')[-1] in {sorted(HEAD)!r})\n"
        "print(','.join(loaded))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert proc.stdout.strip() == ""


def package_imports(path: Path) -> set[str]:
    """The package's modules a file imports, directly or through other modules of it."""
    seen, todo = set(), [path]
    while todo:
        for module in imported_modules(todo.pop()):
            parts = module.split(".")
            if parts[0] == "scalestudy" and len(parts) == 2 and parts[1] not in seen:
                seen.add(parts[1])
                if (PACKAGE / f"{parts[1]}.py").is_file():
                    todo.append(PACKAGE / f"{parts[1]}.py")
    return seen


def test_the_report_imports_no_analysis():
    for path in [*(PACKAGE / f"{name}.py" for name in REPORT), REPO / "scripts" / "report.py"]:
        analysis = package_imports(path) & ANALYSIS
        assert not analysis, f"{path.relative_to(REPO)} imports {sorted(analysis)}"
    code = (
        "import sys, scalestudy.views, scalestudy.rendering\n"
        f"print(','.join(sorted(m for m in sys.modules if m.split('.')[-1] in {sorted(ANALYSIS)!r}"
        " and m.startswith('scalestudy'))))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert proc.stdout.strip() == ""
