"""Views of chunks for people: a self-contained HTML page and displaCy span rendering.

:func:`render_html` writes one page that needs no network at all: its CSS and script
(``view_static/``) are inlined, and a Content-Security-Policy forbids every fetch and
runs only that script (by its hash). Each chunk is a focusable element with
``data-start``, ``data-end`` and ``data-assertion``, coloured by status on a colour-blind-safe
palette (Okabe–Ito tints, each status with its own border style too); headers are styled
as headers. Pointing at, tabbing to or selecting a chunk shows its offsets, section, status,
cues, focus spans and LLM context in a side panel. A filter by status and a search box
sit above the note. Focus spans (``clin_focus``) are marked inside their chunk;
overlapping windows (``clin_rag_chunks``) are shown one block each, their context in the panel.
"""
from __future__ import annotations

import base64
import hashlib
import html
import json
from functools import lru_cache
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from spacy.tokens import Doc, Span

from .. import attrs
from .records import document_id, span_group
from .view_chunks import (
    HEADER,
    UNASSESSED,
    assertion_of,
    cards_html,
    css_class,
    focus_by_chunk,
    focus_group,
    inline_html,
    kinds_of,
    overlaps,
    parent_group,
)

# background tints (35 % of the Okabe–Ito colour on white) and a border style per status,
# so that no two statuses differ by hue alone
ASSERTION_COLORS: Dict[str, str] = {
    "affirmed": "#a6ddce",
    "negated": "#f0c7a6",
    "uncertain": "#faf6bd",
    "historical": "#a6cee4",
    "hypothetical": "#edd0e0",
    "family": "#f6dda6",
    "normal": "#c4e5f7",
    UNASSESSED: "#f2f2f2",
}
_BORDERS: Dict[str, str] = {
    "affirmed": "2px solid #009e73",
    "negated": "3px double #d55e00",
    "uncertain": "2px dashed #8a7d00",
    "historical": "2px dotted #0072b2",
    "hypothetical": "2px dashed #cc79a7",
    "family": "3px double #b37a00",
    "normal": "2px solid #56b4e9",
    UNASSESSED: "1px dashed #777",
}
# what each status means, in words (the legend and the detail panel)
STATUS_TEXT: Dict[str, str] = {
    "affirmed": "present now, in the patient; no cue governs it",
    "negated": "stated absent or ruled out",
    "uncertain": "possible, suspected or to be excluded",
    "historical": "in the patient's past",
    "hypothetical": "would matter only if it happened (instructions, risks)",
    "family": "about someone other than the patient",
    "normal": "described as normal or unremarkable",
    UNASSESSED: "no assertion status was set on it",
    HEADER: "a section header or form label, not a finding",
}
_ORDER = (*attrs.ASSERTION_LABELS, UNASSESSED, HEADER)
_STATIC = Path(__file__).with_name("view_static")


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


@lru_cache(maxsize=None)
def _static(name: str) -> str:
    return (_STATIC / name).read_text(encoding="utf-8")


def _colour_rules(kinds: Sequence[str]) -> str:
    rules = []
    for kind in kinds:
        if kind in ASSERTION_COLORS:
            colour, border = ASSERTION_COLORS[kind], _BORDERS[kind]
            rules.append(f".{css_class(kind)}{{background:{colour};border-bottom:{border}}}")
    return "\n".join(rules)


def _sorted_kinds(kinds: Any) -> List[str]:
    return sorted(kinds, key=lambda k: (_ORDER.index(k) if k in _ORDER else len(_ORDER), k))


def _legend(spans: Sequence[Span], kinds: Dict[str, int], marks: Dict[str, bool], noun: str) -> str:
    """Each status there is, in words and with its count; no zero rows, no status list at all
    for spans that carry none (focus spans, retrieval windows)."""
    items = []
    assessed = set(kinds) - {UNASSESSED, HEADER}
    if not assessed:
        items.append(f"<li>No assertion status is set on these {noun}s ({len(spans)} in all)</li>")
    for kind in _sorted_kinds(kinds):
        if assessed or kind == HEADER:
            swatch = "" if kind == HEADER else f" {css_class(kind)}"
            style = ' style="font-weight:700;text-decoration:underline"' if kind == HEADER else ""
            items.append(
                f'<li data-legend="{html.escape(kind)}"><span class="swatch{swatch}"{style}>{html.escape(kind)}</span>'
                f"{html.escape(STATUS_TEXT.get(kind, ''))} ({kinds[kind]})</li>"
            )
    if marks.get("focus"):
        items.append('<li><mark class="focus">focus</mark> the finding a chunk is about, marked inside its chunk</li>')
    if marks.get("cue"):
        items.append('<li><mark class="cue">cue</mark> the words that set the status</li>')
    if marks.get("context"):
        items.append("<li><b>has context</b> select a window to read its LLM context in the side panel</li>")
    return '<ul class="legend" aria-label="Legend">' + "".join(items) + "</ul>"


def _toolbar(kinds: Dict[str, int], noun: str) -> str:
    boxes = "".join(
        f'<label><input type="checkbox" value="{html.escape(k)}" checked> {html.escape(k)} ({n})</label>'
        for k, n in ((k, kinds[k]) for k in _sorted_kinds(kinds))
    )
    return (
        '<div class="toolbar">'
        f'<fieldset class="filter"><legend>Show</legend>{boxes}</fieldset>'
        f'<span><label for="search">Search {noun}s</label> '
        '<input type="search" id="search" placeholder="text, section, cue"></span>'
        '<button type="button" id="clear">Show all</button>'
        '<span id="match-count" aria-live="polite"></span></div>'
    )


def _script_hash(script: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")


def render_html(doc: Doc, spans_key: str = attrs.CHUNKS_KEY, title: Optional[str] = None) -> str:
    """One self-contained HTML page showing ``doc`` with the spans of ``spans_key``.

    Non-overlapping chunks are shown in place in the note; overlapping ones (sliding
    windows) as one block each, in order. For a group of focus spans the page shows their
    chunks with the focus spans marked inside; a chunk group with focus spans marks them too.
    """
    attrs.register_extensions()
    spans = span_group(doc, spans_key)
    shown_key, noun = spans_key, "chunk"
    parent = parent_group(doc, spans_key)
    if parent is not None:  # focus spans: drawn inside the chunks they belong to
        shown_key, spans = parent, list(doc.spans[parent])
    focus = focus_by_chunk(doc, shown_key, focus_group(doc, shown_key))
    cards = overlaps(spans)
    if cards:
        noun = "window"
    doc_id = document_id(doc)
    span_kinds = kinds_of(doc, spans)
    kinds: Dict[str, int] = {}
    for kind in span_kinds:
        kinds[kind] = kinds.get(kind, 0) + 1
    if cards:
        body = '<div class="note cards">' + cards_html(spans, doc_id, focus, noun, span_kinds) + "</div>"
    else:
        body = '<div class="note">' + inline_html(doc, spans, doc_id, focus, noun, span_kinds) + "</div>"
    marks = {"focus": any(focus.values()), "cue": 'class="cue' in body, "context": "data-context=" in body}
    heading = html.escape(title or doc_id)
    meta = f"{len(spans)} {noun}s in span group <code>{html.escape(shown_key)}</code>"
    if parent is not None:
        meta += f" with their focus spans (<code>{html.escape(spans_key)}</code>, {len(doc.spans[spans_key])})"
    if doc._.clin_source:
        meta += f" &middot; from <code>{html.escape(Path(str(doc._.clin_source)).name)}</code>"
    script = _static("view.js")
    status_json = json.dumps(STATUS_TEXT).replace("<", "\\u003c")
    csp = f"default-src 'none'; style-src 'unsafe-inline'; script-src '{_script_hash(script)}'"
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
        f"<meta http-equiv=\"Content-Security-Policy\" content=\"{csp}\">\n"
        "<meta name=\"referrer\" content=\"no-referrer\">\n"
        f"<title>{heading}</title>\n<style>{_static('view.css')}{_colour_rules(list(kinds))}</style></head>\n"
        f"<body><header><h1>{heading}</h1><div class=\"meta\">{meta}</div></header>\n"
        f"{_toolbar(kinds, noun)}\n{_legend(spans, kinds, marks, noun)}\n"
        f'<main class="layout">{body}\n'
        '<aside id="detail" aria-live="polite" aria-label="Details of the chunk in focus"></aside></main>\n'
        f'<script type="application/json" id="status-text">{status_json}</script>\n'
        f"<script>{script}</script>\n</body></html>\n"
    )


__all__ = ("render_html", "render_displacy", "label_by_assertion", "displacy_options", "ASSERTION_COLORS", "STATUS_TEXT")
