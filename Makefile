# The two commands of the quick start, and the set-up both depend on.
#   make report   run the default study end to end -> results/report.html
#   make test     run every test (make test-fast: the quick tier, no cluster, browser or end-to-end run)
SHELL := /bin/bash
VENV ?= .venv
PYTHON ?= python3
STAMP := $(VENV)/.installed
PYTEST_ARGS ?=

.PHONY: report test test-fast lint setup clean slurm-profile slurm-polling redo plan archive history check

report: setup
	$(VENV)/bin/snakemake --profile profiles/local

# What every study would cost, before anything runs -> results/plan.html
plan: setup
	$(VENV)/bin/snakemake --profile profiles/local results/plan.html

# Two workers: the tests that time runs one after another on one, the rest beside them
# on the other (tests/conftest.py says which).
XDIST := -n 2 --dist loadgroup

test: setup
	$(VENV)/bin/pytest $(XDIST) $(PYTEST_ARGS)

# The quick tier (about 5 minutes on 2 cores): every test but the end-to-end runs
# of the workflow, the Slurm cluster and the browser.
test-fast: setup
	$(VENV)/bin/pytest $(XDIST) -m "not slow and not slurm and not browser" $(PYTEST_ARGS)

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/snakefmt --check .
	$(VENV)/bin/snakemake --lint

setup: $(STAMP)

# Debian packages (data set, browser) first, then one virtual environment with
# everything pinned in requirements.txt and this project installed in it.
$(STAMP): requirements.txt pyproject.toml .ci/system-packages
	bash .ci/system-packages
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install -q --upgrade pip
	$(VENV)/bin/python -m pip install -q -r requirements.txt
	$(VENV)/bin/python -m pip install -q --no-deps --no-build-isolation -e .
	touch $(STAMP)

clean:
	rm -rf results logs .snakemake

# Run again, keeping what was measured: `make redo STUDY=s [POINT=t2 [REPEAT=1]]`
# moves those records to results/STUDY/discarded/ (nothing is deleted); the next
# `make report` runs them again and re-aggregates the study.
redo:
	@test -n "$(STUDY)" || { echo "usage: make redo STUDY=name [POINT=t2 [REPEAT=1]]"; exit 2; }
	$(VENV)/bin/python -m scalestudy.redo "$(STUDY)" $(if $(POINT),--point "$(POINT)") $(if $(REPEAT),--repeat "$(REPEAT)")

# Keep a study's records and analysis for later comparison (`baseline: last`):
# `make archive STUDY=s` copies them to archive/s/<UTC time>-<fingerprint hash>/, never
# overwriting; `make history STUDY=s` prints the time at each point across the archives,
# steps marked where a change was called (docs/baselines.md).
archive:
	@test -n "$(STUDY)" || { echo "usage: make archive STUDY=name"; exit 2; }
	$(VENV)/bin/python -m scalestudy.study.archives "$(STUDY)"

history:
	@test -n "$(STUDY)" || { echo "usage: make history STUDY=name"; exit 2; }
	$(VENV)/bin/python -m scalestudy.sections.history.produce "$(STUDY)"

# The references (`expect:`) against what was measured, for CI: runs nothing, exits 1
# naming each broken expectation (a study with `expect:` and no analysis is one).
# STUDY=s checks one study, else every study of the config that states expectations.
check:
	$(VENV)/bin/python -m scalestudy.sections.references.produce $(STUDY)

# `snakemake --profile slurm`, as users type it: Snakemake looks for a profile named
# slurm in the current folder, then in the user's Snakemake config folder, where
# this links profiles/slurm (a slurm profile there that is not this link is left alone).
SNAKEMAKE_PROFILES ?= $(or $(XDG_CONFIG_HOME),$(HOME)/.config)/snakemake
slurm-profile:
	@mkdir -p "$(SNAKEMAKE_PROFILES)"
	@target="$(SNAKEMAKE_PROFILES)/slurm"; \
	if [ -e "$$target" ] && [ ! -L "$$target" ]; then \
		echo "$$target exists and is not a link: left alone (move it away first)"; exit 1; \
	fi; \
	ln -sfn "$(CURDIR)/profiles/slurm" "$$target"; \
	echo "linked $$target -> $(CURDIR)/profiles/slurm: 'snakemake --profile slurm' now uses it"

# The status-check interval for a study's run times, from its records:
# `make slurm-polling STUDY=name` prints the profile lines (scalestudy/analysis/cluster/polling.py).
slurm-polling:
	@test -n "$(STUDY)" || { echo "usage: make slurm-polling STUDY=name [STUDY2 ...]"; exit 2; }
	$(VENV)/bin/python -m scalestudy.analysis.cluster.polling $(addprefix results/,$(STUDY))
