"""Values a host pipeline leaves on spans, made plain JSON before any export sees them.

A pipeline we run inside (medspaCy, a user's own components) may put its own objects where
records read: medspaCy's ``Section`` (``Span._.section``, ``Doc._.sections``), its
``ConTextModifier`` (``Span._.modifiers``), spaCy ``Span``/``Token`` objects, numpy scalars,
sets and tuples. Records hold plain JSON (str, int, float, bool, None, lists and dicts of
them), so JSONL, Parquet, datasets, Chroma, LangChain, LlamaIndex and corpus shards all take
them. The host objects are recognised by what they carry (duck typing), so nothing here
imports medspaCy; an object nobody knows stays as it is and the serializer names it.
"""
from __future__ import annotations

import math
from typing import Any, Dict, Optional, Tuple

from spacy.tokens import Doc, Span, Token

_PLAIN = (str, bool, int)


def plain_value(value: Any, doc: Optional[Doc] = None) -> Any:
    """``value`` as plain JSON where we know how; ``doc`` turns token indices into text."""
    if value is None or isinstance(value, _PLAIN):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): plain_value(v, doc) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain_value(v, doc) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((plain_value(v, doc) for v in value), key=repr)
    if isinstance(value, Span):
        return {"text": value.text, "start": value.start_char, "end": value.end_char, "label": value.label_ or None}
    if isinstance(value, Token):
        return {"text": value.text, "start": value.idx, "end": value.idx + len(value)}
    if is_section(value):
        return section_value(value, doc)
    if is_modifier(value):
        return modifier_cue(value, doc)
    item = getattr(value, "item", None)  # numpy scalars
    if callable(item) and type(value).__module__ == "numpy":
        return plain_value(item(), doc)
    return value


def is_section(value: Any) -> bool:
    """medspaCy's ``Section``: a category and title/body token offsets."""
    return all(hasattr(value, name) for name in ("category", "title_start", "title_end", "body_start", "body_end"))


def is_modifier(value: Any) -> bool:
    """medspaCy's ``ConTextModifier``: a category, a direction and its token span."""
    return all(hasattr(value, name) for name in ("category", "direction", "modifier_span", "rule"))


def section_value(section: Any, doc: Optional[Doc] = None) -> Dict[str, Any]:
    """``{"category", "title", "title_start", "title_end"}`` of a medspaCy section (title offsets in
    characters; ``None`` without the doc or without a title)."""
    title = _char_span(doc, section.title_start, section.title_end)
    category = section.category
    return {
        "category": None if category is None else str(category),
        "title": None if title is None else title.text,
        "title_start": None if title is None else title.start_char,
        "title_end": None if title is None else title.end_char,
    }


def modifier_cue(modifier: Any, doc: Optional[Doc] = None) -> Dict[str, Any]:
    """A ConText modifier as one of our cues: ``text``, ``category``, ``direction``, ``literal``,
    ``start_char``, ``end_char`` (text and offsets need the doc)."""
    start, end = modifier.modifier_span
    span = _char_span(doc, start, end)
    literal = getattr(modifier.rule, "literal", None)
    return {
        "text": None if span is None else span.text,
        "category": str(modifier.category),
        "direction": str(modifier.direction),
        "literal": None if literal is None else str(literal),
        "start_char": None if span is None else span.start_char,
        "end_char": None if span is None else span.end_char,
    }


def _char_span(doc: Optional[Doc], start: Any, end: Any) -> Optional[Span]:
    if doc is None or not isinstance(start, int) or not isinstance(end, int) or not 0 <= start < end <= len(doc):
        return None
    return doc[start:end]


def has_host_sections(doc: Doc) -> bool:
    """Whether medspaCy's sectionizer ran on ``doc`` (``Doc._.sections`` set): asked once per
    document, so records of a pipeline without it read no section of the host's."""
    return Doc.has_extension("sections") and Token.has_extension("section") and bool(doc._.get("sections"))


def host_section(span: Span) -> Tuple[Optional[str], Optional[str]]:
    """``(category, title)`` of the medspaCy section ``span`` begins in (its sectionizer's
    ``Token._.section``), or ``(None, None)`` when there is none."""
    if len(span) == 0 or not Token.has_extension("section"):
        return None, None
    section = span[0]._.get("section")
    if section is None or not is_section(section):
        return None, None
    value = section_value(section, span.doc)
    return value["category"], value["title"]


def section_name(value: Any, doc: Optional[Doc] = None) -> Optional[str]:
    """The section a record names: a string as it is, a medspaCy ``Section`` by its category."""
    if value is None or isinstance(value, str):
        return value
    if is_section(value):
        return section_value(value, doc)["category"]
    plain = plain_value(value, doc)
    if isinstance(plain, dict) and isinstance(plain.get("category"), str):
        return plain["category"]
    return plain  # not a name: the serializer names the field
