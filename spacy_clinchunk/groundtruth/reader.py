"""Reading annotated files into spaCy: one document (:func:`read_annotated`) or a corpus.

A corpus run never stops at one file: each file ends as read, skipped (not an annotated
document) or error, with its reason (:class:`FileResult`). :class:`AnnotatedCorpus` is
spaCy's corpus API over such a run: it yields ``Example(nlp.make_doc(text),
annotated_doc)`` for every document of every file matching a pattern, logs a file that
cannot be read and leaves it out. It is registered as ``spacy_clinchunk.AnnotatedCorpus.v2``
(``[corpora]``, ``@readers``; v1 is the strict JSON-only first version).
"""
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Union

from spacy.language import Language
from spacy.tokens import Doc
from spacy.training import Example
from spacy.util import registry

from .. import attrs
from .align import document_to_doc
from .formats import DEFAULT_PATTERN, annotated_files, load_documents
from .model import AnnotatedDocument, AnnotationError, NotAnnotatedError, ReadPolicy, Source
from .model import Format, SnippetPolicy, UnlocatedPolicy
from .voronoi import DEFAULT_MULTI_SPAN_GAP, DEFAULT_RATIOS, OverlapPolicy, VoronoiError, VoronoiSettings

logger = logging.getLogger("spacy_clinchunk")

# outcomes of one file in a corpus run
READ, SKIPPED, FAILED = "read", "skipped", "error"


def read_annotated(
    source: Source,
    nlp: Language,
    *,
    expansion_ratios: Optional[Sequence[float]] = DEFAULT_RATIOS,
    on_overlap: str = "merge",
    multi_span_gap: int = DEFAULT_MULTI_SPAN_GAP,
    format: str = "auto",
    unlocated: str = "keep",
    snippet_mismatch: str = "warn",
) -> Doc:
    """A tokenized ``Doc`` of an annotated document with annotation and Voronoi span groups.

    ``source`` is a path (our JSON, a brat ``.ann``/``.txt``, a BioC ``.xml``/``.json``
    holding one document), a JSON string or a dict. ``expansion_ratios=None`` (or empty)
    leaves out the Voronoi groups. With ``on_overlap="skip"`` a document whose
    annotations overlap gets no Voronoi groups (the reason is logged); ``"error"``
    raises :class:`~spacy_clinchunk.groundtruth.voronoi.OverlapError`. ``unlocated`` and
    ``snippet_mismatch`` are the policies of :class:`~.model.ReadPolicy`. The ``Doc`` is
    described in :mod:`spacy_clinchunk.groundtruth.align`.
    """
    documents = load_documents(source, format, ReadPolicy(unlocated, snippet_mismatch))
    if len(documents) != 1:
        raise AnnotationError(
            f"{documents[0].origin if documents else source}: holds {len(documents)} documents; "
            "read it with AnnotatedCorpus or load_documents"
        )
    return document_to_doc(documents[0], nlp, VoronoiSettings(tuple(expansion_ratios or ()), on_overlap, multi_span_gap))


@dataclass
class FileResult:
    """How one file of a corpus run ended: read (with documents), skipped or error, and why."""

    path: Path
    outcome: str
    reason: str = ""
    documents: List[AnnotatedDocument] = field(default_factory=list)


def read_corpus_file(path: Path, format: str = "auto", policy: Optional[ReadPolicy] = None) -> FileResult:
    """One file of a corpus run; never raises for bad content."""
    try:
        documents = load_documents(path, format, policy)
    except NotAnnotatedError:
        return FileResult(path, SKIPPED, "not an annotated document")
    except AnnotationError as err:
        return FileResult(path, FAILED, str(err))
    return FileResult(path, READ, documents=documents)


def corpus_counts(results: Iterable[FileResult]) -> Dict[str, int]:
    """Totals of a corpus run for summary lines: files per outcome, documents, annotation notes."""
    counts = {"files": 0, READ: 0, SKIPPED: 0, FAILED: 0, "documents": 0}
    for result in results:
        counts["files"] += 1
        counts[result.outcome] += 1
        for document in result.documents:
            counts["documents"] += 1
            for name, value in document.counts.items():
                counts[name] = counts.get(name, 0) + value
    return counts


def annotation_summary(counts: Dict[str, int], policy: ReadPolicy) -> str:
    """``"3 unlocated annotation(s) kept, 1 snippet mismatch(es) kept, ..."`` for summary lines."""
    unlocated = counts.get("unlocated", 0)
    parts = [f"{unlocated} unlocated annotation(s) {'kept' if policy.unlocated == 'keep' else 'skipped'}"]
    mismatches = counts.get("mismatch", 0)
    fate = {"warn": "kept", "skip-annotation": "skipped", "error": "failed"}[policy.snippet_mismatch]
    parts.append(f"{mismatches} snippet mismatch(es) {fate}")
    parts.append(f"{counts.get('near_miss', 0)} whitespace/case near-miss(es) accepted")
    return ", ".join(parts)


@registry.readers("spacy_clinchunk.AnnotatedCorpus.v2")
class AnnotatedCorpus:
    """Callable ``nlp -> Iterator[Example]`` over annotated documents (spaCy corpus API).

    Registered as ``spacy_clinchunk.AnnotatedCorpus.v2``, for ``[corpora]`` and
    ``nlp.evaluate``: JSON, brat and BioC; ``pattern`` null (``None``) reads every file of
    ``format`` by its ending; unlocated annotations are kept on the doc and snippet
    mismatches warn, by default. A file that cannot be read is logged (WARNING, no note
    text) and left out; after a pass, :attr:`results` holds one :class:`FileResult` per file.
    """

    def __init__(
        self,
        path: Union[str, Path],
        pattern: Optional[str] = None,
        expansion_ratios: Sequence[float] = DEFAULT_RATIOS,
        on_overlap: OverlapPolicy = "merge",
        multi_span_gap: int = DEFAULT_MULTI_SPAN_GAP,
        limit: int = 0,
        format: Format = "auto",
        unlocated: UnlocatedPolicy = "keep",
        snippet_mismatch: SnippetPolicy = "warn",
    ) -> None:
        self.path = Path(path)
        self.pattern = pattern
        self.voronoi = VoronoiSettings(tuple(expansion_ratios), on_overlap, multi_span_gap)
        self.limit = limit
        self.format = format
        self.policy = ReadPolicy(unlocated, snippet_mismatch)
        self.results: List[FileResult] = []

    def files(self) -> List[Path]:
        files = annotated_files(self.path, self.pattern, self.format)
        return files[: self.limit] if self.limit > 0 else files

    def __call__(self, nlp: Language) -> Iterator[Example]:
        self.results = []
        for file in self.files():
            result = read_corpus_file(file, self.format, self.policy)
            self.results.append(result)
            if result.outcome == FAILED:
                logger.warning("%s", result.reason)
            for document in result.documents:
                try:
                    reference = document_to_doc(document, nlp, self.voronoi)
                except (AnnotationError, VoronoiError) as err:
                    result.outcome, result.reason = FAILED, str(err)
                    logger.warning("%s", err)
                    continue
                if self.voronoi.ratios and self.voronoi.on_overlap == "skip" and attrs.VORONOI_KEY not in reference.spans:
                    continue  # overlapping annotations: skipped, as the policy asks
                predicted = nlp.make_doc(reference.text)
                predicted._.clin_doc_id = reference._.clin_doc_id
                yield Example(predicted, reference)


annotated_corpus_v2 = AnnotatedCorpus  # the registered v2 reader is the class itself


@registry.readers("spacy_clinchunk.AnnotatedCorpus.v1")
def annotated_corpus_v1(
    path: Path,
    pattern: str = DEFAULT_PATTERN,
    expansion_ratios: List[float] = [0.0, 0.5, 1.0],
    on_overlap: OverlapPolicy = "merge",
    multi_span_gap: int = DEFAULT_MULTI_SPAN_GAP,
    limit: int = 0,
) -> Callable[[Language], Iterable[Example]]:
    """The first reader, kept with its meaning: our JSON schema only, and an unlocated
    annotation or a snippet that does not match its text is an error. Use v2 for brat,
    BioC and the lenient policies."""
    return AnnotatedCorpus(path, pattern, expansion_ratios, on_overlap, multi_span_gap, limit, "json", "error", "error")

