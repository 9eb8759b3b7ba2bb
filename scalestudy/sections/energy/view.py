"""Energy to result in the report: each point's energy per result, and each answer's."""

from scalestudy.sections.energy.contract import Energy
from scalestudy.sections.formatting import Significant, cell, fmt, shallow

# the energy table's two columns (its partial labels them): each its one precision and
# its interval's columns
KJ, KJ_CI = Significant(3), ("energy_kj_ci_lo", "energy_kj_ci_hi")
RELATIVE, RELATIVE_CI = "{:.2f}", ("relative_ci_lo", "relative_ci_hi")


def drawn(energy: Energy) -> bool:
    """Its figure only where energy was measured."""
    return energy.measured


def view(energy: Energy) -> dict:
    """Energy per result of each point formatted (kJ with its interval, ratio to the base
    case with its interval), and each series' answer's figures. Which point is least and
    which are on the front the analysis decided."""

    def kj(joules):
        return None if joules is None else joules / 1000

    # a series of one point: its point is not compared with itself
    series = [p.series for p in energy.points]
    rows = [
        shallow(p)
        | {
            "energy_kj": kj(p.energy_j),
            "energy_kj_ci_lo": kj(p.energy_ci_lo),
            "energy_kj_ci_hi": kj(p.energy_ci_hi),
        }
        | ({"relative_energy": None} if series.count(p.series) == 1 else {})
        for p in energy.points
    ]
    kj = KJ.fixed([r["energy_kj"] for r in rows])
    formatted = [
        {
            "energy_kj": cell(r, "energy_kj", kj, KJ_CI),
            "relative_energy": cell(r, "relative_energy", RELATIVE, RELATIVE_CI),
        }
        for r in rows
    ]
    answers = {
        a.series or "": shallow(a)
        | {
            "speedup": fmt(a.speedup, "{:.2f}"),
            "relative": fmt(a.relative_energy, "{:.2f}"),
            "least_relative": None
            if a.least_relative_energy is None
            else fmt(a.least_relative_energy, "{:.2f}"),
        }
        for a in energy.answers
    }
    return shallow(energy) | {
        "weight": fmt(energy.weight_su_per_kwh, "{:g}") if energy.weight_su_per_kwh else None,
        "has_series": any(p.series for p in energy.points),
        "points": [
            shallow(p)
            | {"energy": f["energy_kj"], "relative": f["relative_energy"], "source": p.source_words}
            for p, f in zip(energy.points, formatted, strict=True)
        ],
        "answers": answers,
    }


def of_answer(v: dict | None, answer) -> dict:
    """An answer's cost in energy (its series' answer in the view `v`), where measured."""
    return {"energy": v["answers"].get(answer.series or "") if v and v["measured"] else None}
