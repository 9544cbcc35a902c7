"""Round 30 of issue 40: a test that failed to show a finding, a patient's fear or worry, and the lines of a
dated timeline. Regression sentences written from clinical knowledge, kept as data
(``tests/data/assertion_round30.json``); the judge is the annotated real-note split (bench/real_notes.py)."""
import pytest

from assertion_helpers import case_groups, check, chunk_statuses_of as held_by
from spacy_clinchunk.spans import is_hard_break

GROUPS, CASES = case_groups("assertion_round30")

TIMELINE = (
    "02/2023 Primärtumor: noduläres Melanom Gesäß links (TD 3,65 mm, Resektionsränder tumorfrei)\n"
    "04/2023 Lungenmetastasen beidseits"
)


@pytest.mark.parametrize("lang,text,concept,expected", CASES)
def test_round30_patterns(lang, text, concept, expected):
    check(lang, text, concept, expected)


def test_every_group_says_why_and_has_cases():
    assert all(data["why"] and len(data["cases"]) >= 3 for data in GROUPS.values())


def test_a_dated_line_does_not_inherit_the_previous_lines_negation():
    """The metastases of April stood in one chunk with the previous line's "tumorfrei" and were read
    absent; a line that opens with a date is a timeline's entry of its own."""
    assert held_by("de", TIMELINE, "Lungenmetastasen") == ["historical"]
    assert held_by("de", TIMELINE, "tumorfrei") == ["negated"]


def _break_after(text: str, line_end: str) -> bool:
    at = text.index(line_end) + len(line_end)
    return is_hard_break(text, at, at + 1)


@pytest.mark.parametrize("text,line_end,expected", [
    (TIMELINE, "tumorfrei)", True),
    ("Jet-Lavage, Debridement und VAG Wechsel linke Hand und Unterarm, Kopf und Hals\n15.04.2029: Debridement", "Hals", True),
    ("Anlage eines TIPS, anamnestisch bei rezidivierenden Ösophagusvarizenblutungen\n2048 TIPS-Revision", "blutungen", True),
    ("Carboplatin und Taxol über sechs Zyklen mit stabilem Befund im Staging, Response SD\n04/2020 - 08/2020 Zyklen", "SD", True),
    # a sentence wrapped before its date goes on: the line stops on a lower-case word, or the date on a period
    ("Eine Fortsetzung der Chemotherapie mit Bortezomib ist vorgesehen ab dem kommenden\n05.08.2022 Mittwoch", "kommenden", False),
    ("Der Patient wünscht einen Termin zur Kontrolle der Befunde erst im Oktober des Jahres\n2012. Danach", "Jahres", False),
    ("Unter Therapie mit Carboplatin und Taxol stabiler Befund in den Stagings SD\n06/2020, SD 08/2020", "SD", False),
])
def test_a_line_that_opens_with_a_date_is_a_timeline_entry(text, line_end, expected):
    assert _break_after(text, line_end) is expected
