# The one entry point for people and CI alike.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint unit bench bench-page serve migrate clean lock decisions-index schema

$(STAMP): pyproject.toml constraints.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev]'
	@touch $(STAMP)

demo: $(STAMP)
	$(BIN)/ac-context demo

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

test: lint
	$(BIN)/pytest -q

unit: $(STAMP)
	$(BIN)/pytest -q tests/unit

# `make bench` runs every benchmark; `make bench lists console` runs the named ones only.
BENCH_NAMES := $(if $(filter bench,$(firstword $(MAKECMDGOALS))),$(wordlist 2,$(words $(MAKECMDGOALS)),$(MAKECMDGOALS)))

bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev,bench]'
	$(BIN)/python -m bench $(BENCH_NAMES)

ifneq ($(BENCH_NAMES),)
$(BENCH_NAMES):
	@:
endif

# Rewrite docs/benchmarks.md from the committed results without running a bench.
bench-page: $(STAMP)
	$(BIN)/python -m bench --page-only

serve: $(STAMP)
	$(BIN)/ac-context serve

migrate: $(STAMP)
	$(BIN)/ac-context migrate

# Regenerate docs/schema.sql, the schema as the migrations leave it (run after adding a migration).
schema: $(STAMP)
	$(BIN)/python scripts/schema_dump.py

# Regenerate the index at the top of docs/decisions.md from its question headings.
decisions-index:
	$(PYTHON) scripts/decisions_index.py

# Re-pin every dependency after changing pyproject.toml.
lock: $(STAMP)
	$(BIN)/python -m pip freeze --exclude-editable | grep -v '^-e' > constraints.txt

clean:
	rm -rf $(VENV) .ac-context .pytest_cache .mypy_cache .ruff_cache
