"""The thresholds the analysis judges by, each with the words the report, its figures
and the manual say it in: written here once (tests/test_architecture.py checks that
docs/report.md and config/README.md say them as this module words them)."""

# parallel efficiency, best band first: (name, the lowest efficiency in it, its words)
EFFICIENCY_BANDS = (
    ("excellent", 0.90, "excellent"),
    ("good", 0.75, "good"),
    ("poor", 0.0, "look for a bottleneck"),
)

# when a point's repeats disagree (scalestudy.analysis.stats.intervals.instability): the
# coefficient of variation, the modified z-score of an outlier, and how far from the
# median (a share of it) an outlier must lie
CV_LIMIT, Z_LIMIT, MIN_DEVIATION = 0.10, 3.5, 0.05

# data loading is the bottleneck where the training steps wait for data more than this
# share of their time: the data, not the model, sets the pace (sections/telemetry)
BOTTLENECK_WAIT = 0.5
BOTTLENECK_WORDS = f"over {100 * BOTTLENECK_WAIT:g} % of each step"
# staging is flat where the slowest of k copies at once takes within this share of the
# slowest of the fewest copies' time (sections/staging)
STAGING_FLAT = 0.1
STAGING_FLAT_WORDS = f"within {100 * STAGING_FLAT:g} %"
# two data formats load alike where one's loading time lies within this share of the
# other's: either is right (sections/formats)
FORMATS_ALIKE = 0.1
FORMATS_ALIKE_WORDS = f"within {100 * FORMATS_ALIKE:g} %"

# the queue's bound on past waits (scalestudy.analysis.cluster.queue): BOUND_LEVEL
# confidence that the BOUND_QUANTILE of a shape's waits lies below it
BOUND_LEVEL, BOUND_QUANTILE = 0.95, 0.9


def efficiency_band(efficiency) -> str | None:
    """The band of a parallel efficiency (None: no number)."""
    if not isinstance(efficiency, float) or efficiency != efficiency:
        return None
    return next((n for n, lowest, _ in EFFICIENCY_BANDS if efficiency >= lowest), "poor")


def band_words(name: str | None) -> str:
    """A band with its range: "75-90 % good", "< 75 % look for a bottleneck"."""
    if name is None:
        return "–"
    names, limits, words = zip(*EFFICIENCY_BANDS, strict=True)
    i = names.index(name)
    top = f"{100 * limits[i - 1]:g}" if i else "100"
    where = f"< {top}" if limits[i] == 0 else f"{100 * limits[i]:g}-{top}"
    return f"{where} % {words[i]}"


BANDS_WORDS = ", ".join(band_words(name) for name, *_ in EFFICIENCY_BANDS)
INSTABILITY_WORDS = (
    f"CV above {100 * CV_LIMIT:g} %, or an outlier: modified z-score above {Z_LIMIT:g} "
    f"and over {100 * MIN_DEVIATION:g} % from the median"
)
