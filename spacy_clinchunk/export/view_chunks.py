"""The chunk elements of the HTML view (:mod:`.view`): text with its cues and focus spans
marked inside, and what the detail panel shows in ``data-*`` attributes.

Each chunk is one element whose text content is exactly ``span.text``: cue words
(``<mark class="cue">``) and focus spans (``<mark class="focus">``) are marks inside it,
never text of their own, so the page reads as the note and offsets stay checkable.
"""
from __future__ import annotations

import html
import re
from typing import Any, Dict, List, Optional, Sequence, Tuple

from spacy.tokens import Doc, Span

from .. import attrs
from .blocks import Passages, header_ranges

UNASSESSED = "unassessed"
HEADER = "header"


def assertion_of(span: Span) -> str:
    attrs.register_extensions()
    return span._.clin_assertion or UNASSESSED


def css_class(label: str) -> str:
    return "assertion-" + re.sub(r"[^a-z0-9-]+", "-", label.lower())


def _value(span: Span, name: str) -> Any:
    """An extension value by its (possibly renamed) attribute; None when not registered."""
    try:
        return span._.get(name)
    except AttributeError:
        return None


def kinds_of(doc: Doc, spans: Sequence[Span]) -> List[str]:
    """What the filter and the colours go by, per span: ``header`` when the span lies on a header
    label (the records' ``is_header``: the one header scan of :mod:`.blocks`, so the page counts
    the headers the records flag), else the assertion status."""
    headers = Passages([], [], header_ranges(doc, doc.text))
    return [HEADER if headers.is_header(s.start_char, s.end_char) else assertion_of(s) for s in spans]


def _is_focus_group(doc: Doc, key: str) -> bool:
    """Every span points at its chunk (``focus_of``). All, not any: a focus span with its chunk's
    exact offsets shares that chunk's extension values (spaCy keys them by offsets)."""
    group = doc.spans[key]
    name = attrs.field_names(group)["focus_of"]
    return bool(len(group)) and all(isinstance(_value(s, name), int) for s in group)


def focus_group(doc: Doc, spans_key: str) -> Optional[str]:
    """The group of focus spans (``clin_focus``) that point at the chunks of ``spans_key``."""
    if spans_key not in doc.spans or _is_focus_group(doc, spans_key):
        return None
    names = attrs.field_names(doc.spans[spans_key])
    if not any(_value(s, names["focus_ids"]) for s in doc.spans[spans_key]):
        return None
    keys = [attrs.FOCUS_KEY] + sorted(k for k in doc.spans if k != attrs.FOCUS_KEY)
    return next((k for k in keys if k != spans_key and k in doc.spans and _is_focus_group(doc, k)), None)


def parent_group(doc: Doc, spans_key: str) -> Optional[str]:
    """For a group of focus spans: the chunk group they point into (whose spans list focus ids)."""
    if spans_key not in doc.spans or not _is_focus_group(doc, spans_key):
        return None
    return next((k for k in doc.spans if k != spans_key and focus_group(doc, k) == spans_key), None)


def focus_by_chunk(doc: Doc, spans_key: str, focus_key: Optional[str]) -> Dict[int, List[Span]]:
    """``{chunk index: [its focus spans]}`` through the chunks' ``focus_ids``."""
    if focus_key is None:
        return {}
    focus = list(doc.spans[focus_key])
    group = doc.spans[spans_key]
    name = attrs.field_names(group)["focus_ids"]
    links: Dict[int, List[Span]] = {}
    for index, chunk in enumerate(group):
        numbers = _value(chunk, name) or ()
        links[index] = [focus[n] for n in numbers if isinstance(n, int) and 0 <= n < len(focus)]
    return links


def _cue_ranges(span: Span) -> Tuple[List[Tuple[int, int, Dict[str, Any]]], List[Dict[str, Any]]]:
    """Cues inside the chunk (clipped to it), and the cues outside it."""
    inside, outside = [], []
    for cue in _value(span, attrs.ext("assertion_cues")) or []:
        start, end = cue.get("start_char"), cue.get("end_char")
        if start is None or end is None:
            continue
        lo, hi = max(start, span.start_char), min(end, span.end_char)
        if lo < hi:
            inside.append((lo, hi, cue))
        else:
            outside.append(cue)
    return sorted(inside, key=lambda c: (c[0], c[1])), outside


def _marked_text(span: Span, cues: Sequence[Tuple[int, int, Dict[str, Any]]], focus: Sequence[Span]) -> str:
    """The chunk's text cut where a cue or focus span starts or ends; each piece marked by what covers it."""
    text = span.doc.text
    ranges = [(lo, hi, "cue", f"{str(cue.get('category', '')).lower()} cue".strip()) for lo, hi, cue in cues]
    ranges += [(max(f.start_char, span.start_char), min(f.end_char, span.end_char), "focus", "focus span") for f in focus]
    ranges = [r for r in ranges if r[0] < r[1]]
    cuts = sorted({span.start_char, span.end_char, *(r[0] for r in ranges), *(r[1] for r in ranges)})
    pieces: List[Tuple[int, int, Tuple[str, ...], Tuple[str, ...]]] = []
    for lo, hi in zip(cuts, cuts[1:]):
        covering = [r for r in ranges if r[0] <= lo and hi <= r[1]]
        classes = tuple(sorted({r[2] for r in covering}))
        titles = tuple(dict.fromkeys(r[3] for r in covering))
        if pieces and pieces[-1][2] == classes:  # one mark per run of the same kind
            pieces[-1] = (pieces[-1][0], hi, classes, tuple(dict.fromkeys(pieces[-1][3] + titles)))
        else:
            pieces.append((lo, hi, classes, titles))
    parts = []
    for lo, hi, classes, titles in pieces:
        piece = html.escape(text[lo:hi])
        if classes:
            title = html.escape(", ".join(titles), quote=True)
            piece = f'<mark class="{" ".join(classes)}" title="{title}">{piece}</mark>'
        parts.append(piece)
    return "".join(parts)


def _describe_cue(cue: Dict[str, Any]) -> str:
    where = f" {cue['start_char']}-{cue['end_char']}" if cue.get("start_char") is not None else ""
    category = str(cue.get("category") or "").lower().replace("_", " ")
    return f"'{cue.get('text', '')}'" + (f" ({category}{where})" if category or where else "")


def chunk_html(span: Span, index: int, doc_id: str, focus: Sequence[Span] = (), noun: str = "chunk", kind: str = "") -> str:
    """One focusable chunk element, its details in ``data-*`` attributes for the panel;
    ``kind``: from :func:`kinds_of` (default: the span's assertion status)."""
    label = assertion_of(span)
    kind = kind or label
    cues, outside = _cue_ranges(span)
    data = {
        "id": f"{doc_id}:{span.start_char}-{span.end_char}",
        "index": str(index),
        "start": str(span.start_char),
        "end": str(span.end_char),
        "assertion": label,
        "kind": kind,
        "noun": noun,
    }
    section = _value(span, attrs.ext("section"))
    if section:  # ours is a name; medspaCy's sectionizer sets a Section object with a category
        data["section"] = str(getattr(section, "category", None) or section)
    described = [_describe_cue(c) for _, _, c in cues] + [_describe_cue(c) + " outside the chunk" for c in outside]
    if described:
        data["cues"] = "; ".join(described)
    if outside:
        data["cues-outside"] = " | ".join(str(c.get("text", "")) for c in outside)
    context = _value(span, attrs.ext("context"))
    if context:
        data["context"] = str(context)
    if focus:
        data["focus"] = "; ".join(f"'{f.text}' {f.start_char}-{f.end_char}" for f in focus)
    attributes = " ".join(f'data-{k}="{html.escape(v, quote=True)}"' for k, v in data.items())
    title = f"{noun} {index}: {span.start_char}-{span.end_char}, {HEADER if kind == HEADER else label}"
    classes = f"chunk {css_class(label)}" + (" header" if kind == HEADER else "")
    return (
        f'<span class="{classes}" id="chunk-{index}" tabindex="0" role="button" aria-pressed="false" '
        f'{attributes} title="{html.escape(title, quote=True)}">{_marked_text(span, cues, focus)}</span>'
    )


def overlaps(spans: Sequence[Span]) -> bool:
    ordered = sorted(spans, key=lambda s: (s.start_char, s.end_char))
    return any(b.start_char < a.end_char for a, b in zip(ordered, ordered[1:]))


def inline_html(
    doc: Doc, spans: Sequence[Span], doc_id: str, focus: Dict[int, List[Span]], noun: str, kinds: Sequence[str]
) -> str:
    """The note as it is, each chunk in its place (chunks do not overlap)."""
    ordered = sorted(enumerate(spans), key=lambda pair: (pair[1].start_char, pair[1].end_char))
    parts, pos = [], 0
    for index, span in ordered:
        parts.append(html.escape(doc.text[pos : span.start_char]))
        parts.append(chunk_html(span, index, doc_id, focus.get(index, ()), noun, kinds[index]))
        pos = span.end_char
    parts.append(html.escape(doc.text[pos:]))
    return "".join(parts)


def cards_html(spans: Sequence[Span], doc_id: str, focus: Dict[int, List[Span]], noun: str, kinds: Sequence[str]) -> str:
    """Overlapping spans (sliding windows): one block each, in order."""
    return "".join(chunk_html(s, i, doc_id, focus.get(i, ()), noun, kinds[i]) for i, s in enumerate(spans))
