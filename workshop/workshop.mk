# Workshops on JupyterHub (workshop/README.md): included by the Makefile.
#
#   make hub            the workshop hub on this machine (root; 127.0.0.1:8000 by default)
#   make hub-load N=10  N learners run notebook 01 at once on a throwaway hub; prints the figures
#   make hub-deps       what both need: the proxy from npm (workshop/node_modules, pinned by
#                       workshop/package-lock.json) and the learners' Python environment in
#                       $(HUB_PREFIX) (the course lock + gradlab; rebuilt only when they change)

HUB_PREFIX ?= /opt/gradlab-workshop
N ?= 10
HUB_PY := PYTHONPATH=workshop GRADLAB_HUB_PREFIX=$(HUB_PREFIX) $(BIN)/python

.PHONY: hub hub-load hub-deps

hub: hub-deps
	$(HUB_PY) -m gradlab_hub.hub

hub-load: hub-deps
	$(HUB_PY) -m gradlab_hub.loadtest --learners $(N)

hub-deps: setup workshop/node_modules/.package-lock.json
	@$(HUB_PY) -m gradlab_hub.learner_env

# npm ci installs exactly workshop/package-lock.json; without npm the hub tests skip and say why.
workshop/node_modules/.package-lock.json: workshop/package.json workshop/package-lock.json
	@if command -v npm >/dev/null 2>&1; then \
		cd workshop && npm ci --no-audit --no-fund --loglevel=error && touch node_modules/.package-lock.json; \
	else \
		echo "hub-deps: npm not found; install Node.js 20+ and npm for the workshop hub (its tests skip without it)"; \
	fi
