"""TransformerListener.v1: clin_semantic_window on the vectors of an upstream spacy-transformers
``transformer`` (the real component on the bundled MiniLM; no mocks)."""
import subprocess
import sys

import numpy as np
import pytest
import spacy

from conftest import CONFIG_DIR, EXAMPLE_NOTE
from spacy_clinchunk.embed.embedders import EmbedderError

LISTENER = {"@misc": "spacy_clinchunk.TransformerListener.v1"}
TEXT = (
    "CLINICAL HISTORY:\nPatient has arachnodactyly, i.e., long fingers; heart rate is 98.6 bpm.\n"
    "Creatinine 1.2 mg/dL. post-op x-ray of the L4/L5 region was unremarkable and the wound healed well "
    "although she later reported intermittent palpitations and shortness of breath on exertion.\n"
)


def offsets(doc, key="clin_chunks"):
    return [(s.start_char, s.end_char) for s in doc.spans[key]]


def assert_exact_spans(doc, key="clin_chunks"):
    spans = list(doc.spans[key])
    assert [s.start_char for s in spans] == sorted(s.start_char for s in spans)
    for span in spans:
        assert span.text == doc.text[span.start_char:span.end_char]
        assert span.text.strip() == span.text and span.text


# -- no transformer needed: the pipeline checks -----------------------------------------------
def test_initialize_without_an_upstream_transformer_fails_clearly():
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("clin_semantic_window", config={"embedder": LISTENER, "mode": "pooled"})
    with pytest.raises(EmbedderError, match="needs a 'transformer' component"):
        nlp.initialize()


def test_exact_mode_with_the_listener_is_refused_at_construction():
    nlp = spacy.blank("en")
    with pytest.raises(ValueError, match='set mode = "pooled"'):
        nlp.add_pipe("clin_semantic_window", config={"embedder": LISTENER, "mode": "exact"})


def test_listener_cannot_encode_free_text():
    from spacy_clinchunk.embed.transformer_listener import TransformerListenerEmbedder

    with pytest.raises(EmbedderError, match="cannot encode free text"):
        TransformerListenerEmbedder().encode(["fever"])


# -- the real spacy-transformers component ------------------------------------------------------
@pytest.fixture(scope="module")
def trf_nlp():
    pytest.importorskip("spacy_transformers", reason="spacy-clinchunk[transformers] not installed")
    from spacy_clinchunk import load_pipeline

    return load_pipeline(CONFIG_DIR / "transformer.cfg")


def reference_token_vectors(doc):
    """Per spaCy token, the mean of its aligned wordpiece states, computed plainly token by token."""
    data = doc._.trf_data
    hidden = np.asarray(data.model_output.last_hidden_state)
    flat = hidden.reshape(-1, hidden.shape[-1])
    out = {}
    for i, token in enumerate(doc):
        rows = np.asarray(data.align[i].dataXd).reshape(-1)
        if len(rows):
            out[token.idx] = flat[rows].mean(axis=0)
    return out


@pytest.mark.slow
def test_token_vectors_are_the_mean_of_aligned_wordpieces(trf_nlp):
    doc = trf_nlp(TEXT)
    listener = trf_nlp.get_pipe("clin_semantic_window").embedder
    got_offsets, got_vectors = listener.doc_token_vectors(doc)
    expected = reference_token_vectors(doc)
    assert [int(s) for s, _ in got_offsets] == sorted(expected)
    for (start, end), vector in zip(got_offsets, got_vectors):
        token = doc.char_span(int(start), int(end))
        assert token is not None and len(token) == 1
        assert np.allclose(vector, expected[int(start)], atol=1e-5)
    # wordpieces split "arachnodactyly" and "palpitations"; tokens such as "mg/dL." or "x-ray"
    # are cut differently by the two tokenizers: every non-space token still has a vector
    assert len(got_offsets) == sum(1 for t in doc if not t.is_space)


@pytest.mark.slow
def test_chunks_are_exact_and_match_the_second_model_in_pooled_mode(trf_nlp):
    from spacy_clinchunk import load_pipeline

    text = EXAMPLE_NOTE.read_text(encoding="utf-8")
    doc = trf_nlp(text)
    assert_exact_spans(doc)
    default = load_pipeline(CONFIG_DIR.parent / "tests" / "data" / "configs" / "semantic_no_ceiling.cfg")  # the sliding window without the ceiling, as transformer.cfg
    default.get_pipe("clin_semantic_window").mode = "pooled"
    second = offsets(default(text))
    ours = offsets(doc)
    # same model, same pooling; only the pieces the model sees differ (whole doc in strided
    # spans vs one chunk at a time), so nearly every chunk agrees
    agree = len(set(ours) & set(second))
    assert agree >= 0.9 * max(len(ours), len(second)), (agree, len(ours), len(second))


@pytest.mark.slow
def test_documents_longer_than_the_model_window_use_strided_spans(trf_nlp):
    text = " ".join(["Patient reports chest pain radiating to the left arm since yesterday evening"] * 120) + "."
    doc = trf_nlp(text)
    data = doc._.trf_data
    assert data.model_output.last_hidden_state.shape[0] > 1  # several strided spans
    listener = trf_nlp.get_pipe("clin_semantic_window").embedder
    got_offsets, _ = listener.doc_token_vectors(doc)
    assert len(got_offsets) == sum(1 for t in doc if not t.is_space)
    assert_exact_spans(doc)


@pytest.mark.slow
@pytest.mark.parametrize("text", ["", "   \n\n  ", "fever"])
def test_empty_whitespace_and_tiny_docs(trf_nlp, text):
    doc = trf_nlp(text)
    assert_exact_spans(doc)
    assert [s.text for s in doc.spans["clin_chunks"]] == ([text] if text.strip() else [])


@pytest.mark.slow
def test_disabled_transformer_gives_a_clear_error(trf_nlp):
    with trf_nlp.select_pipes(disable=["transformer"]):
        with pytest.raises(EmbedderError, match="trf_data is not set"):
            trf_nlp(TEXT)
        with pytest.raises(EmbedderError, match="disabled"):
            trf_nlp.get_pipe("clin_semantic_window").initialize(nlp=trf_nlp)


@pytest.mark.slow
def test_saved_pipeline_reloads_with_identical_chunks(trf_nlp, tmp_path):
    expected = offsets(trf_nlp(TEXT))
    trf_nlp.to_disk(tmp_path / "trf")
    reloaded = spacy.load(tmp_path / "trf")
    assert offsets(reloaded(TEXT)) == expected
    assert "clin_semantic_window" in reloaded.pipe_names


@pytest.mark.slow
def test_spacy_assemble_builds_the_shipped_config(tmp_path):
    pytest.importorskip("spacy_transformers", reason="spacy-clinchunk[transformers] not installed")
    out = tmp_path / "assembled"
    result = subprocess.run(
        [sys.executable, "-m", "spacy", "assemble", str(CONFIG_DIR / "transformer.cfg"), str(out)],
        capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    nlp = spacy.load(out)
    doc = nlp("Patient has seizures but no developmental delay.")
    assert [s.text for s in doc.spans["clin_chunks"]] == ["Patient has seizures", "no developmental delay"]
