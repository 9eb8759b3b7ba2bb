"""The code a rule's script runs, derived statically from what it imports: the rules
declare it as their code inputs (docs/architecture.md says what is counted, and why)."""

import ast
from functools import cache
from pathlib import Path

from scalestudy.sections import SECTIONS

PACKAGE = Path(__file__).parent


@cache
def syntax(path: Path) -> list[ast.AST]:
    """Every node of a file's syntax tree, read once for the imports and the names."""
    return list(ast.walk(ast.parse(path.read_text())))


@cache
def imported_modules(path: Path) -> frozenset[str]:
    """Every module a file imports, at any depth of its code, as dotted names (`from
    scalestudy.compute import ledger` gives scalestudy.compute.ledger)."""
    names = set()
    for node in syntax(path):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            if node.module.startswith("scalestudy"):
                names.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "part":
            kind = node.args[-1] if node.args else None
            if isinstance(kind, ast.Constant) and isinstance(kind.value, str):
                names.update(f"{package}.{kind.value}" for package in SECTIONS.values())
    return frozenset(names)


@cache
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


def reached(path: Path) -> dict[str, Path]:
    """The package's modules a file imports, directly or through other modules of it,
    and the packages that hold them (importing a module runs its packages' __init__),
    each with its file."""
    seen, todo = {}, [path]
    while todo:
        for module in imported_modules(todo.pop()):
            parts = module.split(".")
            for name in (".".join(parts[:k]) for k in range(1, len(parts) + 1)):
                found = module_file(name)
                if found is not None and name not in seen:
                    seen[name] = found
                    todo.append(found)
    return seen


@cache
def data_folders(folder: Path) -> frozenset[Path]:
    """A folder and the folders of data beside it: no Python in them (templates/, schemas/)."""
    beside = (d for d in folder.iterdir() if d.is_dir() and d.name[0] != "_")
    return frozenset({folder, *(d for d in beside if not any(d.glob("*.py")))})


@cache
def data_named(path: Path) -> frozenset[Path]:
    """The package's data files a module names: a string in it that is the name of one,
    beside it, in a data folder beside it or beside a module it imports (a module's own
    file, or a path outside the package, is none)."""
    near = {path.parent} | {f.parent for m in imported_modules(path) if (f := module_file(m))}
    folders = {d for f in near for d in data_folders(f)}
    strings = (n.value for n in syntax(path) if isinstance(n, ast.Constant))
    names = {s for s in strings if isinstance(s, str) and "." in s and len(s.split()) == 1}
    found = {folder / name for folder in folders for name in names}
    return frozenset(
        f for f in found if f.is_relative_to(PACKAGE) and f.suffix != ".py" and f.is_file()
    )


@cache
def code_inputs(script: str | Path) -> list[str]:
    """The files of the package a script runs: the modules it reaches and the data files
    they (or the script) name, sorted."""
    modules = reached(Path(script))
    files = set(modules.values())
    for path in [Path(script), *modules.values()]:
        files |= data_named(path)
    return sorted(str(f) for f in files)
