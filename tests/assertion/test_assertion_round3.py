"""Round 3 of the real-note rules (issue 40): regression sentences, written for these tests.

Each rule is a general clinical-language pattern, shipped in every language where the language has
the construction. The sentences are ours; the real notes only showed which patterns were missing.
"""
import pytest

from assertion_helpers import assess, case_groups, check

# the sentences, by pattern, each group with why it holds: data, read from tests/data
GROUPS, CASES = case_groups("assertion_round3")


@pytest.mark.parametrize("lang,text,concept,expected", CASES)
def test_round3_patterns(lang, text, concept, expected):
    check(lang, text, concept, expected)


def test_every_group_says_why_and_has_cases():
    assert set(GROUPS) == {"exceptions", "risk_lists", "normal_readings", "history", "german_clauses"}
    assert all(data["why"] and data["cases"] for data in GROUPS.values()) and len(CASES) == 82


def test_an_exception_lifts_normal_and_negated_only():
    """"bis auf" keeps a history or suspicion of the excepted finding."""
    span = assess("de", "Befund bis auf V.a. Meniskusläsion unauffällig.", "Meniskusläsion")
    assert span._.clin_assertion == "uncertain", span._.clin_assertion_statuses
    assert "normal" not in span._.clin_assertion_statuses


def test_a_dated_report_label_ends_the_section_before_it():
    """"HNO-Konsil vom 27.05.2034:" is a header: the family history above it ends there."""
    text = "Familienanamnese:\nMutter Diabetes mellitus.\nHNO-Konsil vom 27.05.2034:\nOtitis media links."
    assert assess("de", text, "Diabetes mellitus")._.clin_assertion == "family"
    assert assess("de", text, "Otitis media")._.clin_assertion == "affirmed"
