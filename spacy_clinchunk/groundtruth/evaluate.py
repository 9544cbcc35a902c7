"""Chunk quality against annotated ground truth.

For each document, the chunks of a span group (``clin_chunks``) are compared with the
evidence spans of ``doc.spans["annotations"]`` and the Voronoi variants of the
reference (all on character offsets):

* ``chunk_integrity``: share of evidence spans lying wholly inside one chunk;
* ``chunk_isolation``: among chunks touching an annotation, the share touching exactly
  one annotation cluster (annotations joined when any of their evidence spans
  overlap; two mentions of one multi-span annotation are one cluster);
* ``chunk_coverage``: share of annotated characters inside some chunk;
* ``chunk_iou``: mean over annotation parts (see :mod:`spacy_clinchunk.groundtruth.voronoi`) of the
  best IoU of any chunk with the part's ``voronoi_0.50`` variant (0 when no chunk
  overlaps it);
* ``chunks_per_doc`` and ``words_per_chunk`` (a word is a run of letters/digits);
* ``unlocated_annotations``: annotations asserted for a document but not located in its
  text (``Doc._.clin_unlocated_annotations``); they have no span, so no metric uses them.

Discontinuous (brat, BioC) and multi-span (JSON) annotations follow the one rule of
:mod:`spacy_clinchunk.groundtruth.voronoi`: each fragment is an evidence span (integrity and
coverage count fragments), fragments of one annotation close enough form one part
(IoU is per part), and all of an annotation's fragments belong to one cluster
(isolation), so the same ground truth scores the same from any format.

Ratios are pooled over the corpus (micro averages). ``spacy_clinchunk.ChunkScorer.v1``
(``@scorers``) gives the same numbers through ``nlp.evaluate(examples, scorer=...)``.
"""
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from spacy.language import Language
from spacy.training import Example
from spacy.util import registry

from .. import attrs
from .assertion_score import AssertionScorer
from .reader import AnnotatedCorpus, corpus_counts
from .voronoi import DEFAULT_MULTI_SPAN_GAP, compute, is_word_char

Range = Tuple[int, int]
# the counts behind the metrics, and each ratio metric as (numerator, denominator) of them
COUNTS = (
    "docs", "evidence_spans", "intact_spans", "touching_chunks", "isolated_chunks", "annotated_chars",
    "covered_chars", "parts", "iou_sum", "chunks", "words", "unlocated",
)
RATIOS = {
    "chunk_integrity": ("intact_spans", "evidence_spans"),
    "chunk_isolation": ("isolated_chunks", "touching_chunks"),
    "chunk_coverage": ("covered_chars", "annotated_chars"),
    "chunk_iou": ("iou_sum", "parts"),
    "chunks_per_doc": ("chunks", "docs"),
    "words_per_chunk": ("words", "chunks"),
}
METRICS = tuple(RATIOS)
DEFAULT_VARIANT_RATIO = 0.5


class Tally:
    """Counts behind the metrics (:data:`COUNTS`, 0 unless given); add tallies of documents to get a corpus."""

    __slots__ = COUNTS

    def __init__(self, **counts: float) -> None:
        unknown = sorted(set(counts) - set(COUNTS))
        if unknown:
            raise TypeError(f"Tally has no count {', '.join(unknown)}")
        for name in COUNTS:
            setattr(self, name, counts.get(name, 0))

    def as_dict(self) -> Dict[str, float]:
        return {name: getattr(self, name) for name in COUNTS}

    def __add__(self, other: "Tally") -> "Tally":
        return Tally(**{name: value + getattr(other, name) for name, value in self.as_dict().items()})

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, Tally) and self.as_dict() == other.as_dict()

    def __repr__(self) -> str:
        return f"Tally({', '.join(f'{k}={v!r}' for k, v in self.as_dict().items())})"

    def scores(self) -> Dict[str, Optional[float]]:
        counts = self.as_dict()
        scores = {metric: counts[num] / counts[den] if counts[den] else None for metric, (num, den) in RATIOS.items()}
        scores.update(chunk_docs=self.docs, unlocated_annotations=self.unlocated)
        return scores


def count_words(text: str) -> int:
    words, inside = 0, False
    for char in text:
        word = is_word_char(char)
        if word and not inside:
            words += 1
        inside = word
    return words


def iou(a: Range, b: Range) -> float:
    inter = min(a[1], b[1]) - max(a[0], b[0])
    if inter <= 0:
        return 0.0
    return inter / (max(a[1], b[1]) - min(a[0], b[0]))


def annotation_clusters(annotations: Sequence[Sequence[Range]]) -> List[int]:
    """Cluster id per annotation: annotations join when any of their spans overlap."""
    parent = list(range(len(annotations)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    spans = sorted((s, e, i) for i, ranges in enumerate(annotations) for s, e in ranges)
    reach_end, reach_owner = -1, -1
    for start, end, owner in spans:
        if start < reach_end:
            parent[find(owner)] = find(reach_owner)
        if end > reach_end:
            reach_end, reach_owner = end, owner
    return [find(i) for i in range(len(annotations))]


def document_tally(
    text: str,
    chunks: Sequence[Range],
    annotations: Sequence[Sequence[Range]],
    variants: Optional[Sequence[Range]] = None,
    multi_span_gap: int = DEFAULT_MULTI_SPAN_GAP,
    ratio: float = DEFAULT_VARIANT_RATIO,
) -> Tally:
    """Counts for one document. ``variants`` (one range per annotation part) are computed
    with the Voronoi defaults when not given."""
    chunks = sorted(chunks)
    if variants is None:
        result = compute(text, annotations, [ratio], "merge", multi_span_gap)
        variants = [part.variants[result.ratios[0]] for part in result.parts]
    tally = Tally(docs=1, chunks=len(chunks), words=sum(count_words(text[s:e]) for s, e in chunks))
    evidence = [span for ranges in annotations for span in ranges]
    tally.evidence_spans = len(evidence)
    tally.intact_spans = sum(any(cs <= s and e <= ce for cs, ce in chunks) for s, e in evidence)
    clusters = annotation_clusters(annotations)
    for cs, ce in chunks:
        touched = {clusters[i] for i, ranges in enumerate(annotations) for s, e in ranges if s < ce and cs < e}
        if touched:
            tally.touching_chunks += 1
            tally.isolated_chunks += len(touched) == 1
    annotated = bytearray(len(text))
    for s, e in evidence:
        annotated[s:e] = b"\x01" * (e - s)
    covered = bytearray(len(text))
    for cs, ce in chunks:
        covered[cs:ce] = b"\x01" * (ce - cs)
    tally.annotated_chars = sum(annotated)
    tally.covered_chars = sum(a & c for a, c in zip(annotated, covered))
    tally.parts = len(variants)
    tally.iou_sum = sum(max((iou(v, c) for c in chunks), default=0.0) for v in variants)
    return tally


def _annotation_index(span: Any, fallback: int) -> int:
    if span.id_ and span.id_.isdigit():
        return int(span.id_)
    value = span._.clin_annotation_index
    return int(value) if value is not None else fallback


def example_tally(
    example: Example,
    spans_key: str = attrs.CHUNKS_KEY,
    ratio: float = DEFAULT_VARIANT_RATIO,
    multi_span_gap: int = DEFAULT_MULTI_SPAN_GAP,
) -> Tally:
    """Counts for one ``Example``: chunks from ``predicted``, ground truth from ``reference``."""
    attrs.register_extensions()
    reference, predicted = example.reference, example.predicted
    if reference.text != predicted.text:
        raise ValueError("reference and predicted texts differ")
    grouped: Dict[int, List[Range]] = {}
    for number, span in enumerate(reference.spans.get(attrs.ANNOTATIONS_KEY, [])):
        grouped.setdefault(_annotation_index(span, 100000 + number), []).append((span.start_char, span.end_char))
    order = sorted(grouped)
    annotations = [grouped[i] for i in order]
    key = attrs.variant_key(ratio)
    variants = None
    if key in reference.spans:
        variants = [(s.start_char, s.end_char) for s in reference.spans[key]]
    chunks = [(s.start_char, s.end_char) for s in predicted.spans.get(spans_key, [])]
    tally = document_tally(reference.text, chunks, annotations, variants, multi_span_gap, ratio)
    tally.unlocated = len(reference._.clin_unlocated_annotations or [])
    return tally


class ChunkScorer:
    """Chunk-quality scorer: a ``scorers`` function and an ``nlp.evaluate(scorer=...)`` object.

    ``score(examples, spans_key=...)`` scores that span group instead of the scorer's own,
    as the chunking components ask for theirs; other keywords spaCy passes are ignored.
    """

    def __init__(
        self,
        spans_key: str = attrs.CHUNKS_KEY,
        variant_ratio: float = DEFAULT_VARIANT_RATIO,
        multi_span_gap: int = DEFAULT_MULTI_SPAN_GAP,
    ) -> None:
        self.spans_key = spans_key
        self.variant_ratio = variant_ratio
        self.multi_span_gap = multi_span_gap

    def tally(self, examples: Iterable[Example], spans_key: Optional[str] = None) -> Tally:
        key = spans_key or self.spans_key
        total = Tally()
        for example in examples:
            total = total + example_tally(example, key, self.variant_ratio, self.multi_span_gap)
        return total

    def score(self, examples: Iterable[Example], *, spans_key: Optional[str] = None, **kwargs: Any) -> Dict[str, Any]:
        return self.tally(examples, spans_key).scores()

    __call__ = score


@registry.scorers("spacy_clinchunk.ChunkScorer.v1")
def make_chunk_scorer(
    spans_key: str = attrs.CHUNKS_KEY,
    variant_ratio: float = DEFAULT_VARIANT_RATIO,
    multi_span_gap: int = DEFAULT_MULTI_SPAN_GAP,
) -> ChunkScorer:
    """Registered scorer: ``{"@scorers": "spacy_clinchunk.ChunkScorer.v1"}`` (the default ``scorer``
    of the chunking components, which pass their own ``spans_key``)."""
    return ChunkScorer(spans_key, variant_ratio, multi_span_gap)


ASSERTION_METRICS = ("assertion_acc", "assertion_wrongly_present", "assertion_per_status", "assertion_annotations")


def assigns_assertion(nlp: Language) -> bool:
    """Whether a component of ``nlp`` assigns ``Span._.clin_assertion`` (then statuses are scored)."""
    assigned = f"span._.{attrs.ext('assertion')}"
    return any(assigned in nlp.get_pipe_meta(name).assigns for name in nlp.pipe_names)


class CorpusScorer:
    """What ``evaluate`` scores on one group: the chunk metrics, and the assertion metrics
    when the pipeline assigns statuses (one pass of ``nlp.evaluate`` for both)."""

    def __init__(self, spans_key: str, with_assertion: bool) -> None:
        self.chunks = ChunkScorer(spans_key)
        self.assertion = AssertionScorer(spans_key) if with_assertion else None
        self.assertion_names = ASSERTION_METRICS if with_assertion else ()

    def score(self, examples: Iterable[Example], **kwargs: Any) -> Dict[str, Any]:
        examples = list(examples)
        scores = self.chunks.score(examples)
        if self.assertion is not None:
            scores.update(self.assertion.score(examples))
        return scores


def evaluate_corpus(nlp: Language, path: Union[str, Path], pattern: Optional[str] = None, **options: Any) -> Dict[str, Any]:
    """Run ``nlp`` over an annotated corpus through ``nlp.evaluate`` and return the metrics.

    ``options`` are those of :func:`evaluate_files` (``spans_key``, ``limit``, ``format``,
    ``unlocated``, ...). Files that cannot be read are left out and counted
    (``files_error``), never fatal.
    """
    return evaluate_files(nlp, path, pattern, **options)[0]


def evaluate_files(
    nlp: Language,
    path: Union[str, Path],
    pattern: Optional[str] = None,
    spans_key: str = attrs.CHUNKS_KEY,
    limit: int = 0,
    batch_size: Optional[int] = None,
    format: str = "auto",
    unlocated: str = "keep",
    snippet_mismatch: str = "warn",
) -> Tuple[Dict[str, Any], List[Any]]:
    """``(metrics, per-file results)``; ``pattern=None`` reads every file of ``format`` by its ending."""
    corpus = AnnotatedCorpus(
        path, pattern, expansion_ratios=[DEFAULT_VARIANT_RATIO], limit=limit, format=format,
        unlocated=unlocated, snippet_mismatch=snippet_mismatch,
    )
    examples = list(corpus(nlp))
    scorer = CorpusScorer(spans_key, assigns_assertion(nlp))
    scores = nlp.evaluate(examples, scorer=scorer, batch_size=batch_size) if examples else Tally().scores()
    metrics = {name: scores.get(name) for name in (*METRICS, "chunk_docs", "unlocated_annotations", *scorer.assertion_names)}
    counts = corpus_counts(corpus.results)
    metrics.update(files=counts["files"], files_skipped=counts["skipped"], files_error=counts["error"])
    return metrics, corpus.results
