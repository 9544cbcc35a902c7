"""Two pieces of the assertion layout that rules alone could not give (issue 27, round 5).

* An abbreviation's period is no sentence end. spaCy's tokenizer splits "bds." into "bds" and
  ".", the sentencizer then starts a sentence at "negativ", and the scope of a backward cue
  stopped there: "Babinski bds. negativ" came out affirmed. A sentence start after a word of
  the language's ``abbreviations`` list, before a word in lower case, is dropped from the
  scope units. The list is data: ``initialize(abbreviations=...)``, ``to_disk``/``from_disk``.
* A cue can lift a section's status: under "PAST MEDICAL HISTORY:", "End-stage renal
  disease, currently on dialysis" is a present problem. A rule whose metadata names
  ``cancels_section`` lifts those statuses from the spans it governs, and decides nothing else.
"""
import spacy
import pytest

from assertion_helpers import KEY, check

from spacy_clinchunk.components.context_assertion import FACTORY


@pytest.mark.parametrize(
    "lang, text, concept, expected",
    [
        ("de", "Babinski bds. negativ.", "Babinski", "negated"),
        ("de", "Ödeme bds. nicht vorhanden.", "Ödeme", "negated"),
        ("de", "Lasègue li. negativ, Kraft seitengleich.", "Lasègue", "negated"),
        ("de", "Pupillen bds. isokor und lichtreagibel.", "Pupillen", "normal"),
        ("en", "Crackles bilat. absent.", "Crackles", "negated"),
        ("nl", "Oedeem bdz. niet aanwezig.", "Oedeem", "negated"),
    ],
)
def test_a_backward_cue_reaches_over_an_abbreviation(lang, text, concept, expected):
    check(lang, text, concept, expected)


@pytest.mark.parametrize(
    "lang, text, concept",
    [
        ("de", "Ödeme bds. Kein Fieber.", "Ödeme"),  # a capital after the period: a new sentence
        ("de", "Husten seit Tagen. kein Fieber.", "Husten"),  # "Tagen" is no abbreviation
        ("en", "Cough for 3 days. no fever.", "Cough"),
    ],
)
def test_a_sentence_end_still_ends_the_scope(lang, text, concept):
    check(lang, text, concept, "affirmed")


def _pipeline(lang, **initialize):
    nlp = spacy.blank(lang)
    nlp.add_pipe("sentencizer")
    nlp.add_pipe(FACTORY, config={"span_keys": [KEY], "language": lang})
    nlp.get_pipe(FACTORY).initialize(**initialize)
    return nlp


def _status(nlp, text, concept):
    doc = nlp.make_doc(text)
    start = text.index(concept)
    doc.spans[KEY] = [doc.char_span(start, start + len(concept))]
    return nlp(doc).spans[KEY][0]._.clin_assertion


def test_the_abbreviations_are_data_that_initialize_replaces_and_a_saved_pipeline_keeps(tmp_path):
    shipped = _pipeline("de")
    assert "bds." in shipped.get_pipe(FACTORY).abbreviations_for("de")
    assert _status(shipped, "Babinski bds. 2x negativ.", "Babinski") == "negated"
    none = _pipeline("de", abbreviations=[])
    assert _status(none, "Babinski bds. 2x negativ.", "Babinski") == "affirmed"
    own = _pipeline("de", abbreviations=["bsd."])  # a user's list only: "bds." is no longer one
    assert _status(own, "Babinski bsd. 2x negativ.", "Babinski") == "negated"
    assert _status(own, "Babinski bds. 2x negativ.", "Babinski") == "affirmed"
    own.to_disk(tmp_path / "saved")
    loaded = spacy.load(tmp_path / "saved")
    assert loaded.get_pipe(FACTORY).abbreviations_for("de") == ["bsd."]
    assert _status(loaded, "Babinski bsd. 2x negativ.", "Babinski") == "negated"
    assert _status(loaded, "Babinski bds. 2x negativ.", "Babinski") == "affirmed"


def test_a_german_lower_case_word_goes_on_with_the_sentence_whatever_the_list():
    """German opens every sentence with a capital: before a lower-case word, any word cut short by a
    period goes on with the sentence, listed or not (a list decides only before a digit)."""
    for abbreviations in (None, []):
        nlp = _pipeline("de", abbreviations=abbreviations)
        assert _status(nlp, "Babinski bds. negativ.", "Babinski") == "negated"
        assert _status(nlp, "Rhythmusstör. fanden sich nicht.", "Rhythmusstör") == "negated"
    assert _status(_pipeline("en", abbreviations=[]), "Reflexes bilat. absent.", "Reflexes") == "affirmed"


CURRENT = {"literal": "currently", "category": "CURRENT", "direction": "BIDIRECTIONAL", "metadata": {"cancels_section": ["historical"]}}
HISTORY = "PAST MEDICAL HISTORY:\n1. Hypertension\n2. End-stage renal disease, currently on dialysis\n3. Appendectomy"


def _statuses(nlp, text, concepts):
    doc = nlp.make_doc(text)
    doc.spans[KEY] = [doc.char_span(text.index(c), text.index(c) + len(c)) for c in concepts]
    spans = nlp(doc).spans[KEY]
    return {s.text: (s._.clin_assertion, [c["text"] for c in s._.clin_assertion_cues]) for s in spans}


def _pipeline_without_lifting_cues(lang):
    """The shipped rules less any that lift a section, so that the test adds its own."""
    nlp = _pipeline(lang)
    component = nlp.get_pipe(FACTORY)
    rules = [rule for rule in component.rules if not (rule.get("metadata") or {}).get("cancels_section")]
    component.initialize(rules=rules)
    return nlp


def test_a_cue_that_cancels_the_section_makes_its_item_current_and_no_other(tmp_path):
    nlp = _pipeline_without_lifting_cues("en")
    concepts = ["Hypertension", "End-stage renal disease", "Appendectomy"]
    before = _statuses(nlp, HISTORY, concepts)
    assert {text: label for text, (label, _) in before.items()} == dict.fromkeys(concepts, "historical")
    nlp.get_pipe(FACTORY).add_rules([CURRENT])
    after = _statuses(nlp, HISTORY, concepts)
    assert after["End-stage renal disease"] == ("affirmed", [])  # the cue decides no status of its own
    assert after["Hypertension"][0] == after["Appendectomy"][0] == "historical"
    nlp.to_disk(tmp_path / "saved")
    assert _statuses(spacy.load(tmp_path / "saved"), HISTORY, concepts) == after


def test_the_cancelled_status_is_only_the_one_the_rule_names():
    nlp = _pipeline_without_lifting_cues("en")
    nlp.get_pipe(FACTORY).add_rules([CURRENT])
    text = "FAMILY HISTORY:\n- Mother with breast cancer, currently in remission"
    assert _statuses(nlp, text, ["breast cancer"])["breast cancer"][0] == "family"
    # a cue of the section's own status still holds where the lifting cue also governs
    text = "PAST MEDICAL HISTORY:\n1. S/p appendectomy, currently well"
    assert _statuses(nlp, text, ["appendectomy"])["appendectomy"] == ("historical", ["S/p"])
