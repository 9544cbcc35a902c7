"""Rounds 27 and 28 of issue 40: what a denial must not take (a known finding, a circumstance, an item with
its own grade or normal word), 'none of', section labels inside a line; drugs ordered for a symptom, hedged
causes. Regression sentences written from clinical knowledge, kept as data (``tests/data/assertion_round27.json``); the judge is the annotated
real-note split (bench/real_notes.py)."""
import pytest

from assertion_helpers import case_groups, check, chunk_statuses_of as held_by, default_for
from spacy_clinchunk import attrs

GROUPS, CASES = case_groups("assertion_round27")


@pytest.mark.parametrize("lang,text,concept,expected", CASES)
def test_round27_patterns(lang, text, concept, expected):
    check(lang, text, concept, expected)


def test_every_group_says_why_and_has_cases():
    assert all(data["why"] and len(data["cases"]) >= 3 for data in GROUPS.values())


@pytest.mark.parametrize("lang,text,denied,present", [
    ("de", "Keine Dyspnoe trotz Anämie.", "Dyspnoe", "Anämie"),
    ("de", "Keine Blutung bei bekannten Darmpolypen.", "Blutung", "Darmpolypen"),
    ("en", "No fever despite the pneumonia.", "fever", "pneumonia"),
    ("en", "No shortness of breath in the setting of anemia.", "shortness", "anemia"),
    ("fr", "Pas de fièvre malgré la pneumonie.", "fièvre", "pneumonie"),
    ("es", "Sin fiebre a pesar de la neumonía.", "fiebre", "neumonía"),
    ("nl", "Geen dyspnoe bij bekende COPD.", "dyspnoe", "COPD"),
])
def test_what_a_denial_is_set_against_opens_a_chunk_of_its_own(lang, text, denied, present):
    """A chunk carries one status: the denied finding and the known one it is set against are two
    chunks (``status_openers``), so the chunk view shows what the concept view does."""
    assert held_by(lang, text, denied) == ["negated"]
    assert held_by(lang, text, present) == ["affirmed"]


@pytest.mark.parametrize("lang,text,sections,present", [
    ("de", "Familienanamnese: Vater KHK. Sozialanamnese: Raucher.", ["family_history", "social_history"], "Raucher"),
    ("en", "Family history: Mother with diabetes. Social history: Smokes one pack per day.",
     ["family_history", "social_history"], "Smokes"),
    ("en", "Allergies: none. Medications: aspirin.", ["allergies", "medications"], "aspirin"),
])
def test_a_known_label_after_a_sentence_opens_its_section(lang, text, sections, present):
    """A letter or an export that runs its sections on in one line: a known label after the end of a
    sentence opens its section, so the family history ends there and what follows is the patient's."""
    doc = default_for(lang)(text)
    assert [s.label_ for s in doc.spans[attrs.SECTIONS_KEY]] == sections
    assert held_by(lang, text, present) == ["affirmed"]


@pytest.mark.parametrize("lang,text", [
    ("de", "Er berichtet über Beschwerden. Schmerzen: stark, seit gestern."),
    ("de", "Er wurde eine Woche in Mühlhausen behandelt. Dortige Diagnose: Adoleszentenkrise."),
    ("en", "He has no history of present illness. Plan: follow up."),
])
def test_an_unknown_label_or_a_header_word_inside_a_sentence_opens_no_section(lang, text):
    """Inside a line only a label the section table lists opens a section; one it would guess from
    its head word ("Dortige Diagnose", a diagnosis made elsewhere, in a narrative) does not."""
    doc = default_for(lang)(text)
    labels = [s.label_ for s in doc.spans[attrs.SECTIONS_KEY]]
    assert "history_of_present_illness" not in labels and len(labels) <= 1
    if lang == "de":
        assert labels == []
