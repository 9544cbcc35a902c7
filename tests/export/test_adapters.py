"""LangChain text splitter and LlamaIndex node parser, with the real packages."""
import sys

import pytest

from conftest import llm_setting
from spacy_clinchunk.export.records import RECORD_FIELDS

NOTE = (
    "HISTORY:\nShe denies fever or chills. Mild cough for three days.\n"
    "PLAN:\nNo fever today. Chest X-ray today.\n"
)
# fields every chunk's metadata carries, besides the source document's own (the assertion
# pipeline sets these; what it leaves unset is missing, never a sentinel)
CHUNK_FIELDS = {"id", "doc_id", "source", "spans_key", "index", "start", "end", "assertion", "assertion_cues", "focus"}
SENTINELS = ("", -1, "unassessed", "[]", "{}")


@pytest.fixture(scope="module")
def nlp(assertion_nlp):
    return assertion_nlp


def test_adapters_are_not_imported_with_the_package():
    import spacy_clinchunk  # noqa: F401

    import subprocess

    code = "import spacy_clinchunk, sys; print(any(m.startswith(('langchain', 'llama_index')) for m in sys.modules))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"


def _check_chunks(texts_offsets, metadatas, text):
    assert texts_offsets and len(texts_offsets) == len(metadatas)
    for (chunk, start, end), meta in zip(texts_offsets, metadatas):
        assert chunk == text[start:end]
        assert CHUNK_FIELDS <= set(meta) <= set(RECORD_FIELDS) | {"owner", "start_index", "window"}
        assert "text" not in meta and "enriched_text" not in meta  # the chunk text is the content, once
        assert not [k for k, v in meta.items() if v is None or (not isinstance(v, bool) and v in SENTINELS)]
        assert isinstance(meta["assertion_cues"], list) and isinstance(meta["focus"], list)  # lists as lists
        assert (meta["start"], meta["end"]) == (start, end)
        assert meta["owner"] == "ward 3" and meta["source"] == "notes/a.txt"  # the document's own metadata
        assert meta["id"] == f"notes/a.txt:{start}-{end}"
    by_text = {chunk: meta for (chunk, _, _), meta in zip(texts_offsets, metadatas)}
    assert [m["assertion"] for t, m in by_text.items() if "fever" in t] == ["negated", "negated"]
    assert {m["assertion"] for t, m in by_text.items() if "cough" in t} == {"affirmed"}


def test_langchain_splitter_from_nlp_name_or_config(nlp):
    pytest.importorskip("langchain_text_splitters")
    from langchain_core.documents import Document

    from spacy_clinchunk.export.langchain import ClinChunkTextSplitter

    splitter = ClinChunkTextSplitter(nlp)
    source = Document(page_content=NOTE, metadata={"source": "notes/a.txt", "owner": "ward 3"})
    docs = splitter.split_documents([source])
    _check_chunks(
        [(d.page_content, d.metadata["start_index"], d.metadata["start_index"] + len(d.page_content)) for d in docs],
        [d.metadata for d in docs],
        NOTE,
    )
    assert source.metadata == {"source": "notes/a.txt", "owner": "ward 3"}  # not modified
    assert [d.id for d in docs] == [d.metadata["id"] for d in docs]
    assert splitter.split_text(NOTE) == [d.page_content for d in docs]
    from_name = ClinChunkTextSplitter("assertion").split_documents([source])
    from_config = ClinChunkTextSplitter("configs/assertion.cfg").split_documents([source])
    assert [d.metadata for d in from_name] == [d.metadata for d in from_config] == [d.metadata for d in docs]
    plain = splitter.create_documents([NOTE])  # no metadata: a stable hash id
    assert plain[0].metadata["doc_id"].startswith("doc-") and plain[0].metadata["start_index"] == plain[0].metadata["start"]


@pytest.mark.slow
def test_llama_index_parser_keeps_offsets_and_metadata(nlp):
    pytest.importorskip("llama_index.core")
    from llama_index.core.schema import Document, MetadataMode, NodeRelationship

    from spacy_clinchunk.export.llama_index import ClinChunkNodeParser

    parser = ClinChunkNodeParser(nlp)
    source = Document(text=NOTE, metadata={"source": "notes/a.txt", "owner": "ward 3"})
    nodes = parser.get_nodes_from_documents([source])
    _check_chunks([(n.text, n.start_char_idx, n.end_char_idx) for n in nodes], [n.metadata for n in nodes], NOTE)
    assert all(n.relationships[NodeRelationship.SOURCE].node_id == source.doc_id for n in nodes)
    for node in nodes:  # what is embedded: the source's own metadata, then the chunk, once
        assert node.get_content(metadata_mode=MetadataMode.EMBED) == f"owner: ward 3\n\n{node.text}"
        llm = node.get_content(metadata_mode=MetadataMode.LLM)
        assert f"assertion: {node.metadata['assertion']}" in llm and "text:" not in llm and llm.count(node.text) == 1
    again = ClinChunkNodeParser("assertion").get_nodes_from_documents([Document(text=NOTE, metadata=source.metadata)])
    assert [n.node_id for n in again] == [n.node_id for n in nodes]  # stable across runs


def test_repeated_text_keeps_exact_offsets():
    """LlamaIndex re-derives offsets by searching the text; ours are the span's own."""
    pytest.importorskip("llama_index.core")
    import spacy
    from llama_index.core.schema import Document
    from spacy.language import Language

    from spacy_clinchunk.export.llama_index import ClinChunkNodeParser

    @Language.component("test_last_no_fever")
    def last_no_fever(doc):
        doc.spans["clin_chunks"] = [doc.char_span(doc.text.rindex("No fever."), len(doc.text.rstrip()))]
        return doc

    nlp = spacy.blank("en")
    nlp.add_pipe("test_last_no_fever")
    text = "No fever.\nNo fever.\nNo fever."
    nodes = ClinChunkNodeParser(nlp).get_nodes_from_documents([Document(text=text, metadata={"doc_id": "r"})])
    assert [(n.start_char_idx, n.end_char_idx) for n in nodes] == [(20, 29)]
    assert "assertion" not in nodes[0].metadata  # not assessed: missing, not a sentinel


@pytest.fixture(scope="module")
def flagship():
    from spacy_clinchunk.pipeline import load_pipeline as load_nlp

    nlp = load_nlp("assertion")
    nlp.add_pipe("clin_focus")
    return nlp


def test_adapters_carry_focus_and_index_the_focus_spans(flagship):
    """LangChain Documents and LlamaIndex nodes of the flagship: ``focus`` in each chunk's
    metadata; with ``index="focus"`` one per focus span, with its chunk's id."""
    pytest.importorskip("langchain_text_splitters")
    pytest.importorskip("llama_index.core")
    from langchain_core.documents import Document
    from llama_index.core.schema import Document as LlamaDocument

    from spacy_clinchunk.export.langchain import ClinChunkTextSplitter
    from spacy_clinchunk.export.llama_index import ClinChunkNodeParser

    meta = {"source": "notes/a.txt", "owner": "ward 3"}
    chunks = ClinChunkTextSplitter(flagship).split_documents([Document(page_content=NOTE, metadata=meta)])
    focus = ClinChunkTextSplitter(flagship, index="focus").split_documents([Document(page_content=NOTE, metadata=meta)])
    nodes = ClinChunkNodeParser(flagship, index="focus").get_nodes_from_documents([LlamaDocument(text=NOTE, metadata=meta)])
    by_id = {d.id: d.metadata["focus"] for d in chunks}  # a list, as in the record
    assert any(by_id.values()) and focus
    for doc in focus:
        start = doc.metadata["start_index"]
        assert doc.page_content == NOTE[start : start + len(doc.page_content)]
        assert {"start": start, "end": doc.metadata["end"], "text": doc.page_content} in by_id[doc.metadata["parent_id"]]
    assert [(n.text, n.start_char_idx, n.metadata["parent_id"]) for n in nodes] == [
        (d.page_content, d.metadata["start_index"], d.metadata["parent_id"]) for d in focus]
    assert {d.metadata["assertion"] for d in focus if d.page_content == "fever"} == {"negated"}


# -- what each framework embeds ----------------------------------------------------------
CONTEXT_NOTE = (
    "HISTORY:\nShe denies fever or chills. Mild cough for three days. SpO2 96% on RA.\n"
    "PLAN:\nNo fever today. Chest X-ray today. Return if short of breath.\n"
)
ANSWER = "This part of the clinical note begins with"  # how the loopback server starts every context


def fixed_vector(text):
    """A deterministic vector per text: the store, not a model, is what is tested."""
    import hashlib

    return [b / 255 for b in hashlib.sha256(text.encode("utf-8")).digest()[:8]]


class RecordingEmbedder:
    """An embedder (a callable, as our adapters take) that remembers every text it embedded."""

    def __init__(self):
        self.seen = []

    def __call__(self, texts):
        self.seen.extend(texts)
        return [fixed_vector(t) for t in texts]


@pytest.fixture(scope="module")
def rag_nlp(module_server):
    """The shipped ``contextual_rag`` strategy (token windows + LLM context) on the loopback server."""
    from spacy_clinchunk.pipeline import resolve_pipeline

    overrides = {"components.clin_llm_context.model.base_url": module_server.url,
                 "components.clin_llm_context.model.max_retries": 1,
                 llm_setting("chunk_size"): 16, llm_setting("chunk_overlap"): 0}
    return resolve_pipeline("contextual_rag", overrides).nlp


def test_langchain_embeds_the_enriched_text_and_keeps_the_chunk_for_citation(rag_nlp):
    pytest.importorskip("langchain_text_splitters")
    from langchain_core.documents import Document
    from langchain_core.vectorstores import InMemoryVectorStore

    from spacy_clinchunk.export.langchain import ClinChunkEmbeddings, ClinChunkTextSplitter

    splitter = ClinChunkTextSplitter(rag_nlp)  # its chunks: the pipeline's windows (clin_rag_chunks)
    docs = splitter.split_documents([Document(page_content=CONTEXT_NOTE, metadata={"source": "ward3/a.txt"})])
    assert len(docs) >= 3 and splitter.spans_key == "clin_rag_chunks"
    for doc in docs:
        meta = doc.metadata
        start = meta["start_index"]
        assert meta["text"] == CONTEXT_NOTE[start : start + len(meta["text"])] == CONTEXT_NOTE[meta["start"] : meta["end"]]
        assert meta["context"].startswith(ANSWER)
        assert doc.page_content == f"{meta['context']}\n\n{meta['text']}"  # what gets embedded
    embedder = RecordingEmbedder()
    store = InMemoryVectorStore(ClinChunkEmbeddings(embedder))
    assert store.add_documents(docs) == [d.id for d in docs]
    assert embedder.seen == [d.page_content for d in docs]
    assert [store.store[d.id]["vector"] for d in docs] == [fixed_vector(d.page_content) for d in docs]
    raw = ClinChunkTextSplitter(rag_nlp, page_content="text").split_documents(
        [Document(page_content=CONTEXT_NOTE, metadata={"source": "ward3/a.txt"})])
    assert [d.page_content for d in raw] == [d.metadata["text"] for d in docs]
    assert all("text" not in d.metadata and d.metadata["context"].startswith(ANSWER) for d in raw)


def test_llama_index_embeds_the_context_with_the_chunk_once(rag_nlp):
    pytest.importorskip("llama_index.core")
    from llama_index.core import VectorStoreIndex
    from llama_index.core.schema import Document, MetadataMode

    from spacy_clinchunk.export.llama_index import ClinChunkEmbedding, ClinChunkNodeParser

    nodes = ClinChunkNodeParser(rag_nlp).get_nodes_from_documents([Document(text=CONTEXT_NOTE, metadata={"doc_id": "a"})])
    assert len(nodes) >= 3
    for node in nodes:
        assert node.text == CONTEXT_NOTE[node.start_char_idx : node.end_char_idx]
        assert node.metadata["context"].startswith(ANSWER) and "text" not in node.metadata
        assert node.get_content(metadata_mode=MetadataMode.EMBED) == f"context: {node.metadata['context']}\n\n{node.text}"
        llm = node.get_content(metadata_mode=MetadataMode.LLM)
        assert llm.count(node.text) == 1 and f"context: {node.metadata['context']}" in llm
    embedder = RecordingEmbedder()
    index = VectorStoreIndex(nodes, embed_model=ClinChunkEmbedding(embedder))
    embedded = [n.get_content(metadata_mode=MetadataMode.EMBED) for n in nodes]
    assert embedder.seen == embedded
    stored = index.vector_store.data.embedding_dict
    assert [stored[n.node_id] for n in nodes] == [fixed_vector(t) for t in embedded]


@pytest.mark.slow
def test_offline_embedders_are_the_bundled_model_in_each_framework(nlp):
    pytest.importorskip("langchain_text_splitters")
    pytest.importorskip("llama_index.core")
    import numpy as np
    from langchain_core.documents import Document
    from langchain_core.vectorstores import InMemoryVectorStore

    from spacy_clinchunk.export.langchain import ClinChunkEmbeddings, ClinChunkTextSplitter
    from spacy_clinchunk.export.llama_index import ClinChunkEmbedding
    from spacy_clinchunk.export.vectorstores import default_embedder

    texts = ["She denies fever or chills.", "Mild cough for three days."]
    reference = default_embedder().encode(texts)
    langchain, llama = ClinChunkEmbeddings(), ClinChunkEmbedding()
    assert np.allclose(langchain.embed_documents(texts), reference, atol=1e-6)
    assert np.allclose(llama.get_text_embedding_batch(texts), reference, atol=1e-6)
    assert np.allclose(langchain.embed_query(texts[1]), reference[1], atol=1e-6)
    assert np.allclose(llama.get_query_embedding(texts[1]), reference[1], atol=1e-6)
    store = InMemoryVectorStore(langchain)
    store.add_documents(ClinChunkTextSplitter(nlp).split_documents([Document(page_content=NOTE, metadata={"doc_id": "a"})]))
    assert "cough" in store.similarity_search("persistent coughing", k=1)[0].page_content


def test_identical_texts_without_ids_get_distinct_stable_ids_or_one_copy(nlp):
    pytest.importorskip("langchain_text_splitters")
    pytest.importorskip("llama_index.core")
    from langchain_core.documents import Document
    from llama_index.core.schema import Document as LlamaDocument

    from spacy_clinchunk.export.langchain import ClinChunkTextSplitter
    from spacy_clinchunk.export.llama_index import ClinChunkNodeParser

    splitter = ClinChunkTextSplitter(nlp)
    docs = splitter.create_documents([NOTE, NOTE])
    ids = [d.id for d in docs]
    assert len(set(ids)) == len(ids) and ids == [d.id for d in splitter.create_documents([NOTE, NOTE])]
    first, second = ids[: len(ids) // 2], ids[len(ids) // 2 :]
    assert [i.replace(first[0].split(":")[0], "") for i in first] == [i.replace(second[0].split(":")[0], "") for i in second]
    assert second[0].split(":")[0] == first[0].split(":")[0] + "#1"  # the repeat: same id, its position
    assert [d.id for d in ClinChunkTextSplitter(nlp, dedupe=True).create_documents([NOTE, NOTE])] == first
    pages = [Document(page_content=NOTE, metadata={"source": "a.pdf"}), Document(page_content=NOTE[:40], metadata={"source": "a.pdf"})]
    paged = [d.id for d in splitter.split_documents(pages)]  # two pages of one source
    assert len(set(paged)) == len(paged)
    nodes = ClinChunkNodeParser(nlp).get_nodes_from_documents([LlamaDocument(text=NOTE), LlamaDocument(text=NOTE)])
    assert len({n.node_id for n in nodes}) == len(nodes) == len(ids)
    once = ClinChunkNodeParser(nlp, dedupe=True).get_nodes_from_documents([LlamaDocument(text=NOTE), LlamaDocument(text=NOTE)])
    assert [n.node_id for n in once] == first


@pytest.mark.parametrize("sizes", [{"chunk_size": 2000, "chunk_overlap": 200}, {"chunk_size": 400}, {"chunk_overlap": 0}])
def test_langchain_size_settings_are_refused_in_one_line_not_ignored(nlp, sizes):
    from spacy_clinchunk.export.langchain import ClinChunkTextSplitter

    with pytest.raises(ValueError) as caught:
        ClinChunkTextSplitter(nlp, **sizes)
    message = str(caught.value)
    assert "\n" not in message and all(name in message for name in sizes)
    assert "clin_size_ceiling.max_tokens" in message
