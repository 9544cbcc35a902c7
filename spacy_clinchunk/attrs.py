"""Span keys and extension attributes, declared once for the whole package.

Every component imports its keys from here and calls :func:`register_extensions`,
which is idempotent and never overwrites an attribute someone else registered.
"""
from __future__ import annotations

from typing import Any, Dict

from spacy.tokens import Doc, Span

# Span group keys -----------------------------------------------------------
CHUNKS_KEY = "clin_chunks"  # structural / semantic chunks
RAG_CHUNKS_KEY = "clin_rag_chunks"  # token windows of clin_llm_context
ANNOTATIONS_KEY = "annotations"  # evidence spans read from annotated documents
VORONOI_KEY = "voronoi"  # Voronoi territories
VORONOI_VARIANT_PREFIX = "voronoi_"  # + "0.50" etc.
ASSERTION_VIEW_KEY = "clin_assertion_view"  # copy of a group labelled by assertion, for displaCy
FOCUS_KEY = "clin_focus"  # clin_focus: the framing-free finding of each chunk

ASSERTION_LABELS = (
    "affirmed",
    "negated",
    "normal",
    "uncertain",
    "historical",
    "hypothetical",
    "family",
)

# name -> default value (None for getters declared elsewhere)
SPAN_EXTENSIONS: Dict[str, Any] = {
    # clin_context_assertion
    "assertion": None,
    "assertion_cues": None,
    "is_negated": False,
    "is_uncertain": False,
    "is_historical": False,
    "is_hypothetical": False,
    "is_family": False,
    "is_normal": False,
    # annotated documents / Voronoi ground truth
    "hpo_id": None,
    "hpo_label": None,
    "annotation_index": None,
    # clin_llm_context
    "chunk_id": None,
    "token_count": None,
    "context": None,
    "enriched_text": None,
    # medspaCy sectionizer (or our header detection): the section a chunk stands in
    "section": None,
    # clin_focus: focus span -> index of its chunk; chunk -> indices of its focus spans
    "focus_of": None,
    "focus_ids": None,
}

DOC_EXTENSIONS: Dict[str, Any] = {
    "doc_id": None,
    "source": None,  # path (or "stdin") the document was read from
    "unlocated_annotations": None,  # annotations asserted for the document but not located in its text
    "llm_usage": None,
    "llm_context_failures": 0,
}


def _register(cls: Any, name: str, default: Any) -> None:
    if not cls.has_extension(name):
        cls.set_extension(name, default=default)


def register_extensions() -> None:
    """Register every extension attribute of the package (safe to call often)."""
    for name, default in SPAN_EXTENSIONS.items():
        _register(Span, name, default)
    for name, default in DOC_EXTENSIONS.items():
        _register(Doc, name, default)


def variant_key(ratio: float) -> str:
    """Span-group key of a Voronoi expansion variant: 0.5 -> ``voronoi_0.50``."""
    return f"{VORONOI_VARIANT_PREFIX}{ratio:.2f}"

