"""analysis.json is a typed contract (scalestudy/contract.py): the analysis writes it,
the report loads it strictly and reads it by attribute; verdicts (told apart, --mem in
words) come from the analysis, once."""

import json
import re

import pandas as pd
import pytest

from scalestudy.analysis.decisions.request import mem_amount, mem_text, point_request
from scalestudy.contract import Answer, ContractError, Findings
from scalestudy.report import views
from scalestudy.report.rendering import render
from scalestudy.report.views import study_view
from scalestudy.sections import SECTIONS, Analysis
from scalestudy.sections.layouts import produce as layouts_module
from scalestudy.sections.layouts.contract import Total
from tests.conftest import REPO
from tests.test_request import runs, threads_study
from tests.test_views import aggregated, grid_analysis, text_of


def test_an_aggregated_analysis_json_loads_into_the_contract_and_writes_back_the_same(tmp_path):
    out = aggregated(tmp_path / "rtx", recommend={"deadline_s": 60, "budget_su": 0.1})
    text = out["analysis"].read_text()
    analysis = Analysis.from_json(text, str(out["analysis"]))
    assert isinstance(analysis.findings, Findings)
    (answer,) = analysis.findings.answers
    assert isinstance(answer, Answer) and (answer.worth_n, answer.base_n) == (6, 1)
    assert analysis.section("series")[0].curve.measured_max_n == 10
    assert json.loads(analysis.to_json()) == json.loads(text)
    # the shape other readers know stays: the planner reads series[i].curve
    assert set(json.loads(text)) == {
        *("comparisons", "findings", "version"),
        # each section's data under its name (scalestudy.sections), "series" among them
        *SECTIONS,
    }


def test_a_grid_analysis_round_trips_with_its_layouts_and_heat_map():
    analysis, _ = grid_analysis()
    again = Analysis.from_json(analysis.to_json())
    assert again == analysis
    layouts = again.section("layouts")
    assert isinstance(layouts.totals[0], Total) and layouts.grid.rows


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (lambda a: a["findings"]["answers"][0].update(surprise=1),
         "unknown key 'Analysis.findings.answers.0.surprise'"),
        (lambda a: a["findings"]["study"].pop("unit"),
         "missing key 'Analysis.findings.study.unit'"),
        (lambda a: a.pop("findings"), "missing key 'Analysis.findings'"),
        (lambda a: a["series"][0]["curve"].pop("band_lo"),
         "missing key 'Analysis.series.0.curve.band_lo'"),
    ],
)  # fmt: skip
def test_an_unknown_or_a_missing_key_is_refused_with_its_name_and_file(tmp_path, change, named):
    out = aggregated(tmp_path / "rtx")
    data = json.loads(out["analysis"].read_text())
    change(data)
    with pytest.raises(ContractError, match=re.escape(named)) as refused:
        Analysis.from_json(json.dumps(data), str(out["analysis"]))
    assert str(out["analysis"]) in str(refused.value)
    # the report refuses it the same way, and the workflow's script names the file
    with pytest.raises(ValueError, match=re.escape(named)):
        study_view(data, pd.read_csv(out["summary"]), {})


def test_a_layout_whose_interval_just_excludes_1_is_told_apart(monkeypatch):
    """The template tested `lo <= 1` on lo rounded to two decimals: a lo of 1.004 printed
    "1.00" and was said "not told apart". The verdict is the analysis's: the interval
    excludes 1."""
    monkeypatch.setattr(layouts_module, "ratio_ci", lambda other, best: (1.3, 1.004, 1.6))
    analysis, summary = grid_analysis()
    others = [o for t in analysis.section("layouts").totals for o in t.others]
    assert others and all(o.told_apart for o in others)
    text = text_of(render("t", [study_view(analysis, summary, {})]))
    assert "1.30x [1.00, 1.60] faster than" in text
    assert "not told apart" not in text
    # an interval that reaches 1 is not
    monkeypatch.setattr(layouts_module, "ratio_ci", lambda other, best: (1.3, 1.0, 1.6))
    analysis, summary = grid_analysis()
    text = text_of(render("t", [study_view(analysis, summary, {})]))
    assert "not told apart by these runs" in text


@pytest.mark.parametrize("mb", [21, 1000, 1023, 1024, 1536, 2048, 10240])
def test_mem_is_worded_once_as_its_sbatch_line_says_it(mb):
    amount, unit = mem_amount(mb)
    assert mem_text(mb) == f"{amount} {unit}B"
    assert (amount, unit) == ((mb // 1024, "G") if mb % 1024 == 0 else (mb, "M"))


def test_the_report_shows_the_analysis_words_for_mem_and_repeats_no_rule():
    # 1500 MB x 1.2 = 1800 MB -> 2 GB; asked 4000 MB, not whole GB: in MB
    made = runs("t4", elapsed_s=[100.0, 120.0], usage_peak_rss_mb=[1500.0, 1400.0])
    request = point_request(threads_study(), "", 4, made)
    assert "#SBATCH --mem=2G" in request["sbatch"]
    assert (request["mem_text"], request["asked_mem_text"]) == ("2 GB", "4000 MB")
    source = (REPO / "scalestudy" / "report" / "views.py").read_text()
    # the whole-GB rule (a remainder of 1024) lives in scalestudy.analysis.decisions.request alone
    assert not re.search(r"%\s*1024|MB_PER_GB", source)
    assert not hasattr(views, "mem_text")


def test_each_version_is_read_by_its_reader_or_refused_naming_it(tmp_path):
    """analysis.json says its version: one of another version is refused by Analysis.load
    (its rule makes it again); an earlier one, a baseline's or an archive's, is read by
    the versioned reader from version 1 (before versions, parts missing) and today's,
    and refused naming any other."""
    from scalestudy.contract import VERSION, earlier_analysis

    out = aggregated(tmp_path / "rtx")
    data = json.loads(out["analysis"].read_text())
    assert data["version"] == VERSION == 2
    earlier = earlier_analysis(out["analysis"])
    assert earlier.version == 2 and earlier.study.name == "rtx"
    assert [(a.worth_n, a.decided) for a in earlier.answers] == [(6, earlier.answers[0].decided)]
    # as version 1 wrote it: no version, no section added since, no fingerprint
    old = {k: v for k, v in data.items() if k not in ("version", "paired")}
    del old["findings"]["fingerprint"]
    (tmp_path / "old.json").write_text(json.dumps(old))
    with pytest.raises(ContractError, match=r"old.json: of contract version 1, which this code"):
        Analysis.load(tmp_path / "old.json")
    read = earlier_analysis(tmp_path / "old.json")
    assert read.version == 1 and read.fingerprint is None
    assert read.answers == earlier.answers and read.series == earlier.series
    (tmp_path / "new.json").write_text(json.dumps(data | {"version": 9}))
    with pytest.raises(
        ContractError,
        match=r"new.json: of contract version 9, which this code "
        r"cannot read \(it reads 1, 2\)",
    ):
        earlier_analysis(tmp_path / "new.json")
