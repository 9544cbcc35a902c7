"""Configs assemble, pipelines round-trip through disk, DocBin and other pipelines."""
import subprocess
import sys

import pytest
import spacy
from spacy.tokens import DocBin

from conftest import CONFIG_DIR, EXAMPLE_NOTE, chunk_texts
from spacy_clinchunk.pipeline import load_pipeline

TEXT = (
    "CLINICAL HISTORY:\nPatient has arachnodactyly, i.e., long fingers; heart rate is 98.6 bpm.\n"
    "Patient has seizures but no developmental delay. Dr. Smith gave aspirin 81 mg p.o. daily.\n\n"
    "MEDICATIONS:\n1. Metformin 500 mg b.i.d.\n2. Lisinopril 10 mg daily\n"
)
STRUCTURAL_CONFIGS = ["simple", "punct_conj_cleaned"]


def offsets(doc, key="clin_chunks"):
    return [(s.start_char, s.end_char) for s in doc.spans[key]]


@pytest.mark.parametrize("name", STRUCTURAL_CONFIGS)
def test_config_assembles_and_round_trips_through_disk(name, tmp_path):
    nlp = load_pipeline(CONFIG_DIR / f"{name}.cfg")
    expected = offsets(nlp(TEXT))
    assert expected
    nlp.to_disk(tmp_path / name)
    reloaded = spacy.load(tmp_path / name)
    assert offsets(reloaded(TEXT)) == expected


def test_punct_conj_cleaned_on_the_seed_examples():
    nlp = load_pipeline(CONFIG_DIR / "punct_conj_cleaned.cfg")
    assert chunk_texts(nlp("Patient has arachnodactyly, i.e., long fingers; heart rate is 98.6 bpm.")) == [
        "Patient has arachnodactyly",
        "i.e., long fingers",
        "heart rate is 98.6 bpm",
    ]
    doc = nlp(TEXT)
    assert "Metformin 500 mg b.i.d." in chunk_texts(doc)
    assert "CLINICAL HISTORY" in chunk_texts(doc)


def test_spacy_assemble_cli_gives_the_same_chunks(tmp_path):
    out = tmp_path / "assembled"
    result = subprocess.run(
        [sys.executable, "-m", "spacy", "assemble", str(CONFIG_DIR / "punct_conj_cleaned.cfg"), str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    in_memory = load_pipeline(CONFIG_DIR / "punct_conj_cleaned.cfg")
    assert offsets(spacy.load(out)(TEXT)) == offsets(in_memory(TEXT))


def test_resource_override_survives_to_disk_and_load(tmp_path):
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("clin_cleaner", config={"overrides": {"leading_cleanup_words": ["patient"]}})
    assert chunk_texts(nlp("Patient reports headache.")) == ["reports headache."]
    nlp.to_disk(tmp_path / "p")
    assert chunk_texts(spacy.load(tmp_path / "p")("Patient reports headache.")) == ["reports headache."]


def test_docbin_keeps_span_groups_and_attributes():
    from spacy_clinchunk.attrs import register_extensions

    register_extensions()
    nlp = load_pipeline(CONFIG_DIR / "punct_conj_cleaned.cfg")
    doc = nlp(TEXT)
    doc._.clin_doc_id = "note-1"
    doc.spans["clin_chunks"][0]._.clin_assertion = "affirmed"
    data = DocBin(docs=[doc], store_user_data=True).to_bytes()
    restored = list(DocBin().from_bytes(data).get_docs(nlp.vocab))[0]
    assert offsets(restored) == offsets(doc)
    assert restored._.clin_doc_id == "note-1"
    assert restored.spans["clin_chunks"][0]._.clin_assertion == "affirmed"


def test_components_added_to_a_medspacy_pipeline_after_pyrush():
    medspacy = pytest.importorskip("medspacy")
    nlp = medspacy.load(enable=["medspacy_pyrush"])
    nlp.add_pipe("clin_punct_splitter")
    nlp.add_pipe("clin_conj_splitter")
    nlp.add_pipe("clin_cleaner")
    doc = nlp("Patient has seizures but no developmental delay. She denies fever, chills, or night sweats.")
    assert chunk_texts(doc) == ["Patient has seizures", "no developmental delay", "She denies fever", "chills", "night sweats"]


def test_first_splitter_seeds_from_paragraphs_without_sentence_boundaries(blank_nlp):
    blank_nlp.add_pipe("clin_conj_splitter")
    doc = blank_nlp("Fever and cough since Monday and rash today\n\nSecond paragraph here")
    assert chunk_texts(doc) == ["Fever and cough since Monday", "and rash today", "Second paragraph here"]


def test_multiprocess_pipe_matches_single_process():
    nlp = load_pipeline(CONFIG_DIR / "punct_conj_cleaned.cfg")
    texts = [TEXT, "No fever but has cough.", "", "Plain text without punctuation and a list"] * 3
    single = [offsets(d) for d in nlp.pipe(texts)]
    multi = [offsets(d) for d in nlp.pipe(texts, n_process=2, batch_size=4)]
    assert multi == single


def test_example_note_exists_and_chunks():
    if not EXAMPLE_NOTE.exists():
        pytest.fail(f"missing example note {EXAMPLE_NOTE}")
    text = EXAMPLE_NOTE.read_text(encoding="utf-8")
    assert 600 <= len(text.split()) <= 1000
    doc = load_pipeline(CONFIG_DIR / "punct_conj_cleaned.cfg")(text)
    assert len(doc.spans["clin_chunks"]) > 50
