"""spacy-clinchunk: retrieval-ready, assertion-aware chunks of clinical text for spaCy.

Importing this package is cheap: components register through ``spacy_factories``
entry points and heavy libraries (torch, medspaCy, tiktoken, Ray) load on first use.

The package is built in wings (see docs/architecture.md): ``components`` (every factory),
``assertion``, ``llm``, ``embed``, ``groundtruth``, ``corpus``, ``export`` and ``cli``, on
a ground floor of shared modules (``attrs``, ``spans``, ``resources_io``, ``fileio``,
``logs``) and ``pipeline`` (one resolver for strategy names, configs and saved pipelines).
"""
from __future__ import annotations

import logging
from importlib import import_module
from typing import Any

__version__ = "0.2.0"

logging.getLogger("spacy_clinchunk").addHandler(logging.NullHandler())

# public name -> "module:attribute", imported on first access
_LAZY = {
    "register_extensions": "spacy_clinchunk.attrs:register_extensions",
    "load_pipeline": "spacy_clinchunk.pipeline:load_pipeline",
    "resolve_pipeline": "spacy_clinchunk.pipeline:resolve_pipeline",
    "doc_to_record": "spacy_clinchunk.export.records:doc_to_record",
    "chunk_records": "spacy_clinchunk.export.records:chunk_records",
    "iter_records": "spacy_clinchunk.export.records:iter_records",
    "write_records": "spacy_clinchunk.export.writers:write_records",
    "to_chroma": "spacy_clinchunk.export.vectorstores:to_chroma",
    "query_chroma": "spacy_clinchunk.export.vectorstores:query_chroma",
    "render_html": "spacy_clinchunk.export.view:render_html",
    "ClinChunkTextSplitter": "spacy_clinchunk.export.langchain:ClinChunkTextSplitter",
    "ClinChunkNodeParser": "spacy_clinchunk.export.llama_index:ClinChunkNodeParser",
    "run_corpus": "spacy_clinchunk.corpus:run_corpus",
    "read_annotated": "spacy_clinchunk.groundtruth.reader:read_annotated",
    "PipelineSpec": "spacy_clinchunk.pipeline:PipelineSpec",
    "records_of": "spacy_clinchunk.export.records:records_of",
    "AnnotatedCorpus": "spacy_clinchunk.groundtruth.reader:AnnotatedCorpus",
    "evaluate_corpus": "spacy_clinchunk.groundtruth.evaluate:evaluate_corpus",
}


def __getattr__(name: str) -> Any:
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError(f"module 'spacy_clinchunk' has no attribute '{name}'")
    module, attribute = target.split(":")
    return getattr(import_module(module), attribute)


def __dir__():
    return sorted(list(globals()) + list(_LAZY))


__all__ = ["__version__", *_LAZY]
