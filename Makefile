# One entry point for people and CI. Every target sets up .venv first when it is missing or stale.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test lint catalogue bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,probe,fast]'
	touch $(STAMP)

demo: $(STAMP)  ## diagnose the bundled example log
	$(BIN)/trainmedic diagnose examples/fp16-loss-scale-4ranks.log

test: $(STAMP) lint  ## every check and test
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check server tests bench
	$(BIN)/mypy

catalogue: $(STAMP)  ## recompile rules/ into the bundled JSON catalogue
	$(BIN)/python -m trainmedic.compile_catalogue

bench: $(STAMP)
	$(BIN)/python bench/corpus.py

clean:
	rm -rf $(VENV) build dist .pytest_cache .mypy_cache .ruff_cache
