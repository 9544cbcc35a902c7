"""brat standoff ground truth: a ``.txt`` document and its ``.ann`` annotations.

What we read from ``.ann`` (tab-separated, one annotation a line):

* ``T1<TAB>Phenotype 0 5;10 15<TAB>text``: a text-bound annotation; several fragments
  (``;``) make one discontinuous annotation whose fragments are its evidence spans;
* ``N1<TAB>Reference T1 HPO:HP:0001156<TAB>Brachydactyly``: a normalization; the first
  HPO one (``HPO:HP:0001156``, ``HPO:HP_0001156``, ``HP:0001156``) gives the concept id,
  otherwise the first one as ``DB:ID`` (``UMLS:C0221357``); its text is the label;
* ``A1<TAB>Negation T1`` or ``A2<TAB>Assertion T1 negated``: attributes that name an
  assertion status (see :data:`BINARY_ASSERTIONS`);
* ``#1<TAB>AnnotatorNotes T1<TAB>label``: the label when no normalization gives one.

Relations, events and equivalences (``R``, ``E``, ``*``) are valid and ignored. A
``T`` line without a normalization takes its type as concept id. Offsets are
characters of the ``.txt`` read as UTF-8 with newlines untouched. The fragment text
must equal the text at the offsets (fragments joined by a space); whitespace or case
differences are accepted, real mismatches follow the snippet policy. Malformed lines,
offsets outside the text and references to unknown annotations fail the file, with
one message naming every line at fault.
"""
import re
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from .. import attrs
from ..fileio import atomic_write
from .model import AnnotatedDocument, Annotation, AnnotationError, DocumentBuilder, NotAnnotatedError, Range, ReadPolicy
from .model import decode_text, read_file

DEFAULT_TYPE = "Phenotype"
# binary attribute name (lower case) -> assertion status
BINARY_ASSERTIONS = {
    "negation": "negated",
    "negated": "negated",
    "uncertain": "uncertain",
    "uncertainty": "uncertain",
    "speculation": "uncertain",
    "speculated": "uncertain",
    "hedged": "uncertain",
    "historical": "historical",
    "history": "historical",
    "hypothetical": "hypothetical",
    "conditional": "hypothetical",
    "family": "family",
    "familyhistory": "family",
    "normal": "normal",
}
VALUED_ASSERTIONS = ("assertion", "assertion_status", "status", "certainty")
_NUMBER = re.compile(r"^[0-9]+$")


def paths_of(path: Path) -> Tuple[Path, Path]:
    """``(ann, txt)`` for a path to either file of a brat pair."""
    return path.with_suffix(".ann"), path.with_suffix(".txt")


def read_brat(path: Path, policy: Optional[ReadPolicy] = None) -> AnnotatedDocument:
    """One brat document (``path`` is its ``.ann`` or its ``.txt``)."""
    ann_path, txt_path = paths_of(Path(path))
    if not ann_path.exists():
        if Path(path).suffix.lower() == ".txt":
            raise NotAnnotatedError(f"{path}: not an annotated document (no .ann next to it)")
        raise AnnotationError(f"{ann_path}: cannot read: no such file")
    if not txt_path.exists():
        raise AnnotationError(f"{ann_path}: no text file {txt_path.name} next to it")
    text = decode_text(read_file(txt_path), str(txt_path), strip_bom=False)  # brat counts a BOM
    ann = decode_text(read_file(ann_path), str(ann_path))
    return parse_ann(ann, text, str(ann_path), ann_path.stem, policy or ReadPolicy())


def parse_ann(ann: str, text: str, origin: str, doc_id: str, policy: ReadPolicy) -> AnnotatedDocument:
    """An :class:`AnnotatedDocument` from the contents of an ``.ann`` and its text."""
    builder = DocumentBuilder(origin, text, policy)
    mentions: Dict[str, dict] = {}
    order: List[str] = []
    extras: List[Tuple[int, str, List[str]]] = []
    for number, line in enumerate(ann.split("\n"), start=1):
        line = line.rstrip("\r")
        if not line.strip():
            continue
        kind = line[0]
        if kind == "T":
            mention = _text_bound(builder, line, number)
            if mention is not None:
                if mention["id"] in mentions:
                    builder.fault(f"line {number}: annotation id {mention['id']} used twice")
                    continue
                mentions[mention["id"]] = mention
                order.append(mention["id"])
        elif kind in "ANM#":
            extras.append((number, kind, line.split("\t")))
        elif kind not in "RE*":
            builder.fault(f"line {number}: unknown annotation kind {kind!r} (expected T, A, M, N, R, E, * or #)")
    for number, kind, fields in extras:
        _attach(builder, mentions, number, kind, fields)
    for index, mention_id in enumerate(order):
        mention = mentions[mention_id]
        hpo_id, label = _concept(mention)
        where = f"line {mention['line']} ({mention_id})"
        if not builder.check_snippet(mention["text"], mention["spans"], where):
            continue
        builder.add(Annotation(index, hpo_id, mention["spans"], label, mention["assertion"], mention_id))
    return builder.build(doc_id)


def _text_bound(builder: DocumentBuilder, line: str, number: int) -> Optional[dict]:
    fields = line.split("\t", 2)
    head = fields[1].split(" ", 1) if len(fields) > 1 else []
    if len(fields) < 2 or len(head) < 2 or not fields[0][1:]:
        builder.fault(f"line {number}: malformed text-bound annotation (expected 'T<n><TAB>Type start end[;start end]<TAB>text')")
        return None
    spans: List[Range] = []
    ok = True
    for fragment in head[1].split(";"):
        bounds = fragment.split()
        if len(bounds) != 2 or not all(_NUMBER.match(b) for b in bounds):
            builder.fault(f"line {number} ({fields[0]}): malformed fragment {fragment[:30]!r} (expected 'start end')")
            ok = False
            continue
        start, end = int(bounds[0]), int(bounds[1])
        if builder.check_range(start, end, f"line {number} ({fields[0]})"):
            spans.append((start, end))
        else:
            ok = False
    if not ok:
        return None
    snippet = fields[2] if len(fields) > 2 else None
    return {"id": fields[0], "type": head[0], "spans": spans, "text": snippet, "line": number, "norms": [], "note": None, "assertion": None}


def _attach(builder: DocumentBuilder, mentions: Dict[str, dict], number: int, kind: str, fields: List[str]) -> None:
    parts = fields[1].split() if len(fields) > 1 else []
    if len(parts) < 2:
        builder.fault(f"line {number}: malformed {'note' if kind == '#' else 'annotation'} line")
        return
    target = mentions.get(parts[1])
    if target is None:
        if kind == "#" or parts[1][:1] != "T":
            return  # a note or attribute on a relation/event: valid, not ours
        builder.fault(f"line {number}: refers to unknown annotation {parts[1][:20]}")
        return
    if kind == "N":
        if len(parts) < 3 or ":" not in parts[2]:
            builder.fault(f"line {number}: malformed normalization (expected 'Reference T<n> DB:ID')")
            return
        target["norms"].append((parts[2], fields[2] if len(fields) > 2 else ""))
    elif kind == "#":
        target["note"] = fields[2] if len(fields) > 2 else None
    else:
        status = _assertion(parts[0], parts[2] if len(parts) > 2 else None)
        if status is not None:
            target["assertion"] = status


def _assertion(name: str, value: Optional[str]) -> Optional[str]:
    key = name.lower()
    if value is None:
        return BINARY_ASSERTIONS.get(key)
    if key in VALUED_ASSERTIONS and value.lower() in attrs.ASSERTION_LABELS:
        return value.lower()
    if key in BINARY_ASSERTIONS and value.lower() in ("true", "yes", "1"):
        return BINARY_ASSERTIONS[key]
    return None


def normalized_id(reference: str) -> str:
    """Concept id of a normalization: HPO ids as ``HP:0001156``, others ``DB:ID`` as written."""
    database, _, ident = reference.partition(":")
    if database.upper() in ("HPO", "HP"):
        ident = ident.replace("_", ":")
        return ident if ident.upper().startswith("HP:") else f"HP:{ident}"
    return reference


def _concept(mention: dict) -> Tuple[str, Optional[str]]:
    norms = mention["norms"]
    hpo = [n for n in norms if n[0].partition(":")[0].upper() in ("HPO", "HP")]
    chosen = (hpo or norms or [None])[0]
    if chosen is None:
        return mention["type"], mention["note"] or None
    return normalized_id(chosen[0]), chosen[1] or mention["note"] or None


# -- writing ------------------------------------------------------------------------
def _one_line(value: str) -> str:
    return value.replace("\r", " ").replace("\n", " ").replace("\t", " ")


def to_ann(document: AnnotatedDocument) -> Tuple[str, int]:
    """``(.ann text, number of unlocated annotations that brat cannot hold)``."""
    lines: List[str] = []
    counters = {"N": 0, "A": 0, "#": 0}

    def next_id(kind: str) -> str:
        counters[kind] += 1
        return f"{kind}{counters[kind]}"

    for number, annotation in enumerate(document.annotations, start=1):
        concept = annotation.hpo_id
        if any(c.isspace() for c in concept):
            raise AnnotationError(f"{document.origin}: annotation {annotation.index}: id {concept[:40]!r} has whitespace; brat cannot hold it")
        kind = DEFAULT_TYPE if ":" in concept else concept
        offsets = ";".join(f"{s} {e}" for s, e in annotation.spans)
        fragments = " ".join(document.text[s:e] for s, e in annotation.spans)
        lines.append(f"T{number}\t{kind} {offsets}\t{_one_line(fragments)}")
        label = _one_line(annotation.label) if annotation.label else ""
        if ":" in concept:
            reference = f"HPO:{concept}" if concept.startswith("HP:") else concept
            lines.append(f"{next_id('N')}\tReference T{number} {reference}\t{label}")
        elif label:
            lines.append(f"{next_id('#')}\tAnnotatorNotes T{number}\t{label}")
        if annotation.assertion_status:
            lines.append(f"{next_id('A')}\tAssertion T{number} {annotation.assertion_status}")
    return "".join(f"{line}\n" for line in lines), len(document.unlocated)


def write_brat(document: AnnotatedDocument, folder: Path, stem: str) -> Tuple[List[Path], int]:
    """Write ``<stem>.txt`` and ``<stem>.ann`` (owner-only); returns the paths and the unlocated left out."""
    ann, left_out = to_ann(document)
    txt_path, ann_path = folder / f"{stem}.txt", folder / f"{stem}.ann"
    atomic_write(txt_path, document.text)
    atomic_write(ann_path, ann)
    return [txt_path, ann_path], left_out
