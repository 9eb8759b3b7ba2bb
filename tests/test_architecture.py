"""The package's layers (scalestudy/__init__.py): code that runs on compute nodes
(scalestudy.compute) never imports the head-node analysis or the report, so a job's
start-up stays light and a change to the analysis never changes what a run measures.
The report (scalestudy.report) imports no analysis: it formats what aggregation
computed (analysis.json). The shared modules at the top import neither layer."""

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

from scalestudy.code_inputs import imported_modules
from scalestudy.code_inputs import reached as code_reached
from tests.conftest import REPO

PACKAGE = REPO / "scalestudy"
LAYERS = ("compute", "analysis", "report")
# shared by the layers and the rules: the study model, records, the contract of
# analysis.json between the analysis and the report, the Snakemake internals, what is
# asked of Slurm (and the one adapter to its executor plugin), the thresholds the
# analysis judges by and the report words
SHARED = {
    "model",
    "records",
    "paths",
    "redo",
    "contract",
    "snakemake_internals",
    "slurm",
    "thresholds",
    "code_inputs",
}


def reached(path: Path) -> set[str]:
    """The package's modules a file imports, directly or through other modules of it."""
    return set(code_reached(path))


# shared too: the config's studies and points, a module a topic (scalestudy/study/)
SHARED_PACKAGES = ("study",)
HEAVY = {"pandas", "scipy", "matplotlib", "seaborn", "jinja2", "numpy", "yaml"}


# a section's files by their name (scalestudy/sections/<name>/): its producer is the
# analysis's, its view and its figure the report's, its contract shared
SECTION_LAYERS = {"produce": "analysis", "view": "report", "figure": "report", "contract": None}


def layer_of(module: str) -> str | None:
    parts = module.split(".")
    if len(parts) == 4 and parts[1] == "sections":
        return SECTION_LAYERS.get(parts[3])
    return parts[1] if len(parts) > 2 and parts[1] in LAYERS else None


def test_each_sections_files_keep_their_layer():
    """A section's producer imports no report, its view no analysis, its contract
    neither; a section folder holds those and its partial, nothing else. A section has
    a producer unless a shared step of the analysis makes its data (pipeline.MADE_FIRST:
    the findings read it), and then it has none: its data is made in one place."""
    from scalestudy.analysis.pipeline import MADE_FIRST
    from scalestudy.sections import SECTIONS

    assert set(MADE_FIRST) < set(SECTIONS)
    folders = sorted(
        p for p in (PACKAGE / "sections").iterdir() if p.is_dir() and p.name != "__pycache__"
    )
    assert [p.name for p in folders] == sorted(SECTIONS)
    for folder in folders:
        names = {p.name for p in folder.iterdir() if p.name != "__pycache__"}
        # and, where the section answers a question of the first table, its line; where
        # it shows a part of each answer, that part; where it draws one, its figure
        files = {"contract.py", "view.py", "partial.html.j2"}
        files |= set() if folder.name in MADE_FIRST else {"produce.py"}
        assert names - {"line.html.j2", "answer.html.j2", "figure.py"} == files, folder.name
        for path in sorted(folder.glob("*.py")):
            own = SECTION_LAYERS.get(path.stem)
            layers = {layer_of(m) for m in reached(path)} - {None, "compute"}
            assert layers <= {own}, f"{path.relative_to(REPO)} reaches {layers}"


def particular_sections(source: str) -> set[str]:
    """The sections an import statement of `source` names (scalestudy.sections.<name>,
    its modules or a name from it)."""
    from scalestudy.sections import SECTIONS

    found = set()
    for node in ast.walk(ast.parse(source)):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        parts = [n.split(".") for n in names]
        found |= {p[2] for p in parts if p[:2] == ["scalestudy", "sections"] and p[2:3]}
    return found & set(SECTIONS)


def test_no_module_outside_the_sections_imports_a_particular_section():
    """The hubs (the pipeline, the views, the plots, the template) reach each section
    through the registry (scalestudy.sections.part): a section added or removed is one
    folder and one registry line, never an import elsewhere."""
    outside = [p for p in PACKAGE.rglob("*.py") if p.relative_to(PACKAGE).parts[0] != "sections"]
    assert PACKAGE / "report" / "plots.py" in outside
    for path in outside:
        found = particular_sections(path.read_text())
        assert not found, f"{path.relative_to(REPO)} imports the sections {sorted(found)}"
    assert particular_sections("from scalestudy.sections.energy.contract import Energy")
    assert particular_sections("import scalestudy.sections.layouts.view") == {"layouts"}
    assert particular_sections("from scalestudy.sections import baseline") == {"baseline"}
    assert not particular_sections("from scalestudy.sections import SECTIONS, part")


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


# what starts a process: a module, or a call of os
PROCESS_MODULES = {"subprocess", "multiprocessing", "concurrent.futures", "pty"}
PROCESS_CALLS = ("os.system", "os.popen", "os.spawn", "os.exec", "os.fork", "os.posix_spawn")


def process_starts(source: str) -> list[str]:
    """Where code may start a process: an import of a module that does, a call of os's."""
    tree = ast.parse(source)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module]
            found += [n for n in names if n and (n in PROCESS_MODULES or n.split(".")[0]
                                                 in PROCESS_MODULES)]  # fmt: skip
        elif isinstance(node, ast.Call) and ast.unparse(node.func).startswith(PROCESS_CALLS):
            found.append(ast.unparse(node.func))
    return found


def test_the_analysis_starts_no_process():
    """Aggregation is a function of its files: what Slurm says comes in as data
    (rules/cluster.smk, scalestudy/resources.py asks), never asked from the analysis."""
    for path in sorted((PACKAGE / "analysis").rglob("*.py")):
        found = process_starts(path.read_text())
        assert not found, f"{path.relative_to(REPO)} may start a process: {found}"
    assert process_starts("import subprocess") == ["subprocess"]
    assert process_starts("from concurrent.futures import ProcessPoolExecutor")
    assert process_starts("os.system('sacct')") == ["os.system"]
    assert not process_starts("import os\nos.path.join('a')")


# aggregates the study of tests/test_result_time.py: its records, its cluster facts
AGGREGATE = """
import json, sys
from pathlib import Path
from scalestudy.analysis.pipeline import aggregate
from tests.test_result_time import study
root = Path(sys.argv[1])
records = sorted(str(p) for p in (root / "results").rglob("rep*.json"))
found = aggregate(study(deadline_s=20), records, cluster=root / "cluster.json", min_jobs=3)
found.write({k: Path(sys.argv[2]) / f"{k}.out" for k in ("runs", "summary", "analysis")})
"""


def test_aggregation_twice_on_the_same_inputs_gives_identical_bytes(tmp_path, monkeypatch):
    """The same records and cluster facts give the same runs.csv, summary.csv and
    analysis.json, byte for byte: in two processes of different hash seeds (no set's or
    dict's order leaks), and in this one, where starting any process is an error."""

    from tests.test_result_time import NOW, facts, runs_of, slurm, study

    runs = runs_of(tmp_path, {"t1": [10.0, 11.0, 30.0], "t2": [6.0, 6.5, 7.0]})
    history = (
        "1|1|cpu=1,node=1|debug|00:01:00|2026-04-01T10:00:00|2026-04-01T10:01:00|00:00:30|"
        "COMPLETED\n" * 3
    )
    cluster = facts(study(), runs, {"slurm_partition": "debug"}, 30, slurm({"1": 0, "2": 300},
                    history))  # fmt: skip
    assert cluster.asked_at == NOW.isoformat() and len(cluster.test_only) == 2
    cluster.dump(tmp_path / "cluster.json")
    outputs = []
    for seed in ("1", "2"):
        out = tmp_path / f"out{seed}"
        out.mkdir()
        subprocess.run([sys.executable, "-c", AGGREGATE, str(tmp_path), str(out)], cwd=REPO,
                       check=True, env={"PYTHONHASHSEED": seed, "PYTHONPATH": str(REPO),
                                        "PATH": "/usr/bin:/bin"})  # fmt: skip
        outputs.append({p.name: p.read_bytes() for p in sorted(out.iterdir())})

    def no_process(*args, **kwargs):
        raise AssertionError(f"aggregation started a process: {args[:2]}")

    monkeypatch.setattr(subprocess.Popen, "__init__", no_process)
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.setattr(sys, "argv", ["aggregate", str(tmp_path), str(here)])
    exec(compile(AGGREGATE, "aggregate", "exec"), {})
    outputs.append({p.name: p.read_bytes() for p in sorted(here.iterdir())})
    assert set(outputs[0]) == {"runs.out", "summary.out", "analysis.out"}
    assert outputs[0] == outputs[1] == outputs[2]
    # the facts were read: the waits Slurm gave are in the analysis
    assert b'"basis": "typical"' in outputs[0]["analysis.out"]


# The report's code, and the workflow's scripts that read analysis.json for it.
REPORT_CODE = [*sorted((PACKAGE / "report").glob("*.py")), REPO / "scripts" / "report.py",
               REPO / "scripts" / "plot.py",
               *sorted((PACKAGE / "sections").glob("*/view.py"))]  # fmt: skip
# string-keyed reads on attributes that are not analysis data (matplotlib, Jinja)
NOT_ANALYSIS = {"plt.rcParams", "env.filters"}


def keyed_reads(source: str) -> list[str]:
    """Where code reads a key of analysis data by its name: json.load(s) (analysis.json
    loaded outside the contract), and a string subscript or .get("...") on an attribute
    (a contract part's dict field: `study.request["mem_margin"]`)."""

    def on_attribute(value: ast.expr, key: ast.expr) -> bool:
        return (
            isinstance(value, ast.Attribute)
            and isinstance(key, ast.Constant)
            and isinstance(key.value, str)
            and ast.unparse(value) not in NOT_ANALYSIS
        )

    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            loads = ast.unparse(node.func) in ("json.load", "json.loads")
            get = node.func.attr == "get" and node.args
            if loads or (get and on_attribute(node.func.value, node.args[0])):
                found.append(ast.unparse(node))
        elif isinstance(node, ast.Subscript) and on_attribute(node.value, node.slice):
            found.append(ast.unparse(node))
    return found


def test_the_report_reads_analysis_json_only_through_the_contract():
    """analysis.json reaches the report as scalestudy.contract's frozen dataclasses
    (Analysis.load), read by attribute: no key outside the contract is read."""
    for path in REPORT_CODE:
        reads = keyed_reads(path.read_text())
        assert not reads, f"{path.relative_to(REPO)} reads by key: {reads}"
    assert "Analysis.load" in (REPO / "scripts" / "report.py").read_text()
    assert "Analysis.load" in (REPO / "scripts" / "plot.py").read_text()


def field_names() -> set[str]:
    """Every field name of every part of the contract, its sections' included."""
    from scalestudy.contract import _dataclasses_in, _hints
    from scalestudy.sections import SECTIONS, Analysis, part

    names, seen = set(), set()
    todo = [Analysis, *(c for n in SECTIONS for c in _dataclasses_in(part(n, "contract").DATA))]
    while todo:
        cls = todo.pop()
        if cls not in seen:
            seen.add(cls)
            names |= set(_hints(cls))
            todo += [c for hint in _hints(cls).values() for c in _dataclasses_in(hint)]
    return names


def template_names() -> set[str]:
    """What the template may read: the contract's fields, the keys the views put in
    their dicts, the columns they format, the names render() passes and the sections'
    (a study's views, by section)."""
    from scalestudy.sections import SECTIONS
    from scalestudy.sections.formatting import COLUMNS

    keys = set()
    views = [PACKAGE / "report" / "views.py", PACKAGE / "sections" / "formatting.py"]
    for path in [*views, *(PACKAGE / "sections").glob("*/view.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Dict):
                keys |= {k.value for k in node.keys if isinstance(k, ast.Constant)}
    return (
        field_names()
        | keys
        | set(COLUMNS)
        | set(SECTIONS)
        | {"title", "studies", "generated", "items", "not_in_config"}
    )


# filters that compute or round a number: the views format, the analysis decides
COMPUTING_FILTERS = {"float", "int", "round", "abs", "format", "max", "min"}


def template_decisions(source: str, names: set[str]) -> list[str]:
    """What a template decides or reads that it should not: an attribute neither the
    contract nor the views define, a comparison of order, arithmetic, a computing filter."""
    from jinja2 import nodes

    from scalestudy.report.rendering import environment

    def own(n) -> bool:
        """Jinja's own: the loop's counters, a list the template builds, a literal map
        of words."""
        return (
            (isinstance(n.node, nodes.Name) and n.node.name == "loop")
            or n.attr == "append"
            or isinstance(n.node, nodes.Dict)
        )

    tree = environment().parse(source)
    found = [f"{n.attr} (line {n.lineno})" for n in tree.find_all(nodes.Getattr)
             if n.attr not in names and not own(n)]  # fmt: skip
    found += [
        f"{op.op} (line {n.lineno})"
        for n in tree.find_all(nodes.Compare)
        for op in n.ops
        if op.op in ("lt", "lteq", "gt", "gteq")
    ]
    arithmetic = (nodes.Add, nodes.Sub, nodes.Mul, nodes.Div, nodes.FloorDiv, nodes.Mod, nodes.Pow)
    found += [f"{type(n).__name__} (line {n.lineno})" for n in tree.find_all(arithmetic)]
    found += [f"| {n.name} (line {n.lineno})" for n in tree.find_all(nodes.Filter)
              if n.name in COMPUTING_FILTERS]  # fmt: skip
    return found


def test_the_template_reads_the_contract_and_the_views_and_decides_nothing():
    """The report's template (the plan's, plan.html.j2, formats plan.json: not this
    contract)."""
    templates = [PACKAGE / "report" / "templates" / "report.html.j2",
                 *sorted((PACKAGE / "sections").glob("*/*.html.j2"))]  # fmt: skip
    for template in templates:
        found = template_decisions(template.read_text(), template_names())
        assert not found, f"{template.relative_to(REPO)}: {found}"


def test_the_contract_checks_can_fail():
    assert keyed_reads('x = study.request["mem_margin"]') == ["study.request['mem_margin']"]
    assert keyed_reads('found.grid.get("rows")') == ["found.grid.get('rows')"]
    assert keyed_reads("json.loads(path.read_text())")
    assert not keyed_reads('row["point"]; plt.rcParams["svg.fonttype"] = "none"')
    old = ("{% if o.lo | float <= 1 %}not told apart{% endif %}{{ (m * 100) | round }}"
           "{{ o.lo_text }}{{ a.get('adaptive') }}{{ loop.index0 }}")  # fmt: skip
    found = template_decisions(old, template_names())
    assert found == ["lo_text (line 1)", "get (line 1)", "lteq (line 1)", "Mul (line 1)",
                     "| float (line 1)", "| round (line 1)"]  # fmt: skip


def import_statements(text: str) -> list[str]:
    """The top-level import statements of a Snakefile (not Python as a whole: rules), a
    parenthesised one with its continuation lines."""
    statements, lines = [], iter(text.splitlines())
    for line in lines:
        if line.startswith(("import ", "from ")):
            while line.count("(") > line.count(")"):
                line += "\n" + next(lines)
            statements.append(line)
    return statements


def test_parsing_the_workflow_loads_no_scipy_stats():
    """Every Snakemake start (the head's, each Slurm job's, each packed member's) runs
    the imports of the Snakefile and the rules: scipy.stats there cost ~0.9 s each, so
    the analysis imports it where it is used."""
    imports = [
        statement
        for path in [REPO / "Snakefile", *sorted((REPO / "rules").glob("*.smk"))]
        for statement in import_statements(path.read_text())
        if "snakemake" not in statement.split(" import ")[0]
    ]
    code = "\n".join(imports) + "\nimport sys\nprint('scipy.stats' in sys.modules)"
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert imports and proc.stdout.strip() == "False", imports


# The model workflows (rna-seq-star-deseq2, dna-seq-varlociraptor) keep common.smk to
# config validation and small input functions; a topic of its own gets its own file
# (rules/adaptive.smk, rules/startup.smk, rules/run_inputs.smk).
COMMON_SMK_MAX_LINES = 200


def test_common_smk_stays_a_small_centre():
    lines = len((REPO / "rules" / "common.smk").read_text().splitlines())
    assert lines <= COMMON_SMK_MAX_LINES, (
        f"rules/common.smk has {lines} lines (at most {COMMON_SMK_MAX_LINES}): give a "
        "topic its own rules/*.smk or a package function"
    )


def test_each_threshold_has_one_home_and_the_manual_says_it_in_its_words():
    """The efficiency bands and the instability limits are written in scalestudy/thresholds.py
    only: no other module or template states their numbers, and the manual's tables say
    them in the words that module makes of them."""
    from scalestudy.thresholds import BANDS_WORDS, INSTABILITY_WORDS

    number = r"(?<![\d.])(?:0\.9|0\.75|3\.5)(?![\dxr]| s\b)"  # not 93.75, 0.75x, 0.9rem, "0.9 s"
    # a band in words ("90 % excellent", "75-90 %"); a coverage figure (75 %) is no band
    stated = re.compile(rf"{number}|(?<![\d.])(?:90|75) % (?:excellent|good)|75-90|≥ 90")
    code = [*PACKAGE.rglob("*.py"), *PACKAGE.rglob("*.j2")]
    found = [f"{p.relative_to(REPO)}: {m}" for p in code if p.name != "thresholds.py"
             for m in stated.findall(p.read_text())]  # fmt: skip
    assert not found, found
    manual = (REPO / "docs" / "report.md").read_text()
    assert BANDS_WORDS in manual and INSTABILITY_WORDS in manual
    assert INSTABILITY_WORDS in (REPO / "config" / "README.md").read_text()


def test_no_issue_numbers_in_the_code():
    """Code says what it does and why, not which ticket asked for it."""
    marker = re.compile(r"issue \d+", re.IGNORECASE)
    places = ["scalestudy", "workloads", "scripts", "rules"]
    found = [
        str(p.relative_to(REPO))
        for place in places
        for p in (REPO / place).rglob("*")
        if p.is_file() and p.suffix in (".py", ".j2", ".smk") and marker.search(p.read_text())
    ]
    assert not found, found


# where JSON is parsed: the files of the workflow's own (analysis.json, a round's plan,
# the cluster facts; plan.json is the workflow's output, read by no step) by
# contract.read_json, each through its owner's load, and their schemas; and readers of
# other files (records, their schema, a metric's names, a YAML error)
LOADS = {
    "contract.py": {"read_json", "checked"},
    "sections/__init__.py": {"from_json"},
    "records.py": {"_fast_validator", "_validator", "parse_record_text", "read_values"},
    "analysis/tables.py": {"metric_columns"},
    "study/errors.py": {"yaml_problem"},
}


# where JSON values are written to a file: a round's plan and plan.json by their dump
# alone (the analysis by Analysis.dump, as text)
WRITES = {"analysis/decisions/adaptive.py": {"dump"}, "analysis/cluster/queue.py": {"dump"}}


def json_loads(path: Path, calls=("json.load", "json.loads")) -> set[str]:
    """The functions of a file that call json.load(s) (or `calls`) on anything but
    json.dumps(...) (a round trip through JSON parses no file)."""
    found = set()
    for func in ast.walk(ast.parse(path.read_text())):
        if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(func):
            if (
                isinstance(node, ast.Call)
                and ast.unparse(node.func) in calls
                and not (node.args and ast.unparse(node.args[0]).startswith("json.dumps("))
            ):
                found.add(func.name)
    return found


def test_analysis_rounds_and_the_plan_are_parsed_only_by_their_load():
    """Nothing but an owner's load parses analysis.json or a round's plan: their readers
    call Analysis.load (earlier_analysis: a baseline's, an archive's) or RoundPlan.load,
    both through contract.parse (its private parser used nowhere else); and only
    RoundPlan.dump writes a round's plan, Forecast.dump plan.json."""
    code = [*PACKAGE.rglob("*.py"), *(REPO / "scripts").glob("*.py")]
    for path in code:
        where = str(path.relative_to(PACKAGE if PACKAGE in path.parents else REPO))
        if where.startswith("compute/"):  # the compute side reads no analysis
            continue
        found = json_loads(path)
        assert found == LOADS.get(where, set()), f"{where}: {sorted(found)} parse JSON"
        found = json_loads(path, ("json.dump", "write_json_atomic", "records.write_json_atomic"))
        assert found == WRITES.get(where, set()), f"{where}: {sorted(found)} write JSON"
        private = re.search(r"\b_(convert|Where)\b", path.read_text())
        assert where == "contract.py" or not private, f"{where} parses by {private[0]}"
    for path in [REPO / "Snakefile", *(REPO / "rules").glob("*.smk")]:
        assert "json.load" not in path.read_text(), f"{path.name} parses JSON: call a load"


TOY = {
    "contract.py": """
        from dataclasses import dataclass


        @dataclass(frozen=True)
        class RunsCounted:
            runs: int


        DATA = RunsCounted
    """,
    "produce.py": """
        from toy_sections.counted.contract import RunsCounted


        def produce(given):
            return RunsCounted(runs=len(given.runs))
    """,
    "view.py": """
        RANK = 3  # after the study's own questions


        def view(counted):
            return {"runs": counted.runs}
    """,
    "partial.html.j2": "<h3>Runs counted</h3><p>{{ v.runs }} runs in all</p>",
    "line.html.j2": '{% call line("runs", true) %}{{ v.runs }} counted. {{ decided(true) }}'
    "{% endcall %}",
}


def test_a_section_added_in_its_folder_and_one_registry_line_is_in_the_report(
    tmp_path, monkeypatch
):
    """The toy section's folder and its line in SECTIONS: analysis.json holds its data
    under its name, loads back as its dataclass, and the report shows its partial."""
    from textwrap import dedent

    import pandas as pd

    from scalestudy.report.rendering import render
    from scalestudy.report.views import study_view
    from scalestudy.sections import SECTIONS, Analysis
    from tests.test_views import aggregated, text_of

    folder = tmp_path / "toy_sections" / "counted"
    folder.mkdir(parents=True)
    for name, text in TOY.items():
        (folder / name).write_text(dedent(text))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(SECTIONS, "counted", "toy_sections.counted")
    out = aggregated(tmp_path / "rtx")
    runs = len(pd.read_csv(out["runs"]))
    assert json.loads(out["analysis"].read_text())["counted"] == {"runs": runs}
    analysis = Analysis.load(out["analysis"])
    assert type(analysis.section("counted")).__name__ == "RunsCounted"
    html = render("t", [study_view(analysis, pd.read_csv(out["summary"]), {})])
    assert f"Runs counted {runs} runs in all" in text_of(html)
    # its line of the first table, after the study's own
    first = text_of(html[: html.index("</table>")])
    assert f"runs : {runs} counted. Decided." in first
