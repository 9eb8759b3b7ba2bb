# The two commands of the quick start, and the set-up both depend on.
#   make report   run the default study end to end -> results/report.html
#   make test     run every test (add PYTEST_ARGS='-m "not slow"' for the quick ones)
SHELL := /bin/bash
VENV ?= .venv
PYTHON ?= python3
STAMP := $(VENV)/.installed
PYTEST_ARGS ?=

.PHONY: report test lint setup clean

report: setup
	$(VENV)/bin/snakemake --profile profiles/local

test: setup
	$(VENV)/bin/pytest $(PYTEST_ARGS)

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
