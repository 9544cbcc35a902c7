"""Round 4 of the real-note rules (issue 40), German: regression sentences, written for these tests.

The fresh German development letters of round 4 showed which patterns were missing; every rule is a
general pattern of German clinical letters, and the sentences are ours, not the letters'.
"""
import pytest

from assertion_helpers import case_groups, check

# the sentences, by pattern, each group with why it holds: data, read from tests/data
GROUPS, CASES = case_groups("assertion_round4_de")


@pytest.mark.parametrize("lang,text,concept,expected", CASES)
def test_round4_german_patterns(lang, text, concept, expected):
    check(lang, text, concept, expected)


def test_every_group_says_why_and_has_german_cases():
    assert all(data["why"] and data["cases"] for data in GROUPS.values())
    assert {case[0] for data in GROUPS.values() for case in data["cases"]} == {"de"}
