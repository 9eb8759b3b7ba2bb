"""How long the statistics of whole studies take: per point the median CI, the speedup
CI against the base point and the instability flags; per study the three model fits
with bootstrap uncertainty, model selection and the recommendation. Synthetic times
(USL curves, i.e. fixed_work_overhead's F + W/N + c·N, lognormal noise, one planted
slow run per study) are made beforehand and not timed.
Run: .venv/bin/python -m benchmarks.fit_speed [--studies 50 --points 10 --repeats 20]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from scalestudy.analysis.decisions.recommendation import recommend
from scalestudy.analysis.stats.intervals import instability, median_ci, ratio_ci
from scalestudy.analysis.stats.models import fit_models, select_model


def make_studies(n_studies: int, n_points: int, repeats: int, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    ns = 2 ** np.arange(n_points) if n_points <= 8 else np.arange(1, n_points + 1)
    studies = []
    for _ in range(n_studies):
        total = rng.uniform(50, 2000)
        sigma, kappa = rng.uniform(0.01, 0.2), rng.uniform(0.0, 0.01)
        curve = total * (1 + sigma * (ns - 1) + kappa * ns * (ns - 1)) / ns
        times = curve[:, None] * np.exp(rng.normal(0, rng.uniform(0.01, 0.08), (ns.size, repeats)))
        times[rng.integers(ns.size), rng.integers(repeats)] *= 1.5  # one slow run
        studies.append({"ns": ns, "times": times})
    return studies


def analyse(study: dict, seed: int) -> dict:
    ns, times = study["ns"], study["times"]
    base = times[0]
    medians = [median_ci(t) for t in times]
    speedups = [ratio_ci(base, t) for t in times]
    flags = [instability(t) for t in times]
    fits = fit_models(np.repeat(ns, times.shape[1]), times.ravel(), n_base=ns[0], seed=seed)
    best = select_model(fits)
    advice = recommend(ns, [s[0] for s in speedups], ns, times=[m[0] for m in medians])
    return {"best": best, "advice": advice, "flags": flags}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--studies", type=int, default=50)
    parser.add_argument("--points", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    studies = make_studies(args.studies, args.points, args.repeats, args.seed)
    analyse(studies[0], 0)  # first call pays for imports and caches
    start, cpu_start = time.perf_counter(), time.process_time()
    per_study = []
    results = []
    for i, study in enumerate(studies):
        t0 = time.perf_counter()
        results.append(analyse(study, i))
        per_study.append(time.perf_counter() - t0)
    total, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    records = args.studies * args.points * args.repeats
    chosen = {}
    for r in results:
        name = r["best"].name if r["best"] else "none"
        chosen[name] = chosen.get(name, 0) + 1
    unstable = sum(f["unstable"] for r in results for f in r["flags"])
    ms = np.array(per_study) * 1000
    print(f"{args.studies} studies x {args.points} N x {args.repeats} repeats = {records} runs")
    print(
        f"total {total:.3f} s wall ({cpu:.3f} s CPU); per study median {np.median(ms):.1f} ms, "
        f"max {ms.max():.1f} ms"
    )
    print(f"models chosen: {chosen}; unstable points flagged: {unstable}")


if __name__ == "__main__":
    main()
