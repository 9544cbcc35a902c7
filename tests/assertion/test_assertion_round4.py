"""Round 4 of the real-note rules (issue 40): regression sentences, written for these tests.

The patterns came from development notes annotated in round 4 before any rule change; the sentences
are ours. Each group says why it holds.
"""
import pytest

from assertion_helpers import case_groups, check
from spacy_clinchunk.pipeline import resolve_pipeline

GROUPS, CASES = case_groups("assertion_round4_en")


@pytest.mark.parametrize("lang,text,concept,expected", CASES)
def test_round4_patterns(lang, text, concept, expected):
    check(lang, text, concept, expected)


def test_every_group_says_why_and_has_cases():
    assert all(data["why"] and len(data["cases"]) >= 3 for data in GROUPS.values())


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
