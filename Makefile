# Two commands do all set-up on a fresh machine:
#   make run   -> installs the runtime, chunks the bundled example note with configs/default.cfg
#   make test  -> installs runtime + test dependencies and runs the whole test suite
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
CONFIG ?= configs/default.cfg
NOTE ?= resources/examples/discharge_summary_en.txt
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: install install-test run test bench bench-all clean

$(VENV)/.installed: setup.cfg pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	# torch pinned to the CPU build (an unpinned torch pulls several GB of CUDA)
	$(PIP) install -q torch==2.13.0 -c constraints.txt
	$(PIP) install -q -c constraints.txt -e ".[all]"
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed
	$(PIP) install -q -c constraints.txt -e ".[all,test,ray,chroma]"
	touch $@

install: $(VENV)/.installed

run: $(VENV)/.installed
	$(PY) -m spacy_clinchunk chunk $(NOTE) --config $(CONFIG)

test: $(VENV)/.installed-test
	$(PY) -m pytest -q -p no:cacheprovider $(PYTEST_ARGS)

bench: $(VENV)/.installed-test
	$(PY) bench/structural.py
	$(PY) bench/assertion.py
	$(PY) bench/evaluate_configs.py

bench-all: bench
	$(PY) bench/semantic_window.py
	$(PY) bench/llm_context.py
	$(PY) bench/scale.py

clean:
	rm -rf $(VENV) build dist *.egg-info
