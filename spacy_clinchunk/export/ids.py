"""Ids of documents and chunks: stable across reruns, unique within one export.

A chunk's id is its document's id plus its character offsets (``note:12-40``); a document's
id is ``Doc._.clin_doc_id`` (the CLI and corpus runs set the input's path relative to the
common root of the inputs, :mod:`spacy_clinchunk.corpus.inputs`), else ``doc-`` and a hash
of its text. :class:`DocumentIds` keeps ids distinct over one call.
"""
from __future__ import annotations

import hashlib
from typing import Dict, List, Optional, Tuple

from spacy.tokens import Doc, Span

from .. import attrs


def document_id(doc: Doc) -> str:
    """``Doc._.clin_doc_id``, or for a document without one ``doc-`` + a hash of its text (stable across reruns)."""
    attrs.register_extensions()
    if doc._.clin_doc_id is not None and str(doc._.clin_doc_id) != "":
        return str(doc._.clin_doc_id)
    return "doc-" + hashlib.sha1(doc.text.encode("utf-8")).hexdigest()[:16]


def chunk_id(doc_id: str, start: int, end: int) -> str:
    """Stable chunk id: document id plus character offsets."""
    return f"{doc_id}:{start}-{end}"


class DocumentIds:
    """Distinct, stable document ids over one export call.

    A document's id is :func:`document_id` (its ``clin_doc_id``, else a hash of its text);
    the n-th repeat of an id seen before in the same call becomes ``<id>#n``, so two
    identical notes without ids (or two pages of one ``source``) never share chunk ids and
    the ids stay the same on a rerun over the same input in the same order.
    ``dedupe=True`` instead skips a repeated document whose text is the same as the first
    (:meth:`take` returns ``None``): identical notes are stored once.
    """

    def __init__(self, dedupe: bool = False) -> None:
        self.dedupe = dedupe
        self._seen: Dict[str, Tuple[int, str]] = {}

    def take(self, doc: Optional[Doc], doc_id: Optional[str] = None) -> Optional[str]:
        """The id ``doc`` gets in this call (``doc_id`` given, else :func:`document_id`), or ``None``
        when de-duplication drops it. ``doc`` is ``None`` for an input that could not be read
        (its error entry still gets an id of its own)."""
        base = doc_id if doc_id not in (None, "") or doc is None else document_id(doc)
        digest = hashlib.sha1(doc.text.encode("utf-8")).hexdigest() if doc is not None else ""
        if base not in self._seen:
            self._seen[base] = (0, digest)
            return base
        repeats, first = self._seen[base]
        if self.dedupe and digest == first:
            return None
        self._seen[base] = (repeats + 1, first)
        return f"{base}#{repeats + 1}"


def record_ids(doc_id: str, spans: List[Span]) -> List[str]:
    """Stable ids of a group's spans (:func:`chunk_id`; a repeated span gets ``#1``, ``#2``, ...)."""
    seen: Dict[str, int] = {}
    ids = []
    for span in spans:
        base = chunk_id(doc_id, span.start_char, span.end_char)
        repeat = seen.get(base, 0)
        seen[base] = repeat + 1
        ids.append(base if repeat == 0 else f"{base}#{repeat}")
    return ids
