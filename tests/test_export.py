"""to_records and to_chroma: seed-shaped records, real MiniLM embeddings, embedded Chroma."""
import pytest
import spacy

import spacy_clinchunk
from spacy_clinchunk.export import to_chroma, to_records

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
        config={"chunk_size": 24, "chunk_overlap": 4, "align": "sentences", "cache_path": None,
                "model": {"@misc": "spacy_clinchunk.HeuristicContext.v1"}},
    )
    out = []
    for doc_id, text in NOTES.items():
        doc = nlp.make_doc(text)
        doc._.doc_id = doc_id
        out.append(nlp(doc))
    return out


def test_to_records_has_the_seed_fields(docs):
    records = spacy_clinchunk.to_records(docs[0])
    assert records and records == to_records(docs[0])
    text = NOTES["note_a"]
    for i, record in enumerate(records):
        assert set(record) == {"id", "original_text", "context", "enriched_text", "start_offset", "end_offset", "token_count"}
        assert record["id"] == f"note_a_chunk_{i}"
        assert record["original_text"] == text[record["start_offset"] : record["end_offset"]]
        assert record["enriched_text"] == f"{record['context']}\n\n{record['original_text']}"
        assert 0 < record["token_count"] <= 24
    assert to_records(spacy.blank("en")("no group here")) == []


def test_to_chroma_query_returns_the_chunk_first(docs, tmp_path):
    chromadb = pytest.importorskip("chromadb")
    from chromadb.config import Settings

    from spacy_clinchunk.export import default_embedder, query_chroma

    client = chromadb.PersistentClient(path=str(tmp_path / "chroma"), settings=Settings(anonymized_telemetry=False))
    collection = client.get_or_create_collection("notes", embedding_function=None)
    embedder = default_embedder()
    added = to_chroma(docs, collection, embedder, batch_size=3)
    records = [r for doc in docs for r in to_records(doc)]
    assert added == len(records) == collection.count()
    stored = collection.get(ids=[records[0]["id"]], include=["documents", "metadatas"])
    assert stored["documents"][0] == records[0]["enriched_text"]
    meta = stored["metadatas"][0]
    assert meta["doc_id"] == "note_a" and meta["original_text"] == records[0]["original_text"]
    assert (meta["start_offset"], meta["end_offset"]) == (records[0]["start_offset"], records[0]["end_offset"])
    for phrase, doc_id in (
        ("ST elevation in the inferior leads", "note_a"),
        ("persistent cough and wheezing worse at night", "note_b"),
        ("refer to pulmonology", "note_b"),
    ):
        result = query_chroma(collection, phrase, embedder, n_results=3)
        best = result["metadatas"][0][0]
        assert phrase.split()[0] in best["original_text"], (phrase, best["original_text"])
        assert best["doc_id"] == doc_id
    assert to_chroma(docs, collection, embedder) == added  # upsert: no duplicates
    assert collection.count() == added
