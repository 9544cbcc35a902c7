"""Rounds 4, 5 and 7 to 13 of the real-note rules (issue 40): regression sentences, written for these tests.

The patterns came from development notes annotated in each round before any of its rule changes; the
sentences are ours. Each group says why it holds (``tests/data/assertion_round4_en.json``,
``tests/data/assertion_round5.json``, ``tests/data/assertion_round7.json``, ``tests/data/assertion_round8.json``,
``tests/data/assertion_round9.json`` to ``tests/data/assertion_round13.json``).
"""
import pytest

from assertion_helpers import case_groups, check
from spacy_clinchunk.pipeline import resolve_pipeline

ROUNDS = {name: case_groups(name) for name in ("assertion_round4_en", "assertion_round5", "assertion_round7", "assertion_round8",
                                                  "assertion_round9", "assertion_round10", "assertion_round11",
                                                  "assertion_round12", "assertion_round13")}
GROUPS = [data for groups, _ in ROUNDS.values() for data in groups.values()]
CASES = [case for _, cases in ROUNDS.values() for case in cases]


@pytest.mark.parametrize("lang,text,concept,expected", CASES)
def test_round_patterns(lang, text, concept, expected):
    check(lang, text, concept, expected)


def test_every_group_says_why_and_has_cases():
    assert all(data["why"] and len(data["cases"]) >= 3 for data in GROUPS)


@pytest.fixture(scope="module")
def default_en():
    return resolve_pipeline("default", lang="en").nlp


@pytest.mark.parametrize("text,clause", [
    ("The patient was transferred to the recovery room in stable condition.", "in stable condition"),
    ("She left the unit in good condition after the infusion.", "in good condition"),
])
def test_a_clause_that_holds_a_condition_finding_reads_normal(default_en, text, clause):
    """"in stable condition" is the clause's finding: the chunk that holds it, and its focus span,
    read normal though other words of the clause come before it."""
    doc = default_en(text)
    chunk = next(s for s in doc.spans["clin_chunks"] if clause in s.text)
    assert chunk._.clin_assertion == "normal", (chunk.text, chunk._.clin_assertion)
    for focus in doc.spans.get("clin_focus", []):
        if chunk.start_char <= focus.start_char and focus.end_char <= chunk.end_char:
            assert focus._.clin_assertion == "normal", (focus.text, focus._.clin_assertion)


def test_a_condition_after_a_comma_does_not_speak_for_the_items_before(default_en):
    doc = default_en("Transferred with pneumonia, sepsis, in stable condition.")
    assert any(s._.clin_assertion == "affirmed" and "pneumonia" in s.text for s in doc.spans["clin_chunks"])


def test_a_chunk_cut_inside_a_risk_list_cue_takes_the_cue(default_en):
    """The risk-list cue "risks of infection, bleeding, ..." holds the findings in its own words; a chunk
    that ends inside it ("... including risks of infection, bleeding") reads hypothetical, as its concepts do."""
    doc = default_en("The operation was explained in detail including risks of infection, bleeding, injury to nearby organs "
                     "including risk of a leak.")
    chunk = next(s for s in doc.spans["clin_chunks"] if "infection" in s.text)
    assert chunk.text.endswith("bleeding") and chunk._.clin_assertion == "hypothetical", (chunk.text, chunk._.clin_assertion)


def test_a_chunk_that_ends_with_a_forward_cue_is_not_governed_by_it():
    """A forward cue speaks for what follows it ("mit fragl."): the finding before it keeps its own chunk
    and reads affirmed, the next chunk reads uncertain. Since round 19 "fragl." stands before its noun and
    "mit fragl." opens a chunk, so the hedge travels with its finding."""
    doc = resolve_pipeline("default", lang="de").nlp("Cholezystolithiasis mit fragl. Geringer Begleitcholezystitis.")
    statuses = {s.text: s._.clin_assertion for s in doc.spans["clin_chunks"]}
    assert statuses == {"Cholezystolithiasis": "affirmed", "fragl. Geringer Begleitcholezystitis": "uncertain"}


def test_a_flattened_risk_list_after_a_colon_is_hypothetical_item_by_item(default_en):
    """An export that flattened the list's line breaks into commas (":,1.  Infection.,2.  ..."): every
    item's chunk reads hypothetical, the next section's does not."""
    doc = default_en("Potential complications include, but are not limited to:,1.  Infection.,2.  Bleeding.,"
                     "3.  Urinary leakage.,FINDINGS: , Hematuria was seen.")
    statuses = {s.text: s._.clin_assertion for s in doc.spans["clin_chunks"]}
    assert [statuses[item] for item in ("Infection", "Bleeding", "Urinary leakage")] == ["hypothetical"] * 3, statuses
    assert statuses["Hematuria was seen"] == "affirmed", statuses
