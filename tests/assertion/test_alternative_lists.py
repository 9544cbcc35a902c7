"""A list that goes on to an alternative ("or", "nor") is one list: the comma rules that end a
scope before a graded item spare it. The alternative words are data of each language
(``alternative_joiners``, ``alternative_breaks``), set through ``initialize`` and saved."""
import re

import pytest
import spacy

from spacy_clinchunk.assertion.cues import alternative_list_guard, compile_rules
from spacy_clinchunk.assertion.rules import ContextRulesError

DENIED_LIST = "He denies fever, chills, increased pain, weakness, or rash."
GRADED_AFTER_DENIAL = "No fever, mild cough."


def pipeline(language="en", **data):
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("clin_punct_splitter")
    component = nlp.add_pipe("clin_context_assertion", config={"language": language})
    nlp.initialize()
    if data:
        component.initialize(**data)
    return nlp


def statuses(nlp, text):
    doc = nlp(text)
    return {s.text: s._.clin_assertion for s in doc.spans["clin_chunks"]}


def test_a_list_that_goes_on_to_or_stays_denied_and_a_graded_item_after_a_denial_does_not():
    nlp = pipeline()
    assert set(statuses(nlp, DENIED_LIST).values()) == {"negated"}
    assert statuses(nlp, GRADED_AFTER_DENIAL) == {"No fever": "negated", "mild cough": "affirmed"}


def test_the_alternative_words_are_data_an_empty_list_turns_the_guard_off():
    found = statuses(pipeline(alternative_joiners=[]), DENIED_LIST)
    assert found["increased pain"] == found["or rash"] == "affirmed"
    # another language's "or" is no alternative in this one
    assert statuses(pipeline(alternative_joiners=["oder"]), DENIED_LIST)["or rash"] == "affirmed"


def test_a_break_word_before_the_alternative_ends_the_list():
    text = "He denies fever, mild pain and would like a walker or a cane."
    assert statuses(pipeline(), text)["mild pain and would like a walker or a cane"] == "affirmed"
    # without "and" among the breaks, the later "or" keeps the graded item in the denial
    spared = statuses(pipeline(alternative_breaks=["but"]), text)
    assert spared["mild pain and would like a walker or a cane"] == "negated"


def test_german_lists_use_the_german_words():
    nlp = pipeline(language="auto")
    found = statuses(nlp, "Der Patient verneint Dyspnoe, vermehrte Müdigkeit oder Gewichtsverlust.")
    assert "affirmed" not in found.values(), found


def test_a_saved_pipeline_keeps_the_words(tmp_path):
    nlp = pipeline(alternative_joiners=[])
    before = statuses(nlp, DENIED_LIST)
    nlp.to_disk(tmp_path / "p")
    assert statuses(spacy.load(tmp_path / "p"), DENIED_LIST) == before != statuses(pipeline(), DENIED_LIST)


def test_the_guard_is_a_lookahead_over_the_clause():
    guard = re.compile("," + alternative_list_guard(["or", "nor"], ["and", "but"]))
    assert not guard.search("fever, weakness, or rash")
    assert guard.search("fever, weakness. Or rash")  # the clause ended first
    assert guard.search("fever, weakness and pain or rash")  # "and" closed the list
    assert guard.search("fever, weakness, orange stool")  # a word that starts with "or"
    assert alternative_list_guard([], ["and"]) == ""


def test_the_flag_needs_a_regex_pattern():
    rule = {"literal": "mild", "category": "TERMINATE", "direction": "TERMINATE",
            "metadata": {"spares_alternative_lists": True}}
    with pytest.raises(ContextRulesError, match="rule #0.*needs a regex 'pattern'"):
        compile_rules(spacy.blank("en"), "test", [rule], None, "(?!x)")
