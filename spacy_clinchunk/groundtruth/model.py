"""The annotated-document model that every ground-truth format reads into.

An :class:`AnnotatedDocument` is a text and its :class:`Annotation` objects (a concept id,
its evidence spans as character ranges, label, assertion status). Every reader (our JSON,
brat, BioC) builds one through a :class:`DocumentBuilder`, which applies the same rules:

* an annotation without a location is *unlocated*: with ``unlocated="keep"`` it is kept
  (:attr:`AnnotatedDocument.unlocated`), ``"skip"`` drops it (counted), ``"error"`` fails
  the file;
* a snippet that differs from the text only in whitespace or letter case is accepted (a
  DEBUG note); a real mismatch follows ``snippet_mismatch``: ``"warn"`` keeps the
  annotation, ``"skip-annotation"`` drops it, ``"error"`` fails the file. Messages name
  the file, annotation and offsets, never the note text (that is logged at DEBUG);
* structural faults fail their file with one message listing every fault found.

Also here: the decoding every reader shares (UTF-8 only, JSON that cannot hurt us).
"""
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Literal, Optional, Sequence, Tuple, Union, get_args

logger = logging.getLogger("spacy_clinchunk")

Source = Union[str, Path, Dict[str, Any]]  # a path, a JSON string or a record
Range = Tuple[int, int]
DEFAULT_ASSERTION = "affirmed"
Format = Literal["auto", "json", "brat", "bioc"]  # "auto": by the file's ending (see formats.py)
UnlocatedPolicy = Literal["keep", "skip", "error"]
SnippetPolicy = Literal["warn", "skip-annotation", "error"]
FORMATS: Tuple[str, ...] = get_args(Format)
UNLOCATED_POLICIES: Tuple[str, ...] = get_args(UnlocatedPolicy)
SNIPPET_POLICIES: Tuple[str, ...] = get_args(SnippetPolicy)
MAX_FAULTS_SHOWN = 8


class AnnotationError(ValueError):
    """An annotated document is unreadable or invalid; the message names file, annotation and field."""


class NotAnnotatedError(AnnotationError):
    """A file of a readable format that holds no annotated document (corpus runs skip it)."""


@dataclass(frozen=True)
class ReadPolicy:
    """What to do with unlocated annotations and snippets that do not match the text."""

    unlocated: UnlocatedPolicy = "keep"
    snippet_mismatch: SnippetPolicy = "warn"

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


def parse_json(text: str, origin: str) -> Any:
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


def read_file(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as err:
        raise AnnotationError(f"{path}: cannot read: {err.strerror or err}") from None


def parse_bytes(data: bytes, origin: str) -> Any:
    return parse_json(decode_text(data, origin), origin)


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
