# Workshops on JupyterHub (workshop/README.md, RUNSHEET.md): included by the Makefile.
#
#   make hub                  the workshop hub on this machine (root; 127.0.0.1:8000 by default)
#   make hub-load N=10        N learners run notebook 01 at once on a throwaway hub; prints the figures
#   make hub-session N=10     N learners run notebooks 00 to 11 in order, with think time (SIZING.md)
#   make hub-branch BRANCH=workshop-2027-03-14
#                             a branch at HEAD whose notebooks (both editions) have no stored outputs
#   make hub-pin REPO=https://github.com/YOU/gradlab REF=workshop-2027-03-14
#                             checks learners can pull that branch with every notebook; make hub links to it
#   make hub-check            what this machine enforces per learner (memory, CPU, processes, disk, metadata)
#   make hub-password NAME=x  a new password for the learner x, who forgot theirs (prints it)
#   make hub-reset NAME=x NOTEBOOK=notebooks/05_the_detach_fix.ipynb
#                             x gets the course's version of that notebook back (theirs is kept beside it)
#   make hub-deps             what all need: the proxy from npm (workshop/node_modules, pinned by
#                             workshop/package-lock.json; runs on Debian 12's Node.js 18), the CPU
#                             build of torch in .venv and the learners' Python environment in
#                             $(HUB_PREFIX) (the course lock + gradlab; rebuilt only when they change).
#                             HUB_TORCH=pypi keeps PyPI's torch (CUDA on Linux) instead.

HUB_PREFIX ?= /opt/gradlab-workshop
HUB_TORCH ?= cpu
N ?= 10
HUB_PY := PYTHONPATH=workshop GRADLAB_HUB_PREFIX=$(HUB_PREFIX) GRADLAB_HUB_TORCH=$(HUB_TORCH) $(BIN)/python

.PHONY: hub hub-load hub-session hub-password hub-reset hub-deps hub-branch hub-pin hub-check

hub: hub-deps
	$(HUB_PY) -m gradlab_hub.hub

hub-load: hub-deps
	$(HUB_PY) -m gradlab_hub.loadtest --learners $(N)

hub-session: hub-deps
	$(HUB_PY) -m gradlab_hub.session --learners $(N) $(SESSION_ARGS)

hub-branch:
	@test -n "$(BRANCH)" || { echo "hub-branch: name it: make hub-branch BRANCH=workshop-2027-03-14"; exit 2; }
	@PYTHONPATH=workshop $(BIN)/python -m gradlab_hub.branch $(BRANCH)

hub-pin:
	@test -n "$(REPO)" -a -n "$(REF)" || { echo "hub-pin: make hub-pin REPO=https://github.com/YOU/gradlab REF=workshop-2027-03-14"; exit 2; }
	@PYTHONPATH=workshop $(BIN)/python -m gradlab_hub.pin --repo "$(REPO)" --ref "$(REF)" $(if $(HUB),--hub "$(HUB)",)

hub-check:
	@$(HUB_PY) -m gradlab_hub.check

hub-password:
	@test -n "$(NAME)" || { echo "hub-password: say whose: make hub-password NAME=learner-name"; exit 2; }
	@PYTHONPATH=workshop $(BIN)/python -m gradlab_hub.accounts reset $(NAME)

hub-reset:
	@test -n "$(NAME)" -a -n "$(NOTEBOOK)" || { echo "hub-reset: make hub-reset NAME=learner NOTEBOOK=notebooks/05_the_detach_fix.ipynb"; exit 2; }
	@PYTHONPATH=workshop $(BIN)/python -m gradlab_hub.reset $(NAME) $(NOTEBOOK)

# The CPU torch goes into .venv before `setup` installs the lock there (whose torch==X it satisfies).
hub-deps: $(VENV)/.hub-torch-$(HUB_TORCH) setup workshop/node_modules/.package-lock.json
	@$(HUB_PY) -m gradlab_hub.learner_env

$(VENV)/.hub-torch-$(HUB_TORCH):
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@PYTHONPATH=workshop GRADLAB_HUB_TORCH=$(HUB_TORCH) $(BIN)/python -m gradlab_hub.cputorch $(BIN)/python
	@touch $@

# npm ci installs exactly workshop/package-lock.json; without npm the hub tests skip and say why.
workshop/node_modules/.package-lock.json: workshop/package.json workshop/package-lock.json
	@if command -v npm >/dev/null 2>&1; then \
		cd workshop && npm ci --no-audit --no-fund --loglevel=error && touch node_modules/.package-lock.json; \
	else \
		echo "hub-deps: npm not found; apt-get install nodejs npm (Debian 12's Node.js 18 runs the pinned proxy)"; \
	fi
