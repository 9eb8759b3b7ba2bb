"""Scaling models fitted to a study's times: Amdahl, fixed work plus a per-unit overhead
and fixed work plus a tree-communication term, with bootstrap uncertainty, AICc model
selection and the predicted peak. Pure functions on numpy arrays; every random draw
comes from ``np.random.default_rng(seed)``. The models, what the report makes of them,
and why: docs/report.md, "The results table, models and figures".
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np

from scalestudy.analysis.stats.intervals import LEVEL, _tails

MODEL_NAMES = ("amdahl", "fixed_work_overhead", "log_comm")
_FORMULAS = {
    "amdahl": "t(N) = T·(s + (1−s)/N)",
    "fixed_work_overhead": "t(N) = F + W/N + c·N (as USL: σ = (F+c)/t(1), κ = c/t(1))",
    "log_comm": "t(N) = F + W/N + c·log₂N",
}
# Ties in AICc closer than this are numerically the same fit (e.g. both three-parameter
# families with c = 0, which is Amdahl's curve).
_AICC_TIE = 1e-6
_NOISE_DRAWS = 20  # residuals drawn per bootstrap parameter set for prediction bands


# ---------------------------------------------------------------- design


def _design(name: str, n) -> np.ndarray:
    """Columns X(N) of the model t = X(N) @ theta, theta >= 0."""
    n = np.asarray(n, dtype=float)
    one = np.ones_like(n)
    if name == "amdahl":  # theta = (T*s, T*(1-s))
        cols = (one, 1 / n)
    elif name == "fixed_work_overhead":  # theta = (F, W, c)
        cols = (one, 1 / n, n)
    elif name == "log_comm":  # theta = (F, W, c); log2(1) = 0: no communication at N = 1
        cols = (one, 1 / n, np.log2(n))
    else:
        raise ValueError(f"unknown model {name!r}; known: {MODEL_NAMES}")
    return np.stack(cols, axis=-1)


def _named_params(name: str, theta: np.ndarray) -> dict[str, np.ndarray]:
    theta = np.asarray(theta, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        if name == "amdahl":
            total = theta[..., 0] + theta[..., 1]
            return {"T": total, "s": theta[..., 0] / total}
        params = {"F": theta[..., 0], "W": theta[..., 1], "c": theta[..., 2]}
        if name == "fixed_work_overhead":
            # the same fit read as the USL, t(N) = t(1)·(1 + σ(N−1) + κN(N−1))/N, for
            # readers who know that form; no separate USL candidate (module docstring)
            t1 = theta[..., 0] + theta[..., 1] + theta[..., 2]
            params |= {"sigma": (theta[..., 0] + theta[..., 2]) / t1, "kappa": theta[..., 2] / t1}
        return params


_SUPPORTS = {
    k: [np.array(s) for r in range(k, 0, -1) for s in itertools.combinations(range(k), r)]
    for k in (1, 2, 3)
}


# ---------------------------------------------------------------- fitting


def nan_quantile(values, q, axis=None) -> np.ndarray:
    """np.nanquantile's answer, at np.quantile's cost where no value is nan (a quarter:
    the prediction bands of a study took an eighth of its aggregation)."""
    values = np.asarray(values)
    if np.isnan(values).any():
        return np.nanquantile(values, q, axis=axis)
    return np.quantile(values, q, axis=axis)


def _nnls_batch(Z: np.ndarray, z: np.ndarray) -> np.ndarray:
    """min ||z_b - Z_b theta||, theta >= 0, for each b of a batch (Z: B x n x k, k <= 3).
    Exact: the solution is the unconstrained least-squares fit on its own support, so
    the best feasible one of the 2^k - 1 support fits is it. The full support comes
    first; rows where it is feasible are done (it is then the global optimum)."""
    B, _, k = Z.shape
    scale = np.sqrt(np.einsum("bnk,bnk->bk", Z, Z))
    scale[scale == 0] = 1.0
    Zs = Z / scale[:, None, :]  # unit columns keep the normal equations well conditioned
    gram = Zs.transpose(0, 2, 1) @ Zs
    proj = np.einsum("bnk,bn->bk", Zs, z)
    zz = np.einsum("bn,bn->b", z, z)
    theta = np.zeros((B, k))
    best_rss = np.full(B, np.inf)
    todo = np.arange(B)
    for number, support in enumerate(_SUPPORTS[k]):
        g = gram[np.ix_(todo, support, support)] + 1e-13 * np.eye(support.size)
        p = proj[np.ix_(todo, support)]
        sol = np.linalg.solve(g, p[..., None])[..., 0]
        feasible = np.all(sol >= -1e-12, axis=1)
        sol = np.clip(sol, 0.0, None)
        # residual sum of squares from the normal equations (only compares supports)
        rss = zz[todo] - 2 * np.einsum("bk,bk->b", sol, p) + np.einsum("bi,bij,bj->b", sol, g, sol)
        better = feasible & (rss < best_rss[todo])
        rows = todo[better]
        best_rss[rows] = rss[better]
        theta[rows] = 0.0
        theta[rows[:, None], support[None, :]] = sol[better]
        if number == 0:
            todo = todo[~feasible]
            if todo.size == 0:
                break
    return theta / scale


def _log_loss(X, weight, mean_log, theta) -> np.ndarray:
    m = theta @ X.T
    with np.errstate(divide="ignore", invalid="ignore"):
        r = mean_log - np.log(m)
    loss = (r * r) @ weight
    loss[~np.isfinite(loss) | np.any(m <= 0, axis=1)] = np.inf
    return loss


def _fit_log_batch(
    X: np.ndarray, weight: np.ndarray, mean_log: np.ndarray, max_iter: int = 50, rtol=1e-12
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """min over theta >= 0 of sum_g weight_g (mean_log_g - log X_g@theta)^2 for each row
    of mean_log (B x G). With mean_log the mean log time of the runs at each distinct N
    and weight their number this is the full log-space least squares over all runs, less
    the within-N scatter that no model can explain, so repeats cost nothing here.
    Gauss-Newton: around the current model m the problem is the weighted linear one
    min sum w ((m (1 + mean_log - log m) - X theta) / m)^2, solved exactly under
    theta >= 0; steps are halved until the loss falls. Returns theta, loss, converged."""
    B, G = mean_log.shape
    root_w = np.sqrt(weight)
    # Start: least squares on relative errors (1 - X theta / y), nearly the answer.
    geo_mean = np.exp(mean_log)
    theta = _nnls_batch(root_w[:, None] * X[None] / geo_mean[..., None], np.tile(root_w, (B, 1)))
    m = theta @ X.T
    bad = ~np.all(m > 0, axis=1)
    if bad.any():  # a start with a zero somewhere: add the always-positive W/N term
        theta[bad, 1] += np.median(geo_mean[bad] / X[:, 1], axis=1)
    loss = _log_loss(X, weight, mean_log, theta)
    converged = np.zeros(B, dtype=bool)
    for _ in range(max_iter):
        active = np.flatnonzero(~converged)
        if active.size == 0:
            break
        th, y, old = theta[active], mean_log[active], loss[active]
        m = th @ X.T
        target = root_w * (1.0 + y - np.log(m))
        step = _nnls_batch(root_w[:, None] * X[None] / m[..., None], target) - th
        t = np.ones(active.size)
        new = _log_loss(X, weight, y, th + step)
        for _halving in range(30):
            worse = ~(new <= old)
            if not worse.any():
                break
            t[worse] *= 0.5
            new[worse] = _log_loss(X, weight, y[worse], th[worse] + t[worse, None] * step[worse])
        t[~(new <= old)] = 0.0  # no descent found: stay put (converged)
        new = np.minimum(new, old)
        theta[active] = th + t[:, None] * step
        converged[active] = old - new <= rtol * new + 1e-300
        loss[active] = new
    return theta, loss, converged


# ---------------------------------------------------------------- results


@dataclass
class FitResult:
    """One scaling model fitted to times, with bootstrap uncertainty.

    rss, r2 and rmse are in log space (rmse is roughly the typical relative error of a
    run around the curve); aicc ranks models (lower is better)."""

    name: str
    formula: str
    params: dict[str, float]
    param_ci: dict[str, tuple[float, float]]
    n_points: int
    n_obs: int
    k: int
    rss: float
    r2: float
    aicc: float
    rmse: float
    ok: bool
    note: str
    n_base: float = 1.0
    # coefficients of t = X(N) @ theta, the bootstrap's sets of them, and the residuals
    # drawn for prediction bands (sets x draws); None when the fit is not ok
    theta: np.ndarray | None = field(default=None, repr=False)
    boot_theta: np.ndarray | None = field(default=None, repr=False)
    boot_noise: np.ndarray | None = field(default=None, repr=False)

    def predict_time(self, n) -> np.ndarray:
        """Fitted time t(N) (nan when the fit is not ok)."""
        if not self.ok:
            return np.full(np.shape(n), np.nan)
        return _design(self.name, n) @ self.theta

    def predict_speedup(self, n, t_base: float | None = None) -> np.ndarray:
        """Fitted speedup t_base/t(n). t_base: the base time the speedups are against,
        e.g. the measured median at the base N (as the measured speedups); default the
        model's own t(n_base) at the study's base."""
        if t_base is None:
            t_base = self.predict_time(self.n_base)
        return t_base / self.predict_time(n)

    def band(
        self, n, prediction: bool = True, t_base: float | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(lo, hi) of the speedup t_base/t(n) over the bootstrap parameter sets, at LEVEL.
        prediction=True (default): a prediction band for the speedup that one new run at
        n would show (each set is combined with resampled residuals of the fit).
        prediction=False: confidence band of the fitted curve only. t_base as in
        predict_speedup: by default each set's own t(n_base); a given t_base (the
        measured base median) is a fixed number, so the band then holds the uncertainty
        of t(n) and of a run around it, not that of the base median."""
        shape = np.shape(n)
        if not self.ok or self.boot_theta is None or len(self.boot_theta) == 0:
            return np.full(shape, np.nan), np.full(shape, np.nan)
        n = np.atleast_1d(np.asarray(n, dtype=float))
        with np.errstate(divide="ignore", invalid="ignore"):
            t_n = self.boot_theta @ _design(self.name, n).T
            if t_base is None:
                t_base = self.boot_theta @ _design(self.name, [self.n_base]).T
            log_speedup = np.log(t_base) - np.log(t_n)
        if prediction:  # (sets x draws) x points
            log_speedup = log_speedup[:, None, :] - self.boot_noise[:, :, None]
            log_speedup = log_speedup.reshape(-1, n.size)
        lo, hi = nan_quantile(np.exp(log_speedup), _tails(LEVEL), axis=0)
        return lo.reshape(shape), hi.reshape(shape)


def _failed_fit(name: str, k: int, n_points: int, n_obs: int, n_base: float, note: str):
    names = list(_named_params(name, np.zeros(k)))
    nan = math.nan
    return FitResult(
        name,
        _FORMULAS[name],
        dict.fromkeys(names, nan),
        {p: (nan, nan) for p in names},
        n_points,
        n_obs,
        k,
        rss=nan,
        r2=nan,
        aicc=math.inf,
        rmse=nan,
        ok=False,
        note=note,
        n_base=float(n_base),
    )


# ---------------------------------------------------------------- bootstrap and fits of a study


@dataclass
class _Runs:
    """The runs of a study reduced to what a log-space fit needs."""

    distinct: np.ndarray  # the distinct N (G)
    counts: np.ndarray  # runs at each N (G)
    inverse: np.ndarray  # group of each run (n_obs)
    log_t: np.ndarray  # log time of each run (n_obs)
    mean_log: np.ndarray  # mean log time at each N (G)
    within_ss: float  # scatter of the runs around their N's mean log time

    def group_means(self, log_t: np.ndarray) -> np.ndarray:
        """Mean log time at each N for every row of log_t (B x n_obs), runs in place."""
        indicator = np.zeros((self.inverse.size, self.distinct.size))
        indicator[np.arange(self.inverse.size), self.inverse] = 1.0 / self.counts[self.inverse]
        return log_t @ indicator


def _bootstrap_means(samples, statistic, n_boot: int, rng) -> np.ndarray:
    """n_boot x G: the G mean log times that `statistic` makes of each of n_boot
    resamples of `samples` (scipy.stats.bootstrap, every sample redrawn on its own).
    Only its bootstrap distribution is used: the refits give the intervals."""
    from scipy.stats import bootstrap  # here: scipy.stats costs ~1 s of every workflow parse

    # random_state=, not rng=: rng= needs SciPy >= 1.15
    res = bootstrap(
        samples,
        statistic,
        n_resamples=n_boot,
        method="percentile",
        vectorized=True,
        random_state=rng,
    )
    return np.reshape(res.bootstrap_distribution, (-1, n_boot)).T


def _resample_within_n(runs: _Runs, n_boot: int, rng) -> np.ndarray:
    """Mean log time at each N of n_boot replicates that redraw, at each N, as many
    runs as there were from the runs at that N (one sample per N for the bootstrap).
    A plain redraw of r runs has a mean that varies (r-1)/r times as much as the real
    one (0.8 for 5 repeats: CIs 10 % short), so deviations from the N's mean are scaled
    by sqrt(r/(r-1))."""
    samples = [runs.log_t[runs.inverse == g] for g in range(runs.distinct.size)]
    raw = _bootstrap_means(
        samples, lambda *s, axis=-1: np.stack([x.mean(axis=axis) for x in s]), n_boot, rng
    )
    inflate = np.sqrt(runs.counts / (runs.counts - 1.0))
    return runs.mean_log + inflate * (raw - runs.mean_log)


def _fit_one(name, runs: _Runs, n_base, boot_mean_log, n_boot, rng) -> FitResult:
    k = _design(name, 1.0).shape[-1]
    n_points, n_obs = runs.distinct.size, runs.log_t.size
    if n_points <= k:
        note = f"underdetermined: {n_points} distinct N for {k} parameters (need more than {k})"
        return _failed_fit(name, k, n_points, n_obs, n_base, note)
    X = _design(name, runs.distinct)
    weight = runs.counts.astype(float)
    theta, loss, conv = _fit_log_batch(X, weight, runs.mean_log[None])
    theta = theta[0]
    rss = float(loss[0]) + runs.within_ss
    if not (conv[0] and np.isfinite(rss)):
        return _failed_fit(name, k, n_points, n_obs, n_base, "optimiser did not converge")
    notes = []
    log_fit = np.log(X @ theta)
    resid = runs.log_t - log_fit[runs.inverse]
    tss = float(np.sum((runs.log_t - runs.log_t.mean()) ** 2))
    r2 = 1.0 - rss / tss if tss > 0 else math.nan
    n_par = k + 1  # the error variance is estimated too
    if n_obs - n_par - 1 > 0:
        aicc = n_obs * math.log(max(rss / n_obs, 1e-300)) + 2 * n_par
        aicc += 2 * n_par * (n_par + 1) / (n_obs - n_par - 1)
    else:
        aicc = math.inf
        notes.append(f"too few runs ({n_obs}) for AICc")
    # Residuals for the residual bootstrap and the prediction band: centred, and inflated
    # for the k fitted parameters (raw residuals are too small on average).
    noise = (resid - resid.mean()) * math.sqrt(n_obs / max(n_obs - k, 1))
    params = {p: float(v) for p, v in _named_params(name, theta).items()}
    param_ci = {p: (math.nan, math.nan) for p in params}
    boot_theta, boot_noise = np.empty((0, k)), np.empty((0, _NOISE_DRAWS))
    if n_boot > 0:
        if boot_mean_log is None:
            fitted = log_fit[runs.inverse]
            boot_mean_log = _bootstrap_means(
                (noise,), lambda draws, axis=-1: runs.group_means(fitted + draws).T, n_boot, rng
            )
        boot_theta, _, boot_conv = _fit_log_batch(X, weight, boot_mean_log)
        if not boot_conv.all():
            notes.append(f"{int((~boot_conv).sum())} of {n_boot} bootstrap fits not converged")
        # several residuals per parameter set: the band's noise part is then smooth
        boot_noise = noise[rng.integers(0, n_obs, size=(n_boot, _NOISE_DRAWS))]
        for p, values in _named_params(name, boot_theta).items():
            lo, hi = nan_quantile(values, _tails(LEVEL))
            param_ci[p] = (float(lo), float(hi))
    return FitResult(
        name,
        _FORMULAS[name],
        params,
        param_ci,
        n_points,
        n_obs,
        k,
        rss,
        r2,
        aicc,
        rmse=math.sqrt(rss / n_obs),
        ok=True,
        note="; ".join(notes),
        n_base=float(n_base),
        theta=theta,
        boot_theta=boot_theta,
        boot_noise=boot_noise,
    )


def fit_models(ns, times, n_base: float, n_boot: int = 300, seed: int = 0) -> list[FitResult]:
    """Fit amdahl, fixed_work_overhead and log_comm to times t(N) in log space (see the module
    docstring). `ns` and `times` hold one entry per run, repeats included; non-finite or
    non-positive times are dropped. Uncertainty: when every N has at least 2 runs, the
    bootstrap redraws runs within each N (the same replicates for every model);
    otherwise it resamples the residuals of each fit. param_ci are percentile intervals
    at LEVEL. Fits with no more distinct N than parameters come back with ok=False."""
    ns = np.asarray(ns, dtype=float).ravel()
    times = np.asarray(times, dtype=float).ravel()
    if ns.shape != times.shape:
        raise ValueError(f"ns and times differ in length: {ns.size} vs {times.size}")
    keep = np.isfinite(ns) & np.isfinite(times) & (times > 0) & (ns > 0)
    log_t = np.log(times[keep])
    distinct, inverse, counts = np.unique(ns[keep], return_inverse=True, return_counts=True)
    mean_log = np.bincount(inverse, log_t, minlength=distinct.size) / np.maximum(counts, 1)
    within_ss = float(np.sum((log_t - mean_log[inverse]) ** 2)) if log_t.size else 0.0
    runs = _Runs(distinct, counts, inverse, log_t, mean_log, within_ss)
    by_repeats = counts.size > 0 and counts.min() >= 2
    rng = np.random.default_rng(seed)
    boot_mean_log = _resample_within_n(runs, n_boot, rng) if by_repeats and n_boot > 0 else None
    fits = [
        _fit_one(name, runs, n_base, boot_mean_log, n_boot, np.random.default_rng([seed, i]))
        for i, name in enumerate(MODEL_NAMES)
    ]
    how = "CI: bootstrap of " + ("runs within each N" if by_repeats else "residuals")
    for fit in fits:
        if fit.ok and n_boot > 0:
            fit.note = "; ".join(filter(None, [how, fit.note]))
    return fits


# ---------------------------------------------------------------- selection and peak


def select_model(fits: list[FitResult]) -> FitResult | None:
    """The ok fit with the lowest AICc; None when no fit is ok (or none has a finite
    AICc). Ties (same curve, e.g. both three-parameter families with c = 0) go to
    fewer parameters, then to the earlier fit in `fits`. AICc differences below ~2 are
    weak evidence: see `aicc_weights`."""
    candidates = [f for f in fits if f.ok and np.isfinite(f.aicc)]
    if not candidates:
        return None
    best = min(f.aicc for f in candidates)
    tied = [f for f in candidates if f.aicc <= best + _AICC_TIE]
    return min(tied, key=lambda f: f.k)


def aicc_weights(fits: list[FitResult]) -> dict[str, float]:
    """Akaike weights exp(-dAICc/2), normalised: the relative support of each ok fit."""
    ok = [f for f in fits if f.ok and np.isfinite(f.aicc)]
    if not ok:
        return {}
    best = min(f.aicc for f in ok)
    raw = {f.name: math.exp(-(f.aicc - best) / 2) for f in ok}
    total = sum(raw.values())
    return {name: w / total for name, w in raw.items()}


def predicted_peak(
    fit: FitResult, n_max_search: float = 4096, t_base: float | None = None
) -> tuple[float, float] | None:
    """(N*, speedup at N*) where the fitted time is least, so the speedup peaks:
    fixed_work_overhead N* = sqrt(W/c), log_comm N* = W·ln2/c (where -W/N² + c/(N ln2)
    vanishes). None when the fitted time falls on all of [1, n_max_search]: Amdahl
    always, the others when c = 0 or N* lies outside that range. N* is not rounded and
    does not depend on the base; the speedup there is against t_base, as in
    FitResult.predict_speedup (pass the measured base time to state it against the
    measured base case)."""
    if not fit.ok:
        return None
    p = fit.params
    if fit.name == "fixed_work_overhead" and p["c"] > 0:
        n_star = math.sqrt(p["W"] / p["c"])
    elif fit.name == "log_comm" and p["c"] > 0:
        n_star = p["W"] * math.log(2) / p["c"]
    else:
        return None
    if not 1.0 <= n_star <= n_max_search:
        return None
    return n_star, float(fit.predict_speedup(n_star, t_base=t_base))
