"""Chunk-quality metrics, the registered scorer with nlp.evaluate, and the evaluate CLI."""
import json
import shutil

import pytest
import spacy
from spacy.training import Example
from spacy.util import registry

from conftest import CONFIG_DIR, GSC_DIR, SAMPLE_JSON, requires_shared_data
from spacy_clinchunk.groundtruth.reader import AnnotatedCorpus, read_annotated
from spacy_clinchunk.cli import main
from spacy_clinchunk.groundtruth.evaluate import METRICS, ChunkScorer, document_tally, evaluate_corpus, iou
from spacy_clinchunk.pipeline import load_pipeline

TEXT = "aaa bbb. ccc ddd."
ANNOTATIONS = [[(0, 3)], [(4, 7)], [(9, 12)]]


def test_metrics_on_a_hand_made_document():
    scores = document_tally(TEXT, [(0, 8), (9, 17)], ANNOTATIONS, variants=[(0, 3), (4, 7), (9, 16)]).scores()
    assert scores["chunk_integrity"] == 1.0
    assert scores["chunk_isolation"] == 0.5  # the first chunk holds two annotations
    assert scores["chunk_coverage"] == 1.0
    assert scores["chunks_per_doc"] == 2 and scores["words_per_chunk"] == 2
    assert scores["chunk_iou"] == pytest.approx((3 / 8 + 3 / 8 + 7 / 8) / 3)


def test_cut_and_missing_annotations_lower_integrity_and_coverage():
    scores = document_tally(TEXT, [(0, 5), (13, 17)], ANNOTATIONS, variants=[(0, 3), (4, 7), (9, 12)]).scores()
    assert scores["chunk_integrity"] == pytest.approx(1 / 3)  # "bbb" is cut, "ccc" is in no chunk
    assert scores["chunk_coverage"] == pytest.approx(4 / 9)
    # (0, 5) touches two annotations; (13, 17) touches none and does not count
    assert scores["chunk_isolation"] == 0.0
    assert scores["chunk_iou"] == pytest.approx((3 / 5 + 1 / 7 + 0) / 3)


def test_overlapping_annotations_are_one_cluster_for_isolation():
    text = "hypoplastic nails and more."
    both = [[(0, 17)], [(12, 17)], [(22, 26)]]
    scores = document_tally(text, [(0, 17), (18, 27)], both).scores()
    assert scores["chunk_isolation"] == 1.0
    assert document_tally(text, [(0, 27)], both).scores()["chunk_isolation"] == 0.0


def test_empty_inputs_give_none_not_errors():
    scores = document_tally("", [], []).scores()
    assert scores["chunk_integrity"] is None and scores["chunks_per_doc"] == 0
    assert iou((0, 2), (2, 4)) == 0.0 and iou((0, 4), (0, 4)) == 1.0


def voronoi_chunker_examples(nlp, folder):
    """Examples whose predicted chunks are exactly the reference voronoi_0.50 variants."""
    examples = []
    for example in AnnotatedCorpus(folder, "*.json")(nlp):
        predicted = example.reference.copy()
        predicted.spans["clin_chunks"] = [predicted.char_span(s.start_char, s.end_char) for s in predicted.spans["voronoi_0.50"]]
        examples.append(Example(predicted, example.reference))
    return examples


def test_registered_scorer_matches_evaluate_corpus_and_nlp_evaluate(tmp_path):
    for path in SAMPLE_JSON.glob("*.json"):
        shutil.copy(path, tmp_path / path.name)
    scorer = registry.resolve({"s": {"@scorers": "spacy_clinchunk.ChunkScorer.v1"}})["s"]
    nlp = load_pipeline(CONFIG_DIR / "punct_conj_cleaned.cfg")
    via_evaluate = nlp.evaluate(list(AnnotatedCorpus(tmp_path, "*.json")(nlp)), scorer=scorer)
    direct = evaluate_corpus(nlp, tmp_path, "*.json")
    for key in (*METRICS, "chunk_docs", "unlocated_annotations"):
        assert via_evaluate[key] == pytest.approx(direct[key]), key
    assert (direct["files"], direct["files_skipped"], direct["files_error"]) == (4, 0, 0)
    assert direct["chunk_docs"] == 4
    manual = []
    for example in AnnotatedCorpus(tmp_path, "*.json")(nlp):
        manual.append(Example(nlp(example.predicted), example.reference))
    assert scorer(manual)["chunk_iou"] == pytest.approx(direct["chunk_iou"])
    # the Voronoi variants themselves score perfectly on IoU, integrity and coverage
    perfect = ChunkScorer().score(voronoi_chunker_examples(spacy.blank("en"), tmp_path))
    assert perfect["chunk_iou"] == pytest.approx(1.0)
    assert perfect["chunk_integrity"] == 1.0 and perfect["chunk_coverage"] == 1.0


@pytest.mark.parametrize("folder,documents", [
    pytest.param(SAMPLE_JSON, 4, id="sample"),
    pytest.param(GSC_DIR, 228, id="shared", marks=requires_shared_data()),
])
def test_finer_config_scores_as_expected_against_sentences(folder, documents):
    simple = evaluate_corpus(load_pipeline(CONFIG_DIR / "simple.cfg"), folder, "*.json")
    finer = evaluate_corpus(load_pipeline(CONFIG_DIR / "punct_conj_cleaned.cfg"), folder, "*.json")
    for scores in (simple, finer):
        assert scores["chunk_docs"] == documents
        for key in ("chunk_integrity", "chunk_isolation", "chunk_coverage", "chunk_iou"):
            assert 0.0 <= scores[key] <= 1.0
    # finer chunks: more of them, fewer words each, better isolated, closer to the 0.50 variants
    assert finer["chunks_per_doc"] > simple["chunks_per_doc"]
    assert finer["words_per_chunk"] < simple["words_per_chunk"]
    assert finer["chunk_isolation"] > simple["chunk_isolation"]
    assert finer["chunk_iou"] > simple["chunk_iou"]
    assert simple["chunk_coverage"] > 0.99  # sentences keep nearly every annotated character


def test_evaluate_cli_prints_a_table_and_writes_json(tmp_path, capsys):
    data = tmp_path / "corpus"
    data.mkdir()
    for name in ["discharge_cardiology.json", "genetics_clinic_letter.json"]:
        shutil.copy(SAMPLE_JSON / name, data / name)
    output = tmp_path / "out" / "metrics.json"
    code = main(["evaluate", "--config", str(CONFIG_DIR / "simple.cfg"), "--data", str(data), "--output", str(output)])
    assert code == 0
    printed = capsys.readouterr().out
    assert "integrity" in printed and "corpus" in printed.splitlines()[0]
    report = json.loads(output.read_text())
    metrics = report["corpora"]["corpus"]
    assert metrics["chunk_docs"] == 2
    assert metrics == pytest.approx(evaluate_corpus(load_pipeline(CONFIG_DIR / "simple.cfg"), data))
    assert main(["evaluate", "--config", str(CONFIG_DIR / "simple.cfg"), "--data", str(tmp_path / "nope")]) == 2
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["evaluate", "--config", str(CONFIG_DIR / "simple.cfg"), "--data", str(empty)]) == 2
    assert "no documents match" in capsys.readouterr().err


def test_reference_without_variants_is_computed(blank_nlp):
    record = {"full_text": TEXT, "annotations": [{"hpo_id": "HP:1", "evidence_spans": [{"start_char": s, "end_char": e}]} for [(s, e)] in ANNOTATIONS]}
    reference = read_annotated(record, blank_nlp, expansion_ratios=None)
    predicted = blank_nlp.make_doc(TEXT)
    predicted.spans["clin_chunks"] = [predicted.char_span(0, 8), predicted.char_span(9, 17)]
    scores = ChunkScorer().score([Example(predicted, reference)])
    expected = document_tally(TEXT, [(0, 8), (9, 17)], ANNOTATIONS).scores()
    assert scores == pytest.approx(expected)
