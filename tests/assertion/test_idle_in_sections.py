"""A rule may name the sections it says nothing in (``metadata.idle_in_sections``): the cue keeps
its status everywhere else. The shipped "history" rule is silent under an indication header."""
import spacy

ZONK = {"literal": "zonk", "category": "HISTORICAL", "direction": "FORWARD",
        "metadata": {"idle_in_sections": ["medications"]}}
TEXT = "MEDICATIONS:\nZonk aspirin rash.\n\nPLAN:\nZonk aspirin rash.\n"


def statuses(rules):
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("clin_punct_splitter")
    component = nlp.add_pipe("clin_context_assertion", config={"language": "en"})
    nlp.initialize()
    component.add_rules(rules)
    doc = nlp(TEXT)
    return [(s.text, s._.clin_assertion, s._.clin_section) for s in doc.spans["clin_chunks"] if "rash" in s.text]


def test_a_cue_is_silent_in_the_sections_its_rule_names_and_holds_elsewhere():
    (_, under_medications, section), (_, under_plan, _) = statuses([ZONK])
    assert section == "medications"
    assert (under_medications, under_plan) == ("affirmed", "historical")


def test_without_the_list_the_cue_holds_in_every_section():
    plain = {key: value for key, value in ZONK.items() if key != "metadata"}
    assert [status for _, status, _ in statuses([plain])] == ["historical", "historical"]
