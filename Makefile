# Two commands: `make run` and `make test` (see README.md). Everything else is a helper.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

# Lambda packaging runs under Python 3.12 (wheels for newer glibc are taken); pyenv's build is
# found where pyenv keeps it, or set PY312=/path/to/python3.12.
PY312 ?= $(firstword $(wildcard $(HOME)/.pyenv/versions/3.12*/bin/python3.12 /usr/bin/python3.12 /usr/local/bin/python3.12))
PKG_VENV := .venv-package
STAGE ?= dev

.PHONY: run test lint bench install clean package soak

$(STAMP): requirements.txt requirements-local.txt requirements-dev.txt requirements.lock pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "Installing dependencies into $(VENV) (first run only)..."
	@$(BIN)/python -m pip install --quiet --upgrade "pip<26.3"  # chalice 1.34 asks for pip<26.3
	@$(BIN)/python -m pip install --quiet -r requirements-dev.txt -c requirements.lock
	@$(BIN)/python -m pip install --quiet --no-deps -e . -e ./sdk
	@touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/loom serve

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy chalicelib

test: $(STAMP) lint browser node
	$(BIN)/python -m pytest

# The dashboard's browser tests drive Debian's chromium (Playwright never downloads one): it is
# installed with apt-get where it is missing; without root or sudo those tests skip and say why.
APT := $(if $(filter 0,$(shell id -u)),,sudo -n) env DEBIAN_FRONTEND=noninteractive apt-get
.PHONY: browser node
browser:
	@command -v chromium >/dev/null 2>&1 || test -n "$$LOOM_CHROMIUM" || { \
	  echo "Installing Debian's chromium for the dashboard's browser tests..." && \
	  $(APT) update -qq && $(APT) install -y -qq --no-install-recommends chromium >/dev/null; \
	} || echo "Could not install chromium (apt-get needs root or sudo): the dashboard's browser tests will be skipped."

# The TypeScript SDK's tests (sdk-ts/, run from pytest) need Node.js 18 or newer and npm: Debian's
# are installed where either is missing; npm's packages come from sdk-ts/package-lock.json.
node:
	@{ command -v node && command -v npm; } >/dev/null 2>&1 || { \
	  echo "Installing Debian's nodejs and npm for the TypeScript SDK's tests..." && \
	  $(APT) update -qq && $(APT) install -y -qq --no-install-recommends nodejs npm >/dev/null; \
	} || echo "Could not install nodejs and npm (apt-get needs root or sudo): the TypeScript SDK's tests will fail."

bench: $(STAMP)
	$(BIN)/python -m bench $(if $(QUICK),--quick,) $(if $(SCALE),--scale,)

# Sustained mixed load from many tenants, then a database restart under it (QUICK=1: seconds).
soak: $(STAMP)
	$(BIN)/python -m soak $(if $(QUICK),--quick,)

package:
	@test -n "$(PY312)" || { echo "make package needs Python 3.12: install it (pyenv install 3.12) or set PY312=/path/to/python3.12"; exit 1; }
	@test -x $(PKG_VENV)/bin/python || $(PY312) -m venv $(PKG_VENV)
	@$(PKG_VENV)/bin/python -m pip install --quiet -r requirements.txt cfn-lint==1.58.0
	rm -rf build/$(STAGE)
	AWS_DEFAULT_REGION=us-east-1 $(PKG_VENV)/bin/chalice package --stage $(STAGE) --merge-template infra/template.json build/$(STAGE)
	$(PKG_VENV)/bin/python infra/precompile.py build/$(STAGE)/deployment.zip
	$(PKG_VENV)/bin/python infra/package_check.py build/$(STAGE) $(PKG_VENV)/bin/python

clean:
	rm -rf $(VENV) $(PKG_VENV) build .pytest_cache .mypy_cache .ruff_cache
