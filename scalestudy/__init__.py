"""Shared code of the scaling-study workflow: studies, harness, launcher, records,
analysis, plots and report. Rules call it through thin scripts in scripts/."""

# The figures every study gets (scalestudy.plots draws them). Here, not in plots,
# so that the workflow can name them without importing matplotlib at parse time.
FIGURES = ("times", "speedup", "efficiency", "cost", "pareto", "phases")
