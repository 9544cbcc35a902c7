"""Chunks into vector stores: ChromaDB, with metadata a user can filter on.

:func:`to_chroma` works for any span group (by default the document's chunks:
:func:`default_chunks_key`). Each chunk is stored under its stable record id (document id +
offsets, unique over the call), its ``enriched_text`` (or its text) is embedded with our own
embedder (Chroma's default embedder downloads a model, so it is never used), and its
record fields become flat metadata: ``assertion``, ``section``, ``doc_id``, ``source``,
``start``/``end`` and the rest (see :func:`vector_metadata`). LangChain and LlamaIndex take
their metadata as it is in the record instead (:func:`adapter_metadata`): ``None`` left out,
lists as lists.
"""
from __future__ import annotations

import json
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from spacy.tokens import Doc

from .. import attrs
from .ids import DocumentIds
from .records import RecordError, default_chunks_key, indexed, iter_records, records_of

# the value stored for a chunk nobody assessed (what `assertion != "negated"` filters read)
NO_ASSERTION = "unassessed"
_SCALARS = (str, int, float, bool)
_SCALAR_TYPES = frozenset(_SCALARS)  # exact types: a subclass (an IntEnum) goes through _scalar
# record fields kept out of a store's metadata: the parent passages' text is the parent's own
# record (``index="blocks"``, :func:`query_with_parents`); their ids and offsets stay
_NOT_STORED = ("text", "sentence_text", "block_text", "meta")  # meta: its keys go in flat


def vector_metadata(record: Dict[str, Any], extra: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """Flat metadata a vector store accepts (str, int, float, bool) for one chunk record.

    A value the pipeline did not set (``None``, an empty list or dict) is left out, never a
    sentinel (stores refuse ``None``), except ``assertion``: :data:`NO_ASSERTION` for a chunk
    nobody assessed. The status booleans (``negated``, ``family``, ...) and ``is_header`` are
    scalars, so ``{"$and": [{"family": True}, {"negated": False}]}`` is a filter; other lists
    and dicts become JSON strings. ``extra`` (e.g. the source document's metadata) is added
    under the same rules, record fields first. A value JSON cannot hold is a one-line
    :class:`RecordError`.
    """
    out: Dict[str, Any] = {}
    extra = {**(record.get("meta") or {}), **(extra or {})}  # the input's own fields, flat
    for key, value in {**extra, **{k: v for k, v in record.items() if k not in _NOT_STORED}}.items():
        # most values are plain scalars: kept without a call (a corpus run stores ~30 per chunk)
        stored = value if type(value) in _SCALAR_TYPES else _scalar(record.get("id"), key, value)
        if stored is not None:
            out[str(key)] = stored
    out["text"] = record["text"]
    if out.get("assertion") in ("", None):
        out["assertion"] = NO_ASSERTION
    return out


def _scalar(chunk: Any, key: str, value: Any) -> Any:
    """The stored form of one value; ``None`` for a value to leave out."""
    if value is None or isinstance(value, _SCALARS):
        return value
    if isinstance(value, (list, tuple, dict)):
        if not value:
            return None
        try:
            return json.dumps(value, ensure_ascii=False, sort_keys=True, allow_nan=False)
        except (TypeError, ValueError):
            pass
    raise RecordError(f"chunk {chunk}: metadata '{key}' of type {type(value).__name__} cannot be stored")


# record fields an adapter never copies into metadata: the text is the Document's / node's own
# content (and ``enriched_text`` is its context plus that text)
_NOT_METADATA = ("text", "enriched_text")


def adapter_metadata(record: Dict[str, Any], source: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """Metadata of one chunk for LangChain / LlamaIndex: the source document's own metadata,
    unchanged, plus the record's fields as they are (lists as lists, no sentinels). A field
    the pipeline left unset (``None``, or empty ``attributes``) is missing, never ``""`` or
    ``-1``, and never hides the source's value; the chunk text is not repeated."""
    merged = dict(source or {})
    for key, value in record.items():
        if key in _NOT_METADATA or value is None or (key == "attributes" and not value):
            continue
        merged[key] = value
    return merged


def resolve_chunks(pipeline: Any, spans_key: Optional[str] = None, focus_key: Optional[str] = None) -> Any:
    """The :class:`~spacy_clinchunk.pipeline.ResolvedPipeline` of ``pipeline`` (a ``Language``, a
    config / saved pipeline path, a strategy name or a ``PipelineSpec``), read as writing its chunks
    to ``spans_key`` (default: the group the resolver reads from the loaded pipeline) and its
    focus spans to ``focus_key`` (default: the focus group paired with those chunks)."""
    from dataclasses import replace

    from ..pipeline import resolve_pipeline

    resolved = resolve_pipeline(pipeline).with_chunks(spans_key)
    return replace(resolved, focus_key=focus_key) if focus_key else resolved


def chunk_texts_with_ids(
    resolved: Any, items: Iterable[Any], batch_size: int = 32, index: str = "chunks", dedupe: bool = False,
    keep_headers: bool = False, with_blocks: bool = False,
) -> Iterable[Tuple[List[Dict[str, Any]], List[Dict[str, Any]]]]:
    """(records, blocks) per ``(text, doc_id, source)`` item, in order (the adapters' one path):
    the records of the chunks, or of their focus spans (``index="focus"``), headers left out
    unless ``keep_headers`` (:func:`indexed`); with ``with_blocks`` also the section blocks the
    records' ``block_id`` name (else ``[]``). Documents go through
    :func:`~spacy_clinchunk.pipeline.process_items` (``max_length`` checked; a component's error
    propagates). Ids are unique over the call (:class:`~spacy_clinchunk.export.ids.DocumentIds`);
    ``dedupe=True`` gives ``([], [])`` for a repeated item with the same id and text."""
    from ..pipeline import InputDoc, process_items

    ids = DocumentIds(dedupe)
    inputs = (InputDoc(doc_id, text, source) for text, doc_id, source in items)
    for item, doc, error in process_items(resolved.nlp, inputs, batch_size, handle_errors=False):
        if error is not None:
            raise RecordError(f"document {item.id}: {error}")
        doc_id = ids.take(doc)
        if doc_id is None:
            yield [], []
            continue
        records = list(indexed(records_of(doc, resolved, index=index, doc_id=doc_id), keep_headers))
        yield records, records_of(doc, resolved, index="blocks", doc_id=doc_id) if with_blocks else []


def default_embedder() -> Any:
    """``spacy_clinchunk.SentenceTransformerEmbedder.v1`` with its defaults (bundled MiniLM, shared model cache)."""
    return offline_embedder()


def offline_embedder(
    embedder: Any = None, model: Optional[str] = None, device: str = "auto", kind: str = "sentence-transformers"
) -> Any:
    """``embedder`` as given, else one of ``kind`` (``embedder`` may itself name the kind):
    ``sentence-transformers`` (``SentenceTransformerEmbedder.v1`` of ``model``, default the
    bundled MiniLM, on ``device``) or ``static`` (``StaticEmbedder.v1``: ``model`` a model2vec
    directory, default the MiniLM distilled once, many times cheaper on CPU). Never downloads."""
    if isinstance(embedder, str):
        embedder, kind = None, embedder
    if embedder is not None:
        return embedder
    from ..embed.embedders import EmbedderError
    from ..embed.kinds import embedder_of_kind

    try:
        return embedder_of_kind(kind, model, device)
    except EmbedderError as err:
        raise RecordError(str(err)) from err


def embed_texts(embedder: Any, texts: List[str]) -> List[List[float]]:
    """Vectors of ``texts`` as lists of floats from any embedder: a callable, one with
    ``embed`` or with ``encode`` (ours)."""
    if callable(embedder):
        raw = embedder(texts)
    elif hasattr(embedder, "embed"):
        raw = embedder.embed(texts)
    else:
        raw = embedder.encode(texts)
    return [[float(x) for x in vector] for vector in raw]


def to_chroma(
    docs: Iterable[Doc],
    collection: Any,
    embedder: Optional[Any] = None,
    *,
    spans_key: Optional[str] = None,
    batch_size: int = 64,
    index: str = "chunks",
    focus_key: str = attrs.FOCUS_KEY,
    dedupe: bool = False,
    keep_headers: bool = False,
) -> int:
    """Upsert every chunk of ``spans_key`` into a Chroma ``collection``; returns the number stored.

    The stored document is the chunk's ``enriched_text`` when ``clin_llm_context`` set one,
    else its text; metadata is :func:`vector_metadata` of its record, so
    ``collection.query(..., where={"assertion": {"$ne": "negated"}})`` leaves negated
    findings out. ``embedder`` maps texts to vectors (one of our embedders or any
    callable), or names a kind of :func:`offline_embedder` (``"static"``); ``None`` uses
    :func:`default_embedder`. Ids are the stable record ids, so
    re-exporting a note updates it; a repeated document (two identical notes without ids)
    gets ids of its own (``<doc id>#1``), or with ``dedupe=True`` is stored once, and no
    batch ever holds an id twice, so the upsert never fails on duplicates. ``spans_key``:
    by default each document's chunks (:func:`default_chunks_key`); a document without the
    group is an error. ``index="focus"`` stores the chunks' focus spans instead
    (``clin_focus``), each with its chunk's id as ``parent_id`` in the metadata;
    ``index="blocks"`` the section blocks (the parents :func:`query_with_parents` returns).
    Section headers are left out unless ``keep_headers`` (:func:`indexed`).
    """
    embed = offline_embedder(embedder)
    batch: Dict[str, Dict[str, Any]] = {}  # id -> record: a repeated id keeps its last record
    added = 0

    def flush() -> int:
        if not batch:
            return 0
        records = list(batch.values())
        texts = [r["enriched_text"] or r["text"] for r in records]
        collection.upsert(
            ids=[r["id"] for r in records],
            documents=texts,
            metadatas=[vector_metadata(r) for r in records],
            embeddings=embed_texts(embed, texts),
        )
        batch.clear()
        return len(records)

    records = iter_records(docs, spans_key, index=index, focus_key=focus_key, dedupe=dedupe)
    for record in indexed(records, keep_headers):
        batch[record["id"]] = record
        if len(batch) >= batch_size:
            added += flush()
    added += flush()
    return added



def query_chroma(
    collection: Any, text: str, embedder: Optional[Any] = None, n_results: int = 5, where: Optional[Dict[str, Any]] = None
) -> Dict[str, Any]:
    """Query with the same embedder the chunks were added with (or its kind: ``"static"``);
    ``where`` filters on metadata."""
    embed = offline_embedder(embedder)
    kwargs = {"where": where} if where else {}
    return collection.query(query_embeddings=embed_texts(embed, [text]), n_results=n_results, **kwargs)


def query_with_parents(
    collection: Any, blocks: Any, text: str, embedder: Optional[Any] = None, n_results: int = 5,
    where: Optional[Dict[str, Any]] = None,
) -> List[Dict[str, Any]]:
    """Small-to-big: query the chunks of ``collection`` and return, per hit in rank order,
    ``{"id", "text", "metadata", "distance", "parent_id", "parent_text"}``, where the parent is
    the hit's section block, read from ``blocks`` (a collection filled by :func:`to_chroma`
    with ``index="blocks"``). The chunk is what matched; the parent is what an LLM reads."""
    found = query_chroma(collection, text, embedder, n_results, where)
    metadatas, distances = found["metadatas"][0], found["distances"][0]
    wanted = sorted({m["block_id"] for m in metadatas if "block_id" in m})
    stored = blocks.get(ids=wanted, include=["documents"]) if wanted else {"ids": [], "documents": []}
    parents = dict(zip(stored["ids"], stored["documents"]))
    return [
        {"id": hit_id, "text": meta["text"], "metadata": meta, "distance": distance,
         "parent_id": meta.get("block_id"), "parent_text": parents.get(meta.get("block_id"))}
        for hit_id, meta, distance in zip(found["ids"][0], metadatas, distances)
    ]


__all__: Sequence[str] = (
    "to_chroma", "query_chroma", "query_with_parents", "indexed", "vector_metadata", "adapter_metadata", "default_embedder",
    "default_chunks_key", "embed_texts", "offline_embedder", "resolve_chunks", "NO_ASSERTION",
)
