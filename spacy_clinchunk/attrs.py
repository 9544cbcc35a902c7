"""Span keys and extension attributes, declared once for the whole package.

Every extension we register is named ``clin_<field>`` (:data:`PREFIX`), where ``<field>``
is the name the value has in records (``Span._.clin_assertion`` -> ``"assertion"``).
medspaCy's own attributes (``is_negated``, ``section``, ...) are never registered or
written by us, so the two packages can share a pipeline. Registration is idempotent and
never overwrites an attribute someone else registered.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Sequence, Tuple

from spacy.tokens import Doc, Span

PREFIX = "clin_"

# Span group keys -----------------------------------------------------------
CHUNKS_KEY = "clin_chunks"  # structural / semantic chunks
RAG_CHUNKS_KEY = "clin_rag_chunks"  # token windows of clin_llm_context
ANNOTATIONS_KEY = "annotations"  # evidence spans read from annotated documents
VORONOI_KEY = "voronoi"  # Voronoi territories
VORONOI_VARIANT_PREFIX = "voronoi_"  # + "0.50" etc.
ASSERTION_VIEW_KEY = "clin_assertion_view"  # copy of a group labelled by assertion, for displaCy
FOCUS_KEY = "clin_focus"  # clin_focus: the framing-free finding of each chunk
SECTIONS_KEY = "clin_sections"  # clin_context_assertion: one span per section, labelled with its category

ASSERTION_LABELS = (
    "affirmed",
    "negated",
    "normal",
    "uncertain",
    "historical",
    "hypothetical",
    "family",
)
# statuses with a read-only boolean getter (Span._.clin_negated, ...): true when the status
# governs the span (is in ``clin_assertion_statuses``), whether or not it decided ``clin_assertion``
ASSERTION_FLAGS = tuple(label for label in ASSERTION_LABELS if label != "affirmed")

# field -> default value; registered as ``clin_<field>``
SPAN_EXTENSIONS: Dict[str, Any] = {
    # clin_context_assertion
    "assertion": None,
    "assertion_cues": None,
    "assertion_statuses": None,  # every status that governs the span, in precedence order
    # the section a chunk stands in (our header detection, or medspaCy's sectionizer as a title)
    "section": None,
    # annotated documents / Voronoi ground truth
    "hpo_id": None,
    "hpo_label": None,
    "annotation_index": None,
    # clin_llm_context
    "chunk_id": None,
    "token_count": None,
    "context": None,
    "enriched_text": None,
    # clin_focus: focus span -> index of its chunk; chunk -> indices of its focus spans
    "focus_of": None,
    "focus_ids": None,
}

DOC_EXTENSIONS: Dict[str, Any] = {
    "doc_id": None,
    "source": None,  # path (or "stdin") the document was read from
    "meta": None,  # the input record's own fields (specialty, encounter id, ...): every record carries them
    "unlocated_annotations": None,  # annotations asserted for the document but not located in its text
    "llm_usage": None,
    "llm_context_failures": 0,
    # clin_context_assertion: the language whose rules applied (detected with language "auto",
    # else the configured one) and the detector's share of evidence for it (None: not detected)
    "language": None,
    "language_score": None,
}


# SpanGroup.attrs key: [[field, attribute], ...] of a group whose values live under other
# names (``clin_context_assertion`` with another ``extension_prefix``); travels with the doc.
# Pairs, not a dict: medspaCy's msgpack hooks take any dict with a "section" key for theirs.
FIELD_NAMES = "clin_field_names"


def ext(field: str) -> str:
    """Extension name of a record field: ``"assertion"`` -> ``"clin_assertion"``."""
    return PREFIX + field


def field_names(group: Any) -> Dict[str, str]:
    """``{field: attribute}`` for the spans of a span group (or of a doc's entities: ``None``).

    The package names, except where a component wrote the group's values under others and
    said so in ``group.attrs[FIELD_NAMES]``: readers ask the doc, they never guess.
    """
    names = {field: ext(field) for field in SPAN_EXTENSIONS}
    renamed = getattr(group, "attrs", {}).get(FIELD_NAMES) if group is not None else None
    for pair in renamed if isinstance(renamed, (list, tuple)) else ():
        if isinstance(pair, (list, tuple)) and len(pair) == 2 and all(isinstance(x, str) for x in pair):
            names[pair[0]] = pair[1]
    return names


def declare_field_names(group: Any, names: Dict[str, str]) -> None:
    """Record on ``group`` that its spans hold ``names`` (field -> attribute); see :func:`field_names`."""
    merged = dict(field_names(group))
    merged.update(names)
    group.attrs[FIELD_NAMES] = sorted([f, n] for f, n in merged.items() if n != ext(f))


def _flag_getter(label: str) -> Callable[[Span], bool]:
    def getter(span: Span) -> bool:
        return label in (span._.get(ext("assertion_statuses")) or ())

    return getter


def _register(cls: Any, name: str, **kwargs: Any) -> None:
    if not cls.has_extension(name):
        cls.set_extension(name, **kwargs)


def register_extensions() -> None:
    """Register every extension attribute of the package (safe to call often)."""
    for field, default in SPAN_EXTENSIONS.items():
        _register(Span, ext(field), default=default)
    for label in ASSERTION_FLAGS:
        _register(Span, ext(label), getter=_flag_getter(label))
    for field, default in DOC_EXTENSIONS.items():
        _register(Doc, ext(field), default=default)


def variant_key(ratio: float) -> str:
    """Span-group key of a Voronoi expansion variant: 0.5 -> ``voronoi_0.50``."""
    return f"{VORONOI_VARIANT_PREFIX}{ratio:.2f}"


# spaCy has no public bulk access to extension values: the hot loops below read and write
# ``doc.user_data`` under the key a stored value has there, once a probe through the public
# ``span._.set`` / ``doc._.set`` has shown (once per process) that the values land there.
_PROBE = "clin_layout_probe"
_KEY_LAYOUT: List[bool] = []  # whether a stored span value is keyed ("._.", name, start_char, end_char)
_DOC_KEY_LAYOUT: List[bool] = []  # whether a stored doc value is keyed ("._.", name, None, None)


def _probe(cls: Any, target: Any, key: tuple) -> bool:
    """Set a probe value through the public API and see whether ``user_data`` holds it under ``key``."""
    if not cls.has_extension(_PROBE):
        cls.set_extension(_PROBE, default=None)
    doc = target if isinstance(target, Doc) else target.doc
    target._.set(_PROBE, True)
    found = doc.user_data.pop(key, None) is True
    if not found:
        target._.set(_PROBE, None)
    return found


def plain_span_keys(span: Span) -> bool:
    """Whether a stored ``span._.<name>`` lives in ``doc.user_data`` under
    ``("._.", name, start_char, end_char)`` (probed once per process), so that hot loops may read
    and write it there without building ``span._``."""
    if not _KEY_LAYOUT:
        _KEY_LAYOUT.append(_probe(Span, span, ("._.", _PROBE, span.start_char, span.end_char)))
    return _KEY_LAYOUT[0]


def set_doc_values(doc: Doc, values: Dict[str, Any]) -> None:
    """``doc._.<name> = value`` for each item; stored extensions straight into
    ``doc.user_data`` where spaCy keeps them (layout probed once per process)."""
    if not _DOC_KEY_LAYOUT:
        _DOC_KEY_LAYOUT.append(_probe(Doc, doc, ("._.", _PROBE, None, None)))
    data, underscore = doc.user_data, None
    for name, value in values.items():
        if _DOC_KEY_LAYOUT[0] and _stored(Doc, name):
            data[("._.", name, None, None)] = value
        else:
            underscore = underscore or doc._
            underscore.set(name, value)


def write_span_values(span: Span, values: Dict[str, Any]) -> None:
    """``span._.<name> = value`` for each item; stored extensions straight into
    ``doc.user_data`` where ``Underscore`` puts them (the layout :func:`plain_span_keys` checks
    once per process), so that a hot loop builds no ``span._`` for them."""
    data, underscore = span.doc.user_data, None
    plain = plain_span_keys(span)
    start, end = span.start_char, span.end_char
    for name, value in values.items():
        if plain and _stored(Span, name):
            data[("._.", name, start, end)] = value
        else:
            underscore = underscore or span._
            underscore.set(name, value)


def stored_span_extension(name: str) -> bool:
    """Whether ``Span._.<name>`` is a stored value (no getter, method or setter)."""
    return _stored(Span, name)


def _stored(cls: Any, name: str) -> bool:
    """Whether ``cls._.<name>`` is a stored value: spaCy's public ``get_extension`` gives
    ``(default, method, getter, setter)``."""
    spec = cls.get_extension(name)
    return spec is not None and spec[1] is None and spec[2] is None and spec[3] is None


def read_span_values(span: Span, extensions: Sequence[Tuple[str, str, Any]], underscore: Any = None) -> Dict[str, Any]:
    """``{field: value}`` of the ``(field, attribute, default)`` extensions set on ``span`` (not
    None, not the default), each value as ``span._.<attribute>`` gives it.

    A stored value (no getter, no method) is read where ``Underscore`` keeps it (``doc.user_data``
    under its key), at a fraction of the cost of ``getattr``, and a missing one is the default
    without writing a copy of it. Without ``underscore`` none is built: the key layout is checked
    once per process against spaCy's own, and another layout falls back to ``span._``."""
    plain = plain_span_keys(span)
    underscore = underscore if underscore is not None or plain else span._
    start, end = span.start_char, span.end_char
    data = span.doc.user_data
    found: Dict[str, Any] = {}
    for field, name, default in extensions:
        if plain and _stored(Span, name):
            value = data.get(("._.", name, start, end), default)
        else:
            value = getattr(span._ if underscore is None else underscore, name)
        if value is not None and value != default:
            found[field] = value
    return found
