"""LangChain text splitter and LlamaIndex node parser, with the real packages."""
import sys

import pytest

from spacy_clinchunk.export.records import RECORD_FIELDS

NOTE = (
    "HISTORY:\nShe denies fever or chills. Mild cough for three days.\n"
    "PLAN:\nNo fever today. Chest X-ray today.\n"
)
# fields every chunk's metadata carries, besides the source document's own
CHUNK_FIELDS = set(RECORD_FIELDS)


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
        assert CHUNK_FIELDS <= set(meta)
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
    embedded = nodes[0].get_content(metadata_mode=MetadataMode.EMBED)
    assert "owner: ward 3" in embedded and "start:" not in embedded  # record fields stay out of embeddings
    assert "assertion:" in nodes[0].get_content(metadata_mode=MetadataMode.LLM)
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
    assert nodes[0].metadata["assertion"] == "unassessed"


@pytest.fixture(scope="module")
def flagship():
    from spacy_clinchunk.export.vectorstores import load_nlp

    nlp = load_nlp("assertion")
    nlp.add_pipe("clin_focus")
    return nlp


def test_adapters_carry_focus_and_index_the_focus_spans(flagship):
    """LangChain Documents and LlamaIndex nodes of the flagship: ``focus`` in each chunk's
    metadata; with ``index="focus"`` one per focus span, with its chunk's id."""
    import json

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
    by_id = {d.id: json.loads(d.metadata["focus"] or "[]") for d in chunks}
    assert any(by_id.values()) and focus
    for doc in focus:
        start = doc.metadata["start_index"]
        assert doc.page_content == NOTE[start : start + len(doc.page_content)]
        assert {"start": start, "end": doc.metadata["end"], "text": doc.page_content} in by_id[doc.metadata["parent_id"]]
    assert [(n.text, n.start_char_idx, n.metadata["parent_id"]) for n in nodes] == [
        (d.page_content, d.metadata["start_index"], d.metadata["parent_id"]) for d in focus]
    assert {d.metadata["assertion"] for d in focus if d.page_content == "fever"} == {"negated"}
