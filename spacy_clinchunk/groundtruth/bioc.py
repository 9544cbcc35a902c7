"""BioC ground truth (JSON and XML, PubTator style): collections of documents made of passages.

Reading:

* a document's text is its passages placed at their offsets (gaps filled with spaces);
  passages that overlap fail the document's file;
* an annotation's concept id is its ``identifier`` infon (PubTator), else ``hpo_id``,
  ``HPO``, ``MESH``, else its ``type``; ``label``/``preferred_name`` give the label,
  ``assertion_status``/``assertion`` the status; several ``location``s make one
  discontinuous annotation, none makes it unlocated;
* offsets are meant as document characters. When the annotation texts do not match
  that way but all match as UTF-8 *byte* offsets, or as offsets relative to their
  passage, the document is read that way and a note says so (some tools write bytes);
* XML goes through ``defusedxml`` when installed; without it, documents declaring a
  DTD or entities are refused (no entity expansion, no external resources).

Writing gives one passage per document holding the whole text, so offsets stay
character offsets of our ``full_text``.
"""
import json
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .. import attrs
from .model import (
    AnnotatedDocument, Annotation, AnnotationError, DocumentBuilder, NotAnnotatedError, Range, ReadPolicy,
    compare_snippet, decode_text, parse_json,
)

ID_INFONS = ("identifier", "Identifier", "hpo_id", "HPO", "MESH", "type")
LABEL_INFONS = ("label", "preferred_name")
ASSERTION_INFONS = ("assertion_status", "assertion")
UNITS = (("chars", "document"), ("bytes", "document"), ("chars", "passage"), ("bytes", "passage"))
XML_CHARS_OK = {"\t", "\n", "\r"}


# -- a format-neutral view of a BioC document ------------------------------------------
class _Item:
    def __init__(self, ident: str, infons: Dict[str, str], text: Optional[str], locations: List[Tuple[Any, Any]], passage: int) -> None:
        self.ident, self.infons, self.text, self.locations, self.passage = ident, infons, text, locations, passage


class _Doc:
    def __init__(self, ident: str) -> None:
        self.ident = ident
        self.passages: List[Tuple[Any, str]] = []  # (offset, text)
        self.items: List[_Item] = []


def read_bioc_bytes(data: bytes, origin: str, policy: ReadPolicy) -> List[AnnotatedDocument]:
    text = decode_text(data, origin)
    if text.lstrip().startswith("<"):
        return _documents(_parse_xml(text, origin), origin, policy)
    return documents_from_bioc_json(parse_json(text, origin), origin, policy)


def documents_from_bioc_json(collection: Any, origin: str, policy: ReadPolicy) -> List[AnnotatedDocument]:
    if not isinstance(collection, dict) or not isinstance(collection.get("documents"), list):
        raise NotAnnotatedError(f"{origin}: not an annotated document (no BioC 'documents' list)")
    docs = []
    for number, item in enumerate(collection["documents"]):
        where = f"{origin}: document {number}"
        if not isinstance(item, dict) or not isinstance(item.get("passages", []), list):
            raise AnnotationError(f"{where}: expected an object with a 'passages' list")
        doc = _Doc(str(item.get("id", number)))
        for p_number, passage in enumerate(item.get("passages", [])):
            if not isinstance(passage, dict):
                raise AnnotationError(f"{where}: passage {p_number}: expected an object")
            doc.passages.append((passage.get("offset", 0), passage.get("text", "")))
            holders = [passage, *[s for s in passage.get("sentences", []) or [] if isinstance(s, dict)]]
            for holder in holders:
                for annotation in holder.get("annotations", []) or []:
                    doc.items.append(_json_item(annotation, p_number, where))
        docs.append(doc)
    return _documents(docs, origin, policy)


def _json_item(annotation: Any, passage: int, where: str) -> _Item:
    if not isinstance(annotation, dict):
        raise AnnotationError(f"{where}: passage {passage}: annotation: expected an object")
    infons = annotation.get("infons") or {}
    locations = []
    for location in annotation.get("locations", []) or []:
        if not isinstance(location, dict):
            raise AnnotationError(f"{where}: annotation {annotation.get('id')}: location: expected an object")
        locations.append((location.get("offset"), location.get("length")))
    text = annotation.get("text")
    return _Item(str(annotation.get("id", "")), {str(k): str(v) for k, v in infons.items()} if isinstance(infons, dict) else {}, text if isinstance(text, str) else None, locations, passage)


def _parse_xml(text: str, origin: str) -> List[_Doc]:
    try:
        from defusedxml.ElementTree import fromstring  # type: ignore
    except ImportError:  # stdlib parser: refuse what it would expand
        from xml.etree.ElementTree import fromstring

        if "<!DOCTYPE" in text or "<!ENTITY" in text:
            raise AnnotationError(f"{origin}: XML with a DTD or entities is refused (install defusedxml to read it)")
    try:
        root = fromstring(text)
    except Exception as err:  # ParseError, defusedxml's DTD/entity refusals
        raise AnnotationError(f"{origin}: invalid or unsafe XML: {type(err).__name__}: {str(err)[:120]}") from None
    if root.tag != "collection":
        raise NotAnnotatedError(f"{origin}: not an annotated document (root element is not <collection>)")
    docs = []
    for number, element in enumerate(root.findall("document")):
        doc = _Doc((element.findtext("id") or str(number)).strip())
        for p_number, passage in enumerate(element.findall("passage")):
            doc.passages.append((_xml_int(passage.findtext("offset")), passage.findtext("text") or ""))
            for annotation in [*passage.findall("annotation"), *passage.findall("sentence/annotation")]:
                infons = {i.get("key", ""): (i.text or "") for i in annotation.findall("infon")}
                locations = [(_xml_int(loc.get("offset")), _xml_int(loc.get("length"))) for loc in annotation.findall("location")]
                doc.items.append(_Item(annotation.get("id", ""), infons, annotation.findtext("text"), locations, p_number))
        docs.append(doc)
    return docs


def _xml_int(value: Optional[str]) -> Any:
    if value is None:
        return None
    value = value.strip()
    return int(value) if value.isdigit() and len(value) < 19 else value


# -- from the neutral view to our documents ----------------------------------------------
def _documents(docs: List[_Doc], origin: str, policy: ReadPolicy) -> List[AnnotatedDocument]:
    return [_document(doc, f"{origin}#{doc.ident}" if len(docs) > 1 else origin, policy) for doc in docs]


def _assemble(passages: Sequence[Tuple[Any, str]], unit: str, origin: str) -> Tuple[str, List[int]]:
    """The document text and each passage's start (in ``unit``), passages placed at their offsets."""
    pieces: List[bytes] = []
    position, starts = 0, []
    for number, (offset, text) in enumerate(passages):
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise AnnotationError(f"{origin}: passage {number}: offset must be a non-negative integer, got {str(offset)[:20]!r}")
        if not isinstance(text, str):
            raise AnnotationError(f"{origin}: passage {number}: text must be a string")
        size = len(text.encode("utf-8")) if unit == "bytes" else len(text)
        if offset < position:
            raise AnnotationError(f"{origin}: passage {number} starts at {offset}, inside the passage before it (ends at {position})")
        if offset - position > 10_000_000:
            raise AnnotationError(f"{origin}: passage {number}: offset {offset} leaves an implausible gap")
        pieces.append(b" " * (offset - position) if unit == "bytes" else (" " * (offset - position)).encode())
        pieces.append(text.encode("utf-8"))
        starts.append(offset)
        position = offset + size
    return b"".join(pieces).decode("utf-8"), starts


def _char_offsets(text: str) -> Dict[int, int]:
    """UTF-8 byte offset -> character offset, at character boundaries."""
    table, position = {}, 0
    for index, char in enumerate(text):
        table[position] = index
        position += len(char.encode("utf-8"))
    table[position] = len(text)
    return table


def _ranges(item: _Item, unit: str, base: str, starts: List[int], table: Optional[Dict[int, int]]) -> Optional[List[Tuple[Any, Any]]]:
    """The item's locations as character ranges under one reading of the offsets (None: not integers)."""
    ranges = []
    for offset, length in item.locations:
        if isinstance(offset, bool) or isinstance(length, bool) or not isinstance(offset, int) or not isinstance(length, int):
            return None
        start = offset + (starts[item.passage] if base == "passage" else 0)
        end = start + length
        if table is not None:
            if start not in table or end not in table:
                return None
            start, end = table[start], table[end]
        ranges.append((start, end))
    return ranges


def _matches(text: str, item: _Item, ranges: List[Tuple[int, int]]) -> bool:
    if any(not (0 <= s < e <= len(text)) for s, e in ranges):
        return False
    return item.text is None or compare_snippet(item.text, [text[s:e] for s, e in ranges]) != "mismatch"


def _choose_unit(doc: _Doc, origin: str) -> Tuple[str, str, str, List[int], Optional[Dict[int, int]]]:
    """The reading of the offsets under which every located annotation fits its text."""
    first = None
    for unit, base in UNITS:
        if base == "passage" and all(offset == 0 for offset, _ in doc.passages):
            continue  # the same reading as "document"
        try:
            text, starts = _assemble(doc.passages, unit, origin)
        except AnnotationError:
            if unit == "chars":
                raise
            continue
        table = _char_offsets(text) if unit == "bytes" else None
        choice = (unit, base, text, starts, table)
        first = first or choice
        located = [i for i in doc.items if i.locations]
        if all((r := _ranges(i, unit, base, starts, table)) is not None and _matches(text, i, r) for i in located):
            return choice
    assert first is not None
    return first


def _document(doc: _Doc, origin: str, policy: ReadPolicy) -> AnnotatedDocument:
    unit, base, text, starts, table = _choose_unit(doc, origin)
    builder = DocumentBuilder(origin, text, policy)
    if (unit, base) != ("chars", "document"):
        builder.notes.append(f"offsets read as UTF-8 {unit} relative to the {base} (they do not fit as document characters)")
        builder.count(f"offsets_{unit}_{base}")
    for index, item in enumerate(doc.items):
        where = f"annotation {item.ident or index}"
        concept = next((item.infons[k].strip() for k in ID_INFONS if item.infons.get(k, "").strip() not in ("", "-")), "")
        if not concept:
            builder.fault(f"{where}: no identifier or type infon")
            continue
        spans: List[Range] = []
        ok = True
        for number, (offset, length) in enumerate(item.locations):
            if isinstance(offset, bool) or isinstance(length, bool) or not isinstance(offset, int) or not isinstance(length, int):
                builder.fault(f"{where}: location {number}: offset and length must be integers")
                ok = False
                continue
            start = offset + (starts[item.passage] if base == "passage" else 0)
            end = start + length
            if table is not None:
                if start not in table or end not in table:
                    builder.fault(f"{where}: location {number}: byte offsets {start}-{end} cut a character")
                    ok = False
                    continue
                start, end = table[start], table[end]
            if builder.check_range(start, end, f"{where}: location {number}"):
                spans.append((start, end))
            else:
                ok = False
        if not ok or (spans and not builder.check_snippet(item.text, spans, where)):
            continue
        label = next((item.infons[k] for k in LABEL_INFONS if item.infons.get(k)), None)
        status = next((item.infons[k].lower() for k in ASSERTION_INFONS if item.infons.get(k)), None)
        if status is not None and status not in attrs.ASSERTION_LABELS:
            builder.fault(f"{where}: assertion {status[:30]!r} is not one of {', '.join(attrs.ASSERTION_LABELS)}")
            continue
        builder.add(Annotation(index, concept, spans, label, status, item.ident or None))
    return builder.build(doc.ident)


# -- writing --------------------------------------------------------------------------------
def _annotation_json(document: AnnotatedDocument, annotation: Annotation) -> Dict[str, Any]:
    infons = {"identifier": annotation.hpo_id, "type": "Phenotype"}
    if annotation.label is not None:
        infons["label"] = annotation.label
    if annotation.assertion_status is not None:
        infons["assertion_status"] = annotation.assertion_status
    return {
        "id": str(annotation.index),
        "infons": infons,
        "text": " ".join(document.text[s:e] for s, e in annotation.spans),
        "locations": [{"offset": s, "length": e - s} for s, e in annotation.spans],
    }


def to_bioc_json(documents: Sequence[AnnotatedDocument]) -> Dict[str, Any]:
    """A BioC JSON collection (one passage per document; unlocated annotations without locations)."""
    return {
        "source": "spacy_clinchunk",
        "date": "",
        "key": "",
        "infons": {},
        "documents": [
            {
                "id": document.doc_id,
                "infons": {},
                "passages": [
                    {
                        "offset": 0,
                        "infons": {"type": "text"},
                        "text": document.text,
                        "sentences": [],
                        "annotations": [_annotation_json(document, a) for a in document.all_annotations()],
                        "relations": [],
                    }
                ],
                "relations": [],
            }
            for document in documents
        ],
    }


def _escape(value: str, origin: str) -> str:
    for char in value:
        code = ord(char)
        if (code < 0x20 and char not in XML_CHARS_OK) or 0xD800 <= code <= 0xDFFF or code in (0xFFFE, 0xFFFF):
            raise AnnotationError(f"{origin}: character U+{code:04X} cannot be written in XML")
    return value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;").replace("\r", "&#13;")


def to_bioc_xml(documents: Sequence[AnnotatedDocument]) -> str:
    """A BioC XML collection, escaped by hand so ``\\r`` and offsets survive parsing."""
    lines = ['<?xml version="1.0" encoding="UTF-8"?>', "<collection><source>spacy_clinchunk</source><date></date><key></key>"]
    for document in documents:
        esc = lambda value: _escape(value, document.origin)  # noqa: E731
        lines.append(f"<document><id>{esc(document.doc_id)}</id><passage><infon key=\"type\">text</infon><offset>0</offset>")
        lines.append(f"<text>{esc(document.text)}</text>")
        for annotation in document.all_annotations():
            item = _annotation_json(document, annotation)
            infons = "".join(f'<infon key="{esc(k)}">{esc(v)}</infon>' for k, v in item["infons"].items())
            locations = "".join(f'<location offset="{loc["offset"]}" length="{loc["length"]}"/>' for loc in item["locations"])
            lines.append(f'<annotation id="{item["id"]}">{infons}{locations}<text>{esc(item["text"])}</text></annotation>')
        lines.append("</passage></document>")
    lines.append("</collection>")
    return "\n".join(lines) + "\n"


def dumps_bioc_json(documents: Sequence[AnnotatedDocument]) -> str:
    return json.dumps(to_bioc_json(documents), ensure_ascii=False, indent=1) + "\n"
