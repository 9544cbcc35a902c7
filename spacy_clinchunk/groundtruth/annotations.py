"""Annotated documents read into spaCy ``Doc`` objects, from any ground-truth format: the public face.

Formats (chosen by extension, or by ``format=``):

* ``json``: our schema: ``full_text`` and ``annotations`` with ``hpo_id``, ``label``,
  ``assertion_status`` and ``evidence_spans`` (:mod:`.json_format`);
* ``brat``: standoff ``.ann`` next to its ``.txt`` (:mod:`.brat`);
* ``bioc``: BioC collections, JSON or XML, PubTator style (:mod:`.bioc`).

Every reader yields the :class:`AnnotatedDocument` of :mod:`.model`, under the same
rules for unlocated annotations, snippets and faults; :mod:`.formats` picks the reader,
:mod:`.align` turns a document into a ``Doc`` with its span groups, and :mod:`.reader`
reads one file (:func:`read_annotated`) or a corpus (:class:`AnnotatedCorpus`, the
registered ``spacy_clinchunk.AnnotatedCorpus.v1``/``.v2``). This module re-exports their
public names, so ``from spacy_clinchunk.groundtruth.annotations import AnnotatedCorpus``
keeps working.
"""
from .align import aligned_doc, document_to_doc, split_tokens_at
from .formats import DEFAULT_PATTERN, FORMAT_SUFFIXES, annotated_files, detect_format, load_documents
from .json_format import document_from_record, document_to_record, is_annotated_record, load_record
from .model import (
    DEFAULT_ASSERTION,
    FORMATS,
    MAX_FAULTS_SHOWN,
    SNIPPET_POLICIES,
    UNLOCATED_POLICIES,
    AnnotatedDocument,
    Annotation,
    AnnotationError,
    DocumentBuilder,
    NotAnnotatedError,
    Range,
    ReadPolicy,
    Source,
    compare_snippet,
    decode_text,
    parse_bytes,
    read_file,
    squash,
)
from .reader import (
    FAILED,
    READ,
    SKIPPED,
    AnnotatedCorpus,
    FileResult,
    annotated_corpus_v1,
    annotated_corpus_v2,
    annotation_summary,
    corpus_counts,
    read_annotated,
    read_corpus_file,
)

__all__ = [
    "DEFAULT_ASSERTION",
    "DEFAULT_PATTERN",
    "FAILED",
    "FORMATS",
    "FORMAT_SUFFIXES",
    "MAX_FAULTS_SHOWN",
    "READ",
    "SKIPPED",
    "SNIPPET_POLICIES",
    "UNLOCATED_POLICIES",
    "AnnotatedCorpus",
    "AnnotatedDocument",
    "Annotation",
    "AnnotationError",
    "DocumentBuilder",
    "FileResult",
    "NotAnnotatedError",
    "Range",
    "ReadPolicy",
    "Source",
    "aligned_doc",
    "annotated_corpus_v1",
    "annotated_corpus_v2",
    "annotated_files",
    "annotation_summary",
    "compare_snippet",
    "corpus_counts",
    "decode_text",
    "detect_format",
    "document_from_record",
    "document_to_doc",
    "document_to_record",
    "is_annotated_record",
    "load_documents",
    "load_record",
    "parse_bytes",
    "read_annotated",
    "read_corpus_file",
    "read_file",
    "split_tokens_at",
    "squash",
]
