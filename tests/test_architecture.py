"""The package's layers (scalestudy/__init__.py): code that runs on compute nodes
(scalestudy.compute) never imports the head-node analysis or the report, so a job's
start-up stays light and a change to the analysis never changes what a run measures.
The report (scalestudy.report) imports no analysis: it formats what aggregation
computed (analysis.json). The shared modules at the top import neither layer."""

import ast
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

PACKAGE = REPO / "scalestudy"
LAYERS = ("compute", "analysis", "report")
# shared by the layers and the rules: the study model, studies and points, records
SHARED = {"model", "records", "paths", "redo", "snakemake_internals"}
# shared too: the config's studies and points, a module a topic (scalestudy/study/)
SHARED_PACKAGES = ("study",)
HEAVY = {"pandas", "scipy", "matplotlib", "seaborn", "jinja2", "numpy", "yaml"}


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports, at any depth of its code (lazy imports too), as
    dotted names (`from scalestudy.compute import ledger` gives scalestudy.compute.ledger)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            if node.module.startswith("scalestudy"):
                names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def module_file(name: str) -> Path | None:
    """The file of a module of the package (scalestudy.a.b), None for other names."""
    parts = name.split(".")
    if parts[0] != "scalestudy":
        return None
    path = PACKAGE.joinpath(*parts[1:])
    for candidate in (path.with_suffix(".py"), path / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def reached(path: Path) -> set[str]:
    """The package's modules a file imports, directly or through other modules of it."""
    seen, todo = set(), [path]
    while todo:
        for module in imported_modules(todo.pop()):
            found = module_file(module)
            if found is not None and module not in seen:
                seen.add(module)
                todo.append(found)
    return seen


def layer_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 2 and parts[1] in LAYERS else None


def test_every_module_is_in_a_layer_or_shared():
    loose = {p.stem for p in PACKAGE.glob("*.py")} - {"__init__"}
    assert loose == SHARED, "put a new module in compute/, analysis/ or report/"
    for layer in (*LAYERS, *SHARED_PACKAGES):
        assert (PACKAGE / layer / "__init__.py").is_file()


def test_compute_node_code_never_imports_the_analysis_or_the_report():
    for path in sorted((PACKAGE / "compute").glob("*.py")):
        modules = reached(path)
        other = {m for m in modules if layer_of(m) in ("analysis", "report")}
        assert not other, f"{path.relative_to(REPO)} imports {sorted(other)}"
        heavy = {m for m in imported_modules(path) if m.split(".")[0] in HEAVY}
        assert not heavy, f"{path.relative_to(REPO)} imports {sorted(heavy)}"


def test_the_shared_modules_import_no_layer_but_the_compute_one():
    """study/validation.py checks a command's params with the compute side's parser;
    nothing shared reaches the analysis or the report."""
    paths = [PACKAGE / f"{name}.py" for name in SHARED]
    paths += [p for name in SHARED_PACKAGES for p in sorted((PACKAGE / name).glob("*.py"))]
    assert len(paths) > len(SHARED)
    for path in paths:
        modules = {m for m in reached(path) if layer_of(m) in LAYERS}
        where = path.relative_to(PACKAGE)
        assert {layer_of(m) for m in modules} <= {"compute"}, f"{where} imports {modules}"


def test_starting_a_run_loads_no_analysis_library():
    code = (
        "import sys, scalestudy.compute.launch, scalestudy.compute.worker\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in "
        f"{sorted(HEAVY)!r} or m.startswith(('scalestudy.analysis', 'scalestudy.report')))\n"
        "print(','.join(loaded))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert proc.stdout.strip() == ""


def test_the_report_imports_no_analysis():
    for path in [*(PACKAGE / "report").glob("*.py"), REPO / "scripts" / "report.py"]:
        analysis = {m for m in reached(path) if layer_of(m) == "analysis"}
        assert not analysis, f"{path.relative_to(REPO)} imports {sorted(analysis)}"
    code = (
        "import sys, scalestudy.report.views, scalestudy.report.rendering\n"
        "print(','.join(sorted(m for m in sys.modules if m.startswith('scalestudy.analysis'))))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert proc.stdout.strip() == ""


def test_the_checks_can_fail():
    """The import walk sees a layer crossing written in any of the import forms."""
    source = PACKAGE / "compute" / "launch.py"
    assert "scalestudy.compute.processes" in reached(source)
    fake = ast.parse("from scalestudy.analysis import tables\nimport scalestudy.report.views")
    names = set()
    for node in ast.walk(fake):
        if isinstance(node, ast.ImportFrom):
            names |= {f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
    assert {layer_of(n) for n in names} == {"analysis", "report"}
