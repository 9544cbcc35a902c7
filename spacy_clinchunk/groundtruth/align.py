"""An annotated document as a spaCy ``Doc``: its annotations and Voronoi ground truth as span groups.

Tokens are split wherever an evidence span, territory or variant starts or ends inside a
token, so every span is character-exact (``"milie"`` inside ``"families"`` is kept, not
widened or dropped). The text itself is never changed. The ``Doc`` has

* ``doc.spans["annotations"]``: one span per evidence span (or brat/BioC fragment), with
  ``Span._.clin_hpo_id``, ``Span._.clin_hpo_label``, ``Span._.clin_assertion`` and
  ``Span._.clin_annotation_index`` (and, per span, ``label_`` = concept id and ``id_`` =
  annotation index);
* ``doc.spans["voronoi"]`` and ``doc.spans["voronoi_0.50"]`` etc.: the territories and
  variants of :mod:`.voronoi`, one span per part, with the same ``label_`` and ``id_``
  (extension attributes are keyed by character offsets, and parts of one cluster share
  their territory, so the per-span fields carry the annotation);
* ``Doc._.clin_doc_id``, ``Doc._.clin_source`` and ``Doc._.clin_unlocated_annotations``
  (a list of ``{"index", "hpo_id", "label", "assertion_status", "source_id"}``).
"""
import logging
from typing import Dict, Iterable, List, Optional, Tuple

from spacy.language import Language
from spacy.tokens import Doc, Span

from .. import attrs
from .model import DEFAULT_ASSERTION, AnnotatedDocument, Annotation, AnnotationError, Range
from .voronoi import OverlapError, VoronoiError, VoronoiResult, VoronoiSettings

logger = logging.getLogger("spacy_clinchunk")


def split_tokens_at(doc: Doc, offsets: Iterable[int]) -> None:
    """Split every token that has one of ``offsets`` strictly inside it (text unchanged)."""
    cuts: Dict[int, List[int]] = {}
    starts = {t.idx for t in doc}
    for offset in sorted(set(offsets)):
        if offset in starts or offset <= 0 or offset >= len(doc.text):
            continue
        index = _token_at(doc, offset)
        if index is None:
            continue  # inside a token's trailing whitespace: already a token boundary
        token = doc[index]
        cuts.setdefault(token.i, []).append(offset - token.idx)
    if not cuts:
        return
    with doc.retokenize() as retokenizer:
        for index, positions in cuts.items():
            token = doc[index]
            edges = [0, *sorted(positions), len(token)]
            orths = [token.text[a:b] for a, b in zip(edges, edges[1:])]
            retokenizer.split(token, orths, heads=[(token, i) for i in range(len(orths))])


def _token_at(doc: Doc, offset: int) -> Optional[int]:
    low, high = 0, len(doc) - 1
    while low <= high:
        middle = (low + high) // 2
        token = doc[middle]
        if offset < token.idx:
            high = middle - 1
        elif offset >= token.idx + len(token):
            low = middle + 1
        else:
            return middle
    return None


def aligned_doc(nlp: Language, text: str, ranges: Iterable[Range]) -> Doc:
    """``nlp.make_doc(text)`` on which every ``(start, end)`` of ``ranges`` is a char span (text unchanged).

    Offsets inside a token split it. A range that starts or ends inside a token's
    trailing whitespace (an evidence span "vibratory sense " that takes in the space)
    cannot be a span of spaCy's tokens, so then the doc is rebuilt from words that
    include that whitespace as tokens of its own.
    """
    ranges = list(ranges)
    doc = nlp.make_doc(text)
    split_tokens_at(doc, [o for r in ranges for o in r])
    starts = {t.idx for t in doc} | {len(text)}
    ends = {t.idx + len(t) for t in doc} | {0}
    if all(s in starts and e in ends for s, e in ranges):
        return doc
    cuts = sorted(starts | ends | {o for r in ranges for o in r if 0 < o < len(text)})
    words = [text[a:b] for a, b in zip(cuts, cuts[1:])]
    return Doc(nlp.vocab, words=words, spaces=[False] * len(words))


def document_to_doc(
    document: AnnotatedDocument, nlp: Language, voronoi: Optional[VoronoiSettings] = VoronoiSettings()
) -> Doc:
    """The ``Doc`` of a loaded document (see the module doc); ``voronoi=None``: no Voronoi groups.

    Overlapping annotations under ``on_overlap="skip"`` give no Voronoi groups (the
    reason is logged at INFO); under ``"error"`` they raise :class:`.voronoi.OverlapError`.
    """
    attrs.register_extensions()
    text, origin = document.text, document.origin
    result = _voronoi(document, voronoi)
    needed = [span for spans in document.ranges() for span in spans]
    if result is not None:
        needed.extend(result.territories)
        needed.extend(r for part in result.parts for r in part.variants.values())
    doc = aligned_doc(nlp, text, needed)
    doc._.clin_doc_id = document.doc_id
    doc._.clin_source = origin
    doc._.clin_unlocated_annotations = [a.summary() for a in document.unlocated]
    items = [(s, e, a.index, a) for a in document.annotations for s, e in a.spans]
    spans_out = []
    for start, end, _, annotation in sorted(items, key=lambda item: item[:3]):
        span = _span(doc, start, end, annotation, origin)
        span._.clin_hpo_id = annotation.hpo_id
        span._.clin_hpo_label = annotation.label
        span._.clin_assertion = annotation.assertion_status or DEFAULT_ASSERTION
        span._.clin_annotation_index = annotation.index
        spans_out.append(span)
    doc.spans[attrs.ANNOTATIONS_KEY] = spans_out
    if result is not None:
        for key, parts in _voronoi_groups(result).items():
            doc.spans[key] = [_span(doc, s, e, document.annotations[i], origin) for s, e, i in sorted(parts)]
    return doc


def _voronoi(document: AnnotatedDocument, voronoi: Optional[VoronoiSettings]) -> Optional[VoronoiResult]:
    if voronoi is None:
        return None
    try:
        return voronoi.compute(document.text, document.ranges())
    except OverlapError as err:
        if voronoi.on_overlap == "error":
            raise OverlapError(err.first, err.second) from None
        logger.info("%s: Voronoi groups skipped: %s", document.origin, err)
        return None
    except VoronoiError as err:
        raise AnnotationError(f"{document.origin}: {err}") from err


def _voronoi_groups(result: VoronoiResult) -> Dict[str, List[Tuple[int, int, int]]]:
    """``(start, end, annotation position)`` of every part, per span group."""
    groups: Dict[str, List[Tuple[int, int, int]]] = {attrs.VORONOI_KEY: []}
    for ratio in result.ratios:
        groups[attrs.variant_key(ratio)] = []
    for part in result.parts:
        groups[attrs.VORONOI_KEY].append((*part.territory, part.annotation))
        for ratio, (start, end) in part.variants.items():
            groups[attrs.variant_key(ratio)].append((start, end, part.annotation))
    return groups


def _span(doc: Doc, start: int, end: int, annotation: Annotation, origin: str) -> Span:
    span = doc.char_span(start, end, label=annotation.hpo_id, span_id=str(annotation.index))
    if span is None:  # cannot happen after aligned_doc; keep the guarantee loud
        raise AnnotationError(f"{origin}: annotation {annotation.index}: span {start}-{end} does not align to tokens")
    return span
