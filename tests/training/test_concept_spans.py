"""configs/training/concept_spans.cfg: span_finder fine-tuned over a spacy-transformers backbone.

The backbone here is a TINY BERT (one layer, width 32, random weights) built in the test with
the bundled MiniLM's tokenizer, so that training takes a few seconds: the loading, offsets and
round trips are the same code paths as with the full MiniLM (make concept-spans). Runs in the
[transformers] venv (make test-transformers); skipped where spacy-transformers is missing.
"""
import os
import subprocess
import sys

import pytest
import spacy

from conftest import CONFIG_DIR, EXAMPLE_NOTE, SAMPLE_JSON

KEY = "annotations"  # the training config's spans_key
SENTENCE = "A syndrome of brachydactyly, aplastic or hypoplastic nails and craniosynostosis."


@pytest.fixture(scope="module")
def tiny_backbone(tmp_path_factory):
    """A one-layer BERT with random weights and the bundled MiniLM's wordpiece tokenizer."""
    pytest.importorskip("spacy_transformers", reason="spacy-clinchunk[transformers] not installed")
    from transformers import AutoTokenizer, BertConfig, BertModel

    from spacy_clinchunk.embed.embedders import resolve_model

    folder = tmp_path_factory.mktemp("tiny_bert")
    tokenizer = AutoTokenizer.from_pretrained(resolve_model("all-MiniLM-L6-v2"))
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=1,
                        num_attention_heads=2, intermediate_size=64, max_position_embeddings=512)
    BertModel(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def trained(tiny_backbone, tmp_path_factory):
    """The training config, a few steps on the shipped annotated sample (3 train, 1 dev)."""
    base = tmp_path_factory.mktemp("concept_spans")
    files = sorted(SAMPLE_JSON.glob("*.json"))
    assert len(files) >= 4
    for name, part in (("train", files[:3]), ("dev", files[3:])):
        (base / name).mkdir()
        for file in part:
            (base / name / file.name).symlink_to(file.resolve())
    result = subprocess.run(
        [sys.executable, "-m", "spacy", "train", str(CONFIG_DIR / "training" / "concept_spans.cfg"),
         "--output", str(base / "out"), "--paths.train", str(base / "train"), "--paths.dev", str(base / "dev"),
         "--components.transformer.model.name", str(tiny_backbone), "--training.max_epochs", "3",
         "--training.eval_frequency", "2", "--training.optimizer.learn_rate.initial_rate", "0.001",
         "--components.span_finder.threshold", "0.0"],
        capture_output=True, text=True, timeout=600,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "OMP_NUM_THREADS": "2"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return base / "out" / "model-last"


def exact_offsets(doc, key=KEY):
    spans = list(doc.spans[key])
    for span in spans:
        assert span.text == doc.text[span.start_char:span.end_char] and span.text
    return sorted((s.start_char, s.end_char) for s in spans)


@pytest.mark.slow
def test_the_trained_pipeline_loads_from_any_folder_and_predicts_exact_spans(trained, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    nlp = spacy.load(trained)
    assert nlp.pipe_names == ["transformer", "span_finder"]
    offsets = exact_offsets(nlp(SENTENCE))
    assert offsets  # threshold 0: every start pairs with every end within max_length
    assert all(len(nlp(SENTENCE).char_span(s, e)) <= 8 for s, e in offsets)


@pytest.mark.slow
def test_every_score_weight_names_a_score_the_training_reports(trained):
    """Early stopping reads the weighted dev scores: a weight on a name the scorer never writes
    (span_finder reports ``spans_<key>_f``, not ``span_finder_<key>_f``) scores every evaluation
    0, so model-best is the first step's weights. The saved meta holds what the scorer wrote."""
    import json

    meta = json.loads((trained / "meta.json").read_text(encoding="utf-8"))
    config = spacy.util.load_config(CONFIG_DIR / "training" / "concept_spans.cfg")
    weighted = {name for name, weight in config["training"]["score_weights"].items() if weight}
    assert weighted and weighted <= set(meta["performance"]), (sorted(weighted), sorted(meta["performance"]))
    assert f"spans_{KEY}_f" in weighted


@pytest.mark.slow
def test_to_disk_and_spacy_load_reproduce_spans_and_probabilities(trained, tmp_path):
    import numpy as np

    nlp = spacy.load(trained)
    texts = [SENTENCE, EXAMPLE_NOTE.read_text(encoding="utf-8")]
    expected = [exact_offsets(doc) for doc in nlp.pipe(texts)]
    scores = nlp.get_pipe("span_finder").model.predict([nlp(SENTENCE)])
    nlp.to_disk(tmp_path / "again")
    reloaded = spacy.load(tmp_path / "again")
    assert [exact_offsets(doc) for doc in reloaded.pipe(texts)] == expected
    again = reloaded.get_pipe("span_finder").model.predict([reloaded(SENTENCE)])
    assert np.allclose(scores, again, atol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("text", ["", "   \n\n  ", "fever", "Пациент жалуется на боль. 患者は発熱した。 🙂🙂"])
def test_empty_whitespace_tiny_and_unknown_script_docs_give_exact_groups(trained, text):
    """An empty doc gives an empty group (spacy-transformers' own listener fails on it); any
    other text, whitespace included, gives spans of its tokens (threshold 0: every token is a
    candidate start and end), exact and within the text."""
    nlp = spacy.load(trained)
    doc = nlp(text)
    assert KEY in doc.spans
    offsets = exact_offsets(doc)
    assert all(0 <= s < e <= len(text) for s, e in offsets)
    assert (offsets == []) == (text == "")


@pytest.mark.slow
def test_long_notes_and_many_wordpiece_words_keep_exact_offsets(trained):
    nlp = spacy.load(trained)
    long_word = "pseudopseudohypoparathyroidismlike" * 6  # one token, dozens of wordpieces
    text = " ".join([f"Patient has {long_word} and aplastic nails since birth"] * 80) + "."
    doc = nlp(text)
    assert doc._.trf_data.model_output.last_hidden_state.shape[0] > 1  # strided spans
    offsets = exact_offsets(doc)
    assert all(0 <= s < e <= len(text) for s, e in offsets)


@pytest.mark.slow
def test_a_batch_mixing_empty_and_real_docs_gives_each_its_own_exact_group(trained):
    nlp = spacy.load(trained)
    texts = ["", SENTENCE, "", "fever"]
    docs = list(nlp.pipe(texts, batch_size=4))
    assert [doc.text for doc in docs] == texts
    assert [exact_offsets(doc) for doc in docs] == [exact_offsets(nlp(text)) for text in texts]
    assert exact_offsets(docs[0]) == [] == exact_offsets(docs[2])


@pytest.fixture(scope="module")
def assembled(trained, tmp_path_factory):
    """scripts/train_concept_spans.py assemble: the retrieval_learned pipeline around the tiny model."""
    out = tmp_path_factory.mktemp("retrieval_learned") / "pipeline"
    result = subprocess.run(
        [sys.executable, str(CONFIG_DIR.parent / "scripts" / "train_concept_spans.py"), "assemble",
         "--model", str(trained), "--out", str(out)],
        capture_output=True, text=True, timeout=600, env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return out


@pytest.mark.slow
def test_the_assembled_strategy_links_learned_focus_to_its_chunks_and_round_trips(assembled, tmp_path):
    from spacy_clinchunk import attrs
    from spacy_clinchunk.pipeline import resolve_pipeline

    resolved = resolve_pipeline(assembled)
    nlp = resolved.nlp
    assert nlp.pipe_names[-3:] == ["transformer", "span_finder", "clin_concept_focus"]
    assert resolved.chunks_key == attrs.CHUNKS_KEY and attrs.FOCUS_KEY in resolved.spans_keys
    note = EXAMPLE_NOTE.read_text(encoding="utf-8")
    doc = nlp(note)
    learned = {(s.start_char, s.end_char) for s in doc.spans[KEY]}
    focus = doc.spans[attrs.FOCUS_KEY]
    chunks = doc.spans[attrs.CHUNKS_KEY]
    assert learned and len(focus) > 0  # threshold 0: the tiny model proposes spans everywhere
    assert [(s.start_char, s.end_char) for s in focus] == sorted((s.start_char, s.end_char) for s in focus)
    for position, span in enumerate(focus):
        assert span.text == note[span.start_char:span.end_char]
        owner = chunks[span._.clin_focus_of]
        assert position in owner._.clin_focus_ids
        assert owner.start_char < span.end_char and span.start_char < owner.end_char
    nlp.to_disk(tmp_path / "again")
    again = spacy.load(tmp_path / "again")(note)
    assert [(s.start_char, s.end_char, s._.clin_focus_of) for s in again.spans[attrs.FOCUS_KEY]] == \
           [(s.start_char, s.end_char, s._.clin_focus_of) for s in focus]
    assert exact_offsets(nlp("")) == [] and len(nlp("").spans[attrs.FOCUS_KEY]) == 0


@pytest.mark.slow
def test_cv_with_config_overrides_trains_predicts_and_records_them(tiny_backbone, tmp_path):
    """scripts/train_concept_spans.py cv --set KEY=VALUE: the overrides reach spacy train (the
    saved model's config holds them), and every scored document gets exact spans and scores."""
    import json

    out = tmp_path / "cv"
    result = subprocess.run(
        [sys.executable, str(CONFIG_DIR.parent / "scripts" / "train_concept_spans.py"), "cv",
         "--data", str(SAMPLE_JSON), "--out", str(out), "--folds", "2",
         "--set", f"components.transformer.model.name={tiny_backbone}",
         "--set", "training.max_steps=3", "--set", "training.eval_frequency=1",
         "--set", "training.optimizer.learn_rate.total_steps=3"],
        capture_output=True, text=True, timeout=900,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    for fold in ("fold0", "fold1"):
        config = spacy.util.load_config(out / fold / "model" / "model-best" / "config.cfg")
        assert config["training"]["max_steps"] == 3
        assert config["training"]["optimizer"]["learn_rate"]["total_steps"] == 3
        assert config["components"]["transformer"]["model"]["name"] == str(tiny_backbone)
    records = [json.loads(f.read_text(encoding="utf-8")) for f in (out / "test_docs").glob("*.json")]
    scored = {record["doc_id"]: record for record in records}
    predicted = json.loads((out / "predicted.json").read_text(encoding="utf-8"))
    scores = json.loads((out / "scores.json").read_text(encoding="utf-8"))
    assert set(predicted) == set(scores) == set(scored) and len(scored) == len(list(SAMPLE_JSON.glob("*.json")))
    for doc_id, record in scored.items():
        text = record["full_text"]
        assert len(scores[doc_id]["start"]) == len(scores[doc_id]["tokens"]) > 0
        starts = {s for s, _ in scores[doc_id]["tokens"]}
        ends = {e for _, e in scores[doc_id]["tokens"]}
        assert all(s in starts and e in ends and 0 <= s < e <= len(text) for s, e in predicted[doc_id])
    assert oct((out / "predicted.json").stat().st_mode & 0o777) == "0o600"
