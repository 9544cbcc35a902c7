"""Views of chunks for people: a self-contained HTML page and displaCy span rendering.

:func:`render_html` writes one page with no network access at all (inline CSS, no
scripts, a Content-Security-Policy that forbids every fetch). Each chunk is an element
with ``data-start``, ``data-end`` and ``data-assertion``, coloured by assertion; its
assertion cues are ``<mark>``-ed and the LLM context (``Span._.clin_context``) shows on hover.
"""
from __future__ import annotations

import html
import re
from typing import Any, Dict, List, Optional, Sequence, Tuple

from spacy.tokens import Doc, Span

from .. import attrs
from .records import document_id, span_group

UNASSESSED = "unassessed"
# background colours by assertion (light, readable with black text)
ASSERTION_COLORS: Dict[str, str] = {
    "affirmed": "#c8f0c8",
    "negated": "#ffc9c9",
    "normal": "#d8ecff",
    "uncertain": "#ffe9a8",
    "historical": "#e2d6f5",
    "hypothetical": "#f7d9ef",
    "family": "#d4f1ee",
    UNASSESSED: "#e6e6e6",
}


def assertion_of(span: Span) -> str:
    attrs.register_extensions()
    return span._.clin_assertion or UNASSESSED


def label_by_assertion(doc: Doc, spans_key: str = attrs.CHUNKS_KEY, view_key: str = attrs.ASSERTION_VIEW_KEY) -> str:
    """Copy ``doc.spans[spans_key]`` to ``doc.spans[view_key]`` with each span labelled by its
    assertion (``unassessed`` when none), for ``displacy.render(..., style="span")``; returns ``view_key``.
    The original group is left as it is."""
    group = span_group(doc, spans_key)
    doc.spans[view_key] = [Span(doc, s.start, s.end, label=assertion_of(s)) for s in group]
    return view_key


def displacy_options(view_key: str = attrs.ASSERTION_VIEW_KEY) -> Dict[str, Any]:
    """``options`` for displaCy's span style: our group key and assertion colours."""
    return {"spans_key": view_key, "colors": dict(ASSERTION_COLORS)}


def render_displacy(doc: Doc, spans_key: str = attrs.CHUNKS_KEY, **kwargs: Any) -> str:
    """displaCy span rendering of a group with assertion labels (``page=True`` etc. pass through)."""
    from spacy import displacy

    view_key = label_by_assertion(doc, spans_key)
    return displacy.render(doc, style="span", options=displacy_options(view_key), **kwargs)


# HTML page -------------------------------------------------------------------

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:1.5rem;color:#111;background:#fff}
h1{font-size:1.2rem;margin:0 0 .3rem}
.meta{color:#555;font-size:.85rem;margin-bottom:.8rem}
.legend{display:flex;flex-wrap:wrap;gap:.4rem;margin-bottom:1rem;font-size:.85rem}
.legend span{padding:.1rem .5rem;border-radius:.3rem;border:1px solid #999}
.note{white-space:pre-wrap;font-family:ui-monospace,Menlo,Consolas,monospace;font-size:.9rem;line-height:1.7;
 border:1px solid #ccc;border-radius:.4rem;padding:1rem;max-width:60rem}
.chunk{border-radius:.25rem;padding:.05rem 0;border-bottom:2px solid rgba(0,0,0,.25);position:relative}
.chunk:hover{outline:2px solid #333}
.chunk[data-context]:hover::after{content:attr(data-context);position:absolute;left:0;top:1.6em;z-index:5;
 width:28rem;max-width:80vw;white-space:normal;background:#222;color:#fff;padding:.4rem .6rem;border-radius:.3rem;
 font-family:system-ui,sans-serif;font-size:.8rem;line-height:1.35}
.cards .chunk{display:block;margin:.4rem 0;padding:.4rem;white-space:pre-wrap}
mark.cue{background:none;font-weight:700;text-decoration:underline wavy #a00;color:inherit}
"""


def _css_class(label: str) -> str:
    return "assertion-" + re.sub(r"[^a-z0-9-]+", "-", label.lower())


def _colour_rules(labels: Sequence[str]) -> str:
    rules = []
    for label in labels:
        colour = ASSERTION_COLORS.get(label, "#eeeeee")
        rules.append(f".{_css_class(label)}{{background:{colour}}}")
    return "\n".join(rules)


def _overlaps(spans: List[Span]) -> bool:
    ordered = sorted(spans, key=lambda s: (s.start_char, s.end_char))
    return any(b.start_char < a.end_char for a, b in zip(ordered, ordered[1:]))


def _cue_ranges(span: Span) -> Tuple[List[Tuple[int, int, Dict[str, Any]]], List[str]]:
    """Cues inside the chunk (clipped to it), and the texts of cues outside it."""
    inside, outside = [], []
    for cue in span._.clin_assertion_cues or []:
        start, end = cue.get("start_char"), cue.get("end_char")
        if start is None or end is None:
            continue
        lo, hi = max(start, span.start_char), min(end, span.end_char)
        if lo < hi:
            inside.append((lo, hi, cue))
        else:
            outside.append(str(cue.get("text", "")))
    inside.sort(key=lambda c: (c[0], c[1]))
    merged: List[Tuple[int, int, Dict[str, Any]]] = []
    for lo, hi, cue in inside:  # overlapping cues: keep the first, never nest marks
        if merged and lo < merged[-1][1]:
            continue
        merged.append((lo, hi, cue))
    return merged, outside


def _chunk_html(span: Span, index: int, doc_id: str) -> str:
    text = span.doc.text
    label = assertion_of(span)
    cues, outside = _cue_ranges(span)
    parts, pos = [], span.start_char
    for lo, hi, cue in cues:
        parts.append(html.escape(text[pos:lo]))
        title = f"{cue.get('category', '')} cue".strip()
        parts.append(f'<mark class="cue" title="{html.escape(title)}">{html.escape(text[lo:hi])}</mark>')
        pos = hi
    parts.append(html.escape(text[pos : span.end_char]))
    data = {
        "id": f"{doc_id}:{span.start_char}-{span.end_char}",
        "index": str(index),
        "start": str(span.start_char),
        "end": str(span.end_char),
        "assertion": label,
    }
    if span._.clin_section:
        data["section"] = str(span._.clin_section)
    if span._.clin_context:
        data["context"] = str(span._.clin_context)
    if outside:
        data["cues-outside"] = " | ".join(outside)
    attributes = " ".join(f'data-{k}="{html.escape(v, quote=True)}"' for k, v in data.items())
    title = f"{label}" + (f" ({', '.join(str(c[2].get('text', '')) for c in cues) or ', '.join(outside)})" if cues or outside else "")
    return (
        f'<span class="chunk {_css_class(label)}" id="chunk-{index}" {attributes} '
        f'title="{html.escape(title, quote=True)}">{"".join(parts)}</span>'
    )


def render_html(doc: Doc, spans_key: str = attrs.CHUNKS_KEY, title: Optional[str] = None) -> str:
    """One self-contained HTML page showing ``doc`` with the chunks of ``spans_key``.

    Non-overlapping chunks are shown in place in the note; overlapping ones (sliding
    windows) as one block per chunk, in order.
    """
    attrs.register_extensions()
    spans = span_group(doc, spans_key)
    doc_id = document_id(doc)
    labels = sorted({assertion_of(s) for s in spans} | {"affirmed", "negated"})
    counts = {label: sum(assertion_of(s) == label for s in spans) for label in labels}
    legend = "".join(
        f'<span class="{_css_class(label)}" data-legend="{html.escape(label)}">{html.escape(label)}: {counts[label]}</span>'
        for label in labels
    )
    if _overlaps(spans):
        body = '<div class="note cards">' + "".join(_chunk_html(s, i, doc_id) for i, s in enumerate(spans)) + "</div>"
    else:
        body = '<div class="note">' + _inline(doc, spans, doc_id) + "</div>"
    heading = html.escape(title or doc_id)
    meta = f"{len(spans)} chunks in span group <code>{html.escape(spans_key)}</code>"
    if doc._.clin_source:
        meta += f" &middot; source <code>{html.escape(str(doc._.clin_source))}</code>"
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
        "<meta name=\"referrer\" content=\"no-referrer\">\n"
        f"<title>{heading}</title>\n<style>{_CSS}{_colour_rules(labels)}</style></head>\n"
        f"<body><h1>{heading}</h1><div class=\"meta\">{meta}</div>"
        f"<div class=\"legend\">{legend}</div>\n{body}\n</body></html>\n"
    )


def _inline(doc: Doc, spans: List[Span], doc_id: str) -> str:
    ordered = sorted(enumerate(spans), key=lambda pair: (pair[1].start_char, pair[1].end_char))
    parts, pos = [], 0
    for index, span in ordered:
        parts.append(html.escape(doc.text[pos : span.start_char]))
        parts.append(_chunk_html(span, index, doc_id))
        pos = span.end_char
    parts.append(html.escape(doc.text[pos:]))
    return "".join(parts)


__all__ = ("render_html", "render_displacy", "label_by_assertion", "displacy_options", "ASSERTION_COLORS")
