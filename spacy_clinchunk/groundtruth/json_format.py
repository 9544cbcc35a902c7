"""Our JSON schema: one annotated document a file.

``doc_id``, ``full_text`` and ``annotations``, each with ``hpo_id``, ``label``,
``assertion_status`` and ``evidence_spans`` (``start_char``, ``end_char``, end exclusive,
and ``text_snippet``). An annotation with empty ``evidence_spans`` is unlocated. Every
field is checked, and every fault of a record is named in one message (file, annotation
index, field).
"""
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from .. import attrs
from .model import (
    AnnotatedDocument, Annotation, AnnotationError, DocumentBuilder, Range, ReadPolicy, Source,
    parse_bytes, parse_json, read_file,
)


def is_annotated_record(record: Any) -> bool:
    return isinstance(record, dict) and ("full_text" in record or "annotations" in record)


def is_json_text(source: Any) -> bool:
    """Whether ``source`` is JSON text rather than a path."""
    return isinstance(source, str) and source.lstrip().startswith(("{", "["))


def load_record(source: Source) -> Tuple[Dict[str, Any], str]:
    """``(record, origin)`` from a path, a JSON string or a dict (not yet validated)."""
    if isinstance(source, dict):
        return source, str(source.get("doc_id", "<dict>"))
    if is_json_text(source):
        return parse_json(source, "<string>"), "<string>"
    path = Path(source)
    return parse_bytes(read_file(path), str(path)), str(path)


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
