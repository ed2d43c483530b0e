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
# pytest's workers for the library's runs on other Pythons and torches (PYTEST_WORKERS=0: one process).
PYTEST_WORKERS ?= auto
# make test-matrix: the Pythons and torch releases of gradlab's range (pyproject.toml), every pair.
MATRIX_PYS     ?= 3.11 3.12 3.13
MATRIX_TORCHES ?= 2.4.1 2.13.0 2.15.0
# Pairs PyPI has no torch wheel for (checked 2026-12-05: torch 2.4.1's newest is for Python 3.12).
MATRIX_NO_WHEEL := 3.13-2.4.1
LOCK_PY    := 3.11
LOCK_TORCH := $(shell sed -n 's/^torch==//p' requirements/course.lock)
# The interpreter of Python X.Y: pythonX.Y if it runs, else pyenv's newest X.Y.
find_python = $(or $(shell python$(1) -c 'import sys; print(sys.executable)' 2>/dev/null),$(lastword $(wildcard $(shell pyenv root 2>/dev/null)/versions/$(1).*/bin/python$(1))))

.PHONY: setup system-deps lab test test-fast lint test-browser test-torch test-python test-cell test-matrix dist notebooks \
        handout binder bench bench-frameworks bench-advice test-stability lock clean

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

# The library's tests (-m library, and the library's doctests) on one Python and torch, in the
# environment CELL_VENV: torch CELL_TORCH from PyPI (for most pairs the CUDA build, several GB), the
# rest of the lock, gradlab editable. pip's configuration files are ignored (a constraint file in one
# could refuse the release you ask for); environment variables such as PIP_FIND_LINKS still apply.
# Not part of `make test`; test-torch, test-python, test-matrix and .ci/run run it.
CELL_PY     ?= $(PY)
CELL_TORCH  ?= $(PY_TORCH)
CELL_VENV   ?= .venv-py$(CELL_PY)-torch$(CELL_TORCH)
CELL_PYTHON ?= $(call find_python,$(CELL_PY))
test-cell:
	@test -n "$(CELL_PYTHON)" || { echo "Python $(CELL_PY) not found: install it (or name it: CELL_PYTHON=/path/to/python$(CELL_PY))"; exit 1; }
	@test -x $(CELL_VENV)/bin/python || $(CELL_PYTHON) -m venv $(CELL_VENV)
	PIP_CONFIG_FILE=/dev/null $(CELL_VENV)/bin/python -m pip install --quiet "torch==$(CELL_TORCH)"
	grep -v -E '^(torch==|nvidia-|triton)' requirements/course.lock > $(CELL_VENV)/requirements.txt
	PIP_CONFIG_FILE=/dev/null $(CELL_VENV)/bin/python -m pip install --quiet -r $(CELL_VENV)/requirements.txt
	$(CELL_VENV)/bin/python -m pip install --quiet --no-deps -e .
	$(CELL_VENV)/bin/python -m pytest -n $(PYTEST_WORKERS) --dist loadfile -m library -p no:cacheprovider \
		--doctest-modules gradlab --ignore=gradlab/course tests

# The library's tests against another torch on Python 3.11, in its own environment (.venv-torch-X.Y.Z).
test-torch: setup
	@$(MAKE) --no-print-directory test-cell CELL_PY=$(LOCK_PY) CELL_PYTHON=$(PYTHON) CELL_TORCH=$(TORCH) \
		CELL_VENV=.venv-torch-$(TORCH)

# The library's tests on another Python (PY=3.12 or PY=3.13) in its own environment (.venv-pyX.Y),
# with torch $(PY_TORCH). PYTHON_PY names the interpreter when python$(PY) does not run.
PYTHON_PY ?= $(call find_python,$(PY))
test-python:
	@$(MAKE) --no-print-directory test-cell CELL_PY=$(PY) CELL_PYTHON=$(PYTHON_PY) CELL_TORCH=$(PY_TORCH) \
		CELL_VENV=.venv-py$(PY)

# The library's tests on every pair of MATRIX_PYS x MATRIX_TORCHES (those PyPI has wheels for), each
# in its own environment, the ones above reused: the lock's pair runs in .venv, Python 3.11 in
# .venv-torch-X (test-torch), the newest torch in .venv-pyX.Y (test-python), the others in
# .venv-pyX.Y-torchZ. Each pair's output goes to build/matrix/; the summary says how each ended.
# Each environment with a CUDA build takes several GB; a pair costs minutes to an hour on 2 cores.
test-matrix: setup
	@mkdir -p build/matrix; : > build/matrix/summary.txt; failed=0; \
	for py in $(MATRIX_PYS); do for t in $(MATRIX_TORCHES); do \
		cell=py$$py-torch$$t; \
		case " $(MATRIX_NO_WHEEL) " in *" $$py-$$t "*) \
			echo "$$cell: impossible: PyPI has no torch $$t wheel for Python $$py" >> build/matrix/summary.txt; continue;; esac; \
		if [ $$py = $(LOCK_PY) ] && [ $$t = $(LOCK_TORCH) ]; then venv=$(VENV); \
		elif [ $$py = $(LOCK_PY) ]; then venv=.venv-torch-$$t; \
		elif [ $$t = $(PY_TORCH) ]; then venv=.venv-py$$py; \
		else venv=.venv-py$$py-torch$$t; fi; \
		echo "$$cell in $$venv: build/matrix/$$cell.log"; \
		start=$$(date +%s); \
		if $(MAKE) --no-print-directory test-cell CELL_PY=$$py CELL_TORCH=$$t CELL_VENV=$$venv > build/matrix/$$cell.log 2>&1; \
		then result=passed; else result=FAILED; failed=1; fi; \
		echo "$$cell: $$result in $$(( $$(date +%s) - start ))s: $$(grep -E '^=+ .* in [0-9.]+s' build/matrix/$$cell.log | tail -n 1 | tr -d '=')" \
			>> build/matrix/summary.txt; \
	done; done; cat build/matrix/summary.txt; exit $$failed

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
	$(BIN)/python benchmarks/frameworks.py

# What gradlab's Lightning callback costs (benchmarks/frameworks.py; make bench runs it too).
bench-frameworks: setup
	$(BIN)/python benchmarks/frameworks.py

# The bug-injection benchmark of gradlab's advice (benchmarks/advice/README.md); e.g. BENCH_ADVICE_ARGS=--quick.
bench-advice: setup
	$(BIN)/python benchmarks/advice/run.py $(BENCH_ADVICE_ARGS)

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
