"""JSON-serializable records of chunked documents: one model for every span group.

:func:`chunk_records` turns one span group of a ``Doc`` into flat chunk records
(:data:`RECORD_FIELDS`); JSONL, Parquet and Hugging Face ``datasets`` are all built
from them, so every export carries the same fields. :func:`records_of` is the one function
that makes the records of a doc (``index``: ``chunks``, ``focus`` or ``doc``, the
per-document shape the ``jsonl`` format writes); the writers of every format are in
:mod:`.writers`.

Values are plain JSON whatever the host pipeline left (medspaCy's ``Section``, its
modifiers: :mod:`.host_values`); ids are distinct over one call (:class:`DocumentIds`).

Records of the flagship carry their chunk's focus spans (``focus``: ``[{start, end, text}]``);
``index="focus"`` makes the focus spans the records instead, each with its chunk's id
(``parent_id``) and the assertion ``clin_focus`` carried over from that chunk.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Dict, FrozenSet, Iterable, Iterator, List, Optional, Tuple

from spacy.tokens import Doc, Span

from .. import attrs
from ..spans import doc_text
from .blocks import DEFAULT_BLOCK_TOKENS, Passage, Passages, passage_fields, passages_of
from .host_values import has_host_sections, host_section, plain_value, section_name
from .ids import DocumentIds, document_id, record_ids

# a record's parent passages (:mod:`.blocks`): its sentence and its section block
PASSAGE_FIELDS = tuple(f"{kind}_{part}" for kind in ("sentence", "block") for part in ("id", "start", "end", "text"))
# Record fields, in order. One boolean per status beside ``assertion`` (``None``: not assessed). ``attributes`` holds any other extension value the pipeline set.
RECORD_FIELDS = (
    "id", "parent_id", "doc_id", "source", "spans_key", "index", "start", "end", "text", "label",
    "assertion", *attrs.ASSERTION_FLAGS, "assertion_cues", "section", "section_title", "is_header",
    *PASSAGE_FIELDS, "focus", "context", "enriched_text", "token_count", "attributes", "meta",
)
CUE_FIELDS = ("text", "category", "direction", "literal", "start_char", "end_char")
FOCUS_FIELDS = ("start", "end", "text")
# extension values with a record field of their own (the focus links become ``focus`` / ``parent_id``)
# (the statuses become one boolean each; ``focus_of`` is a focus record's ``parent_id``)
_OWN_FIELDS = {"assertion", "assertion_cues", "assertion_statuses", "section", "context", "enriched_text",
               "token_count", "focus_ids", "focus_of"}
# what is indexed: the chunks of the group, the focus spans of those chunks, or the section blocks
INDEXES = ("chunks", "focus", "blocks")


class RecordError(ValueError):
    """A document or span group cannot be turned into records (message is one line)."""


Fields = Optional[FrozenSet[str]]


def registered_extensions(group: Any = None, skip: Iterable[str] = (), fields: Fields = None) -> List[Tuple[str, str, Any]]:
    """(field, attribute, default) of the span extensions registered now for the spans of
    ``group`` (its own attribute names, :func:`attrs.field_names`), less ``skip``; only
    ``fields`` when given (``ResolvedPipeline.fields``)."""
    skipped = set(skip)
    names = attrs.field_names(group)
    return [
        (field, names[field], default)
        for field, default in attrs.SPAN_EXTENSIONS.items()
        if field not in skipped and (fields is None or field in fields) and Span.has_extension(names[field])
    ]


def span_attributes(
    span: Span, extensions: Optional[List[Tuple[str, str, Any]]] = None, underscore: Any = None
) -> Dict[str, Any]:
    """Every package extension attribute the pipeline set on ``span`` (non-default values).

    ``extensions`` (from :func:`registered_extensions` of the span's group) lets a caller with
    many spans look the registry up once; ``span._`` is built once per span, not once per
    attribute, and stored values are read as :func:`attrs.read_span_values` reads them."""
    extensions = registered_extensions() if extensions is None else extensions
    if not extensions:
        return {}
    found = attrs.read_span_values(span, extensions, underscore)
    return {f: v if isinstance(v, (str, int, float)) else plain_value(v, span.doc) for f, v in found.items()}


def span_group(doc: Doc, spans_key: str) -> List[Span]:
    """The spans of ``doc.spans[spans_key]``; a missing group is an error naming the groups there are."""
    if spans_key not in doc.spans:
        present = ", ".join(sorted(doc.spans.keys())) or "none"
        raise RecordError(f"document {document_id(doc)} has no span group '{spans_key}' (groups: {present})")
    return list(doc.spans[spans_key])


@dataclass(frozen=True)
class RecordPlan:
    """Which groups a document's records come from and which fields are read: what a
    :class:`~spacy_clinchunk.pipeline.ResolvedPipeline` answers (it has the same attributes)."""

    chunks_key: str = attrs.CHUNKS_KEY
    focus_key: Optional[str] = attrs.FOCUS_KEY
    fields: Fields = None
    block_tokens: int = DEFAULT_BLOCK_TOKENS  # the budget of a section block, in tokens of the counter
    token_counter: Any = None  # words -> counts (components.token_counters); None: WordpieceEstimate


def records_of(doc: Doc, plan: Any, *, index: str = "chunks", doc_id: Optional[str] = None) -> List[Dict[str, Any]]:
    """The records of one document: the one record model of every export and writer.

    ``plan`` (a :class:`~spacy_clinchunk.pipeline.ResolvedPipeline` or a :class:`RecordPlan`)
    names the chunks group, the focus group, the fields to read and the block budget.
    ``index="chunks"``: one flat record (:data:`RECORD_FIELDS`) per chunk, with its section
    block's id as ``parent_id``; ``"focus"``: one per focus span of those chunks, with its
    chunk's id as ``parent_id``; ``"blocks"``: one per section block (:mod:`.blocks`), the
    passage a chunk's reader gets; ``"doc"``: one record for the whole document
    (``{"id", "chunks": [...], "groups": {...}, "doc": {...}}``, the ``jsonl`` shape).
    """
    if index == "doc":
        return [_doc_record(doc, plan.chunks_key, doc_id, plan.fields)]
    return _flat_records(doc, plan, index, doc_id)


def chunk_records(
    doc: Doc, spans_key: str = attrs.CHUNKS_KEY, *, index: str = "chunks", focus_key: str = attrs.FOCUS_KEY,
    fields: Fields = None, doc_id: Optional[str] = None,
) -> List[Dict[str, Any]]:
    """:func:`records_of` by keywords: the flat records of ``doc.spans[spans_key]``."""
    return records_of(doc, RecordPlan(spans_key, focus_key, fields), index=index, doc_id=doc_id)


def _flat_records(doc: Doc, plan: Any, index: str, doc_id: Optional[str]) -> List[Dict[str, Any]]:
    """One flat record per span of the chunks group (an empty group gives ``[]``), per focus
    span or per block.

    Values the pipeline did not set are ``None`` (``assertion_cues``, ``focus``: ``[]``); nothing
    is dropped. ``focus`` lists the chunk's spans of the focus group (its ``clin_focus_ids``).
    With ``index="focus"`` the records are those focus spans, each with ``parent_id``, the id
    of its chunk. ``plan.fields`` (``ResolvedPipeline.fields``) limits the extension values read
    to those its components set; ``doc_id`` replaces the document's own id (:class:`DocumentIds`).
    """
    if index not in INDEXES:
        raise RecordError(f"unknown index '{index}'; known: {', '.join(INDEXES)}, doc")
    attrs.register_extensions()
    spans_key, focus_key, fields = plan.chunks_key, plan.focus_key or attrs.FOCUS_KEY, plan.fields
    doc_id = doc_id if doc_id not in (None, "") else document_id(doc)
    chunks = span_group(doc, spans_key)
    ids = record_ids(doc_id, chunks)
    text = doc_text(doc)
    passages = passages_of(doc, text, chunks, getattr(plan, "block_tokens", DEFAULT_BLOCK_TOKENS),
                           getattr(plan, "token_counter", None), getattr(plan, "nlp", None))
    context = _Context(doc, doc_id, text, passages)
    if index == "blocks":
        return [_block_record(context, number, block) for number, block in enumerate(passages.blocks)]
    focus = list(doc.spans[focus_key]) if focus_key in doc.spans else []
    if index == "focus":
        if focus_key not in doc.spans:
            raise RecordError(f"document {doc_id} has no focus group '{focus_key}' (index=focus needs clin_focus)")
        extensions = registered_extensions(doc.spans[focus_key], skip=("focus_of",), fields=fields)
        of = attrs.field_names(doc.spans[focus_key])["focus_of"]
        parents = [_parent(span, of, ids) for span in focus]
        return _records(context, focus_key, focus, record_ids(doc_id, focus), extensions, parents, None)
    names = attrs.field_names(doc.spans[spans_key])
    extensions = registered_extensions(doc.spans[spans_key], fields=fields)
    links = names["focus_ids"] if focus and Span.has_extension(names["focus_ids"]) else None
    return _records(context, spans_key, chunks, ids, extensions, None, (focus, links))


def _parent(span: Span, attribute: str, ids: List[str]) -> Optional[str]:
    number = span._.get(attribute) if Span.has_extension(attribute) else None
    return ids[number] if isinstance(number, int) and 0 <= number < len(ids) else None


def _focus_list(underscore: Any, focus: List[Span], attribute: Optional[str]) -> List[Dict[str, Any]]:
    if attribute is None:
        return []
    numbers = getattr(underscore, attribute) or ()
    spans = [focus[n] for n in numbers if isinstance(n, int) and 0 <= n < len(focus)]
    return [{"start": s.start_char, "end": s.end_char, "text": s.text} for s in spans]


@dataclass(frozen=True)
class _Context:
    """What every record of one document reads: the doc, its id, its text and its passages."""

    doc: Doc
    doc_id: str
    text: str
    passages: Passages

    @property
    def source(self) -> Optional[str]:
        source = self.doc._.clin_source
        return None if source is None else str(source)

    @property
    def meta(self) -> Optional[Dict[str, Any]]:
        """The input record's own fields (``Doc._.clin_meta``, set by ``make_doc``), or ``None``."""
        meta = self.doc._.get(attrs.ext("meta"))
        return dict(meta) if meta else None


def status_flags(assertion: Optional[str], statuses: Any) -> Dict[str, Optional[bool]]:
    """One boolean per status (:data:`attrs.ASSERTION_FLAGS`): true when it governs the span (it is
    among ``statuses`` or is the ``assertion``), so "family and not negated" is a filter on
    scalars; all ``None`` when nothing assessed the span."""
    if assertion is None and not statuses:
        return {flag: None for flag in attrs.ASSERTION_FLAGS}
    governing = set(statuses or ()) | {assertion}
    return {flag: flag in governing for flag in attrs.ASSERTION_FLAGS}


def _records(context: _Context, spans_key, spans, ids, extensions, parents, focus_links) -> List[Dict[str, Any]]:
    doc, text, passages = context.doc, context.text, context.passages
    sectioned = has_host_sections(doc)
    records = []
    for number, span in enumerate(spans):
        underscore = span._
        set_values = span_attributes(span, extensions, underscore)
        host_category, host_title = host_section(span) if sectioned else (None, None)
        start, end = span.start_char, span.end_char
        block = passages.block_at(start)
        sentence = passage_fields(context.doc_id, text, "sentence", passages.sentence_at(start))
        block_fields = passage_fields(context.doc_id, text, "block", block)
        assertion = set_values.get("assertion")
        records.append(
            {
                "id": ids[number],
                "parent_id": block_fields["block_id"] if parents is None else parents[number],
                "doc_id": context.doc_id,
                "source": context.source,
                "spans_key": spans_key,
                "index": number,
                "start": start,
                "end": end,
                "text": text[start:end],
                "label": span.label_ or None,
                "assertion": assertion,
                **status_flags(assertion, set_values.get("assertion_statuses")),
                "assertion_cues": list(set_values.get("assertion_cues") or []),
                "section": section_name(set_values.get("section"), doc) or host_category,
                "section_title": host_title or (block.title if block is not None else None),
                "is_header": passages.is_header(start, end),
                **sentence,
                **block_fields,
                "focus": [] if focus_links is None else _focus_list(underscore, *focus_links),
                "context": set_values.get("context"),
                "enriched_text": set_values.get("enriched_text"),
                "token_count": set_values.get("token_count"),
                "attributes": {k: v for k, v in set_values.items() if k not in _OWN_FIELDS},
                "meta": context.meta,
            }
        )
    return records


def _block_record(context: _Context, number: int, block: Passage) -> Dict[str, Any]:
    """The record of one section block: what the LLM reads for the chunks inside it."""
    fields = passage_fields(context.doc_id, context.text, "block", block)
    record: Dict[str, Any] = {name: None for name in RECORD_FIELDS}
    record.update(fields)
    record.update(
        id=fields["block_id"], doc_id=context.doc_id, source=context.source, spans_key="blocks", index=number,
        start=block.start, end=block.end, text=fields["block_text"], assertion_cues=[], section=block.section or None,
        section_title=block.title, is_header=False, focus=[], attributes={}, meta=context.meta,
    )
    return record


def indexed(records: Iterable[Dict[str, Any]], keep_headers: bool = False) -> Iterator[Dict[str, Any]]:
    """The records an index holds: all but the section headers ("FAMILY HISTORY" is a title, not
    a finding; the title travels with every chunk as ``section_title``), unless ``keep_headers``."""
    return (r for r in records if keep_headers or not r.get("is_header"))


def iter_records(
    docs: Iterable[Doc], spans_key: Optional[str] = attrs.CHUNKS_KEY, *, index: str = "chunks",
    focus_key: str = attrs.FOCUS_KEY, fields: Fields = None, dedupe: bool = False,
) -> Iterator[Dict[str, Any]]:
    """The records of ``docs`` in order, every id unique over the call (:class:`DocumentIds`;
    ``dedupe=True`` leaves out a repeated document with the same id and text);
    ``spans_key=None``: each document's :func:`default_chunks_key`."""
    ids = DocumentIds(dedupe)
    for doc in docs:
        doc_id = ids.take(doc)
        if doc_id is not None:
            key = default_chunks_key(doc) if spans_key is None else spans_key
            yield from chunk_records(doc, key, index=index, focus_key=focus_key, fields=fields, doc_id=doc_id)


def default_chunks_key(doc: Doc) -> str:
    """The group a document's chunks are in when no ``spans_key`` is given: ``clin_chunks``
    when the pipeline wrote it (the structural and flagship chains; ``contextual`` annotates
    it), else ``clin_rag_chunks`` (``contextual_rag``'s windows), as the pipeline resolver
    reads them (``ResolvedPipeline.chunks_key``); neither is the error naming the groups."""
    for key in (attrs.CHUNKS_KEY, attrs.RAG_CHUNKS_KEY):
        if key in doc.spans:
            return key
    present = ", ".join(sorted(doc.spans.keys())) or "none"
    raise RecordError(
        f"document has neither '{attrs.CHUNKS_KEY}' nor '{attrs.RAG_CHUNKS_KEY}' (groups: {present}); give spans_key"
    )


def span_record(span: Span, extensions: Optional[List] = None, sectioned: bool = True, text: Optional[str] = None) -> Dict[str, Any]:
    """``{text, start, end, ...attributes}``; ``text``: the doc's text, sliced (read once per group)."""
    start, end = span.start_char, span.end_char
    record: Dict[str, Any] = {"text": span.text if text is None else text[start:end], "start": start, "end": end}
    record.update(span_attributes(span, extensions))
    if "section" in record:
        record["section"] = section_name(record["section"], span.doc)
    category, title = host_section(span) if sectioned else (None, None)
    if category is not None:
        record.setdefault("section", category)
        record["section_title"] = title
    return record


def _group_records(group: Any, ids: Optional[List[str]] = None, fields: Fields = None) -> List[Dict[str, Any]]:
    extensions = registered_extensions(group, fields=fields)
    spans = list(group)
    sectioned = has_host_sections(group.doc) if spans else False
    text = doc_text(spans[0].doc) if spans else None
    if ids is None:
        return [span_record(s, extensions, sectioned, text) for s in spans]
    return [{"id": i, **span_record(s, extensions, sectioned, text)} for i, s in zip(ids, spans)]


def doc_to_record(
    doc: Doc, spans_key: str = attrs.CHUNKS_KEY, doc_id: Optional[str] = None, fields: Fields = None
) -> Dict[str, Any]:
    """:func:`records_of` with ``index="doc"`` by keywords: the one record of a document."""
    return records_of(doc, RecordPlan(spans_key, None, fields), index="doc", doc_id=doc_id)[0]


def _doc_record(doc: Doc, spans_key: str, doc_id: Optional[str], fields: Fields) -> Dict[str, Any]:
    """``{"id", "chunks": [{"id", "text", "start", "end", ...attributes}]}`` for one document.

    Each chunk carries its stable id (:func:`.ids.chunk_id`, as in :func:`chunk_records`). Every span
    group the pipeline wrote besides ``spans_key`` is listed under ``groups``. ``fields``: as
    in :func:`chunk_records`.
    """
    attrs.register_extensions()
    record: Dict[str, Any] = {"id": doc_id if doc_id is not None else doc._.clin_doc_id}
    if spans_key in doc.spans:
        group = doc.spans[spans_key]
        ids = record_ids(str(record["id"]) if record["id"] not in (None, "") else document_id(doc), list(group))
        record["chunks"] = _group_records(group, ids, fields)
    else:
        record["chunks"] = []
    others = {key: _group_records(group, None, fields) for key, group in doc.spans.items() if key != spans_key}
    if others:
        record["groups"] = others
    doc_extras: Dict[str, Any] = {}
    for name, default in attrs.DOC_EXTENSIONS.items():
        if name == "doc_id" or not Doc.has_extension(attrs.ext(name)):
            continue
        value = getattr(doc._, attrs.ext(name))
        if value is not None and value != default:
            doc_extras[name] = plain_value(value, doc)
    if doc_extras:
        record["doc"] = doc_extras
    return record


# Serialization ---------------------------------------------------------------


def record_json(record: Dict[str, Any]) -> str:
    """One JSON line; a value JSON cannot hold is an error naming the chunk and field."""
    try:
        return json.dumps(record, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as err:
        field = next((k for k, v in record.items() if not _json_ok(v)), "?")
        raise RecordError(f"chunk {record.get('id')}: field '{field}' is not JSON-serializable ({err})") from None


def _json_ok(value: Any) -> bool:
    try:
        json.dumps(value, allow_nan=False)
        return True
    except (TypeError, ValueError):
        return False


def flat_row(record: Dict[str, Any]) -> Dict[str, Any]:
    """The record with typed cues and ``attributes`` as a JSON string (the Arrow/Parquet row)."""
    row = dict(record)
    row["assertion_cues"] = [{name: _cue_value(cue, name) for name in CUE_FIELDS} for cue in record["assertion_cues"]]
    row["focus"] = [{name: span.get(name) for name in FOCUS_FIELDS} for span in record["focus"]]
    row["attributes"] = json.dumps(record["attributes"], ensure_ascii=False, sort_keys=True) if record["attributes"] else None
    meta = record.get("meta")  # the input's own keys differ from one input to the next: one JSON string
    row["meta"] = json.dumps(meta, ensure_ascii=False, sort_keys=True) if meta else None
    if not _json_ok(record["attributes"]):
        record_json(record)  # raises the one-line error
    return row


def _cue_value(cue: Dict[str, Any], name: str) -> Any:
    value = cue.get(name)
    if name in ("start_char", "end_char"):
        return None if value is None else int(value)
    return None if value is None else str(value)


def arrow_schema():
    """Arrow schema of :func:`flat_row` (pyarrow imported on use)."""
    import pyarrow as pa

    cue = pa.struct([(n, pa.int64() if n.endswith("_char") else pa.string()) for n in CUE_FIELDS])
    focus = pa.struct([("start", pa.int64()), ("end", pa.int64()), ("text", pa.string())])
    types = {"index": pa.int64(), "start": pa.int64(), "end": pa.int64(), "token_count": pa.int64(),
             "assertion_cues": pa.list_(cue), "focus": pa.list_(focus), "is_header": pa.bool_(),
             **{flag: pa.bool_() for flag in attrs.ASSERTION_FLAGS},
             **{name: pa.int64() for name in PASSAGE_FIELDS if name.endswith(("_start", "_end"))}}
    return pa.schema([(name, types.get(name, pa.string())) for name in RECORD_FIELDS])


def to_arrow(records: Iterable[Dict[str, Any]]):
    """A ``pyarrow.Table`` of chunk records (empty input gives an empty table with the schema)."""
    import pyarrow as pa

    return pa.Table.from_pylist([flat_row(r) for r in records], schema=arrow_schema())


def to_dataset(docs: Iterable[Doc], spans_key: str = attrs.CHUNKS_KEY, *, index: str = "chunks",
               focus_key: str = attrs.FOCUS_KEY, keep_headers: bool = False):
    """A Hugging Face ``datasets.Dataset`` with one row per chunk (or focus span: ``index="focus"``;
    block: ``"blocks"``), columns :data:`RECORD_FIELDS`; headers left out unless ``keep_headers``,
    as the ``hf`` writer does."""
    records = iter_records(docs, spans_key, index=index, focus_key=focus_key)
    rows = [flat_row(r) for r in indexed(records, keep_headers)]
    return _dataset(rows)


def _dataset(rows: List[Dict[str, Any]]):
    try:
        from datasets import Dataset, Features
    except ImportError as err:
        raise RecordError("the Hugging Face dataset export needs `pip install spacy-clinchunk[datasets]`") from err
    return Dataset.from_list(rows, features=Features.from_arrow_schema(arrow_schema()))
