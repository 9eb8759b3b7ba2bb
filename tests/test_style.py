"""Style gates: ruff, snakefmt and Snakemake's own linter (apart from its conda/container
advice: this workflow has one Python environment, requirements.txt)."""

import re
import subprocess

from tests.conftest import BIN, REPO


def run(*cmd):
    return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)


def test_ruff():
    proc = run(str(BIN / "ruff"), "check", ".")
    assert proc.returncode == 0, proc.stdout
    proc = run(str(BIN / "ruff"), "format", "--check", ".")
    assert proc.returncode == 0, proc.stdout


def test_snakefmt():
    proc = run(str(BIN / "snakefmt"), "--check", ".")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_snakemake_lint():
    proc = run(str(BIN / "snakemake"), "--lint")
    output = proc.stdout + proc.stderr
    titles = re.findall(r"^\s+\* (.+?):$", output, flags=re.MULTILINE)
    assert titles, "the linter printed nothing we recognise:\n" + output[-2000:]
    other = [t for t in titles if "conda environment or container" not in t]
    assert other == [], output


def test_what_snakemake_report_needs_is_among_the_dependencies():
    # the fault probe: installed from pyproject.toml alone, `snakemake --report` stopped
    # with "Python package pygments must be installed to create reports" (it came with
    # pytest only): Snakemake asks for it only with its extra "reports"
    import tomllib
    from importlib.metadata import requires

    needs = [r for r in requires("snakemake") if r.lower().startswith("pygments")]
    assert needs and all("extra ==" in r for r in needs)
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert "pygments" in project["dependencies"]
    pinned = (REPO / "requirements.txt").read_text().splitlines()
    assert any(line.startswith("pygments") for line in pinned)
