# The README's commands. `make serve` and `make test` work on a fresh clone.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 0

.PHONY: serve test test-fast test-long test-clients test-browser test-pythons lint format docs bench clean

$(VENV)/.runtime: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e .
	@# bytecode up front, as a wheel install would: the CLI starts on every agent call
	$(PY) -m compileall -q src
	touch $@

$(VENV)/.dev: $(VENV)/.runtime
	$(PY) -m pip install -q -e '.[test,lint]'
	touch $@

## serve: create the board in .coord/ if needed and run the daemon (Ctrl-C stops it)
serve: $(VENV)/.runtime
	$(VENV)/bin/coord init
	$(VENV)/bin/coord serve --host $(HOST) --port $(PORT)

## test: install what the tests need and run them (pytest's "no tests ran" counts as failure)
test: $(VENV)/.dev
	$(PY) -m pytest $(PYTEST_ARGS); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "make test: no tests ran" >&2; exit 1; fi; exit $$rc

## test-fast: the in-process tests only (no daemon, CLI, git or other process, no PostgreSQL;
## tests/tiers.py says how they are told apart), one pytest per core; prints how long it took
test-fast: $(VENV)/.dev
	PYTHONPATH=src $(PY) tests/tiers.py $(PYTEST_ARGS)

## test-pythons: on every other Python this machine has (pyenv's 3.12 and 3.13 here; or
## PYTHONS="..."), each in a venv of its own: the in-process tier, then the CLI against a real
## daemon. `make test` runs everything on the default python3.
PYTHONS ?= $(wildcard $(HOME)/.pyenv/versions/3.1[2-9].*/bin/python3)
test-pythons:
	@test -n "$(strip $(PYTHONS))" || { echo "make test-pythons: no other Python found; set PYTHONS" >&2; exit 1; }
	@for py in $(PYTHONS); do \
		v=$$($$py -c 'import sys; print("%d.%d" % sys.version_info[:2])') || exit 1; \
		echo "make test-pythons: Python $$v ($$py)"; \
		$(MAKE) --no-print-directory test-fast VENV=.venv-$$v PYTHON=$$py || exit 1; \
		PYTHONPATH=src .venv-$$v/bin/python -m pytest -q -p no:schemathesis tests/test_cli.py || exit 1; \
	done

## test-long: the soak variants of the race tests
test-long: $(VENV)/.dev
	COORD_SOAK=1 $(PY) -m pytest $(PYTEST_ARGS)

## test-clients: the real-clients tier (installs the pinned clients from npm into ~/.cache once)
test-clients: $(VENV)/.dev
	$(PY) -m pytest -m real_clients tests/real_clients $(PYTEST_ARGS); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "make test-clients: no tests ran" >&2; exit 1; fi; exit $$rc

## test-browser: the live board's page in Chromium (apt-get install chromium; playwright-core
## from npm into ~/.cache once; never a downloaded browser). Screenshots: $(COORD_TEST_ARTIFACTS)
test-browser: $(VENV)/.dev
	$(PY) -m pytest -m browser tests/browser -s $(PYTEST_ARGS); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "make test-browser: no tests ran" >&2; exit 1; fi; exit $$rc

lint: $(VENV)/.dev
	$(VENV)/bin/ruff check src tests bench examples scripts
	$(VENV)/bin/ruff format --check src tests bench examples scripts
	$(VENV)/bin/mypy

format: $(VENV)/.dev
	$(VENV)/bin/ruff format src tests bench examples scripts
	$(VENV)/bin/ruff check --fix src tests bench examples scripts

## docs: rewrite the reference pages in docs/reference/ from the code (tests/test_docs.py checks them)
docs: $(VENV)/.runtime
	PYTHONPATH=src $(PY) scripts/gen_reference.py

## bench: print the benchmark figures (not a test; see bench/README.md)
bench: $(VENV)/.dev
	$(PY) bench/run.py $(BENCH_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
