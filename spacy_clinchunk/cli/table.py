"""The ``chunk`` table: what the pipeline wrote, one chunk a line.

Each chunk shows its offsets and text, then what the pipeline set on it: its assertion
status and cues (``clin_context_assertion``), its section and other values; under it the
context of its window (``clin_llm_context``) and its focus spans (``clin_focus``), indented.
A pipeline that set none of these shows the chunks alone.
"""
from typing import Any, Dict, List, Optional, TextIO

from .. import attrs

INDENT = " " * 16
# values shown in a place of their own (or links, shown as the focus lines)
_OWN = {"assertion", "assertion_cues", "assertion_statuses", "context", "enriched_text", "focus_ids", "focus_of", "chunk_id"}


def write_table(out: TextIO, doc_id: str, doc: Any, spans_key: str, focus_key: Optional[str], fields: Any = None) -> None:
    """One ``# id: N chunks`` header, then one line per chunk and its indented details
    (``fields``: the record fields the pipeline sets, ``ResolvedPipeline.fields``)."""
    from ..export.records import registered_extensions, span_attributes

    group = doc.spans[spans_key] if spans_key in doc.spans else None
    chunks = list(group) if group is not None else []
    focus = list(doc.spans[focus_key]) if focus_key and focus_key in doc.spans else None
    header = f"# {doc_id}: {len(chunks)} chunks"
    if focus is not None:
        header += f", {len(focus)} focus spans"
    out.write(header + "\n")
    extensions = registered_extensions(group, fields=fields)
    links = attrs.field_names(group)["focus_ids"]
    lines: List[str] = []
    for chunk in chunks:
        underscore = chunk._
        values = span_attributes(chunk, extensions, underscore)
        lines.append(f"{_offsets(chunk)} {chunk.text!r}{_status(values)}{_extras(values)}")
        if values.get("context"):
            lines.append(f"{INDENT}context: {values['context']!r}")
        if focus is not None:
            for number in underscore.get(links) or ():
                if isinstance(number, int) and 0 <= number < len(focus):
                    span = focus[number]
                    lines.append(f"{INDENT}focus {_offsets(span)} {span.text!r}")
    if lines:
        out.write("\n".join(lines) + "\n")


def _offsets(span: Any) -> str:
    return f"{span.start_char:>7}-{span.end_char:<7}"


def _status(values: Dict[str, Any]) -> str:
    """``  [negated] cues: 'denies'`` when assertion ran on the chunk."""
    status = values.get("assertion")
    if status is None:
        return ""
    cues = [str(cue.get("text")) for cue in values.get("assertion_cues") or () if isinstance(cue, dict)]
    return f"  [{status}]" + (f" cues: {', '.join(repr(c) for c in cues)}" if cues else "")


def _extras(values: Dict[str, Any]) -> str:
    """The other scalar values, as ``key=value``."""
    shown = {k: v for k, v in values.items() if k not in _OWN and not isinstance(v, (list, dict))}
    return "  " + " ".join(f"{k}={v}" for k, v in shown.items()) if shown else ""
