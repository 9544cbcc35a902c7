"""A short predicate governs its whole coordinated list (``metadata.governs_list``): the walk
over the list's items (``assertion/lists.py``) and what the component makes of it."""
import re

import pytest
import spacy

from spacy_clinchunk.assertion.cues import compile_rules
from spacy_clinchunk.assertion.lists import ListGrammar, ListWalk, list_grammar
from spacy_clinchunk.assertion.rules import ContextRulesError

GERMAN = list_grammar("de", ["und", "oder", "sowie"])
ENGLISH = list_grammar("en", ["and", "or"])


def walk_over(text, grammar, cue_words=(), lang="de"):
    """A walk over ``text``'s tokens; the tokens in ``cue_words`` stand for other cues."""
    doc = spacy.blank(lang)(text)
    words = [t.text for t in doc]
    in_cue = [t.text in cue_words for t in doc]
    space = [int(t.is_space) for t in doc]
    return ListWalk(words.__getitem__, space, in_cue, grammar), words


def before(text, cue, grammar=GERMAN, cue_words=(), lang="de"):
    """The words the backward walk from ``cue`` takes in."""
    walk, words = walk_over(text, grammar, cue_words, lang)
    at = words.index(cue)
    return " ".join(words[walk.start_before(at, 0):at])


def after(text, cue, grammar=GERMAN, cue_words=(), lang="de"):
    walk, words = walk_over(text, grammar, cue_words, lang)
    at = words.index(cue) + 1
    return " ".join(words[at:walk.end_after(at, len(words))])


def test_a_list_runs_back_over_bracketed_groups_to_its_label():
    text = "Labor : Elektrolyte ( Na , K , Cl ) , Niere ( Krea , Harnstoff ) , Glucose , CRP unauffällig"
    assert before(text, "unauffällig") == "Elektrolyte ( Na , K , Cl ) , Niere ( Krea , Harnstoff ) , Glucose , CRP"


def test_slashes_and_joiners_separate_items_and_a_comma_before_a_joiner_is_one_separator():
    assert before("Motorik/Durchblutung/Sensibilität peripher oB.", "oB.") == "Motorik / Durchblutung / Sensibilität peripher"
    text = "the uterus , bilateral tubes , and ovaries normal"
    assert before(text, "normal", ENGLISH, lang="en") == "the uterus , bilateral tubes , and ovaries"


def test_a_value_another_cue_or_a_clause_ends_the_list():
    # the items with a value of their own are not summarised
    assert before("Hb 10,5 g/dl , Quick 69 % , Blutbild , Gerinnung unauffällig", "unauffällig") == "Blutbild , Gerinnung"
    # "keine" is the cue of the item after it: that item is its cue's
    assert before("Fieber , keine RGs , Abdomen unauffällig", "unauffällig", cue_words={"keine"}) == "Abdomen"
    # an item of more than three words is a clause: no list at all, only the cue's own reach
    assert before("She reports chest pain , nausea , and her abdomen normal", "normal", ENGLISH, lang="en") == ""


def test_where_nouns_are_capitalised_an_item_with_its_own_predicate_ends_the_list():
    assert before("Allgemeinzustand vermindert , Ernährungszustand normal", "normal") == ""
    # before "und" a lower-case word is an adjective of the next noun
    assert before("Der internistische und neurologische Status unauffällig", "unauffällig") == (
        "Der internistische und neurologische Status")
    # English nouns are not capitalised: nothing is read from case there
    assert before("lungs clear , heart normal", "normal", ENGLISH, lang="en") == "lungs clear , heart"


def test_a_forward_summary_runs_to_the_end_of_its_list():
    text = "Normwerte für Elektrolyte , Eiweiß , Albumin , Kreatinin . Harnsäure erhöht"
    assert after(text, "für") == "Elektrolyte , Eiweiß , Albumin , Kreatinin"
    assert after("Normwerte für Natrium und Kalium bei Zustand nach Nierenversagen", "für") == ""
    assert after("Normwerte für Natrium , Kalium", "für", ListGrammar()) == "Natrium , Kalium"


def test_the_walks_of_all_cues_of_a_long_list_stay_linear():
    items = ", ".join(f"Wert{chr(97 + k % 26)}" for k in range(3000))
    text = " unauffällig , ".join([items] * 20)
    doc = spacy.blank("de")(text)
    words = [t.text for t in doc]
    reads = []

    def word_of(k):
        reads.append(k)
        return words[k]

    cues = [i for i, w in enumerate(words) if w == "unauffällig"]
    walk = ListWalk(word_of, [0] * len(words), [w == "unauffällig" for w in words], GERMAN)
    starts = [walk.start_before(c, 0) for c in cues]
    assert starts[0] == 0 and all(words[s - 2] == "unauffällig" for s in starts[1:])
    assert len(reads) <= 3 * len(words)  # each token read about once, whatever the number of cues


def _component_pipeline(**data):
    nlp = spacy.blank("de")
    nlp.add_pipe("sentencizer")
    component = nlp.add_pipe("clin_context_assertion", config={"language": "de", "span_keys": ["concepts"]})
    nlp.initialize()
    if data:
        component.initialize(**data)
    return nlp


def _status(nlp, text, concept):
    doc = nlp.make_doc(text)
    start = re.search(re.escape(concept) + r"(?!\w)", text).start()
    doc.spans["concepts"] = [doc.char_span(start, start + len(concept))]
    for _, proc in nlp.pipeline:
        doc = proc(doc)
    return doc.spans["concepts"][0]._.clin_assertion


JOINED = "Leber sowie Milz sowie Niere sowie Pankreas sowie Gallenblase unauffällig."


def test_the_joiners_are_data_set_through_initialize_and_saved(tmp_path):
    assert _status(_component_pipeline(), JOINED, "Leber") == "normal"
    without_sowie = _component_pipeline(list_joiners=["und"])
    assert _status(without_sowie, JOINED, "Leber") == "affirmed"  # one long item: the cue's own reach
    without_sowie.to_disk(tmp_path / "p")
    assert _status(spacy.load(tmp_path / "p"), JOINED, "Leber") == "affirmed"


def test_a_long_list_without_punctuation_gives_the_cues_own_reach():
    text = " ".join(f"Befund{k}" for k in range(50)) + " unauffällig."
    nlp = _component_pipeline()
    assert _status(nlp, text, "Befund0") == "affirmed"
    assert _status(nlp, text, "Befund49") == "normal"  # the last words, in the rule's max_scope


def test_the_switch_must_be_a_boolean():
    rule = {"literal": "normal", "category": "NORMAL", "direction": "BACKWARD", "pattern": "normal",
            "max_scope": 3, "metadata": {"governs_list": "yes"}}
    with pytest.raises(ContextRulesError, match="governs_list must be true or false"):
        compile_rules(spacy.blank("en"), "test", [rule], None)
