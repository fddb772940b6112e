# Two commands: `make run` and `make test` (see README.md). Everything else is a helper.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint bench install clean

$(STAMP): requirements.txt requirements-local.txt requirements-dev.txt requirements.lock pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@echo "Installing dependencies into $(VENV) (first run only)..."
	@$(BIN)/python -m pip install --quiet --upgrade pip
	@$(BIN)/python -m pip install --quiet -r requirements-dev.txt -c requirements.lock
	@$(BIN)/python -m pip install --quiet --no-deps -e .
	@touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/loom serve

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy chalicelib

test: $(STAMP) lint
	$(BIN)/python -m pytest

bench: $(STAMP)
	$(BIN)/python -m bench $(if $(QUICK),--quick,)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
