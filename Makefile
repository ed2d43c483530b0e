# gradlab: every command sets itself up first (virtual environment with
# Python 3.11, the exact pins of requirements/course.lock, gradlab editable).
# Each target is idempotent: run it again and it only does what is missing.

PYTHON ?= python3.11
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.gradlab-installed
PORT   ?= 8888
NBVAL  := --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg
TORCH  ?= 2.13.0
# make test-python: another Python (3.12, 3.13) with the newest torch of gradlab's range for it.
PY     ?= 3.13
PY_TORCH ?= 2.15.0
# pytest's workers for test-python (PYTEST_WORKERS=0: one process).
PYTEST_WORKERS ?= auto

.PHONY: setup system-deps lab test test-fast lint test-browser test-torch test-python dist notebooks handout binder bench \
        test-stability lock clean

setup: $(STAMP)

$(STAMP): requirements/course.lock pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "$(PYTHON) not found: install Python 3.11 (or run make PYTHON=/path/to/python3.11 ...)"; exit 1; }
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade "pip>=24"
	$(BIN)/python -m pip install --quiet -r requirements/course.lock
	$(BIN)/python -m pip install --quiet --no-deps -e .
	@touch $(STAMP)

# Graphviz, Chromium, poppler and fonts from Debian when we are root; otherwise
# a note on what is missing (everything still runs: gradlab falls back to text,
# browser and PDF tests skip with a reason).
system-deps:
	@bash tools/system-deps.sh

lab: system-deps setup
	$(BIN)/python -m gradlab.course lab --port $(PORT) $(if $(filter zh,$(EDITION)),--edition zh,)

# Lint and format check (ruff) and the type check (mypy, strict on the library).
lint: setup
	$(BIN)/python -m ruff check gradlab tests tools benchmarks workshop
	$(BIN)/python -m ruff format --check gradlab tests tools benchmarks workshop
	$(BIN)/python -m mypy

test: system-deps setup hub-deps lint
	$(BIN)/python -m pytest -n auto --dist loadfile --doctest-modules gradlab tests notebooks $(NBVAL)

# The library's unit tests and doctests only: no notebooks, browser, subprocesses or course.
test-fast: setup
	$(BIN)/python -m pytest -n auto --dist loadfile -m "library and not slow" \
		--doctest-modules gradlab --ignore=gradlab/course tests

test-browser: system-deps setup
	$(BIN)/python -m pytest -m browser -p no:xdist tests/test_browser.py

# The library's unit tests against another torch, in its own environment
# (.venv-torch-X.Y.Z). Not part of `make test`: it downloads a multi-GB build.
# pip's configuration files are ignored here (a constraint file in one could refuse
# the release you ask for); environment variables such as PIP_FIND_LINKS still apply.
test-torch: setup
	@test -x .venv-torch-$(TORCH)/bin/python || $(PYTHON) -m venv .venv-torch-$(TORCH)
	PIP_CONFIG_FILE=/dev/null .venv-torch-$(TORCH)/bin/python -m pip install --quiet "torch==$(TORCH)"
	grep -v -E '^(torch==|nvidia-|triton)' requirements/course.lock > .venv-torch-$(TORCH)/requirements.txt
	PIP_CONFIG_FILE=/dev/null .venv-torch-$(TORCH)/bin/python -m pip install --quiet -r .venv-torch-$(TORCH)/requirements.txt
	.venv-torch-$(TORCH)/bin/python -m pip install --quiet --no-deps -e .
	.venv-torch-$(TORCH)/bin/python -m pytest -n auto --dist loadfile -m "library" -p no:cacheprovider tests

# The library's unit tests on another Python (PY=3.12 or PY=3.13) in its own environment
# (.venv-pyX.Y), with torch $(PY_TORCH) from PyPI (for these Pythons the multi-GB CUDA build) and
# the rest of the lock. Not part of `make test`. pip's configuration files are ignored, as in
# test-torch. PYTHON_PY names the interpreter when python$(PY) is not on PATH.
PYTHON_PY ?= python$(PY)
VENV_PY   := .venv-py$(PY)
test-python:
	@command -v $(PYTHON_PY) >/dev/null || { echo "$(PYTHON_PY) not found: install Python $(PY) (or run make test-python PY=$(PY) PYTHON_PY=/path/to/python$(PY))"; exit 1; }
	@test -x $(VENV_PY)/bin/python || $(PYTHON_PY) -m venv $(VENV_PY)
	PIP_CONFIG_FILE=/dev/null $(VENV_PY)/bin/python -m pip install --quiet "torch==$(PY_TORCH)"
	grep -v -E '^(torch==|nvidia-|triton)' requirements/course.lock > $(VENV_PY)/requirements.txt
	PIP_CONFIG_FILE=/dev/null $(VENV_PY)/bin/python -m pip install --quiet -r $(VENV_PY)/requirements.txt
	$(VENV_PY)/bin/python -m pip install --quiet --no-deps -e .
	$(VENV_PY)/bin/python -m pytest -n $(PYTEST_WORKERS) --dist loadfile -m "library" -p no:cacheprovider tests

# The sdist and the wheel of torch-gradlab in dist/, built offline (setuptools and build from the
# lock, no isolated build environment), then their metadata checked: twine check and
# tests/test_packaging.py on those files (name, licence, requires-python, torch the only requirement).
dist: setup
	rm -rf dist
	$(BIN)/python -m build --no-isolation --outdir dist .
	$(BIN)/python -m twine check --strict dist/*
	GRADLAB_DIST=dist $(BIN)/python -m pytest -p no:xdist -q -p no:cacheprovider tests/test_packaging.py

# Re-execute both editions; the Chinese notebooks are first rebuilt from the English ones
# and translations/zh_CN/notebooks/*.po (tools/translate_notebooks.py).
notebooks: setup
	$(BIN)/python tools/execute_notebooks.py notebooks/[0-9][0-9]_*.ipynb
	$(BIN)/python tools/translate_notebooks.py build
	$(BIN)/python tools/execute_notebooks.py notebooks/zh/[0-9][0-9]_*.ipynb

# Both editions by default; EDITION=en or EDITION=zh builds one (the Chinese one in build/handout/zh/).
EDITION ?= all
handout: system-deps setup
	@if [ "$(EDITION)" != zh ]; then $(BIN)/python tools/handout.py; fi
	@if [ "$(EDITION)" != en ] && [ -d notebooks/zh ]; then \
		$(BIN)/python tools/handout.py --notebooks notebooks/zh --out build/handout/zh; fi

# Regenerate binder/requirements.txt from the lock (after make lock).
binder: setup
	$(BIN)/python tools/binder_requirements.py

bench: setup
	$(BIN)/python benchmarks/run.py --guard --readme README.md

test-stability: system-deps setup
	bash tools/test-stability.sh

# Re-resolve requirements/course.in into the lock (needs the network).
lock:
	rm -rf .lock-venv && $(PYTHON) -m venv .lock-venv
	.lock-venv/bin/python -m pip install --quiet -r requirements/course.in
	{ sed -n '1,3p' requirements/course.lock; .lock-venv/bin/python -m pip freeze --all --exclude-editable | grep -v '^pip==' | sed 's/^torch==\([0-9.]*\)+cpu$$/torch==\1/'; } > requirements/course.lock.new
	mv requirements/course.lock.new requirements/course.lock && rm -rf .lock-venv

clean:
	rm -rf $(VENV) build .pytest_cache

# Workshops on JupyterHub: make hub, make hub-load N=10, hub-deps (see workshop/README.md).
include workshop/workshop.mk
