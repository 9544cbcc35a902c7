"""Export: records of processed docs, vector stores, LangChain / LlamaIndex adapters and the HTML view.

The names of the vector-store module are also importable from the wing itself
(``from spacy_clinchunk.export import to_chroma``), as they were when it was one module.
Nothing is imported until a name is used.
"""
from __future__ import annotations

from importlib import import_module
from typing import Any

_VECTORSTORES = (
    "NO_ASSERTION",
    "vector_metadata",
    "adapter_metadata",
    "chunk_texts_with_ids",
    "default_embedder",
    "to_chroma",
    "query_chroma",
)


def __getattr__(name: str) -> Any:
    if name in _VECTORSTORES:
        return getattr(import_module(".vectorstores", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_VECTORSTORES))
