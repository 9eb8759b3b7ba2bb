"""Shared code of the scaling-study workflow: studies, harness, launcher, records,
analysis, plots and report. Rules call it through thin scripts in scripts/."""
