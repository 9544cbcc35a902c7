# Two commands do all set-up on a fresh machine:
#   make run   -> installs the light runtime (core + medspaCy), chunks the bundled example note
#                 with configs/default.cfg (the flagship: clauses, ceiling, assertion, focus)
#   make test  -> installs everything (torch, every extra, test tools) and runs the whole suite
# PYTHON picks the interpreter (make run PYTHON=python3.12); scripts/find-python falls back
# to pyenv's copy when the name is not runnable. Each interpreter gets its pinned set
# (constraints/py3.X.txt, from scripts/lock_constraints.py) and, unless it is python3, its own venv.
PYTHON ?= python3
PYTHON_BIN := $(shell scripts/find-python $(PYTHON))
PYVER := $(shell $(PYTHON_BIN) -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
CONSTRAINTS ?= constraints/py$(PYVER).txt
VENV ?= $(if $(filter python3,$(PYTHON)),.venv,.venv-py$(PYVER))
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
CONFIG ?= configs/default.cfg
NOTE ?= resources/examples/discharge_summary_en.txt
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: install install-test install-matrix install-transformers run test test-matrix test-transformers bench bench-all span-finder-model concept-spans concept-spans-half concept-spans-cv clean check-python

check-python:
	@test -n "$(PYTHON_BIN)" || { echo "error: no interpreter '$(PYTHON)' (PATH or pyenv)"; exit 1; }
	@test -f "$(CONSTRAINTS)" || { echo "error: Python $(PYVER) is not supported (3.11, 3.12, 3.13): no $(CONSTRAINTS)"; exit 1; }

# Two stamps share one venv: .installed-run is the light runtime (the core and the `context`
# extra the default pipeline needs: medspaCy; no torch, no sentence-transformers, no CUDA
# wheels); .installed-test adds torch (pinned) and every other extra on top of it.
RUN_EXTRAS ?= context
$(VENV)/.installed-run: setup.cfg pyproject.toml $(CONSTRAINTS) | check-python
	$(PYTHON_BIN) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -c $(CONSTRAINTS) -e ".[$(RUN_EXTRAS)]"
	touch $@

TEST_EXTRAS ?= all,test,ray,chroma,docs,parquet,datasets,langchain,llamaindex,browser
$(VENV)/.installed-test: $(VENV)/.installed-run
	# torch pinned: the CPU build on 3.11 (local wheel); on 3.12/3.13 PyPI only has the
	# CUDA build (~2.5 GB with its nvidia wheels), which runs on CPU too (docs/install.md)
	$(PIP) install -q torch==2.13.0 -c $(CONSTRAINTS)
	$(PIP) install -q -c $(CONSTRAINTS) -e ".[$(TEST_EXTRAS)]"
	touch $@

# The matrix subset (.ci/run on 3.12/3.13): core extras only, tests marked `matrix`.
MATRIX_EXTRAS ?= context,llm,test
$(VENV)/.installed-matrix: $(VENV)/.installed-run
	$(PIP) install -q -c $(CONSTRAINTS) -e ".[$(MATRIX_EXTRAS)]"
	touch $@

# The [transformers] extra pins transformers older than the main set: its own venv and pins.
TRF_VENV ?= .venv-trf-py$(PYVER)
TRF_CONSTRAINTS ?= constraints/transformers-py$(PYVER).txt
$(TRF_VENV)/.installed: setup.cfg pyproject.toml $(TRF_CONSTRAINTS) | check-python
	$(PYTHON_BIN) -m venv $(TRF_VENV)
	$(TRF_VENV)/bin/pip install -q --upgrade pip
	$(TRF_VENV)/bin/pip install -q torch==2.13.0 -c $(TRF_CONSTRAINTS)
	$(TRF_VENV)/bin/pip install -q -c $(TRF_CONSTRAINTS) -e ".[embed,transformers,test]"
	touch $@

# the venvs of `test-matrix` and `test-transformers` alone (.ci/run installs each just before its tests)
install-matrix: $(VENV)/.installed-matrix

install-transformers: $(TRF_VENV)/.installed

install: $(VENV)/.installed-run

install-test: $(VENV)/.installed-test

run: $(VENV)/.installed-run
	$(PY) -m spacy_clinchunk chunk $(NOTE) --config $(CONFIG)

test: $(VENV)/.installed-test
	$(PY) -m pytest -q -p no:cacheprovider $(PYTEST_ARGS); rc=$$?; [ $$rc -ne 5 ] || { echo "no tests collected"; rc=0; }; exit $$rc

test-matrix: $(VENV)/.installed-matrix
	CLINCHUNK_MATRIX=1 $(PY) -m pytest -q -p no:cacheprovider -m "matrix and not slow" $(PYTEST_ARGS); \
	rc=$$?; [ $$rc -ne 5 ] || { echo "no tests collected"; rc=0; }; exit $$rc

test-transformers: $(TRF_VENV)/.installed
	$(TRF_VENV)/bin/python -m pytest -q -p no:cacheprovider tests/embed/test_transformer_listener.py tests/training/test_concept_spans.py $(PYTEST_ARGS)

bench: $(VENV)/.installed-test
	$(PY) bench/structural.py
	$(PY) bench/assertion.py
	$(PY) bench/evaluate_configs.py

bench-all: bench
	$(PY) bench/semantic_window.py
	$(PY) bench/llm_context.py
	$(PY) bench/scale.py

# The shipped trained strategy span_finder: all annotated documents of the shared set
# (DATA), the config's seed and 20 epochs -> spacy_clinchunk/models/span_finder (about 2 MB).
span-finder-model: $(VENV)/.installed-test
	$(PY) scripts/train_span_finder.py $(if $(DATA),--data $(DATA))

# The concept-span model (configs/training/concept_spans.cfg: span_finder over the bundled MiniLM,
# fine-tuned; issue 29), in the [transformers] venv. concept-spans trains on every document of DATA
# (model-best: the best dev F of a grouped fifth of them) -> $(CONCEPT_OUT)/all/model/model-best,
# then assembles the retrieval_learned pipeline (retrieval.cfg + the model + clin_concept_focus) in
# $(CONCEPT_OUT)/retrieval_learned (load it with spacy.load or `chunk --config DIR`); the weights
# (about 90 MB) are built, never committed or downloaded. concept-spans-half: the grouped half split
# (train on half A, predict half B) that bench/concept_spans.py scores; concept-spans-cv: the 5
# grouped folds (every document predicted by the fold that did not train on it). Seed 0 each time.
CONCEPT_OUT ?= build/concept_spans
concept-spans: $(TRF_VENV)/.installed
	nice -n 19 $(TRF_VENV)/bin/python scripts/train_concept_spans.py build --out $(CONCEPT_OUT) $(if $(DATA),--data $(DATA))

concept-spans-half: $(TRF_VENV)/.installed
	nice -n 19 $(TRF_VENV)/bin/python scripts/train_concept_spans.py half --out $(CONCEPT_OUT)/half $(if $(DATA),--data $(DATA))
	nice -n 19 $(TRF_VENV)/bin/python bench/concept_spans.py --run $(CONCEPT_OUT)/half --speed $(CONCEPT_OUT)/half/half/model/model-best

concept-spans-cv: $(TRF_VENV)/.installed
	nice -n 19 $(TRF_VENV)/bin/python scripts/train_concept_spans.py cv --out $(CONCEPT_OUT)/cv $(if $(DATA),--data $(DATA))
	nice -n 19 $(TRF_VENV)/bin/python bench/concept_spans.py --run $(CONCEPT_OUT)/cv

clean:
	rm -rf .venv .venv-py3.* .venv-trf-py3.* build dist *.egg-info
