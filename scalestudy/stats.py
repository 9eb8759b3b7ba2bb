"""Uncertainty for scaling studies: confidence intervals, stability flags, scaling-model
fits, extrapolation, recommendations and series comparison. Pure functions on numpy
arrays; every random draw comes from ``np.random.default_rng(seed)``.

Statistical choices, and why:

* Medians, not means: run times are right-skewed and now and then hit by one slow run
  (a noisy neighbour, a cold cache). The CI of a median comes from order statistics:
  the number of runs below the true median is Binomial(n, 1/2) whatever the
  distribution, so [X_(d), X_(n-d+1)] covers it with a known probability. Those
  probabilities jump with d (97.9 % is the nearest to 95 % for n = 10), so by default
  we interpolate between neighbouring order statistics (Hettmansperger & Sheather 1986),
  which brings the coverage close to the nominal level. For n <= 5 no pair of order
  statistics reaches 95 %: (min, max) is returned and `median_ci_coverage` tells its
  real coverage (93.75 % for n = 5).
* Speedup and efficiency are ratios of medians; their CIs come from bootstrapping each
  sample on its own (percentile interval). Ratios of single runs are never averaged.
* Models are fitted in log space, sum of (log t - log model)^2: errors are relative (the
  times at large N are small and would otherwise not count), and with log-symmetric
  noise the curve goes through the medians. All three models are linear in the time
  domain with non-negative coefficients, t = X(N) @ theta, theta >= 0, so the fit is a
  Gauss-Newton iteration whose steps are exact non-negative least-squares problems,
  vectorised over all bootstrap replicates at once (no optimiser call per replicate).
* Note: USL and fixed_work_overhead span the same curves t = a + b/N + c*N whenever
  sigma >= kappa (F = T*(sigma - kappa)); they then fit equally well and only their
  parameters read differently. USL is the wider family (it also allows F < 0).
* Models are ranked by AICc (Akaike's criterion with the small-sample correction; the
  error variance counts as a parameter): it trades fit against parameters and needs no
  nesting. A difference below about 2 means the data do not really tell the models apart.
* Fit uncertainty: bootstrap of the runs within each N (deviations scaled by
  sqrt(r/(r-1)), which a plain redraw of r runs lacks), or of the residuals when some N
  has a single run; percentile intervals.
* Bands: `FitResult.band` gives, by default, a *prediction* band: where the speedup of
  one new run at N would fall (bootstrap parameter sets combined with resampled
  residuals). A *confidence* band (prediction=False) covers only the fitted curve.
* Two series are compared by permutation tests on log times (exact when few splits
  exist), stratified by N for the overall p-value; no normality is assumed.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
from scipy.stats import binom

LEVEL = 0.95
MODEL_NAMES = ("amdahl", "fixed_work_overhead", "usl")
_FORMULAS = {
    "amdahl": "t(N) = T·(s + (1−s)/N)",
    "fixed_work_overhead": "t(N) = F + W/N + c·N",
    "usl": "t(N) = T·(1 + σ·(N−1) + κ·N·(N−1))/N",
}
# Ties in AICc closer than this are numerically the same fit (e.g. USL and
# fixed_work_overhead on the same curve).
_AICC_TIE = 1e-6
_NOISE_DRAWS = 20  # residuals drawn per bootstrap parameter set for prediction bands


def _finite(values) -> np.ndarray:
    x = np.asarray(values, dtype=float).ravel()
    return x[np.isfinite(x)]


def _tails(level: float) -> tuple[float, float]:
    return (1.0 - level) / 2.0, (1.0 + level) / 2.0


def _py(x):
    """Plain Python number, int when integral (N values read better as 6 than 6.0)."""
    x = float(x)
    return int(x) if x.is_integer() else x


# ---------------------------------------------------------------- medians and ratios


@lru_cache(maxsize=1024)
def _order_stat_rule(n: int, level: float, interpolate: bool) -> tuple[int, float, float]:
    """(d, lam, coverage): the CI of the median of n sorted values runs from
    (1-lam)*X_(d) + lam*X_(d+1) to (1-lam)*X_(n-d+1) + lam*X_(n-d) (1-based ranks)."""
    ds = np.arange(1, (n + 1) // 2 + 1)
    coverage = 1.0 - 2.0 * binom.cdf(ds - 1, n, 0.5)  # P(X_(d) <= median <= X_(n-d+1))
    reach = np.flatnonzero(coverage >= level - 1e-12)
    if reach.size == 0:  # small n: even (min, max) falls short of the level
        return 1, 0.0, float(coverage[0])
    i = int(reach[-1])
    d, cov_d = int(ds[i]), float(coverage[i])
    if not interpolate or i + 1 >= ds.size or cov_d <= level:
        return d, 0.0, cov_d
    frac = (cov_d - level) / (cov_d - coverage[i + 1])
    lam = (n - d) * frac / (d + (n - 2 * d) * frac)
    return d, float(lam), float(level)


def median_ci_coverage(n: int, level: float = LEVEL, interpolate: bool = True) -> float:
    """Coverage that `median_ci` achieves for n values: the exact binomial coverage of
    the order statistics used, or `level` when interpolation hits it (approximately);
    below `level` when n is too small for it (n <= 5 at 95 %), nan for n < 2."""
    if n < 2:
        return math.nan
    return _order_stat_rule(int(n), float(level), bool(interpolate))[2]


def median_ci(times, level: float = LEVEL, interpolate: bool = True) -> tuple[float, float, float]:
    """(median, lo, hi) with a distribution-free CI from order statistics.

    Non-finite values (failed runs) are dropped. n = 0: all nan; n = 1: (x, nan, nan).
    When n is too small for `level` (n <= 5 at 95 %), (min, max) is returned: the widest
    interval there is; `median_ci_coverage(n, level)` says how much it really covers.
    interpolate=False gives the exact, conservative order-statistic interval."""
    x = np.sort(_finite(times))
    n = x.size
    if n == 0:
        return math.nan, math.nan, math.nan
    med = float(np.median(x))
    if n < 2:
        return med, math.nan, math.nan
    d, lam, _ = _order_stat_rule(n, float(level), bool(interpolate))
    lo = (1 - lam) * x[d - 1] + lam * x[min(d, n - 1)]
    hi = (1 - lam) * x[n - d] + lam * x[max(n - d - 1, 0)]
    return med, float(lo), float(hi)


def _boot_medians(x: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Medians of n_boot resamples of x. With x sorted, sorting the drawn indices sorts
    the resample; small integers sort about 3x faster than np.median partitions."""
    x = np.sort(x)
    n = x.size
    idx = np.sort(rng.integers(0, n, size=(n_boot, n)), axis=1)
    return 0.5 * (x[idx[:, (n - 1) // 2]] + x[idx[:, n // 2]])


def ratio_ci(
    base_times, times, level: float = LEVEL, n_boot: int = 2000, seed: int = 0
) -> tuple[float, float, float]:
    """Speedup median(base)/median(times) with a percentile-bootstrap CI, each sample
    resampled on its own. Non-finite values are dropped; CI is nan when either sample
    has fewer than 2 values (the ratio too when one is empty)."""
    a, b = _finite(base_times), _finite(times)
    if a.size == 0 or b.size == 0:
        return math.nan, math.nan, math.nan
    ratio = float(np.median(a) / np.median(b))
    if a.size < 2 or b.size < 2 or n_boot < 1:
        return ratio, math.nan, math.nan
    rng = np.random.default_rng(seed)
    boot = _boot_medians(a, n_boot, rng) / _boot_medians(b, n_boot, rng)
    lo, hi = np.quantile(boot, _tails(level))
    return ratio, float(lo), float(hi)


def efficiency_ci(
    base_times,
    times,
    n_base: float,
    n: float,
    level: float = LEVEL,
    n_boot: int = 2000,
    seed: int = 0,
) -> tuple[float, float, float]:
    """Parallel efficiency speedup * n_base / n with the CI of `ratio_ci`, scaled."""
    factor = float(n_base) / float(n)
    ratio, lo, hi = ratio_ci(base_times, times, level, n_boot, seed)
    return ratio * factor, lo * factor, hi * factor


def instability(times, cv_limit: float = 0.10, z_limit: float = 3.5) -> dict:
    """Flags a point whose repeats disagree: coefficient of variation above `cv_limit`,
    or outliers with |modified z| = |0.6745 (x - median) / MAD| > `z_limit`
    (Iglewicz & Hoaglin). MAD = 0 finds no outliers by z. Outlier indices refer to
    `times` as given (non-finite values are skipped). Fewer than 2 values: not judged."""
    x = np.asarray(times, dtype=float).ravel()
    where = np.flatnonzero(np.isfinite(x))
    v = x[where]
    if v.size < 2:
        return {"cv": math.nan, "outliers": [], "unstable": False, "reason": ""}
    mean = v.mean()
    cv = float(v.std(ddof=1) / mean) if mean != 0 else math.inf
    med = np.median(v)
    mad = np.median(np.abs(v - med))
    outliers: list[int] = []
    if mad > 0:
        z = 0.6745 * (v - med) / mad
        outliers = [int(i) for i in where[np.abs(z) > z_limit]]
    reasons = []
    if cv > cv_limit:
        reasons.append(f"CV {cv:.1%} > {cv_limit:.0%}")
    if outliers:
        reasons.append(f"outlier repeats {outliers} (|modified z| > {z_limit:g})")
    return {"cv": cv, "outliers": outliers, "unstable": bool(reasons), "reason": "; ".join(reasons)}


def karp_flatt(speedup, n, n_base: float = 1):
    """Experimentally determined serial fraction e = (1/s - 1/p) / (1 - 1/p), p = n/n_base.
    nan where p == 1. Scalars give a float, arrays an array."""
    s = np.asarray(speedup, dtype=float)
    p = np.asarray(n, dtype=float) / float(n_base)
    with np.errstate(divide="ignore", invalid="ignore"):
        e = np.where(p == 1, np.nan, (1 / s - 1 / p) / (1 - 1 / p))
    return float(e) if e.ndim == 0 else e


# ---------------------------------------------------------------- model fits


def _design(name: str, n) -> np.ndarray:
    """Columns X(N) of the model t = X(N) @ theta, theta >= 0."""
    n = np.asarray(n, dtype=float)
    one = np.ones_like(n)
    if name == "amdahl":  # theta = (T*s, T*(1-s))
        cols = (one, 1 / n)
    elif name == "fixed_work_overhead":  # theta = (F, W, c)
        cols = (one, 1 / n, n)
    elif name == "usl":  # theta = (T*sigma, T*(1-sigma), T*kappa)
        cols = (one, 1 / n, n - 1)
    else:
        raise ValueError(f"unknown model {name!r}; known: {MODEL_NAMES}")
    return np.stack(cols, axis=-1)


def _named_params(name: str, theta: np.ndarray) -> dict[str, np.ndarray]:
    theta = np.asarray(theta, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        if name == "fixed_work_overhead":
            return {"F": theta[..., 0], "W": theta[..., 1], "c": theta[..., 2]}
        total = theta[..., 0] + theta[..., 1]
        if name == "amdahl":
            return {"T": total, "s": theta[..., 0] / total}
        return {"T": total, "sigma": theta[..., 0] / total, "kappa": theta[..., 2] / total}


_SUPPORTS = {
    k: [np.array(s) for r in range(k, 0, -1) for s in itertools.combinations(range(k), r)]
    for k in (1, 2, 3)
}


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

    def predict_speedup(self, n, n_base: float | None = None) -> np.ndarray:
        """Fitted speedup t(n_base)/t(n); n_base defaults to the study's base."""
        n_base = self.n_base if n_base is None else n_base
        return self.predict_time(n_base) / self.predict_time(n)

    def band(
        self, n, n_base: float | None = None, level: float = LEVEL, prediction: bool = True
    ) -> tuple[np.ndarray, np.ndarray]:
        """(lo, hi) of the speedup t(n_base)/t(n) over the bootstrap parameter sets.
        prediction=True (default): a prediction band for the speedup that one new run at
        n would show against the fitted base time (each set is combined with resampled
        residuals of the fit). prediction=False: confidence band of the fitted curve only."""
        shape = np.shape(n)
        if not self.ok or self.boot_theta is None or len(self.boot_theta) == 0:
            return np.full(shape, np.nan), np.full(shape, np.nan)
        n_base = self.n_base if n_base is None else n_base
        n = np.atleast_1d(np.asarray(n, dtype=float))
        with np.errstate(divide="ignore", invalid="ignore"):
            t_n = self.boot_theta @ _design(self.name, n).T
            t_base = self.boot_theta @ _design(self.name, [n_base]).T
            log_speedup = np.log(t_base) - np.log(t_n)
        if prediction:  # (sets x draws) x points
            log_speedup = log_speedup[:, None, :] - self.boot_noise[:, :, None]
            log_speedup = log_speedup.reshape(-1, n.size)
        lo, hi = np.nanquantile(np.exp(log_speedup), _tails(level), axis=0)
        return lo.reshape(shape), hi.reshape(shape)


def _failed_fit(name: str, k: int, n_points: int, n_obs: int, n_base: float, note: str):
    names = list(_named_params(name, np.zeros(k)))
    nan = math.nan
    return FitResult(
        name=name,
        formula=_FORMULAS[name],
        params=dict.fromkeys(names, nan),
        param_ci={p: (nan, nan) for p in names},
        n_points=n_points,
        n_obs=n_obs,
        k=k,
        rss=nan,
        r2=nan,
        aicc=math.inf,
        rmse=nan,
        ok=False,
        note=note,
        n_base=float(n_base),
    )


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


def _resample_within_n(runs: _Runs, n_boot: int, rng) -> np.ndarray:
    """Mean log time at each N of n_boot replicates that redraw, at each N, as many
    runs as there were from the runs at that N (index matrix, no loop over replicates).
    A plain redraw of r runs has a mean that varies (r-1)/r times as much as the real
    one (0.8 for 5 repeats: CIs 10 % short), so deviations from the N's mean are scaled
    by sqrt(r/(r-1))."""
    idx = np.empty((n_boot, runs.inverse.size), dtype=np.intp)
    for g in range(runs.distinct.size):
        rows = np.flatnonzero(runs.inverse == g)
        idx[:, rows] = rows[rng.integers(0, rows.size, size=(n_boot, rows.size))]
    raw = runs.group_means(runs.log_t[idx])
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
            draws = noise[rng.integers(0, n_obs, size=(n_boot, n_obs))]
            boot_mean_log = runs.group_means(log_fit[runs.inverse] + draws)
        boot_theta, _, boot_conv = _fit_log_batch(X, weight, boot_mean_log)
        if not boot_conv.all():
            notes.append(f"{int((~boot_conv).sum())} of {n_boot} bootstrap fits not converged")
        # several residuals per parameter set: the band's noise part is then smooth
        boot_noise = noise[rng.integers(0, n_obs, size=(n_boot, _NOISE_DRAWS))]
        for p, values in _named_params(name, boot_theta).items():
            lo, hi = np.nanquantile(values, _tails(LEVEL))
            param_ci[p] = (float(lo), float(hi))
    return FitResult(
        name=name,
        formula=_FORMULAS[name],
        params=params,
        param_ci=param_ci,
        n_points=n_points,
        n_obs=n_obs,
        k=k,
        rss=rss,
        r2=r2,
        aicc=aicc,
        rmse=math.sqrt(rss / n_obs),
        ok=True,
        note="; ".join(notes),
        n_base=float(n_base),
        theta=theta,
        boot_theta=boot_theta,
        boot_noise=boot_noise,
    )


def fit_models(
    ns, times, n_base: float, n_boot: int = 300, seed: int = 0, models=MODEL_NAMES
) -> list[FitResult]:
    """Fit amdahl, fixed_work_overhead and usl to times t(N) in log space (see the module
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
        for i, name in enumerate(models)
    ]
    how = "CI: bootstrap of " + ("runs within each N" if by_repeats else "residuals")
    for fit in fits:
        if fit.ok and n_boot > 0:
            fit.note = "; ".join(filter(None, [how, fit.note]))
    return fits


def select_model(fits: list[FitResult]) -> FitResult | None:
    """The ok fit with the lowest AICc; None when no fit is ok (or none has a finite
    AICc). Ties (same curve, e.g. USL and fixed_work_overhead when sigma >= kappa) go to
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


def predicted_peak(fit: FitResult, n_max_search: float = 4096) -> tuple[float, float] | None:
    """(N*, speedup at N*) where the fitted speedup (against fit.n_base) peaks: USL
    N* = sqrt((1 - sigma)/kappa), fixed_work_overhead N* = sqrt(W/c). None when the
    fitted speedup is monotone on [1, n_max_search]: Amdahl always, the others when the
    overhead term is zero or N* lies outside that range. N* is not rounded."""
    if not fit.ok:
        return None
    p = fit.params
    if fit.name == "usl" and p["kappa"] > 0:
        n_star = math.sqrt(max(1.0 - p["sigma"], 0.0) / p["kappa"])
    elif fit.name == "fixed_work_overhead" and p["c"] > 0:
        n_star = math.sqrt(p["W"] / p["c"])
    else:
        return None
    if not 1.0 <= n_star <= n_max_search:
        return None
    return n_star, float(fit.predict_speedup(n_star))


# ---------------------------------------------------------------- decisions


def _pick(candidates: np.ndarray, first: np.ndarray, second: np.ndarray, ns: np.ndarray):
    """Index among `candidates` minimising `first`, then `second`, then N."""
    order = np.lexsort((ns[candidates], second[candidates], first[candidates]))
    return int(candidates[order[0]])


def recommend(
    ns,
    speedups,
    units,
    threshold: float = 0.1,
    times=None,
    costs=None,
    deadline_s: float | None = None,
    budget: float | None = None,
) -> dict:
    """What N to ask for.

    (a) worth_n: walking up from the smallest N, a step to the next measured point is
    worth it while its marginal gain d(speedup)/d(units) >= threshold; the walk stops at
    the first step below (later gains would need paying for that poor step first).
    Points with a non-finite speedup (failed) are skipped: the step goes from the last
    good point to the next good one; they are listed in "skipped_n". "steps" lists the
    marginal gain of every step between good points, "stopped_at" the first one below
    threshold (None if none). Units must not fall as N rises; a step that adds no units
    has marginal +inf if it gains speed.
    (b) cheapest_meeting_deadline: among points with time <= deadline_s, the lowest cost
    (then the faster); fastest_within_budget: among points with cost <= budget, the
    fastest (then the cheaper). Costs default to units x times (resource-seconds, what
    an allocation is charged). None with a note saying why, when not asked or nothing
    qualifies."""
    ns = np.asarray(ns, dtype=float).ravel()
    speedups = np.asarray(speedups, dtype=float).ravel()
    units = np.asarray(units, dtype=float).ravel()
    if not ns.size == speedups.size == units.size:
        raise ValueError("ns, speedups and units must have the same length")
    order = np.argsort(ns, kind="stable")
    good = np.isfinite(speedups[order]) & np.isfinite(units[order])
    valid, skipped = order[good], order[~good]
    steps, stopped, worth = [], None, (_py(ns[valid[0]]) if valid.size else None)
    for i, j in itertools.pairwise(valid):
        d_units, d_speed = units[j] - units[i], speedups[j] - speedups[i]
        if d_units < 0:
            raise ValueError(f"units fall from N={_py(ns[i])} to N={_py(ns[j])}")
        if d_units == 0:
            marginal = math.inf if d_speed > 0 else (0.0 if d_speed == 0 else -math.inf)
        else:
            marginal = float(d_speed / d_units)
        step = (_py(ns[i]), _py(ns[j]), marginal)
        steps.append(step)
        if stopped is None:
            if marginal >= threshold:
                worth = step[1]
            else:
                stopped = step
    result = {
        "worth_n": worth,
        "steps": steps,
        "stopped_at": stopped,
        "threshold": threshold,
        "skipped_n": [_py(ns[i]) for i in skipped],
        "cheapest_meeting_deadline": None,
        "deadline_note": "no deadline given",
        "fastest_within_budget": None,
        "budget_note": "no budget given",
    }
    if deadline_s is None and budget is None:
        return result
    if times is None:
        note = "needs the times of the points"
        result["deadline_note"] = note if deadline_s is not None else result["deadline_note"]
        result["budget_note"] = note if budget is not None else result["budget_note"]
        return result
    t = np.asarray(times, dtype=float).ravel()
    c = units * t if costs is None else np.asarray(costs, dtype=float).ravel()
    basis = "units x time" if costs is None else "given costs"
    usable = np.isfinite(t) & np.isfinite(c)
    if deadline_s is not None:
        meet = np.flatnonzero(usable & (t <= deadline_s))
        if meet.size:
            best = _pick(meet, c, t, ns)
            result["cheapest_meeting_deadline"] = _py(ns[best])
            result["deadline_note"] = f"cost {c[best]:.4g} ({basis}), time {t[best]:.4g} s"
        elif usable.any():
            fast = _pick(np.flatnonzero(usable), t, c, ns)
            result["deadline_note"] = (
                f"no point finishes within {deadline_s:g} s "
                f"(fastest: {t[fast]:.4g} s at N={_py(ns[fast])})"
            )
        else:
            result["deadline_note"] = "no point has both a time and a cost"
    if budget is not None:
        within = np.flatnonzero(usable & (c <= budget))
        if within.size:
            best = _pick(within, t, c, ns)
            result["fastest_within_budget"] = _py(ns[best])
            result["budget_note"] = f"time {t[best]:.4g} s, cost {c[best]:.4g} ({basis})"
        elif usable.any():
            cheap = _pick(np.flatnonzero(usable), c, t, ns)
            result["budget_note"] = (
                f"no point costs at most {budget:g} "
                f"(cheapest: {c[cheap]:.4g} at N={_py(ns[cheap])}, {basis})"
            )
        else:
            result["budget_note"] = "no point has both a time and a cost"
    return result


def pareto_front(times, costs) -> np.ndarray:
    """True for points that no other point dominates (as fast or faster and as cheap or
    cheaper, strictly better in one). Points with a non-finite time or cost: False."""
    t = np.asarray(times, dtype=float).ravel()
    c = np.asarray(costs, dtype=float).ravel()
    finite = np.isfinite(t) & np.isfinite(c)
    # [i, j]: point j is at least as good as point i in both, and better in one
    weakly = (t[None, :] <= t[:, None]) & (c[None, :] <= c[:, None])
    strictly = (t[None, :] < t[:, None]) | (c[None, :] < c[:, None])
    dominated = np.any(weakly & strictly & finite[None, :], axis=1)
    return finite & ~dominated


# ---------------------------------------------------------------- two series


def _split_statistics(log_a, log_b, n_perm, rng) -> tuple[float, np.ndarray, bool]:
    """mean(log b) - mean(log a), and the same statistic over every split of the pooled
    values into groups of the same sizes (exact) or over n_perm random splits."""
    x = np.concatenate([log_a, log_b])
    na, m = log_a.size, x.size
    nb = m - na
    total = x.sum()
    if math.comb(m, na) <= n_perm:
        chosen = np.array(list(itertools.combinations(range(m), na)), dtype=np.intp)
        exact = True
    else:
        chosen = np.argsort(rng.random((n_perm, m)), axis=1)[:, :na]
        exact = False
    sum_a = x[chosen].sum(axis=1)
    null = (total - sum_a) / nb - sum_a / na
    observed = (total - log_a.sum()) / nb - log_a.sum() / na
    return float(observed), null, exact


def _p_value(observed: float, null: np.ndarray, exact: bool, tol: float) -> float:
    extreme = int(np.sum(np.abs(null) >= abs(observed) - tol))
    return extreme / null.size if exact else (1 + extreme) / (1 + null.size)


def _smallest_p(null: np.ndarray, exact: bool, tol: float) -> float:
    if not exact:
        return 1 / (1 + null.size)
    return float(np.mean(np.abs(null) >= np.abs(null).max() - tol))


def compare_series(
    a_by_n: dict, b_by_n: dict, n_perm: int = 5000, seed: int = 0, level: float = LEVEL
) -> dict:
    """Do two series (e.g. two GPU models) differ in time?

    Per common N: ratio = median(b)/median(a) with a bootstrap CI (`ratio_ci`), and a
    two-sided permutation test of the difference of mean log times: exact (every split)
    when there are at most n_perm splits, else n_perm random ones. Exact splits keep the
    test valid at any sample size, which is why no Mann-Whitney fallback is needed; the
    note says when so few splits exist that p cannot get below 0.05.
    Overall: a stratified permutation test, labels shuffled within each N, statistic =
    sum over N of the per-N differences (the average log ratio). N with one run in each
    series get no per-N test but do count there (a sign flip each). p = nan, with a note,
    when there is no common N to compare."""
    rng = np.random.default_rng(seed)
    common = sorted(set(a_by_n) & set(b_by_n))
    per_n, strata, used = [], [], []
    for i, n in enumerate(common):
        a, b = _finite(a_by_n[n]), _finite(b_by_n[n])
        entry = {"n": n, "n_a": int(a.size), "n_b": int(b.size)}
        ratio, lo, hi = ratio_ci(b, a, level=level, seed=seed + 1 + i)
        entry.update(ratio=ratio, lo=lo, hi=hi, p_value=math.nan, method="", note="")
        if a.size == 0 or b.size == 0 or np.any(a <= 0) or np.any(b <= 0):
            entry["note"] = "no runs, or a non-positive time, in one of the series: no test"
            per_n.append(entry)
            continue
        log_a, log_b = np.log(a), np.log(b)
        tol = 1e-9 * max(1.0, float(np.abs(np.concatenate([log_a, log_b])).max()))
        observed, null, exact = _split_statistics(log_a, log_b, n_perm, rng)
        strata.append((observed, null, exact, tol))
        used.append(n)
        if a.size + b.size < 3:
            entry["note"] = "one run in each series: no test at this N (counts in the overall test)"
        else:
            entry["p_value"] = _p_value(observed, null, exact, tol)
            entry["method"] = f"permutation ({'exact' if exact else f'{n_perm} random'} splits)"
            floor = _smallest_p(null, exact, tol)
            if floor > 0.05:
                entry["note"] = f"{null.size} splits only: p cannot be below {floor:.3g}"
        per_n.append(entry)
    result = {
        "per_n": per_n,
        "common_n": used,
        "p_value": math.nan,
        "significant": False,
        "mean_log_ratio": math.nan,
    }
    if not strata:
        result.update(method="", note="no common N with runs in both series: no test")
        return result
    observed = sum(s[0] for s in strata)
    tol = max(s[3] for s in strata) * len(strata)
    n_joint = math.prod(s[1].size for s in strata)
    if all(s[2] for s in strata) and n_joint <= n_perm:
        null = np.zeros(1)
        for s in strata:
            null = np.add.outer(null, s[1]).ravel()
        exact = True
    else:
        null = np.zeros(n_perm)
        for _, stratum_null, stratum_exact, _ in strata:
            if stratum_exact:  # every split listed: draw from them uniformly
                null += stratum_null[rng.integers(0, stratum_null.size, n_perm)]
            else:  # n_perm random splits, independent of the other strata's
                null += stratum_null
        exact = False
    p = _p_value(observed, null, exact, tol)
    floor = _smallest_p(null, exact, tol)
    kind = "exact" if exact else f"{n_perm} random"
    note = f"only {null.size} joint splits: p cannot be below {floor:.3g}" if floor > 0.05 else ""
    result.update(
        p_value=p,
        significant=bool(p < 0.05),
        method=f"stratified permutation over {len(used)} N ({kind} joint splits)",
        note=note,
        mean_log_ratio=observed / len(strata),
    )
    return result
