"""clin_context_assertion: ConText semantics, clinical conventions, five languages, bad input."""
import configparser
import json
import subprocess
import sys
import warnings

import pytest
import spacy
from hypothesis import given, settings
from hypothesis import strategies as st
from spacy.tokens import DocBin

from spacy_clinchunk import attrs
from spacy_clinchunk.assertion.rules import PRECEDENCE, ContextRulesError, context_rules_v1, read_rules_file, shipped_rules
from spacy_clinchunk.components.context_assertion import FACTORY
from spacy_clinchunk.pipeline import PipelineError, load_pipeline

from assertion_helpers import concept_pipeline
from conftest import EXAMPLE_NOTE, ROOT

LANGS = ("en", "de", "es", "fr", "nl")
KEY = "concepts"


@pytest.fixture(scope="module")
def chunk_nlp():
    nlp = load_pipeline("punct_conj_cleaned")
    nlp.add_pipe(FACTORY)
    return nlp


concept_nlp = concept_pipeline  # blank(lang) + sentencizer + clin_context_assertion, one per language


def assert_concept(lang, text, concept, expected):
    """Label of the (first) occurrence of ``concept`` in ``text``, as a span-group member."""
    nlp = concept_nlp(lang)
    doc = nlp.make_doc(text)
    start = text.index(concept)
    span = doc.char_span(start, start + len(concept), alignment_mode="expand")
    doc.spans[KEY] = [span]
    doc = nlp(doc)
    got = doc.spans[KEY][0]
    assert got._.clin_assertion == expected, (lang, text, concept, got._.clin_assertion, got._.clin_assertion_cues)
    return got


def chunk_labels(nlp, text):
    doc = nlp(text)
    return {s.text: s._.clin_assertion for s in doc.spans[attrs.CHUNKS_KEY]}


# -- scope across chunks, inside chunks ---------------------------------------------
def test_negation_crosses_chunk_boundaries(chunk_nlp):
    labels = chunk_labels(chunk_nlp, "She denies fever, chills, or night sweats.")
    assert len(labels) == 3
    assert set(labels.values()) == {"negated"}


def test_cue_inside_chunk_counts(chunk_nlp):
    assert set(chunk_labels(chunk_nlp, "No developmental delay.").values()) == {"negated"}
    assert set(chunk_labels(chunk_nlp, "Without lesions.").values()) == {"negated"}


def test_a_cue_governing_the_chunks_tail_gives_the_chunk_its_status(chunk_nlp):
    """The chunk shows the truth (issue 40): a forward cue inside a chunk whose scope reaches the
    chunk's end governs the chunk, where its finding's head stands. Before, "Skin warm and dry
    without lesions" read plain affirmed, so a filter on affirmed chunks returned the lesions;
    the concept itself was always negated, and "Skin warm and dry" alone stays normal."""
    assert chunk_labels(chunk_nlp, "Skin warm and dry without lesions.") == {
        "Skin warm and dry without lesions": "negated"
    }
    assert chunk_labels(chunk_nlp, "Evaluation revealed no further bleeding.") == {
        "Evaluation revealed no further bleeding": "negated"
    }
    assert_concept("en", "Skin warm and dry without lesions.", "lesions", "negated")


def test_a_cue_whose_scope_ends_inside_the_chunk_leaves_it(chunk_nlp):
    """"No fever, mild cough": the comma before a graded finding ends the denial (issue 40)."""
    assert_concept("en", "No fever, mild cough.", "fever", "negated")
    assert_concept("en", "No fever, mild cough.", "mild cough", "affirmed")
    assert [v for k, v in chunk_labels(chunk_nlp, "No fever, mild cough.").items() if "cough" in k] == ["affirmed"]


def test_terminate_ends_scope(chunk_nlp):
    assert_concept("en", "No fever but has cough.", "fever", "negated")
    assert_concept("en", "No fever but has cough.", "cough", "affirmed")
    labels = chunk_labels(chunk_nlp, "No fever but has cough.")
    assert labels["No fever"] == "negated"
    assert [v for k, v in labels.items() if "cough" in k] == ["affirmed"]


@pytest.mark.parametrize(
    "text,concept,expected",
    [
        ("Not only fever but also a rash.", "fever", "affirmed"),
        ("No increase in seizure frequency.", "seizure frequency", "affirmed"),
        ("No change in tone.", "tone", "affirmed"),
        ("Not certain whether he has epilepsy.", "epilepsy", "uncertain"),
    ],
)
def test_pseudo_cues(text, concept, expected):
    assert_concept("en", text, concept, expected)


def test_direction_forward_backward_bidirectional():
    assert_concept("en", "No fever today.", "fever", "negated")
    assert_concept("en", "Fever was ruled out.", "Fever", "negated")
    assert_concept("en", "Fever, no.", "Fever", "affirmed")  # "no" looks forward only
    assert_concept("en", "Migraine versus tension headache.", "Migraine", "uncertain")
    assert_concept("en", "Migraine versus tension headache.", "tension headache", "uncertain")


def test_scope_limited_to_sentence():
    assert_concept("en", "No fever. Cough is present.", "Cough", "affirmed")


# -- clinical conventions --------------------------------------------------------------
@pytest.mark.parametrize(
    "text,concept",
    [
        ("Rule out pneumonia.", "pneumonia"),
        ("R/O sepsis.", "sepsis"),
        ("Evaluate for seizures.", "seizures"),
        ("Meningitis versus encephalitis.", "encephalitis"),
        ("Chest CT to exclude pulmonary embolism.", "pulmonary embolism"),
        ("Cannot exclude a small septal defect.", "septal defect"),
    ],
)
def test_work_up_cues_are_uncertain_not_negated(text, concept):
    assert_concept("en", text, concept, "uncertain")


@pytest.mark.parametrize(
    "text,concept",
    [
        ("Deep tendon reflexes absent.", "Deep tendon reflexes"),
        ("Pericardial effusion not seen.", "Pericardial effusion"),
        ("Allergies: NONE", "Allergies"),
        ("Seizures:   none.", "Seizures"),
    ],
)
def test_backward_negation(text, concept):
    got = assert_concept("en", text, concept, "negated")
    assert got._.clin_negated


@pytest.mark.parametrize("text,concept", [("Blood culture was negative.", "Blood culture"),
                                          ("The COVID test is negative.", "COVID test")])
def test_a_test_reported_negative_is_normal(text, concept):
    """Round 3 (issue 40), the real-note guide's reading: a test stated with a negative result is
    a normal result ("urinalysis negative"), not a denied finding."""
    got = assert_concept("en", text, concept, "normal")
    assert not got._.clin_negated


@pytest.mark.parametrize("text,concept", [("Fever resolved.", "Fever"), ("Hematuria, resolved.", "Hematuria"),
                                          ("Chest pain has resolved.", "Chest pain")])
def test_a_resolved_problem_is_historical(text, concept):
    """One reading for "resolved" (issue 40, the real-note guide's): a problem that ended is a past one."""
    assert_concept("en", text, concept, "historical")


def test_header_answered_none_does_not_negate_a_forward_finding():
    assert_concept("en", "Findings: no pneumonia.", "pneumonia", "negated")
    assert_concept("en", "Findings: no pneumonia.", "Findings", "affirmed")


def test_headers_end_scope_and_are_not_cues():
    assert_concept("en", "No fever IMPRESSION: pneumonia", "pneumonia", "affirmed")
    assert_concept("en", "CLINICAL HISTORY: seizures", "seizures", "affirmed")
    assert_concept("en", "Denies pain\nREFERRING DIAGNOSIS: scoliosis", "scoliosis", "affirmed")
    assert_concept("en", "Negative for rash\n\nAssessment: eczema", "eczema", "affirmed")


def test_cues_match_across_whitespace_runs_line_breaks_and_case():
    got = assert_concept("en", "NEGATIVE   FOR hepatomegaly", "hepatomegaly", "negated")
    assert got._.clin_assertion_cues[0]["text"] == "NEGATIVE   FOR"
    assert_concept("en", "Patient is negative\nfor hepatomegaly.", "hepatomegaly", "negated")
    assert_concept("en", "NEGATIVE FOR\nhepatomegaly", "hepatomegaly", "negated")


@pytest.mark.parametrize(
    "text,concept",
    [
        ("Heart sounds are normal.", "Heart sounds"),
        ("MRI unremarkable.", "MRI"),
        ("Hearing screen within normal limits.", "Hearing screen"),
        ("Renal ultrasound showed no abnormality.", "Renal ultrasound"),
        ("Normal heart sounds.", "heart sounds"),
    ],
)
def test_normality_is_normal_not_negated(text, concept):
    got = assert_concept("en", text, concept, "normal")
    assert got._.clin_normal and not got._.clin_negated


@pytest.mark.parametrize(
    "text,concept,expected",
    [
        ("The patient has seizures.", "seizures", "affirmed"),
        ("Possible evidence of motor delay.", "motor delay", "uncertain"),
        ("History of asthma.", "asthma", "historical"),
        ("Status post appendectomy.", "appendectomy", "historical"),
        ("Return if she develops a rash.", "rash", "hypothetical"),
        ("Family history of diabetes.", "diabetes", "family"),
        ("Epilepsy in his brother.", "Epilepsy", "family"),
    ],
)
def test_english_categories(text, concept, expected):
    assert_concept("en", text, concept, expected)


def test_precedence_and_flags():
    got = assert_concept("en", "Mother has a history of breast cancer.", "breast cancer", "family")
    assert got._.clin_family and got._.clin_historical and not got._.clin_negated
    got = assert_concept("en", "No history of possible seizures.", "seizures", "negated")
    assert got._.clin_negated
    assert PRECEDENCE[0] == "negated" and PRECEDENCE[-1] == "normal"


def test_cues_carry_offsets_and_category():
    got = assert_concept("en", "She denies fever.", "fever", "negated")
    doc = got.doc
    (cue,) = got._.clin_assertion_cues
    assert cue["category"] == "NEGATED_EXISTENCE"
    assert doc.text[cue["start_char"]:cue["end_char"]] == cue["text"] == "denies"
    json.dumps(got._.clin_assertion_cues)


# -- five languages ------------------------------------------------------------------
MULTILINGUAL = {
    "de": [
        ("Das Kind hat eine Hypotonie.", "Hypotonie", "affirmed"),
        ("Kein Fieber.", "Fieber", "negated"),
        ("Ohne Hinweis auf Mikrozephalie.", "Mikrozephalie", "negated"),
        ("Eine Pneumonie wurde ausgeschlossen.", "Pneumonie", "negated"),
        ("Ödeme nicht nachweisbar.", "Ödeme", "negated"),
        ("Verdacht auf Marfan-Syndrom.", "Marfan-Syndrom", "uncertain"),
        ("Zum Ausschluss einer Meningitis.", "Meningitis", "uncertain"),
        ("Zustand nach Appendektomie.", "Appendektomie", "historical"),
        ("Falls Fieber auftritt, Wiedervorstellung.", "Fieber", "hypothetical"),
        ("Die Mutter hat Diabetes.", "Diabetes", "family"),
        ("Die Herztöne sind unauffällig.", "Herztöne", "normal"),
        ("Kein Fieber, aber Husten.", "Husten", "affirmed"),
        ("Nicht nur Fieber.", "Fieber", "affirmed"),
    ],
    "es": [
        ("El paciente presenta convulsiones.", "convulsiones", "affirmed"),
        ("No presenta fiebre.", "fiebre", "negated"),
        ("Sin signos de ataxia.", "ataxia", "negated"),
        ("Neumonía descartada.", "Neumonía", "negated"),
        ("Posible retraso motor.", "retraso motor", "uncertain"),
        ("Para descartar meningitis.", "meningitis", "uncertain"),
        ("Antecedentes de asma.", "asma", "historical"),
        ("En caso de fiebre acudir a urgencias.", "fiebre", "hypothetical"),
        ("Su madre tiene diabetes.", "diabetes", "family"),
        ("Ecografía renal normal.", "Ecografía renal", "normal"),
        ("No tiene fiebre pero sí tos.", "tos", "affirmed"),
        ("Sin cambios en la frecuencia de crisis.", "frecuencia de crisis", "affirmed"),
    ],
    "fr": [
        ("Le patient présente une hypotonie.", "hypotonie", "affirmed"),
        ("Pas de fièvre.", "fièvre", "negated"),
        ("Absence de microcéphalie.", "microcéphalie", "negated"),
        ("Œdème non retrouvé.", "Œdème", "negated"),
        ("Suspicion de cardiomyopathie.", "cardiomyopathie", "uncertain"),
        ("Antécédents d'asthme.", "asthme", "historical"),
        ("En cas de fièvre, consulter.", "fièvre", "hypothetical"),
        ("Sa mère a un diabète.", "diabète", "family"),
        ("Échographie rénale sans anomalie.", "Échographie rénale", "normal"),
        ("Pas de fièvre mais une toux.", "toux", "affirmed"),
        ("Non seulement de la fièvre.", "fièvre", "affirmed"),
    ],
    "nl": [
        ("De patiënt heeft epilepsie.", "epilepsie", "affirmed"),
        ("Geen koorts.", "koorts", "negated"),
        ("Zonder tekenen van ataxie.", "ataxie", "negated"),
        ("Pneumonie uitgesloten.", "Pneumonie", "negated"),
        ("Mogelijk ontwikkelingsachterstand.", "ontwikkelingsachterstand", "uncertain"),
        ("Voorgeschiedenis van astma.", "astma", "historical"),
        ("Indien koorts optreedt, terugkomen.", "koorts", "hypothetical"),
        ("Moeder heeft diabetes.", "diabetes", "family"),
        ("Harttonen normaal.", "Harttonen", "normal"),
        ("Geen koorts, wel hoest.", "hoest", "affirmed"),
        ("Niet alleen koorts.", "koorts", "affirmed"),
    ],
}


@pytest.mark.parametrize(
    "lang,text,concept,expected",
    [(lang, *case) for lang, cases in MULTILINGUAL.items() for case in cases],
)
def test_multilingual_rules(lang, text, concept, expected):
    assert_concept(lang, text, concept, expected)


@pytest.mark.parametrize("lang", LANGS)
def test_shipped_rules_schema_and_categories(lang):
    rules = shipped_rules(lang)
    categories = {r["category"] for r in rules}
    directions = {r["direction"] for r in rules}
    for needed in ("NEGATED_EXISTENCE", "POSSIBLE_EXISTENCE", "HISTORICAL", "HYPOTHETICAL", "FAMILY", "NORMAL"):
        assert needed in categories, (lang, needed)
    assert {"FORWARD", "BACKWARD", "TERMINATE", "PSEUDO"} <= directions
    from importlib import resources

    text = resources.files("spacy_clinchunk.resources").joinpath(lang, "context_rules.json").read_text("utf-8")
    assert json.loads(text)["context_rules"]


def test_english_default_includes_medspacy_rules_and_ours_override():
    with_defaults = context_rules_v1("en", None, True)
    ours = context_rules_v1("en", None, False)
    assert len(with_defaults) > len(ours)
    evaluate = [r for r in with_defaults if r["literal"].lower() == "evaluate for"]
    assert len(evaluate) == 1 and evaluate[0]["category"] == "POSSIBLE_EXISTENCE"


def test_unknown_language_falls_back_to_english_with_one_warning():
    nlp = spacy.blank("xx")
    nlp.add_pipe("sentencizer")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pipe = nlp.add_pipe(FACTORY, config={"span_keys": [KEY], "language": "tlh"})
        nlp.add_pipe(FACTORY, name="second", config={"span_keys": [KEY], "language": "tlh"})
    assert pipe.lang == "en"
    assert sum("tlh" in str(w.message) for w in caught) == 1
    doc = nlp.make_doc("No fever.")
    doc.spans[KEY] = [doc[1:2]]
    assert nlp(doc).spans[KEY][0]._.clin_assertion == "negated"


# -- sentence boundaries, medspaCy pipelines, ents --------------------------------------
def test_works_without_sentence_boundaries_bounded_by_max_scope():
    nlp = spacy.blank("en")
    nlp.add_pipe(FACTORY, config={"span_keys": [KEY], "max_scope": 3})
    doc = nlp.make_doc("No fever or cough and then after many words a rash")
    doc.spans[KEY] = [doc[1:2], doc[3:4], doc[10:11]]
    labels = [s._.clin_assertion for s in nlp(doc).spans[KEY]]
    assert labels == ["negated", "negated", "affirmed"]


def test_no_sentences_default_limit():
    nlp = spacy.blank("en")
    nlp.add_pipe(FACTORY, config={"span_keys": [KEY]})
    words = "No fever " + "word " * 60 + "rash"
    doc = nlp.make_doc(words)
    doc.spans[KEY] = [doc[1:2], doc[-1:]]
    assert [s._.clin_assertion for s in nlp(doc).spans[KEY]] == ["negated", "affirmed"]


def test_with_medspacy_pipeline_on_ents():
    import medspacy
    from medspacy.ner import TargetRule

    nlp = medspacy.load(medspacy_disable=["medspacy_context"])
    nlp.get_pipe("medspacy_target_matcher").add([TargetRule("fever", "PROBLEM"), TargetRule("cough", "PROBLEM")])
    nlp.add_pipe(FACTORY, config={"span_keys": ["ents"]})
    doc = nlp("Patient denies fever but has cough.")
    assert [(e.text, e._.clin_assertion) for e in doc.ents] == [("fever", "negated"), ("cough", "affirmed")]
    assert doc.ents[0]._.clin_negated


# -- configuration, rules files, serialization -------------------------------------------
def _write(path, data):
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


def test_rules_from_path(tmp_path):
    path = _write(tmp_path / "rules.json", {"context_rules": [
        {"literal": "nie", "category": "NEGATED_EXISTENCE", "direction": "FORWARD"},
    ]})
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe(FACTORY, config={"span_keys": [KEY], "rules": path, "include_default_rules": False})
    doc = nlp.make_doc("nie fever. no cough.")
    doc.spans[KEY] = [doc[1:2], doc[4:5]]
    assert [s._.clin_assertion for s in nlp(doc).spans[KEY]] == ["negated", "affirmed"]


def _normal_word_pipeline(tmp_path, rules):
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    path = _write(tmp_path / "rules.json", {"context_rules": rules})
    nlp.add_pipe(FACTORY, config={"span_keys": [KEY], "rules": path, "include_default_rules": False})
    return nlp


@pytest.mark.parametrize("rules_before", [0, 1, 2, 5, 9, 17, 40])
def test_cues_of_one_category_on_the_same_tokens_all_count(tmp_path, rules_before):
    """Two NORMAL rules on the same word, one read back, one both ways: each reads in its own direction,
    in either order and whatever rules stand before them, and the word is reported as one cue. The
    matcher reports such cues in the order of its keys' hashes, which moved whenever a rule was
    inserted, and one of them was dropped by that order (issue 40, round 18)."""
    back = {"literal": "clear (back)", "category": "NORMAL", "direction": "BACKWARD", "pattern": [{"LOWER": "clear"}]}
    both = {"literal": "clear (both)", "category": "NORMAL", "direction": "BIDIRECTIONAL", "pattern": [{"LOWER": "clear"}]}
    others = [
        {"literal": f"other {i}", "category": "NEGATED_EXISTENCE", "direction": "FORWARD", "pattern": [{"LOWER": f"zz{i}"}]}
        for i in range(rules_before)
    ]
    for rules in ([*others, back, both], [*others, both, back]):
        nlp = _normal_word_pipeline(tmp_path, rules)
        doc = nlp.make_doc("lungs clear murmur")
        doc.spans[KEY] = [doc[0:1], doc[2:3]]
        spans = nlp(doc).spans[KEY]
        assert [s._.clin_assertion for s in spans] == ["normal", "normal"]
        assert [[c["text"] for c in s._.clin_assertion_cues] for s in spans] == [["clear"], ["clear"]]


def test_a_later_rule_of_another_category_on_the_same_tokens_still_wins(tmp_path):
    """"pas d'anomalie": a rule listed later of another category refines the earlier ones on its tokens."""
    rules = [
        {"literal": "clear (back)", "category": "NORMAL", "direction": "BACKWARD", "pattern": [{"LOWER": "clear"}]},
        {"literal": "clear (both)", "category": "NORMAL", "direction": "BIDIRECTIONAL", "pattern": [{"LOWER": "clear"}]},
        {"literal": "clear (pseudo)", "category": "PSEUDO", "direction": "PSEUDO", "pattern": [{"LOWER": "clear"}]},
    ]
    nlp = _normal_word_pipeline(tmp_path, rules)
    doc = nlp.make_doc("lungs clear murmur")
    doc.spans[KEY] = [doc[0:1], doc[2:3]]
    assert [s._.clin_assertion for s in nlp(doc).spans[KEY]] == ["affirmed", "affirmed"]


@pytest.mark.parametrize("spares,passes,expected", [
    (None, None, "H A A H A A N A A"),
    (["HYPOTHETICAL"], None, "H A A H H A N A A"),
    (None, [";"], "H H A H A A N A A"),
    (["HYPOTHETICAL"], [";"], "H H H H H A N A A"),
])
def test_a_terminator_spares_categories_and_a_cue_passes_terminators(tmp_path, spares, passes, expected):
    """``metadata.spares`` on a terminator names the categories whose scopes it leaves uncut (the comma
    before a worded item ends a denial, not a list of risks); ``metadata.passes`` on a cue names the
    terminators its scope runs past (a list of risks dictated with semicolons), while other cues of the
    same category still stop there ("prn ; wheeze"). Issue 40, round 19."""
    comma = {"literal": ",", "category": "TERMINATE", "direction": "TERMINATE", "pattern": [{"LOWER": ","}]}
    risks = {"literal": "risks", "category": "HYPOTHETICAL", "direction": "FORWARD"}
    if spares is not None:
        comma["metadata"] = {"spares": spares}
    if passes is not None:
        risks["metadata"] = {"passes": passes}
    nlp = _normal_word_pipeline(tmp_path, [
        risks,
        {"literal": "prn", "category": "HYPOTHETICAL", "direction": "FORWARD"},
        {"literal": "no", "category": "NEGATED_EXISTENCE", "direction": "FORWARD"},
        {"literal": ";", "category": "TERMINATE", "direction": "TERMINATE", "pattern": [{"LOWER": ";"}]},
        comma,
    ])
    doc = nlp.make_doc("risks bleeding ; stroke , sepsis . prn pain , wheeze ; rash . no fever ; cough , ache")
    doc.spans[KEY] = [doc[i:i + 1] for i in (1, 3, 5, 8, 10, 12, 15, 17, 19)]
    short = {"hypothetical": "H", "affirmed": "A", "negated": "N"}
    assert " ".join(short[s._.clin_assertion] for s in nlp(doc).spans[KEY]) == expected


@pytest.mark.parametrize("metadata,message", [
    ({"spares": "HYPOTHETICAL"}, "metadata.spares must be a list of strings"),
    ({"passes": ";"}, "metadata.passes must be a list of strings"),
    ({"passes": [1]}, "metadata.passes must be a list of strings"),
    ({"qualifies_word": "yes"}, "metadata.qualifies_word must be true or false"),
    ({"after_cue_only": 1}, "metadata.after_cue_only must be true or false"),
])
def test_a_switch_of_the_wrong_kind_stops_the_rules_with_one_line(metadata, message):
    """A typo in a rules file names its rule when the rules compile, instead of silently reading
    nothing at match time (round 21; round 19 ignored such values)."""
    from spacy_clinchunk.assertion.cues import compile_rules

    rule = {"literal": "risks", "category": "HYPOTHETICAL", "direction": "FORWARD", "metadata": metadata}
    with pytest.raises(ContextRulesError, match=f"rule #0 \\('risks'\\): {message}") as info:
        compile_rules(spacy.blank("en"), "test", [rule], None)
    assert "\n" not in str(info.value)


def test_a_spared_category_still_stops_at_a_terminator_before_its_cue(tmp_path):
    """A terminator spares only the forward reach of a cue: "Nodule du sein droit, biopsie programmée"
    keeps the plan's backward reach off the nodule (round 19)."""
    nlp = _normal_word_pipeline(tmp_path, [
        {"literal": "planned", "category": "HYPOTHETICAL", "direction": "BACKWARD"},
        {"literal": ",", "category": "TERMINATE", "direction": "TERMINATE", "pattern": [{"LOWER": ","}],
         "metadata": {"spares": ["HYPOTHETICAL"]}},
    ])
    doc = nlp.make_doc("nodule , biopsy planned")
    doc.spans[KEY] = [doc[0:1], doc[2:3]]
    assert [s._.clin_assertion for s in nlp(doc).spans[KEY]] == ["affirmed", "hypothetical"]


@pytest.mark.parametrize("after_cue_only,expected", [
    (None, ["affirmed", "negated", "affirmed"]),
    (True, ["affirmed", "negated", "negated"]),
])
def test_a_terminator_may_end_only_what_reads_forward_over_it(tmp_path, after_cue_only, expected):
    """``metadata.after_cue_only``: the terminator ends a forward reach over it ("no edema at rest": the
    circumstance after it is not denied) and leaves the backward reach of a cue after it ("nausea at
    visit denied"), as German "bei" inside a sentence does (round 27)."""
    at = {"literal": "at", "category": "TERMINATE", "direction": "TERMINATE", "pattern": [{"LOWER": "at"}]}
    if after_cue_only is not None:
        at["metadata"] = {"after_cue_only": after_cue_only}
    nlp = _normal_word_pipeline(tmp_path, [
        {"literal": "no", "category": "NEGATED_EXISTENCE", "direction": "FORWARD"},
        {"literal": "denied", "category": "NEGATED_EXISTENCE", "direction": "BACKWARD"},
        at,
    ])
    doc = nlp.make_doc("no edema at rest . nausea at visit denied")
    doc.spans[KEY] = [doc[3:4], doc[1:2], doc[5:6]]
    assert [s._.clin_assertion for s in nlp(doc).spans[KEY]] == expected


@pytest.mark.parametrize(
    "data,fragment",
    [
        ({"context_rules": [{"literal": "no", "category": "NEGATED_EXISTENCE", "direction": "FORWARD"},
                            {"literal": "oops", "category": "NEGATED_EXISTENCE", "direction": "SIDEWAYS"}]},
         "rule #1 ('oops')"),
        ({"context_rules": [{"literal": "x", "category": "FAMILY", "colour": "red"}]}, "unknown key"),
        ({"context_rules": [{"category": "FAMILY"}]}, "'literal'"),
        ({"context_rules": [{"literal": "x", "category": "FAMILY", "pattern": "("}]}, "regular expression"),
        ({"rules": []}, "context_rules"),
    ],
)
def test_malformed_rules_file_names_file_and_rule(tmp_path, data, fragment):
    path = _write(tmp_path / "bad_rules.json", data)
    nlp = spacy.blank("en")
    nlp.add_pipe(FACTORY, config={"rules": path, "include_default_rules": False})  # data is read at initialize
    with pytest.raises(ContextRulesError) as info:
        nlp.initialize()
    assert "bad_rules.json" in str(info.value) and fragment in str(info.value)


def test_rules_file_not_json(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(ContextRulesError, match="broken.json"):
        read_rules_file(path)


def test_missing_rules_file_errors_on_use(tmp_path):
    nlp = spacy.blank("en")
    nlp.add_pipe(FACTORY, config={"span_keys": [KEY], "rules": str(tmp_path / "nope.json")})
    doc = nlp.make_doc("No fever.")
    doc.spans[KEY] = [doc[1:2]]
    with pytest.raises(FileNotFoundError, match="nope.json"):
        nlp(doc)


def _custom_nlp():
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    pipe = nlp.add_pipe(FACTORY, config={"span_keys": [KEY]})
    pipe.add_rules([{"literal": "zonk", "category": "NEGATED_EXISTENCE", "direction": "FORWARD"}])
    return nlp


def _run(nlp, text="zonk fever. She denies cough, or rash."):
    doc = nlp.make_doc(text)
    doc.spans[KEY] = [doc[1:2], doc[5:6], doc[8:9]]
    doc = nlp(doc)
    return [(s.text, s._.clin_assertion, s._.clin_assertion_cues) for s in doc.spans[KEY]]


def test_disk_roundtrip_keeps_custom_rules(tmp_path):
    nlp = _custom_nlp()
    before = _run(nlp)
    assert before[0][1] == "negated"
    nlp.to_disk(tmp_path / "pipe")
    assert (tmp_path / "pipe" / FACTORY / "context_rules.json").is_file()
    loaded = spacy.load(tmp_path / "pipe")
    assert _run(loaded) == before


def test_bytes_roundtrip_and_docbin():
    nlp = _custom_nlp()
    fresh = spacy.blank("en")
    fresh.add_pipe("sentencizer")
    fresh.add_pipe(FACTORY, config={"span_keys": [KEY]})
    fresh.get_pipe(FACTORY).from_bytes(nlp.get_pipe(FACTORY).to_bytes())
    assert _run(fresh) == _run(nlp)
    doc = nlp.make_doc("zonk fever.")
    doc.spans[KEY] = [doc[1:2]]
    doc = nlp(doc)
    restored = list(DocBin(docs=[doc], store_user_data=True).get_docs(nlp.vocab))[0]
    span = restored.spans[KEY][0]
    assert span._.clin_assertion == "negated" and span._.clin_negated


def test_entry_points_declared():
    parser = configparser.ConfigParser()
    parser.read(ROOT / "setup.cfg")
    entry = parser["options.entry_points"]
    assert f"{FACTORY} = spacy_clinchunk.components.context_assertion:make_context_assertion" in entry["spacy_factories"]
    assert "spacy_clinchunk.ContextRules.v1 = spacy_clinchunk.assertion.rules:context_rules_v1" in entry["spacy_misc"]
    assert "spacy_clinchunk.AssertionSections.v1 = spacy_clinchunk.assertion.sections:assertion_sections_v1" in (
        entry["spacy_misc"]
    )
    assert spacy.registry.misc.get("spacy_clinchunk.ContextRules.v1") is context_rules_v1


def test_import_is_light():
    code = (
        "import sys, spacy; import spacy_clinchunk.components.context_assertion; spacy.blank('en');"
        "print('medspacy' in sys.modules, 'loguru' in sys.modules)"
    )  # spaCy/thinc may import torch themselves; medspaCy (and its torch, PyRuSH) must wait
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


# -- bad input -----------------------------------------------------------------------
def test_empty_and_missing_groups_and_empty_doc():
    nlp = concept_nlp("en")
    doc = nlp.make_doc("No fever.")
    doc.spans[KEY] = []
    assert len(nlp(doc).spans[KEY]) == 0
    assert nlp("No fever.") is not None  # group absent
    assert len(nlp("")) == 0


def test_one_character_and_overlapping_spans():
    nlp = concept_nlp("en")
    doc = nlp.make_doc("No fever , x and chills.")
    doc.spans[KEY] = [doc[0:3], doc[1:2], doc[1:3], doc[3:4], doc[5:6]]
    doc = nlp(doc)
    assert [s._.clin_assertion for s in doc.spans[KEY]] == ["negated"] * 5


def test_ten_thousand_chunks_in_one_doc():
    nlp = concept_nlp("en")
    doc = nlp.make_doc("No fever. Cough. " * 5000)
    doc.spans[KEY] = [doc[i:i + 1] for i in range(len(doc)) if doc[i].text in ("fever", "Cough")]
    assert len(doc.spans[KEY]) == 10000
    doc = nlp(doc)
    labels = [s._.clin_assertion for s in doc.spans[KEY]]
    assert labels == ["negated", "affirmed"] * 5000


def test_ten_thousand_chunks_without_sentences():
    nlp = spacy.blank("en")
    nlp.add_pipe(FACTORY, config={"span_keys": [KEY]})
    doc = nlp.make_doc("no fever but cough " * 5000)
    doc.spans[KEY] = [doc[i:i + 1] for i in range(len(doc)) if doc[i].text in ("fever", "cough")]
    labels = [s._.clin_assertion for s in nlp(doc).spans[KEY]]
    assert labels == ["negated", "affirmed"] * 5000


WORDS = ["no", "fever", "denies", "cough", "but", "rash", "history", "of", "possible", "normal",
         "mother", ",", ".", "  ", "\n", "NEGATIVE", "for", "IMPRESSION:", "if", "x"]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(WORDS), min_size=1, max_size=40), st.data())
def test_every_span_gets_a_consistent_label(words, data):
    nlp = concept_nlp("en")
    text = " ".join(words)
    doc = nlp.make_doc(text)
    n = len(doc)
    spans = []
    for _ in range(data.draw(st.integers(0, 6))):
        start = data.draw(st.integers(0, n - 1))
        end = data.draw(st.integers(start + 1, n))
        spans.append(doc[start:end])
    doc.spans[KEY] = spans
    doc = nlp(doc)
    for span in doc.spans[KEY]:
        assert span._.clin_assertion in attrs.ASSERTION_LABELS
        flags = {label for label in PRECEDENCE if getattr(span._, f"clin_{label}")}
        if span._.clin_assertion == "affirmed":
            assert not flags and span._.clin_assertion_cues == []
        else:
            assert span._.clin_assertion in flags
            assert span._.clin_assertion == next(label for label in PRECEDENCE if label in flags)
            assert span._.clin_assertion_cues
        for cue in span._.clin_assertion_cues:
            assert doc.text[cue["start_char"]:cue["end_char"]] == cue["text"]


# -- issue 18: conditional instructions, history from where a finding stands, sections ----
def labels_of(lang, text, concepts):
    """Labels of the first occurrence of each concept, all in one doc."""
    nlp = concept_nlp(lang)
    doc = nlp.make_doc(text)
    spans = []
    for concept in concepts:
        start = text.index(concept)
        spans.append(doc.char_span(start, start + len(concept), alignment_mode="expand"))
    doc.spans[KEY] = spans
    return [s._.clin_assertion for s in nlp(doc).spans[KEY]]


@pytest.mark.parametrize(
    "lang,text,concepts",
    [
        ("en", "Call for any weight gain greater than three pounds, any unusual rashes, nausea, vomiting, "
               "or shortness of breath.",
         ["weight gain", "unusual rashes", "nausea", "vomiting", "shortness of breath"]),
        ("en", "She will alert the physician if any of the following are noted: nosebleeds, excessive bruising, "
               "blood in the stool, or dark urine.",
         ["nosebleeds", "excessive bruising", "blood in the stool", "dark urine"]),
        ("en", "If she has any new tingling, any weakness, increasing pain, or change in color, she should return.",
         ["tingling", "weakness", "increasing pain", "change in color"]),
        ("en", "The patient was told to seek care for chest pain, fainting or palpitations.",
         ["chest pain", "fainting", "palpitations"]),
        ("de", "Bei Fieber, Schüttelfrost, Atemnot oder Brustschmerzen bitte sofort melden.",
         ["Fieber", "Schüttelfrost", "Atemnot", "Brustschmerzen"]),
        ("es", "Si presenta fiebre, tos, dolor abdominal o vómitos, acudir a urgencias.",
         ["fiebre", "tos", "dolor abdominal", "vómitos"]),
        ("fr", "Si apparaissent une fièvre, des frissons, une toux ou des vomissements, consulter.",
         ["fièvre", "frissons", "toux", "vomissements"]),
        ("nl", "Indien koorts, hoesten, buikpijn of braken optreedt, contact opnemen.",
         ["koorts", "hoesten", "buikpijn", "braken"]),
    ],
)
def test_conditional_instruction_scope_runs_over_its_whole_list(lang, text, concepts):
    assert labels_of(lang, text, concepts) == ["hypothetical"] * len(concepts)


@pytest.mark.parametrize(
    "text,concept,expected",
    [
        ("Call your doctor if:\n- fever\n- rash\n\nShe has a cough.", "rash", "hypothetical"),
        ("Call your doctor if:\n- fever\n- rash\n\nShe has a cough.", "cough", "affirmed"),
        ("Return if any of these occur:\n1. fever\n2. rash", "rash", "hypothetical"),
        ("Denies:\nfever", "fever", "negated"),
        ("NEGATIVE FOR:\n- fever\n- rash", "rash", "negated"),
    ],
)
def test_a_cue_ending_in_a_colon_governs_its_list(text, concept, expected):
    assert_concept("en", text, concept, expected)


def test_conditional_scope_ends_with_the_sentence_and_at_but():
    text = "Return if fever develops. She has a cough."
    assert labels_of("en", text, ["fever", "cough"]) == ["hypothetical", "affirmed"]
    assert_concept("en", "Call if rash appears, but the headache is present now.", "headache", "affirmed")


@pytest.mark.parametrize(
    "lang,text,concept,expected",
    [
        ("en", "PAST MEDICAL HISTORY:\n1. Diabetes.\n2. HYPERLIPIDEMIA.\n3. Gout.", "HYPERLIPIDEMIA", "historical"),
        ("en", "PAST MEDICAL HISTORY:\nATRIAL FIBRILLATION.", "ATRIAL FIBRILLATION", "historical"),
        ("en", "PMH: asthma, eczema.", "eczema", "historical"),
        ("en", "Past Medical History\nRenal stones.", "Renal stones", "historical"),
        ("en", "PAST MEDICAL HISTORY: Diabetes.\n\nHOSPITAL COURSE: He developed sepsis.", "sepsis", "affirmed"),
        ("en", "PAST MEDICAL HISTORY: Diabetes.\n\nHe now has sepsis.", "sepsis", "affirmed"),
        ("en", "PAST MEDICAL HISTORY:\nNo diabetes.", "diabetes", "negated"),
        ("en", "FAMILY HISTORY:\nColon cancer.", "Colon cancer", "family"),
        ("en", "HISTORY OF PRESENT ILLNESS: Fever and cough.", "Fever", "affirmed"),
        ("en", "She is known to have sickle cell disease.", "sickle cell disease", "historical"),
        ("en", "The patient has a two-day history of fever.", "fever", "affirmed"),
        ("en", "A 3-week history of cough.", "cough", "affirmed"),
        ("en", "He underwent a cholecystectomy in 2009.", "cholecystectomy", "historical"),
        ("en", "She had pneumonia two years ago.", "pneumonia", "historical"),
        ("de", "Vorerkrankungen:\nDiabetes mellitus.\nHypertonie.", "Hypertonie", "historical"),
        ("de", "Familienanamnese: Darmkrebs.", "Darmkrebs", "family"),
        ("es", "Antecedentes personales:\nAsma.\nDiabetes.", "Diabetes", "historical"),
        ("es", "Antecedentes familiares: diabetes.", "diabetes", "family"),
        ("fr", "Antécédents :\nAsthme.\nDiabète.", "Diabète", "historical"),
        ("fr", "Antécédents familiaux : diabète.", "diabète", "family"),
        ("nl", "Voorgeschiedenis:\nAstma.\nDiabetes.", "Diabetes", "historical"),
        ("nl", "Familieanamnese: diabetes.", "diabetes", "family"),
        ("nl", "In het verleden hartinfarct.", "hartinfarct", "historical"),
    ],
)
def test_history_from_where_a_finding_stands(lang, text, concept, expected):
    assert_concept(lang, text, concept, expected)


def test_no_history_of_is_negated_and_historical():
    got = assert_concept("en", "There is no history of seizures.", "seizures", "negated")
    assert got._.clin_historical and got._.clin_negated


def test_section_gives_a_cue_and_records_the_section():
    # Span._.clin_section is ours alone (medspaCy's Span._.section is never touched): a plain name
    got = assert_concept("en", "PAST MEDICAL HISTORY:\nHYPERLIPIDEMIA.", "HYPERLIPIDEMIA", "historical")
    [cue] = got._.clin_assertion_cues
    assert cue["text"] == "PAST MEDICAL HISTORY" and cue["direction"] == "SECTION"
    assert got._.clin_section == "past_medical_history"
    got = assert_concept("en", "FAMILY HISTORY: Mother with lupus.", "lupus", "family")
    assert got._.clin_assertion_cues[0]["text"] == "Mother"
    assert got._.clin_section == "family_history"
    assert assert_concept("en", "She has lupus.", "lupus", "affirmed")._.clin_section is None


def _section_name(span):
    """``Span._.clin_section`` is always a plain name, in a medspaCy pipeline too."""
    value = span._.clin_section
    assert value is None or isinstance(value, str)
    return value


def test_same_answer_in_a_blank_and_a_medspacy_pipeline():
    import medspacy

    text = "ALLERGIES:\nNo known drug allergies.\n\nPAST MEDICAL HISTORY:\nHYPERLIPIDEMIA.\nFAMILY HISTORY: lupus."
    concepts = ["allergies", "HYPERLIPIDEMIA", "lupus"]
    blank = concept_nlp("en")
    host = medspacy.load(medspacy_enable=["medspacy_pyrush", "medspacy_sectionizer"])
    host.add_pipe(FACTORY, config={"span_keys": [KEY]})
    results = []
    for nlp in (blank, host):
        doc = nlp.make_doc(text)
        doc.spans[KEY] = [doc.char_span(text.index(c), text.index(c) + len(c)) for c in concepts]
        doc = nlp(doc)
        results.append([(s._.clin_assertion, [c["text"] for c in s._.clin_assertion_cues]) for s in doc.spans[KEY]])
        if nlp is host:
            assert [_section_name(s) for s in doc.spans[KEY]][1:] == ["past_medical_history", "family_history"]
    assert results[0] == results[1]
    assert results[0][0] == ("negated", ["No"])
    assert results[0][1][0] == "historical" and results[0][2][0] == "family"


def test_a_header_ends_scope_in_a_medspacy_pipeline():
    import medspacy

    host = medspacy.load(medspacy_enable=["medspacy_pyrush", "medspacy_sectionizer"])
    host.add_pipe(FACTORY, config={"span_keys": [KEY]})
    text = "Patient denies\nHISTORY OF PRESENT ILLNESS: fever."
    doc = host.make_doc(text)
    doc.spans[KEY] = [doc.char_span(text.index("fever"), text.index("fever") + 5)]
    assert host(doc).spans[KEY][0]._.clin_assertion == "affirmed"


def test_add_pipe_does_not_import_medspacy():
    code = (
        "import sys, spacy; nlp = spacy.blank('en'); nlp.add_pipe('clin_context_assertion');"
        "print('medspacy' in sys.modules); nlp.initialize(); print('medspacy' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]


@pytest.mark.parametrize("lang", LANGS)
def test_shipped_section_tables(lang):
    from importlib import resources

    text = resources.files("spacy_clinchunk.resources").joinpath(lang, "assertion_sections.json").read_text("utf-8")
    sections = json.loads(text)["sections"]
    assert sections["past_medical_history"]["status"] == "historical"
    assert sections["family_history"]["status"] == "family"
    for entry in sections.values():
        assert entry["status"] in (None, *PRECEDENCE) and entry["headers"]


# -- issue 18: bad input ------------------------------------------------------------------
def test_five_thousand_word_sentence_and_five_hundred_item_list():
    long_sentence = "If " + " ".join(f"word{i}" for i in range(5000)) + " occurs, call."
    assert labels_of("en", long_sentence, ["word4999"]) == ["hypothetical"]
    items = [f"symptom{i}" for i in range(500)]
    text = "Call for any of the following: " + ", ".join(items[:-1]) + ", or " + items[-1] + "."
    nlp = concept_nlp("en")
    doc = nlp.make_doc(text)
    doc.spans[KEY] = [t.doc[t.i:t.i + 1] for t in doc if t.text.startswith("symptom")]
    assert {s._.clin_assertion for s in nlp(doc).spans[KEY]} == {"hypothetical"}


@pytest.mark.parametrize(
    "text,concept,expected",
    [
        ("PAST MEDICAL HISTORY:", "PAST MEDICAL HISTORY", "affirmed"),
        ("PAST MEDICAL HISTORY:\n\nFAMILY HISTORY:\n", "FAMILY HISTORY", "affirmed"),
        ("FAMILY HISTORY:\nPAST MEDICAL HISTORY:\nasthma", "asthma", "historical"),
        ("Call your doctor if:\n- fever\n- rash", "rash", "hypothetical"),
        ("The history-taking revealed chest pain.", "history-taking", "affirmed"),
        ("Skills in history-taking and no fever.", "fever", "negated"),
        ("Kein Fieber. No cough. Pas de toux.", "Fieber", "affirmed"),
        ("Kein Fieber. No cough. Pas de toux.", "cough", "negated"),
    ],
)
def test_headers_without_body_cues_inside_concepts_mixed_languages(text, concept, expected):
    assert_concept("en", text, concept, expected)


# -- data through initialize, settings from config, saved pipelines, extension names ---------
ZONK = [{"literal": "zonk", "category": "NEGATED_EXISTENCE", "direction": "FORWARD"}]


def _values(doc, key=attrs.CHUNKS_KEY, prefix="clin_"):
    fields = ("assertion", "assertion_cues", "assertion_statuses", "section")
    return [(s.start_char, s.end_char, *(s._.get(prefix + f) for f in fields)) for s in doc.spans[key]]


@pytest.fixture(scope="module")
def example_text():
    return EXAMPLE_NOTE.read_text(encoding="utf-8")


def test_to_disk_and_spacy_load_give_identical_output(assertion_nlp, example_text, tmp_path):
    before = _values(assertion_nlp(example_text))
    assertion_nlp.to_disk(tmp_path / "p")
    saved = json.loads((tmp_path / "p" / FACTORY / "cfg.json").read_text(encoding="utf-8"))
    # data, no settings; with language "auto" the data of the other languages too
    data = {"light_words", "sections", "abbreviations", "attributive_abbreviations", "alternative_joiners",
            "alternative_breaks", "list_joiners"}
    assert set(saved) == {"format", "source", "languages", *data}
    assert set(saved["languages"]) == {"de", "es", "fr", "nl"}
    assert set(saved["languages"]["de"]) == data
    assert _values(spacy.load(tmp_path / "p")(example_text)) == before


INIT_BLOCK = """
[initialize.components.clin_context_assertion]

[initialize.components.clin_context_assertion.rules]
@misc = "spacy_clinchunk.ContextRules.v1"
lang = "en"
path = "{rules}"
include_default_rules = false

[initialize.components.clin_context_assertion.sections]
@misc = "spacy_clinchunk.AssertionSections.v1"
lang = "en"
path = "{sections}"

[initialize.components.clin_context_assertion.light_words]
@misc = "spacy_clinchunk.ResourceList.v1"
lang = "en"
name = "assertion_light_words"
"""


def test_an_initialize_block_sets_the_data_and_a_saved_pipeline_keeps_it(tmp_path):
    rules = _write(tmp_path / "rules.json", {"context_rules": ZONK})
    sections = _write(tmp_path / "sections.json", {"sections": {"old_stuff": {"status": "historical", "headers": ["old stuff"]}}})
    config = (ROOT / "configs" / "assertion.cfg").read_text(encoding="utf-8")
    path = tmp_path / "assertion_zonk.cfg"
    path.write_text(config + INIT_BLOCK.format(rules=rules, sections=sections), encoding="utf-8")
    text = "OLD STUFF:\nAsthma.\n\nzonk fever. No rash."
    nlp = load_pipeline(path)
    pipe = nlp.get_pipe(FACTORY)
    assert pipe.rules == [{**ZONK[0]}] and list(pipe.sections) == ["old_stuff"]
    expected = [("OLD STUFF", "affirmed", None), ("Asthma", "historical", "old_stuff"),
                ("zonk fever", "negated", None), ("No rash", "affirmed", None)]
    assert _sections(nlp, text) == expected
    nlp.to_disk(tmp_path / "saved")
    (tmp_path / "rules.json").unlink()  # a saved pipeline carries its data
    loaded = spacy.load(tmp_path / "saved")
    assert _sections(loaded, text) == expected


def _sections(nlp, text):
    doc = nlp(text)
    return [(s.text, s._.clin_assertion, s._.clin_section) for s in doc.spans[attrs.CHUNKS_KEY]]


def test_data_loads_on_first_use_without_initialize():
    nlp = spacy.blank("de")
    nlp.add_pipe("sentencizer")
    pipe = nlp.add_pipe(FACTORY, config={"span_keys": [KEY]})
    assert pipe._engines == {} and pipe._rules == {}  # add_pipe reads nothing
    doc = nlp.make_doc("Kein Fieber.")
    doc.spans[KEY] = [doc[1:2]]
    doc = nlp(doc)
    assert doc.spans[KEY][0]._.clin_assertion == "negated" and doc._.clin_language == "de"
    assert pipe.rules_for("de") == shipped_rules("de")
    assert set(pipe._engines) == {"de"}  # only the language met was compiled


def test_initialize_arguments_replace_the_packaged_data():
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    pipe = nlp.add_pipe(FACTORY, config={"span_keys": [KEY]})
    pipe.initialize(rules={"context_rules": ZONK}, sections={"hx": {"status": "family", "headers": ["kin"]}},
                    light_words=["fellow"])
    assert pipe.light_words == ["fellow"]
    spans = _concepts(nlp, "KIN:\nlupus.\n\nfellow zonk fever. No rash.", "lupus", "fellow zonk fever", "rash")
    assert [(s.text, s._.clin_assertion) for s in spans] == [
        ("lupus", "family"), ("fellow zonk fever", "negated"), ("rash", "affirmed")]
    pipe.initialize()  # nothing given: the packaged data of the language again
    assert pipe.rules == context_rules_v1("en", None, True) and "patient" in pipe.light_words


@pytest.mark.parametrize(
    "kwargs,fragment",
    [
        ({"rules": [{"literal": "x", "category": "FAMILY", "direction": "UP"}]}, "initialize rules: rule #0 ('x')"),
        ({"sections": {"hx": {"status": "gone", "headers": ["hx"]}}}, "section 'hx': unknown status 'gone'"),
        ({"sections": {"hx": {"status": None, "headers": "hx"}}}, "'headers' must be a list"),
        ({"light_words": [""]}, "expected a JSON list of non-empty strings"),
    ],
)
def test_bad_initialize_data_is_one_line(kwargs, fragment):
    from spacy_clinchunk.resources_io import ResourceError

    pipe = spacy.blank("en").add_pipe(FACTORY, config={"include_default_rules": False})
    with pytest.raises(ResourceError) as info:
        pipe.initialize(**kwargs)
    assert fragment in str(info.value) and "\n" not in str(info.value)


@pytest.fixture(scope="module")
def saved_assertion(tmp_path_factory):
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe(FACTORY, config={"span_keys": [KEY], "include_default_rules": False})
    nlp.initialize()
    path = tmp_path_factory.mktemp("assertion") / "pipeline"
    nlp.to_disk(path)
    return path


def _concepts(nlp, text, *concepts):
    doc = nlp.make_doc(text)
    doc.spans[KEY] = [doc.char_span(text.index(c), text.index(c) + len(c)) for c in concepts]
    return list(nlp(doc).spans[KEY])  # spans keep their doc alive, a group does not


@pytest.mark.parametrize(
    "setting,value,message",
    [
        ("max_scope", 0, "max_scope must be an integer >= 1 or null, got 0"),
        ("max_scope", True, "max_scope must be an integer >= 1 or null, got True"),
        ("include_default_rules", "maybe", "include_default_rules must be true or false, got 'maybe'"),
        ("extension_prefix", "1x", "extension_prefix must be a string matching ^[A-Za-z_][A-Za-z0-9_]*$, got '1x'"),
    ],
)
def test_a_bad_setting_is_one_line_through_load_pipeline(saved_assertion, setting, value, message):
    override = {f"components.{FACTORY}.{setting}": value}
    for source in ("assertion", saved_assertion):
        with pytest.raises(PipelineError) as info:
            load_pipeline(source, override)
        assert str(info.value).startswith(f"{FACTORY}: {message}") and "\n" not in str(info.value)


def test_setting_overrides_of_a_saved_pipeline_take_effect(saved_assertion):
    text = "No fever or cough and then a rash."
    assert [s._.clin_assertion for s in _concepts(spacy.load(saved_assertion), text, "cough")] == ["negated"]
    loaded = spacy.load(saved_assertion, config={f"components.{FACTORY}.max_scope": 1})
    assert loaded.get_pipe(FACTORY).max_scope == 1
    assert [s._.clin_assertion for s in _concepts(loaded, text, "fever", "cough")] == ["negated", "affirmed"]
    # a setting the rules are built from: the saved rules give way to those it asks for
    loaded = spacy.load(saved_assertion, config={f"components.{FACTORY}.rules": ZONK})
    assert loaded.get_pipe(FACTORY).rules == ZONK


def test_extension_prefix_renames_every_attribute(saved_assertion):
    loaded = spacy.load(saved_assertion, config={f"components.{FACTORY}.extension_prefix": "ours_"})
    assert loaded.get_pipe(FACTORY).extension_names.fields["assertion"] == "ours_assertion"
    fever, lupus = _concepts(loaded, "She denies fever.\nFAMILY HISTORY: lupus.", "fever", "lupus")
    assert (fever._.ours_assertion, fever._.ours_negated, fever._.ours_family) == ("negated", True, False)
    assert [c["text"] for c in fever._.ours_assertion_cues] == ["denies"]
    assert (lupus._.ours_assertion, lupus._.ours_section, lupus._.ours_assertion_statuses) == (
        "family", "family_history", ["family"])
    assert fever._.clin_assertion is None and not fever._.clin_negated  # the default names stay unwritten


def test_a_read_only_attribute_under_the_prefix_is_refused():
    from spacy.tokens import Span

    from spacy_clinchunk.components.settings import SettingError

    Span.set_extension("theirs_section", getter=lambda span: "not ours")
    try:
        with pytest.raises(SettingError, match=r"extension_prefix: Span\._\.theirs_section is another package's"):
            spacy.blank("en").add_pipe(FACTORY, config={"extension_prefix": "theirs_"})
    finally:
        Span.remove_extension("theirs_section")
    assert not Span.has_extension("theirs_assertion")  # refused before anything was registered


def test_medspacy_attributes_and_logger_levels_are_left_alone():
    import logging

    import medspacy  # noqa: F401
    from medspacy.context import ConText  # noqa: F401  (registers medspaCy's Span._.is_negated)
    from spacy.tokens import Span

    loggers = [logging.getLogger(), *(logging.getLogger(n) for n in list(logging.root.manager.loggerDict))]
    levels = [lg.level for lg in loggers]
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe(FACTORY, config={"span_keys": [KEY]})
    nlp.initialize()
    (span,) = _concepts(nlp, "She denies fever.", "fever")
    assert span._.clin_negated and Span.has_extension("is_negated") and not span._.is_negated
    assert [lg.level for lg in loggers] == levels
    assert not Span.has_extension("assertion") and not Span.has_extension("negated")
