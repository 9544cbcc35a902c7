"""LlamaIndex node parser: our chunks as TextNodes with exact offsets and assertion metadata.

Needs the ``llamaindex`` extra (``llama-index-core``); imported only when you import it.
"""
from __future__ import annotations

from typing import Any, List, Sequence

from .. import attrs
from .vectorstores import adapter_metadata, chunk_texts_with_ids, load_nlp
from .records import RECORD_FIELDS

try:
    from llama_index.core.node_parser import NodeParser
    from llama_index.core.schema import BaseNode, Document, NodeRelationship, TextNode
    from pydantic import PrivateAttr
except ImportError as err:  # pragma: no cover - exercised only without the extra
    raise ImportError("spacy_clinchunk.export.llama_index needs `pip install spacy-clinchunk[llamaindex]`") from err

# record fields kept out of the text embedded / shown to the LLM (ids and offsets are noise there)
_HIDDEN_FROM_EMBED = [f for f in RECORD_FIELDS if f != "text"]
_HIDDEN_FROM_LLM = [f for f in RECORD_FIELDS if f not in ("text", "assertion", "section")]


class ClinChunkNodeParser(NodeParser):
    """Parse Documents into TextNodes, one per span of ``spans_key`` of a spacy-clinchunk pipeline.

    Nodes carry ``start_char_idx``/``end_char_idx`` into the document text, the source
    document's metadata and the chunk record's fields (``assertion``, ``section``, ...).
    ``index="focus"`` makes the nodes the chunks' focus spans (``clin_focus``), each with ``parent_id``.
    """

    spans_key: str = attrs.CHUNKS_KEY
    batch_size: int = 32
    index: str = "chunks"
    focus_key: str = attrs.FOCUS_KEY
    _nlp: Any = PrivateAttr()

    def __init__(self, pipeline: Any = "assertion", **kwargs: Any):
        super().__init__(**kwargs)
        self._nlp = load_nlp(pipeline)

    @classmethod
    def class_name(cls) -> str:
        return "ClinChunkNodeParser"

    def _parse_nodes(self, nodes: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any) -> List[BaseNode]:
        items = [(n.get_content(), _doc_id(n.metadata), n.metadata.get("file_path") or n.metadata.get("source")) for n in nodes]
        out: List[BaseNode] = []
        for node, records in zip(nodes, chunk_texts_with_ids(
            self._nlp, items, self.spans_key, self.batch_size, self.index, self.focus_key
        )):
            for record in records:
                out.append(
                    TextNode(
                        id_=record["id"],
                        text=record["text"],
                        start_char_idx=record["start"],
                        end_char_idx=record["end"],
                        metadata=adapter_metadata(record, node.metadata),
                        excluded_embed_metadata_keys=list(node.excluded_embed_metadata_keys) + _HIDDEN_FROM_EMBED,
                        excluded_llm_metadata_keys=list(node.excluded_llm_metadata_keys) + _HIDDEN_FROM_LLM,
                        relationships={NodeRelationship.SOURCE: node.as_related_node_info()},
                    )
                )
        return out

    def get_nodes_from_documents(self, documents: Sequence[Document], show_progress: bool = False, **kwargs: Any) -> List[BaseNode]:
        """As NodeParser's, with our exact offsets (LlamaIndex re-derives them by searching the text)."""
        nodes = super().get_nodes_from_documents(documents, show_progress=show_progress, **kwargs)
        for node in nodes:
            if isinstance(node, TextNode) and "start" in node.metadata:
                node.start_char_idx, node.end_char_idx = node.metadata["start"], node.metadata["end"]
        return nodes


def _doc_id(metadata: Any) -> Any:
    """``doc_id``, ``file_path`` or ``source`` of the metadata; else records hash the text.
    (A Document's ``id_`` is a fresh UUID unless set, so it would change on every run.)"""
    for key in ("doc_id", "file_path", "source"):
        if metadata.get(key) not in (None, ""):
            return str(metadata[key])
    return None


__all__ = ("ClinChunkNodeParser",)
