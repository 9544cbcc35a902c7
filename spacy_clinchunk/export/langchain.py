"""LangChain text splitter: our chunks, with offsets and assertion, as LangChain Documents.

Needs the ``langchain`` extra (``langchain-core``, ``langchain-text-splitters``); this module
is imported only when you import it, never by ``import spacy_clinchunk``.
"""
from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional

from .. import attrs
from .vectorstores import adapter_metadata, chunk_texts_with_ids, load_nlp

try:
    from langchain_core.documents import Document
    from langchain_text_splitters import TextSplitter
except ImportError as err:  # pragma: no cover - exercised only without the extra
    raise ImportError("spacy_clinchunk.export.langchain needs `pip install spacy-clinchunk[langchain]`") from err


class ClinChunkTextSplitter(TextSplitter):
    """Split text with a spacy-clinchunk pipeline (a config path, a strategy name or an ``nlp``).

    Each Document is one span of ``spans_key`` with its exact text; its metadata is the
    source document's metadata plus ``start_index`` and the chunk record's fields
    (``id``, ``doc_id``, ``start``, ``end``, ``assertion``, ``section``, ...). LangChain's
    size settings do not apply: the pipeline decides the chunks. ``index="focus"`` makes the
    Documents the chunks' focus spans (``clin_focus``), each with ``parent_id``.
    """

    def __init__(
        self,
        pipeline: Any = "assertion",
        spans_key: str = attrs.CHUNKS_KEY,
        batch_size: int = 32,
        index: str = "chunks",
        focus_key: str = attrs.FOCUS_KEY,
        **kwargs: Any,
    ):
        kwargs.setdefault("chunk_overlap", 0)
        super().__init__(**kwargs)
        self.nlp = load_nlp(pipeline)
        self.spans_key = spans_key
        self.batch_size = batch_size
        self.index = index
        self.focus_key = focus_key

    def split_text(self, text: str) -> List[str]:
        return [r["text"] for records in self._records([(text, None, None)]) for r in records]

    def create_documents(self, texts: List[str], metadatas: Optional[List[Dict[Any, Any]]] = None) -> List[Document]:
        metadatas = metadatas or [{} for _ in texts]
        return self._documents(texts, metadatas, [None] * len(texts))

    def split_documents(self, documents: Iterable[Document]) -> List[Document]:
        documents = list(documents)
        return self._documents(
            [d.page_content for d in documents], [d.metadata for d in documents], [getattr(d, "id", None) for d in documents]
        )

    def _documents(self, texts: List[str], metadatas: List[Dict[Any, Any]], ids: List[Optional[str]]) -> List[Document]:
        items = [
            (text, _doc_id(meta, given), meta.get("source"))
            for text, meta, given in zip(texts, metadatas, ids)
        ]
        out: List[Document] = []
        for meta, records in zip(metadatas, self._records(items)):
            for record in records:
                metadata = adapter_metadata(record, meta)
                metadata["start_index"] = record["start"]
                out.append(Document(page_content=record["text"], metadata=metadata, id=record["id"]))
        return out

    def _records(self, items: List[Any]):
        return chunk_texts_with_ids(self.nlp, items, self.spans_key, self.batch_size, self.index, self.focus_key)


def _doc_id(metadata: Dict[Any, Any], given: Optional[str]) -> Optional[str]:
    """The chunk records' document id: ``metadata["doc_id"]``, the Document's id, or its ``source``."""
    for value in (metadata.get("doc_id"), given, metadata.get("source")):
        if value not in (None, ""):
            return str(value)
    return None  # records fall back to a hash of the text


__all__ = ("ClinChunkTextSplitter",)
