"""Parent passages, header flags and status booleans of every record (issue 42), with the
shipped default pipeline: the sentence and the section block of each chunk, blocks as records
of their own within a token budget, headers flagged and left out of an index, and one
boolean per status for combined filters."""
import json
import subprocess
import sys

import pytest

from conftest import EXAMPLE_NOTE, ROOT
from spacy_clinchunk.components.token_counters import WordCounter, WordpieceEstimate, embedder_token_counter_v1, wordpiece_estimate
from spacy_clinchunk.export.records import RECORD_FIELDS, RecordPlan, records_of, to_arrow
from spacy_clinchunk.export.writers import write_records
from spacy_clinchunk.pipeline import resolve_pipeline

NOTE = """HISTORY OF PRESENT ILLNESS:
She reports a dry cough for three days. She denies fever or chills.
PAST MEDICAL HISTORY:
Asthma since childhood. No history of seizures.
FAMILY HISTORY:
Her mother had breast cancer. Family history is negative for diabetes.
PHYSICAL EXAMINATION:
Chest: clear to auscultation. Heart: regular rhythm.
"""
FLAGS = ("negated", "normal", "uncertain", "historical", "hypothetical", "family")


@pytest.fixture(scope="module")
def resolved():
    return resolve_pipeline("default")


@pytest.fixture(scope="module")
def doc(resolved):
    made = resolved.nlp.make_doc(NOTE)
    made._.clin_doc_id = "note"
    return resolved.nlp(made)


def _by_text(records):
    return {r["text"]: r for r in records}


def test_every_chunk_carries_its_sentence_block_and_section_title(resolved, doc):
    records = records_of(doc, resolved)
    assert records and all(list(r) == list(RECORD_FIELDS) for r in records)
    for r in records:
        for kind in ("sentence", "block"):
            start, end = r[f"{kind}_start"], r[f"{kind}_end"]
            assert r[f"{kind}_text"] == NOTE[start:end] and start <= r["start"] < r["end"] <= end
            assert r[f"{kind}_id"] == f"note:{kind}:{start}-{end}"
        assert r["parent_id"] == r["block_id"]  # small-to-big: a chunk's parent is its block
    found = _by_text(records)
    cancer = found["mother had breast cancer"]
    assert cancer["sentence_text"] == "FAMILY HISTORY:\nHer mother had breast cancer."  # the sentencizer's sentence
    assert cancer["block_text"] == "FAMILY HISTORY:\nHer mother had breast cancer. Family history is negative for diabetes."
    assert cancer["section_title"] == "FAMILY HISTORY"
    # a section that is only its header heads the field lines below it
    assert found["clear to auscultation"]["section_title"] == "PHYSICAL EXAMINATION"
    assert found["clear to auscultation"]["block_text"].startswith("PHYSICAL EXAMINATION:\nChest:")


def test_blocks_are_records_within_the_budget_cut_at_sentences(resolved, doc):
    blocks = records_of(doc, resolved, index="blocks")
    assert [b["section_title"] for b in blocks] == [
        "HISTORY OF PRESENT ILLNESS", "PAST MEDICAL HISTORY", "FAMILY HISTORY", "PHYSICAL EXAMINATION"]
    for b in blocks:
        assert list(b) == list(RECORD_FIELDS) and b["text"] == NOTE[b["start"]:b["end"]] == b["block_text"]
        assert b["id"] == b["block_id"] and b["spans_key"] == "blocks" and b["assertion"] is None
    chunk_blocks = {r["block_id"] for r in records_of(doc, resolved)}
    assert chunk_blocks == {b["id"] for b in blocks}
    # a budget of 8 words: sections split at sentence ends, an 11-word sentence at its chunks
    small = RecordPlan(resolved.chunks_key, resolved.focus_key, resolved.fields, block_tokens=8, token_counter=WordCounter())
    cut = records_of(doc, small, index="blocks")
    assert [b["text"] for b in cut] == [
        "HISTORY OF PRESENT ILLNESS:", "She reports a dry cough for three days.", "She denies fever or chills.",
        "PAST MEDICAL HISTORY:\nAsthma since childhood.", "No history of seizures.",
        "FAMILY HISTORY:\nHer mother had breast cancer.", "Family history is negative for diabetes.",
        "PHYSICAL EXAMINATION:\nChest: clear to auscultation.", "Heart: regular rhythm."]
    assert all(len(b["text"].split()) <= 8 for b in cut)
    chunk_starts = {r["start"] for r in records_of(doc, small)}
    sentence_starts = {r["sentence_start"] for r in records_of(doc, small)}
    assert all(b["start"] in chunk_starts | sentence_starts for b in cut)


def test_headers_are_flagged_and_left_out_of_record_files_unless_kept(resolved, doc, tmp_path):
    found = _by_text(records_of(doc, resolved))
    headers = sorted(t for t, r in found.items() if r["is_header"])
    assert headers == ["Chest", "FAMILY HISTORY", "HISTORY OF PRESENT ILLNESS", "PAST MEDICAL HISTORY", "PHYSICAL EXAMINATION"]
    assert not found["mother had breast cancer"]["is_header"]
    out = tmp_path / "records.jsonl"
    written = write_records([doc], "records", str(out), pipeline=resolved)
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert written == len(lines) == len(found) - len(headers) and not any(r["is_header"] for r in lines)
    assert write_records([doc], "records", str(tmp_path / "all.jsonl"), pipeline=resolved, keep_headers=True) == len(found)


def test_one_boolean_per_status_for_combined_filters(resolved, doc):
    records = records_of(doc, resolved)
    family_not_negated = [r["text"] for r in records if r["family"] and not r["negated"]]
    historical_not_negated = [r["text"] for r in records if r["historical"] and not r["negated"]]
    assert family_not_negated == ["mother had breast cancer"]
    assert historical_not_negated == ["Asthma since childhood"]
    negative = _by_text(records)["Family history is negative for diabetes"]
    assert negative["assertion"] == "negated" and negative["family"] and negative["negated"]  # the label alone loses family
    assert all(isinstance(r[f], bool) for r in records for f in FLAGS)
    assert not any("assertion_statuses" in r["attributes"] or "focus_of" in r["attributes"] for r in records)


def test_records_of_the_shipped_note_are_clean(resolved):
    """The default on the bundled note: no ``focus_of`` on a chunk record (it is a focus
    record's ``parent_id``), no chunk led by a separator, offsets exact, Arrow types right."""
    text = EXAMPLE_NOTE.read_text(encoding="utf-8")
    records = records_of(resolved.nlp(text), resolved)
    assert records and not [r for r in records if "focus_of" in r["attributes"]]
    assert not [r["text"] for r in records if r["text"][0] in ",;:"]
    assert all(text[r["start"]:r["end"]] == r["text"] for r in records)
    table = to_arrow(records)
    assert str(table.schema.field("family").type) == "bool" and str(table.schema.field("block_start").type) == "int64"
    assert table.column("is_header").to_pylist() == [r["is_header"] for r in records]


def test_wordpiece_estimate_is_close_to_minilm_on_english_notes():
    """The default block counter against the real tokenizer of the bundled MiniLM."""
    words = EXAMPLE_NOTE.read_text(encoding="utf-8").split()
    real, estimate = sum(embedder_token_counter_v1()(words)), sum(WordpieceEstimate()(words))
    assert 0.95 * real <= estimate <= 1.1 * real


def test_the_estimate_follows_the_language_of_the_letter():
    """German words split into many more MiniLM pieces: the estimate for a German letter counts 3
    characters a piece, so its blocks keep to the budget (7 counted 0.6 of the real pieces)."""
    from conftest import EXAMPLE_NOTE as note

    words = note.with_name("arztbrief_de.txt").read_text(encoding="utf-8").split()
    real = sum(embedder_token_counter_v1()(words))
    assert sum(WordpieceEstimate()(words)) < 0.8 * real  # the English estimate undercounts German
    assert 0.85 * real <= sum(wordpiece_estimate("de")(words)) <= 1.2 * real
    assert wordpiece_estimate("en").chars_per_piece == 7 and wordpiece_estimate(None).chars_per_piece == 3


def test_the_cli_indexes_blocks_and_keeps_headers_on_request(tmp_path):
    note = tmp_path / "note.txt"
    note.write_text(NOTE, encoding="utf-8")

    def run(*flags):
        command = [sys.executable, "-m", "spacy_clinchunk", "chunk", str(note), "--format", "records", *flags]
        done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=ROOT)
        assert done.returncode == 0, done.stderr[-2000:]
        return [json.loads(line) for line in done.stdout.splitlines()]

    blocks = run("--index", "blocks")
    assert [b["section_title"] for b in blocks][:2] == ["HISTORY OF PRESENT ILLNESS", "PAST MEDICAL HISTORY"]
    chunks, kept = run(), run("--keep-headers")
    assert not any(r["is_header"] for r in chunks) and len(kept) - len(chunks) == 5
    assert {r["block_id"] for r in chunks} <= {b["id"] for b in blocks}


def test_headers_are_the_same_with_or_without_the_pipeline_at_hand(resolved, doc):
    """A doc read back from a DocBin (records by keywords, no ``nlp``) flags the same headers."""
    from spacy.tokens import DocBin

    from spacy_clinchunk.export.records import chunk_records

    again = list(DocBin(docs=[doc], store_user_data=True).get_docs(resolved.nlp.vocab))[0]
    assert [r["is_header"] for r in chunk_records(again)] == [r["is_header"] for r in records_of(doc, resolved)]
    assert [r["block_id"] for r in chunk_records(again)] == [r["block_id"] for r in records_of(doc, resolved)]


def test_a_corpus_run_leaves_headers_out_and_keeps_them_on_request(tmp_path):
    """Corpus shards write the same records as ``chunk``: headers out by default, in with
    ``--keep-headers``; a rerun with the other choice redoes the shard instead of skipping it."""
    note = tmp_path / "in" / "note.txt"
    note.parent.mkdir()
    note.write_text(NOTE, encoding="utf-8")

    def run(*flags):
        command = [sys.executable, "-m", "spacy_clinchunk", "chunk", str(note.parent), "--format", "records",
                   "--engine", "local", "--no-progress", "-o", str(tmp_path / "out"), *flags]
        done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=ROOT)
        assert done.returncode == 0, done.stderr[-2000:]
        shard = next((tmp_path / "out" / "shards").glob("*.jsonl"))
        return [json.loads(line) for line in shard.read_text(encoding="utf-8").splitlines()]

    chunks, kept = run(), run("--keep-headers")
    assert not any(r["is_header"] for r in chunks) and len(kept) - len(chunks) == 5
    assert sum(r["is_header"] for r in kept) == 5
