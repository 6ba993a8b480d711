# One entry point for people and CI. Every target sets up .venv first when it is missing or stale.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test lint pytest extension e2e catalogue bench clean

NATIVE := server/native

# The C scan loops (trainmedic-native, which the fast extra names) are built here from source.
$(STAMP): pyproject.toml $(NATIVE)/pyproject.toml $(NATIVE)/setup.py $(NATIVE)/trainmedic_native.c
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet ./$(NATIVE) -e '.[dev,probe,fast,mcp]'
	touch $(STAMP)

demo: $(STAMP)  ## diagnose the bundled example log
	$(BIN)/trainmedic diagnose examples/fp16-loss-scale-4ranks.log

test: lint pytest extension e2e  ## every check and test: Python, the extension, VS Code end to end

pytest: $(STAMP)
	$(BIN)/python -m pytest

extension: $(STAMP)  ## the VS Code extension: type check, eslint (zero warnings), server-made fixtures, unit tests
	cd extension && npm ci --no-audit --no-fund --loglevel=error && PYTHON=$(CURDIR)/$(BIN)/python npm test

e2e: $(STAMP)  ## the extension in a real VS Code (code-server + headless Chromium)
	PYTHON=$(PYTHON) bash extension/scripts/e2e.sh

lint: $(STAMP)
	$(BIN)/ruff check server tests bench
	$(BIN)/mypy

catalogue: $(STAMP)  ## recompile rules/ into the bundled JSON catalogue, the schema's detectors and docs/catalogue
	$(BIN)/python -m trainmedic.catalogue.compile && $(BIN)/python -m trainmedic.render.reference

bench: $(STAMP)  ## accuracy and speed figures
	$(BIN)/python -m pip install --quiet -e '.[bench]'
	$(BIN)/python bench/corpus.py
	$(BIN)/python bench/initiating_rank.py
	$(BIN)/python bench/pasted.py
	$(BIN)/python bench/catalogue_load.py
	$(BIN)/python bench/lsp_latency.py
	$(BIN)/python bench/check_speed.py
	$(BIN)/python bench/speed.py

clean:
	rm -rf $(VENV) build dist .pytest_cache .mypy_cache .ruff_cache
