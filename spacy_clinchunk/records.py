"""JSON-serializable records of chunked documents (CLI output, corpus shards)."""
from typing import Any, Dict, Optional

from spacy.tokens import Doc, Span

from . import attrs


def span_attributes(span: Span) -> Dict[str, Any]:
    """Every package extension attribute the pipeline set on ``span`` (non-default values)."""
    found: Dict[str, Any] = {}
    for name, default in attrs.SPAN_EXTENSIONS.items():
        if not Span.has_extension(name):
            continue
        value = getattr(span._, name)
        if value is not None and value != default:
            found[name] = value
    return found


def span_record(span: Span) -> Dict[str, Any]:
    record: Dict[str, Any] = {"text": span.text, "start": span.start_char, "end": span.end_char}
    record.update(span_attributes(span))
    return record


def doc_to_record(doc: Doc, spans_key: str = attrs.CHUNKS_KEY, doc_id: Optional[str] = None) -> Dict[str, Any]:
    """``{"id", "chunks": [{"text", "start", "end", ...attributes}]}`` for one document.

    Every span group the pipeline wrote besides ``spans_key`` is listed under ``groups``.
    """
    attrs.register_extensions()
    record: Dict[str, Any] = {"id": doc_id if doc_id is not None else doc._.doc_id}
    record["chunks"] = [span_record(s) for s in doc.spans[spans_key]] if spans_key in doc.spans else []
    others = {key: [span_record(s) for s in group] for key, group in doc.spans.items() if key != spans_key}
    if others:
        record["groups"] = others
    doc_extras: Dict[str, Any] = {}
    for name, default in attrs.DOC_EXTENSIONS.items():
        if name == "doc_id" or not Doc.has_extension(name):
            continue
        value = getattr(doc._, name)
        if value is not None and value != default:
            doc_extras[name] = value
    if doc_extras:
        record["doc"] = doc_extras
    return record

