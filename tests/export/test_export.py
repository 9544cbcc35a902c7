"""Chunk records of clin_llm_context windows and to_chroma: real MiniLM embeddings, embedded Chroma, any span group."""
import pytest
import spacy

from spacy_clinchunk.attrs import register_extensions
from spacy_clinchunk.export.vectorstores import NO_ASSERTION, adapter_metadata, to_chroma, vector_metadata
from spacy_clinchunk.export.records import RecordError, chunk_records

NOTES = {
    "note_a": (
        "HISTORY:\nPatient presents with crushing chest pain radiating to the left arm since this morning. "
        "Troponin was elevated and the ECG showed ST elevation in the inferior leads.\n\n"
        "MEDICATIONS:\nAspirin 81 mg daily. Metformin 500 mg twice daily for type 2 diabetes.\n"
    ),
    "note_b": (
        "ASSESSMENT:\nThe child has a persistent cough and wheezing, worse at night, consistent with asthma. "
        "No fever. Albuterol inhaler was prescribed.\n\n"
        "PLAN:\nReturn to clinic in two weeks; refer to pulmonology if symptoms persist.\n"
    ),
}


@pytest.fixture(scope="module")
def docs():
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe(
        "clin_llm_context",
        config={"windows": {"@misc": "spacy_clinchunk.TokenWindows.v1", "chunk_size": 24, "chunk_overlap": 4, "align": "sentences"},
                "model": {"@misc": "spacy_clinchunk.HeuristicContext.v1"}},
    )
    out = []
    for doc_id, text in NOTES.items():
        doc = nlp.make_doc(text)
        doc._.clin_doc_id = doc_id
        out.append(nlp(doc))
    return out


def rag_records(doc):
    return chunk_records(doc, "clin_rag_chunks")


def test_window_records_carry_context_and_offsets(docs):
    """The one record model holds what 0.1's seed-shaped ``to_records`` held (its shape is gone)."""
    records = rag_records(docs[0])
    text = NOTES["note_a"]
    for record in records:
        assert record["id"] == f"note_a:{record['start']}-{record['end']}"  # stable record id
        assert record["text"] == text[record["start"] : record["end"]]
        assert record["enriched_text"] == f"{record['context']}\n\n{record['text']}"
        assert 0 < record["token_count"] <= 24
    assert records


@pytest.mark.slow
def test_to_chroma_query_returns_the_chunk_first(docs, tmp_path):
    chromadb = pytest.importorskip("chromadb")
    from chromadb.config import Settings

    from spacy_clinchunk.export.vectorstores import default_embedder, query_chroma

    client = chromadb.PersistentClient(path=str(tmp_path / "chroma"), settings=Settings(anonymized_telemetry=False))
    collection = client.get_or_create_collection("notes", embedding_function=None)
    embedder = default_embedder()
    added = to_chroma(docs, collection, embedder, batch_size=3)
    records = [r for doc in docs for r in rag_records(doc)]
    assert added == len(records) == collection.count()
    stored = collection.get(ids=[records[0]["id"]], include=["documents", "metadatas"])
    assert stored["documents"][0] == records[0]["enriched_text"]
    meta = stored["metadatas"][0]
    assert meta["doc_id"] == "note_a" and meta["text"] == records[0]["text"]
    assert (meta["start"], meta["end"]) == (records[0]["start"], records[0]["end"])
    assert meta["context"] == records[0]["context"] and meta["assertion"] == NO_ASSERTION
    for phrase, doc_id in (
        ("ST elevation in the inferior leads", "note_a"),
        ("persistent cough and wheezing worse at night", "note_b"),
        ("refer to pulmonology", "note_b"),
    ):
        result = query_chroma(collection, phrase, embedder, n_results=3)
        best = result["metadatas"][0][0]
        assert phrase.split()[0] in best["text"], (phrase, best["text"])
        assert best["doc_id"] == doc_id
    assert to_chroma(docs, collection, embedder) == added  # upsert: no duplicates
    assert collection.count() == added


CLINIC = {
    "a/note.txt": "HISTORY:\nShe denies fever or chills. Mild cough for three days.\n"
    "PLAN:\nChest X-ray today.\n",
    "b/note.txt": "ASSESSMENT:\nHigh fever since yesterday, 39.5 C. Productive cough.\n",
}


@pytest.fixture(scope="module")
def assertion_docs(assertion_nlp):
    nlp = assertion_nlp
    register_extensions()
    out = []
    for doc_id, text in CLINIC.items():
        doc = nlp.make_doc(text)
        doc._.clin_doc_id, doc._.clin_source = doc_id, f"notes/{doc_id}"
        out.append(nlp(doc))
    return out


def _collection(tmp_path, name):
    chromadb = pytest.importorskip("chromadb")
    from chromadb.config import Settings

    client = chromadb.PersistentClient(path=str(tmp_path / "chroma"), settings=Settings(anonymized_telemetry=False))
    return client.get_or_create_collection(name, embedding_function=None)  # never Chroma's downloading default


@pytest.mark.slow
def test_to_chroma_any_group_filters_out_negated_findings(assertion_docs, tmp_path):
    from spacy_clinchunk.export.vectorstores import default_embedder, query_chroma

    collection = _collection(tmp_path, "clin")
    embedder = default_embedder()
    records = [r for d in assertion_docs for r in chunk_records(d) if not r["is_header"]]  # headers stay out
    assert to_chroma(assertion_docs, collection, embedder, spans_key="clin_chunks", batch_size=4) == len(records)
    assert collection.count() == len(records)
    stored = collection.get(ids=[r["id"] for r in records], include=["metadatas"])
    by_id = dict(zip(stored["ids"], stored["metadatas"]))
    for record in records:
        meta = by_id[record["id"]]
        assert (meta["doc_id"], meta["source"], meta["start"], meta["end"]) == (
            record["doc_id"], record["source"], record["start"], record["end"])
        assert meta["assertion"] == record["assertion"] and meta.get("section") == record["section"]
    negated = [r for r in records if r["assertion"] == "negated"]
    assert negated and "fever" in negated[0]["text"]
    hits = query_chroma(collection, "fever", embedder, n_results=3)
    assert "negated" in [m["assertion"] for m in hits["metadatas"][0]]  # unfiltered, the denial ranks high
    hits = query_chroma(collection, "fever", embedder, n_results=len(records), where={"assertion": {"$ne": "negated"}})
    kept = hits["metadatas"][0]
    assert len(kept) == len(records) - len(negated)
    assert all(m["assertion"] != "negated" for m in kept) and "fever" in kept[0]["text"]
    only_b = collection.get(where={"doc_id": "b/note.txt"})
    assert sorted(only_b["ids"]) == sorted(r["id"] for r in records if r["doc_id"] == "b/note.txt")


def test_bad_input_gets_defined_values_or_one_clear_line(tmp_path):
    nlp = spacy.blank("en")
    register_extensions()
    doc = nlp("Chest pain.")  # no doc id, no assertion
    doc.spans["clin_chunks"] = [doc[0:2]]
    doc.spans["empty"] = []
    record = chunk_records(doc)[0]
    meta = vector_metadata(record, {"nested": {"a": [1, None]}, "none": None})
    assert meta["assertion"] == NO_ASSERTION and meta["doc_id"].startswith("doc-")
    # an unset field is left out, never ""/-1 (Chroma refuses None): no sentinel to filter around
    assert meta["nested"] == '{"a": [1, null]}' and "none" not in meta and "token_count" not in meta
    assert not {"section", "context", "focus", "attributes", "negated", "sentence_id"} & set(meta)
    assert "" not in meta.values() and -1 not in meta.values()
    assert all(isinstance(v, (str, int, float, bool)) for v in meta.values())
    assert adapter_metadata(record, {"source": "x.txt", "lab": 1})["source"] == "x.txt"  # unset field keeps the source's
    with pytest.raises(RecordError, match="metadata 'when' of type object cannot be stored"):
        vector_metadata(record, {"when": object()})

    def refuse(texts):
        raise AssertionError("nothing to embed")

    collection = _collection(tmp_path, "bad")
    assert to_chroma([doc], collection, refuse, spans_key="empty") == 0
    with pytest.raises(RecordError, match="has no span group 'clin_rag_chunks'"):
        to_chroma([doc], collection, refuse, spans_key="clin_rag_chunks")
    bare = nlp("No chunks here.")
    bare.spans["empty"] = []
    with pytest.raises(RecordError, match=r"neither 'clin_chunks' nor 'clin_rag_chunks' \(groups: empty\)"):
        to_chroma([bare], collection, refuse)
    added = to_chroma([doc], collection, lambda texts: [[1.0, 0.0, 0.0] for _ in texts], spans_key="clin_chunks")
    assert added == 1 and collection.get(ids=[record["id"]])["metadatas"][0]["assertion"] == NO_ASSERTION


def test_flagship_chunks_and_focus_spans_in_chroma(tmp_path):
    """Chroma holds the flagship's fields (assertion, cues, section, focus) and, with
    ``index="focus"``, the focus spans under their own ids with their chunk's id."""
    import json

    from spacy_clinchunk.pipeline import load_pipeline as load_nlp

    nlp = load_nlp("assertion")
    nlp.add_pipe("clin_focus")
    register_extensions()
    doc = nlp.make_doc("HISTORY:\nShe denies fever or chills. Mild cough for three days.\n")
    doc._.clin_doc_id = "a"
    doc = nlp(doc)

    def embed(texts):  # a fixed vector per text: Chroma itself is what is tested here
        return [[float(len(t)), 1.0, float(t.count("e"))] for t in texts]

    chunks, focus = _collection(tmp_path, "chunks"), _collection(tmp_path, "focus")
    records = [r for r in chunk_records(doc) if not r["is_header"]]
    assert to_chroma([doc], chunks, embed, spans_key="clin_chunks") == len(records)
    focus_records = [r for r in chunk_records(doc, index="focus") if not r["is_header"]]
    assert 0 < len(focus_records) < len(doc.spans["clin_focus"])  # "HISTORY" is a title: not indexed
    assert to_chroma([doc], focus, embed, spans_key="clin_chunks", index="focus") == len(focus_records)
    stored = chunks.get(ids=[r["id"] for r in records], include=["metadatas"])
    for record, meta in zip(records, stored["metadatas"]):
        assert meta["assertion"] == record["assertion"] and meta.get("section") == record["section"]
        assert json.loads(meta.get("focus", "[]")) == record["focus"]
        assert json.loads(meta.get("assertion_cues", "[]")) == record["assertion_cues"]
    fever = focus.get(where={"assertion": "negated"}, include=["metadatas", "documents"])
    assert "fever" in fever["documents"]
    parents = {m["parent_id"] for m in fever["metadatas"]}
    assert parents <= {r["id"] for r in records} and parents


def test_identical_notes_without_ids_never_collide_in_chroma(assertion_nlp, tmp_path):
    """Two identical notes without ids: distinct stable ids (the repeat is ``<id>#1``), every
    upsert succeeds, and ``dedupe=True`` stores the note once. The default group is the
    documents' chunks (here ``clin_chunks``), with no spans_key given."""
    text = CLINIC["a/note.txt"]
    docs = [assertion_nlp(text), assertion_nlp(text)]

    def embed(texts):
        return [[float(len(t)), 1.0, float(t.count("e"))] for t in texts]

    collection = _collection(tmp_path, "twins")
    per_note = len([r for r in chunk_records(docs[0]) if not r["is_header"]])
    assert to_chroma(docs, collection, embed, batch_size=3) == 2 * per_note == collection.count()
    ids = collection.get()["ids"]
    base = chunk_records(docs[0])[0]["doc_id"]
    assert {i.split(":")[0] for i in ids} == {base, base + "#1"}
    assert to_chroma(docs, collection, embed) == 2 * per_note == collection.count()  # a rerun updates
    once = _collection(tmp_path, "once")
    assert to_chroma(docs, once, embed, dedupe=True) == per_note == once.count()


@pytest.mark.slow
def test_static_vectors_in_to_chroma_and_in_the_corpus_writer(docs, tmp_path, static_embedder):
    """``embedder="static"`` (the cached model2vec distillation of MiniLM): ``to_chroma`` stores the
    static model's vectors and ``query_chroma`` with the same kind finds the chunk. The corpus
    writer embeds its rows in batches across documents, a repeated text once, and still gives
    every row its own text's vector, in the order of the rows."""
    import numpy as np

    from spacy_clinchunk.corpus.chroma import read_rows
    from spacy_clinchunk.export.records import RecordPlan
    from spacy_clinchunk.export.vectorstores import query_chroma
    from spacy_clinchunk.export.writers import VectorRows

    collection = _collection(tmp_path, "static")
    added = to_chroma(docs, collection, "static")
    stored = collection.get(include=["embeddings", "documents"])
    assert len(stored["ids"]) == added > 0
    assert np.allclose(stored["embeddings"], static_embedder.encode(stored["documents"]), atol=1e-5)
    best = query_chroma(collection, "ST elevation in the inferior leads", "static", n_results=1)["metadatas"][0][0]
    assert best["doc_id"] == "note_a" and "ST elevation" in best["text"]

    writer = VectorRows(tmp_path / "rows", RecordPlan("clin_rag_chunks"), embedder="static")
    writer.EMBED_BATCH = 5  # several batches, each with texts that repeat
    for doc in [*docs, *docs]:
        writer.add(doc, doc._.clin_doc_id)
    writer.close()
    _, documents, _, vectors = read_rows(tmp_path / "rows")
    assert len(documents) == 2 * added and vectors.shape == (2 * added, static_embedder.model.dim)
    assert np.allclose(vectors, static_embedder.encode(documents), atol=1e-5)
