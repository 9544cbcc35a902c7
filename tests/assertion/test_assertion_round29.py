"""Round 29 of issue 40: self-negating exam words after their subject, the German words of a normal finding
or course, and an ability that is missing. Regression sentences written from clinical knowledge, kept as data
(``tests/data/assertion_round29.json``); the judge is the annotated real-note split (bench/real_notes.py)."""
import pytest

from assertion_helpers import case_groups, check, chunk_statuses_of as held_by

GROUPS, CASES = case_groups("assertion_round29")


@pytest.mark.parametrize("lang,text,concept,expected", CASES)
def test_round29_patterns(lang, text, concept, expected):
    check(lang, text, concept, expected)


def test_every_group_says_why_and_has_cases():
    assert all(data["why"] and len(data["cases"]) >= 3 for data in GROUPS.values())


@pytest.mark.parametrize("lang,text,word,status", [
    ("en", "Abdomen nontender.", "Abdomen", "normal"),
    ("en", "Both testes were nonpalpable.", "testes", "affirmed"),
    ("de", "Pupillen rund, mitteleng, isokor.", "mitteleng", "normal"),
    ("de", "Konzentrisch hypertrophierter linker Ventrikel mit noch guter LV-Funktion.", "Ventrikel", "affirmed"),
    ("de", "Konzentrisch hypertrophierter linker Ventrikel mit noch guter LV-Funktion.", "LV-Funktion", "normal"),
])
def test_the_chunk_shows_the_same_status(lang, text, word, status):
    """The chunk a user sees carries the status: a subject and its self-negating word are one normal
    chunk, and a good function after "mit" opens a chunk of its own (``status_openers``), so the
    hypertrophied ventricle before it is not read normal."""
    assert held_by(lang, text, word) == [status]
