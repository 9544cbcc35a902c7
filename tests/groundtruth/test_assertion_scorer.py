"""Assertion in spaCy's scorer: ``spacy_clinchunk.AssertionScorer.v1``, the default scorer of
``clin_context_assertion``, through ``nlp.evaluate`` and our ``evaluate`` command, on
annotated documents in our JSON, brat and BioC formats."""

import json

import pytest
import spacy
from spacy.tokens import Doc
from spacy.training import Example
from spacy.util import registry

from conftest import ROOT
from spacy_clinchunk import attrs
from spacy_clinchunk.cli import main
from spacy_clinchunk.groundtruth.assertion_score import AssertionScorer, holding_spans
from spacy_clinchunk.groundtruth.reader import AnnotatedCorpus
from spacy_clinchunk.pipeline import load_pipeline

ANNOTATED = ROOT / "resources" / "examples" / "annotated"
# the BioC folder holds the same notes twice (XML and JSON): one of them
FORMATS = {
    "json": (ANNOTATED / "json", None, "json"),
    "brat": (ANNOTATED / "brat", None, "brat"),
    "bioc": (ANNOTATED / "bioc", "notes.xml", "bioc"),
    "bioc_json": (ANNOTATED / "bioc", "notes.bioc.json", "bioc"),
}
ASSERTION_KEYS = {"assertion_acc", "assertion_wrongly_present", "assertion_per_status", "assertion_annotations"}


@pytest.fixture(scope="module")
def default_nlp():
    return load_pipeline("default")


def _example(words, spaces, chunks, annotations):
    """A predicted doc whose chunks carry (label, statuses) and a reference with annotated statuses."""
    attrs.register_extensions()
    nlp = spacy.blank("en")
    predicted, reference = Doc(nlp.vocab, words=words, spaces=spaces), Doc(nlp.vocab, words=words, spaces=spaces)
    predicted.spans[attrs.CHUNKS_KEY] = [predicted[s:e] for s, e, _, _ in chunks]
    for span, (_, _, label, statuses) in zip(predicted.spans[attrs.CHUNKS_KEY], chunks):
        span._.clin_assertion, span._.clin_assertion_statuses = label, statuses
    reference.spans[attrs.ANNOTATIONS_KEY] = [reference[s:e] for s, e, _ in annotations]
    for span, (_, _, status) in zip(reference.spans[attrs.ANNOTATIONS_KEY], annotations):
        span._.clin_assertion = status
    return Example(predicted, reference)


def test_counts_on_a_hand_made_example():
    # "no fever , mother had asthma , cough": chunks 0-2 negated, 3-6 family+historical, 7-8 affirmed
    words = ["no", "fever", ",", "mother", "had", "asthma", ",", "cough"]
    example = _example(
        words,
        [True] * 7 + [False],
        [(0, 2, "negated", ["negated"]), (3, 6, "family", ["family", "historical"]), (7, 8, "affirmed", [])],
        [(1, 2, "negated"), (5, 6, "historical"), (7, 8, "uncertain")],
    )
    scores = registry.scorers.get("spacy_clinchunk.AssertionScorer.v1")()([example])
    assert scores["assertion_annotations"] == 3
    assert scores["assertion_acc"] == pytest.approx(1 / 3)  # only "fever" has the annotated label
    assert scores["assertion_wrongly_present"] == pytest.approx(1 / 3)  # "cough" is uncertain, shown affirmed
    per = scores["assertion_per_status"]
    assert per["negated"] == {"p": 1.0, "r": 1.0, "f": 1.0}
    assert per["historical"]["r"] == 1.0  # a status among the chunk's statuses counts, not only its label
    assert per["family"]["p"] == 0.0 and per["uncertain"]["r"] == 0.0
    assert "normal" not in per  # neither annotated nor predicted: not reported


def test_an_annotation_no_chunk_touches_reads_affirmed():
    example = _example(["a", "b", "c"], [True, True, False], [(0, 1, "negated", ["negated"])], [(2, 3, "negated")])
    assert AssertionScorer()([example])["assertion_wrongly_present"] == 1.0


def test_holding_spans_takes_the_largest_overlap():
    doc = Doc(spacy.blank("en").vocab, words=list("abcdef"))
    spans = [doc[0:2], doc[1:5], doc[5:6]]
    assert holding_spans(spans, [(2, 7), (10, 11), (20, 30)]) == [doc[1:5], doc[5:6], None]


def test_nlp_evaluate_reports_assertion_through_the_components_scorer(default_nlp):
    examples = list(AnnotatedCorpus(ANNOTATED / "json")(default_nlp))
    scores = default_nlp.evaluate(examples)
    assert ASSERTION_KEYS <= set(scores) and scores["assertion_annotations"] == 62
    assert set(scores["assertion_per_status"]) >= {"affirmed", "negated", "family", "hypothetical"}
    assert 0.8 < scores["assertion_acc"] <= 1.0
    # what `spacy train` weighs: the accuracy; the rest is shown, not weighed
    weights = default_nlp.config["training"]["score_weights"]
    assert weights["assertion_acc"] > 0 and weights["assertion_wrongly_present"] is None


def test_every_format_gives_the_same_assertion_scores(default_nlp):
    scores = {}
    for name, (folder, pattern, fmt) in FORMATS.items():
        examples = list(AnnotatedCorpus(folder, pattern, format=fmt)(default_nlp))
        scores[name] = AssertionScorer()(examples)
    assert scores["json"]["assertion_annotations"] == 62
    assert scores["json"] == scores["brat"] == scores["bioc"] == scores["bioc_json"]


def test_evaluate_command_prints_and_writes_assertion_scores(tmp_path, capsys):
    out = tmp_path / "metrics.json"
    assert main(["evaluate", "--strategy", "default", "--data", str(ANNOTATED / "brat"), "--format", "brat", "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "assertion acc" in printed and "wrongly present" in printed and "negated F1" in printed
    metrics = json.loads(out.read_text())["corpora"]["brat"]
    assert ASSERTION_KEYS <= set(metrics) and metrics["assertion_annotations"] == 62


def test_a_pipeline_without_assertion_prints_no_assertion_table(tmp_path, capsys):
    assert main(["evaluate", "--strategy", "simple", "--data", str(ANNOTATED / "json")]) == 0
    assert "assertion acc" not in capsys.readouterr().out
