# gradlab: every command sets itself up first (virtual environment with
# Python 3.11, the exact pins of requirements/course.lock, gradlab editable).
# Each target is idempotent: run it again and it only does what is missing.

PYTHON ?= python3.11
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.gradlab-installed
PORT   ?= 8888
NBVAL  := --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg

.PHONY: setup system-deps lab test test-browser notebooks handout binder bench test-stability lock clean

setup: $(STAMP)

$(STAMP): requirements/course.lock pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "$(PYTHON) not found: install Python 3.11 (or run make PYTHON=/path/to/python3.11 ...)"; exit 1; }
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade "pip>=24"
	$(BIN)/python -m pip install --quiet -r requirements/course.lock
	$(BIN)/python -m pip install --quiet --no-deps -e .
	@touch $(STAMP)

# Graphviz, Chromium and poppler from Debian when we are root; otherwise a
# note on what is missing (everything still runs: gradlab falls back to text,
# browser and PDF tests skip with a reason).
system-deps:
	@bash tools/system-deps.sh

lab: system-deps setup
	$(BIN)/python -m gradlab.lab --port $(PORT)

test: system-deps setup
	$(BIN)/python -m pytest -n auto --dist loadfile --doctest-modules gradlab tests notebooks $(NBVAL)

test-browser: system-deps setup
	$(BIN)/python -m pytest -m browser -p no:xdist tests/test_browser.py

notebooks: setup
	$(BIN)/python tools/execute_notebooks.py

handout: system-deps setup
	$(BIN)/python tools/handout.py

# Regenerate binder/requirements.txt from the lock (after make lock).
binder: setup
	$(BIN)/python tools/binder_requirements.py

bench: setup
	$(BIN)/python benchmarks/run.py

test-stability: system-deps setup
	bash tools/test-stability.sh

# Re-resolve requirements/course.in into the lock (needs the network).
lock:
	rm -rf .lock-venv && $(PYTHON) -m venv .lock-venv
	.lock-venv/bin/python -m pip install --quiet -r requirements/course.in
	{ sed -n '1,3p' requirements/course.lock; .lock-venv/bin/python -m pip freeze --exclude-editable | sed 's/^torch==\([0-9.]*\)+cpu$$/torch==\1/'; } > requirements/course.lock.new
	mv requirements/course.lock.new requirements/course.lock && rm -rf .lock-venv

clean:
	rm -rf $(VENV) build .pytest_cache
