"""spacy-clinchunk: retrieval-ready, assertion-aware chunks of clinical text for spaCy.

Importing this package is cheap: components register through ``spacy_factories``
entry points and heavy libraries (torch, medspaCy, tiktoken, Ray) load on first use.
"""
from __future__ import annotations

import logging
from importlib import import_module
from typing import Any

__version__ = "0.1.0"

logging.getLogger("spacy_clinchunk").addHandler(logging.NullHandler())

# public name -> "module:attribute", imported on first access
_LAZY = {
    "register_extensions": "spacy_clinchunk.attrs:register_extensions",
    "load_pipeline": "spacy_clinchunk.pipeline:load_pipeline",
    "doc_to_record": "spacy_clinchunk.records:doc_to_record",
    "run_corpus": "spacy_clinchunk.corpus:run_corpus",
    "read_annotated": "spacy_clinchunk.annotations:read_annotated",
    "to_records": "spacy_clinchunk.export:to_records",
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
