"""Baselines end to end (docs/baselines.md): a study of times measured by hand, archived,
measured again 30 % slower at one point and compared with its last archive, through
real Snakemake, the report and `make check`."""

import json
import re
import subprocess
import sys

import numpy as np
import pytest

from scalestudy.study.archives import archive
from tests.conftest import REPO
from tests.test_report_questions import first_row, lines


def times_csv(path, slower_at=None, seed=0):
    """5 runs at each N of a program 10 s at N = 1 with a serial part, 2 % noise."""
    rng = np.random.default_rng(seed)
    lines = ["N,time_s,repeat"]
    for n in (1, 2, 4):
        for k in range(1, 6):
            t = (2 + 8 / n) * (1.3 if n == slower_at else 1.0) * (1 + 0.02 * rng.standard_normal())
            lines.append(f"{n},{t:.4f},{k}")
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.slow
@pytest.mark.waits
def test_a_rerun_30_percent_slower_at_one_point_against_its_last_archive(workflow):
    root = workflow.root
    times_csv(root / "then.csv", seed=1)
    times_csv(root / "now.csv", slower_at=2, seed=2)
    study = {"measured": "then.csv", "scaling": {"axis": "threads"}}
    workflow.write_config({"studies": {"m": study}})
    workflow.snakemake("--cores", "1", "results/m/analysis.json")
    kept = archive("m", root)
    expect = {"speedup": {"2": [1.5, None]}, "efficiency": {"4": [0.5, None]}}
    study |= {"measured": "now.csv", "baseline": "last", "expect": expect}
    workflow.write_config({"studies": {"m": study}})
    workflow.snakemake("--cores", "1")

    found = json.loads((root / "results" / "m" / "baseline.json").read_text())
    assert found["baseline"] == str(kept)
    assert {p["n"]: p["change"] for p in found["points"]} == {1: "none", 2: "slower", 4: "none"}
    html = (root / "results" / "report.html").read_text()
    assert "Against the baseline" in html and "N = 2: slower by" in html
    assert 'data-figure="baseline"' in html
    assert "<h3>History</h3>" in html  # the archive, then now
    # the first table: how many, and beside it, slower than before at N = 2, decided
    assert [q for q, _ in lines(html, "m")] == ["how many", "slower than before"]
    assert lines(html, "m")[1] == ("slower than before", "yes")
    assert re.search(
        r"slower than before : at N = 2: slower by \d+% \[\d+%, \d+%\]\. Decided\.",
        first_row(html, "m"),
    )
    # the speedup at N = 2 fell from 1.67 to about 1.28: the reference is broken
    make = subprocess.run(
        ["make", "-s", "-f", str(REPO / "Makefile"), "check", f"VENV={sys.prefix}"],
        cwd=root,
        capture_output=True,
        text=True,
    )
    assert make.returncode != 0
    assert "m: broken: speedup at N = 2 expected at least 1.5" in make.stdout
    assert "efficiency" not in make.stdout.split("broken")[-1]  # the other one is kept


def test_a_baseline_cut_mid_row_stops_the_dry_run_before_any_job(workflow):
    root = workflow.root
    times_csv(root / "now.csv", seed=2)
    kept = root / "kept"
    kept.mkdir()
    (kept / "analysis.json").write_text("{}")
    header = ",".join(f"c{i}" for i in range(79))
    row = ",".join(["1"] * 43)  # a copy stopped in the middle of its second run
    (kept / "runs.csv").write_text(f"{header}\n{','.join(['1'] * 79)}\n{row}")
    study = {"measured": "now.csv", "scaling": {"axis": "threads"}, "baseline": "kept"}
    workflow.write_config({"studies": {"m": study}})
    dry = workflow.snakemake("-n", check=False)
    assert dry.returncode != 0
    assert "no job was run" in dry.output
    where = f"studies.m.baseline: {kept / 'runs.csv'}: line 3: 43 fields, the header has 79"
    assert where in dry.output
