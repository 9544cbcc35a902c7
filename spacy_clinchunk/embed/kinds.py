"""Embedders by kind, for vector stores and corpus runs (``--embedder``): which embedder a kind
and model name give, and the label their vectors are recorded under, so that vectors of two
models never share a collection.
"""
from typing import Optional

from .embedders import Embedder, EmbedderError, SentenceTransformerEmbedder, StaticEmbedder

# the kinds a vector store's embedder is chosen by (``--embedder``), the default first
EMBEDDER_KINDS = ("sentence-transformers", "static")
# the module a kind cannot run without, so a missing extra is named before any work starts
KIND_MODULES = {"sentence-transformers": "sentence_transformers", "static": "model2vec"}


def check_kind(kind: str) -> str:
    """``kind`` when it is one of :data:`EMBEDDER_KINDS`; a one-line error otherwise, so a typo
    fails before a corpus run starts its workers."""
    if kind not in EMBEDDER_KINDS:
        raise EmbedderError(f"unknown embedder '{kind}'; choose {' or '.join(EMBEDDER_KINDS)}")
    return kind


def embedder_of_kind(kind: str, model: Optional[str] = None, device: str = "auto") -> Embedder:
    """An embedder of ``kind`` for ``model``: a sentence-transformers name or path (default the
    bundled MiniLM), or a model2vec directory (default the MiniLM distilled once and cached).
    Nothing is loaded yet: the model loads on first use, once per process (:func:`shared_model`)."""
    if check_kind(kind) == "static":
        return StaticEmbedder(model=model)
    return SentenceTransformerEmbedder(model=model, device=device)


def embedder_label(kind: str, model: Optional[str] = None) -> str:
    """``kind:name`` of the vectors an embedder of ``kind`` and ``model`` gives, what a Chroma
    collection and a corpus manifest record, so vectors of two models never share a collection
    (``sentence-transformers:all-MiniLM-L6-v2``, ``static:model2vec(all-MiniLM-L6-v2, pca=256)``)."""
    return f"{check_kind(kind)}:{embedder_of_kind(kind, model).name}"
