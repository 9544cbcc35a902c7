"""Records of contextualized chunks and export to ChromaDB.

:func:`to_records` gives the seed's dictionaries (``id``, ``original_text``, ``context``,
``enriched_text``, ``start_offset``, ``end_offset``, ``token_count``);
:func:`to_chroma` adds them to a Chroma collection, embedded with our
sentence-transformers embedder (Chroma's default embedder downloads a model).
"""
from typing import Any, Dict, Iterable, List, Optional, Sequence

from spacy.tokens import Doc

from . import attrs



def to_records(doc: Doc, spans_key: str = attrs.RAG_CHUNKS_KEY) -> List[Dict[str, Any]]:
    """One dictionary per chunk of ``doc`` written by ``clin_llm_context``."""
    attrs.register_extensions()
    records: List[Dict[str, Any]] = []
    for span in doc.spans.get(spans_key, []):
        context = span._.context or ""
        records.append(
            {
                "id": span._.chunk_id,
                "original_text": span.text,
                "context": context,
                "enriched_text": span._.enriched_text or span.text,
                "start_offset": span.start_char,
                "end_offset": span.end_char,
                "token_count": span._.token_count,
            }
        )
    return records


def default_embedder() -> Any:
    """``spacy_clinchunk.SentenceTransformerEmbedder.v1`` with its defaults (bundled MiniLM, shared model cache)."""
    from .embedders import sentence_transformer_embedder_v1

    return sentence_transformer_embedder_v1()


def _vectors(embedder: Any, texts: List[str]) -> List[List[float]]:
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
    spans_key: str = attrs.RAG_CHUNKS_KEY,
    batch_size: int = 64,
) -> int:
    """Add every chunk's ``enriched_text`` to a Chroma ``collection``; returns the number added.

    Metadata per chunk: ``doc_id``, ``chunk_id``, ``start_offset``, ``end_offset``,
    ``original_text``, ``context``, ``token_count``. ``embedder`` maps a list of texts to
    vectors: one of our embedders (``.encode``), or any callable; ``None`` uses
    :func:`default_embedder` (the bundled MiniLM).
    Ids are the chunk ids, so re-exporting a note updates it (``upsert``).
    """
    embed = embedder if embedder is not None else default_embedder()
    ids: List[str] = []
    documents: List[str] = []
    metadatas: List[Dict[str, Any]] = []
    added = 0

    def flush() -> int:
        if not ids:
            return 0
        vectors = _vectors(embed, documents)
        collection.upsert(ids=list(ids), documents=list(documents), metadatas=list(metadatas), embeddings=vectors)
        count = len(ids)
        ids.clear()
        documents.clear()
        metadatas.clear()
        return count

    for doc in docs:
        doc_id = doc._.doc_id
        for record in to_records(doc, spans_key):
            ids.append(record["id"])
            documents.append(record["enriched_text"])
            metadata = {
                "chunk_id": record["id"],
                "start_offset": record["start_offset"],
                "end_offset": record["end_offset"],
                "original_text": record["original_text"],
                "context": record["context"],
                "token_count": int(record["token_count"] or 0),
            }
            if doc_id is not None:
                metadata["doc_id"] = str(doc_id)
            metadatas.append(metadata)
            if len(ids) >= batch_size:
                added += flush()
    added += flush()
    return added


def query_chroma(collection: Any, text: str, embedder: Optional[Any] = None, n_results: int = 5) -> Dict[str, Any]:
    """Query with the same embedder the chunks were added with."""
    embed = embedder if embedder is not None else default_embedder()
    return collection.query(query_embeddings=_vectors(embed, [text]), n_results=n_results)


__all__: Sequence[str] = ("to_records", "to_chroma", "query_chroma", "default_embedder")
