"""Languages of clin_context_assertion: detection per document ("auto"), forced languages,
the cues of each language, saved pipelines, and the bundled notes in de/es/fr/nl.

Every case in ``tests/data/assertion_languages/cues*.txt`` runs twice: under the tokenizer of
its language and under an English tokenizer (what the shipped configs have), with
``language = "auto"``, so the cue, the detection and the tokenization are checked together.
"""
import json
import warnings
from pathlib import Path

import pytest
import spacy

from assertion_helpers import concept_pipeline
from cli_helpers import run_cli
from conftest import ROOT
from spacy_clinchunk.assertion.language import detect_language
from spacy_clinchunk.components.context_assertion import FACTORY, language_rules_file
from spacy_clinchunk.pipeline import load_pipeline

pytest.importorskip("medspacy")

KEY = "concepts"
CUES_DIR = Path(__file__).resolve().parents[1] / "data" / "assertion_languages"  # cues.txt, cues_<round>_<lang>.txt
EXAMPLES = ROOT / "resources" / "examples"
OTHER_LANGS = ("de", "es", "fr", "nl")


def _cases():
    rows = []
    lines = [line for path in sorted(CUES_DIR.glob("cues*.txt")) for line in path.read_text(encoding="utf-8").splitlines()]
    for line in lines:
        if line.strip() and not line.startswith("#"):
            lang, text, concept, status = line.split(" | ")
            rows.append((lang, text, concept, status))
    return rows


auto_nlp = concept_pipeline  # blank(lang) + sentencizer + clin_context_assertion (language auto), one per language


def concept_doc(nlp, text, concept):
    doc = nlp.make_doc(text)
    start = text.index(concept)
    doc.spans[KEY] = [doc.char_span(start, start + len(concept), alignment_mode="expand")]
    return nlp(doc)


def status_of(nlp, text, concept):
    doc = concept_doc(nlp, text, concept)
    return doc.spans[KEY][0]._.clin_assertion


# -- detection -----------------------------------------------------------------------
SHORT = {
    "en": ["No fever.", "Denies chest pain.", "History of asthma.", "Mother has diabetes."],
    "de": ["Kein Fieber.", "V.a. Pneumonie.", "Z.n. Appendektomie.", "Die Mutter hatte Brustkrebs."],
    "es": ["Niega disnea.", "Sin soplos.", "Antecedentes de asma.", "Padre con cardiopatía isquémica."],
    "fr": ["Pas de fièvre.", "Pas d'œdème.", "Antécédents d'asthme.", "Sa mère a un diabète."],
    "nl": ["Geen koorts.", "Harttonen normaal.", "Status na appendectomie.", "Moeder heeft diabetes."],
}
# round 3: short normal-exam and status lines, the detector's hardest case
SHORT_EXAM = {
    "de": ["Pupillen isokor.", "Unklare Verschattung.", "Ehemaliger Raucher."],
    "es": ["Exploración anodina.", "Exfumador.", "Pruebas normales."],
    "fr": ["Hémocultures stériles, ECBU stérile.", "Ancien fumeur.", "Réflexes symétriques."],
    "nl": ["Bloedkweek steriel.", "Kracht en sensibiliteit intact.", "Nierfunctie in orde."],
}


@pytest.mark.parametrize("lang,text", [(lang, t) for table in (SHORT, SHORT_EXAM) for lang, texts in table.items() for t in texts])
def test_each_language_is_detected_on_short_clinical_sentences(lang, text):
    guess = detect_language(text)
    assert guess.sure and guess.language == lang, (text, guess)


@pytest.mark.parametrize("text", ["BP 120/80, HR 72, SpO2 98 %", "", "12.03.2024 - 15:30", "Kein Fieber. No cough. Pas de toux."])
def test_text_without_enough_evidence_is_unsure(text):
    assert not detect_language(text).sure


# words spelt alike in two languages ("general", "diagnostic", "beide") and the lone letters of
# abbreviations ("p.o.", "o.B.", "y/o") must not carry a short text into a wrong language; where its
# words tell, a short text keeps its own. (text, a language it must not surely be, or the one it must be)
@pytest.mark.parametrize("text,not_lang,lang", [
    ("ANESTHESIA: General endotracheal.", "es", None),
    ("Control of blood sugars is poor.", "es", None),
    ("Tuberculosis was a diagnostic consideration.", "fr", "en"),
    ("Consultation for edema.", "es", None),
    ("Milz o.B., Leber o.B.", "es", None),
    ("L-Thyroxin 150 µg p.o.", "es", None),
    ("A 5 y/o male.", "es", None),
    ("Fiebre y tos desde hace dos días.", None, "es"),
    ("Il y a une fièvre depuis hier.", None, "fr"),
    ("Beide Pupillen isokor und lichtreagibel.", None, "de"),
])
def test_cognates_and_abbreviation_letters_do_not_name_a_wrong_language(text, not_lang, lang):
    guess = detect_language(text)
    assert not (guess.sure and guess.language == not_lang), guess
    assert lang is None or (guess.sure and guess.language == lang), guess


@pytest.mark.parametrize("text,lang", [("Il paziente non ha febbre e non riferisce dolore.", "it"),
                                       ("O paciente nega febre e não apresenta dor.", "pt")])
def test_a_language_we_do_not_support_is_not_taken_for_one_we_do(text, lang):
    guess = detect_language(text)
    assert guess.language == lang and not guess.sure


def test_unsure_documents_get_english_rules_and_one_warning_without_their_text():
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe(FACTORY, config={"span_keys": [KEY]})
    texts = {"BP 120/80 mmHg": "BP", "HR 72/min": "HR", "Il paziente non ha febbre": "febbre"}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        docs = [concept_doc(nlp, text, concept) for text, concept in texts.items()]
    ours = [w for w in caught if FACTORY in str(w.message)]
    assert len(ours) == 1
    assert not any(t in str(ours[0].message) for t in ("BP", "febbre", "120"))
    assert [d._.clin_language for d in docs] == ["en"] * 3 and {d._.clin_language_score for d in docs} == {None}


@pytest.mark.parametrize("lang,text,concept,status", [
    ("de", "EKG: ST normal.", "ST", "normal"),
    ("es", "TC: ST normal.", "ST", "normal"),
    ("fr", "ECG : pas de sus-décalage.", "sus-décalage", "negated"),
    ("nl", "VG: COPD GOLD II.", "COPD", "historical"),
])
def test_an_unsure_document_gets_the_rules_of_the_pipeline_language_when_we_ship_it(lang, text, concept, status):
    """A short line without enough evidence, in a spacy.blank(lang) pipeline: the pipeline's
    language is the best guess left, not English."""
    assert not detect_language(text).sure
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        doc = concept_doc(auto_nlp(lang), text, concept)
    assert doc._.clin_language == lang and doc._.clin_language_score is None
    assert doc.spans[KEY][0]._.clin_assertion == status


def test_a_detected_document_records_its_language_and_score_and_gives_no_warning():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        doc = concept_doc(auto_nlp("en"), "Paciente de 45 años. Niega disnea.", "disnea")
    assert not [w for w in caught if FACTORY in str(w.message)]
    assert doc._.clin_language == "es" and 0.5 <= doc._.clin_language_score <= 1
    assert doc.spans[KEY][0]._.clin_assertion == "negated"


# -- forced languages and null -------------------------------------------------------
def test_an_explicit_language_is_forced_and_null_is_the_pipeline_language():
    english = spacy.blank("en")
    english.add_pipe("sentencizer")
    english.add_pipe(FACTORY, config={"span_keys": [KEY], "language": "en"})
    doc = concept_doc(english, "Niega disnea.", "disnea")
    assert doc._.clin_language == "en" and doc.spans[KEY][0]._.clin_assertion == "affirmed"
    spanish = spacy.blank("es")
    spanish.add_pipe("sentencizer")
    pipe = spanish.add_pipe(FACTORY, config={"span_keys": [KEY], "language": None})
    doc = concept_doc(spanish, "Niega disnea.", "disnea")
    assert pipe.languages == ("es",) and doc._.clin_language == "es" and doc._.clin_language_score is None
    assert doc.spans[KEY][0]._.clin_assertion == "negated"


def test_the_cli_detects_a_spanish_note_without_lang_and_lang_forces_one():
    text = "Paciente de 45 años.\nNiega disnea. Sin soplos.\n"
    auto = run_cli("chunk", "-", "--strategy", "assertion", "--format", "jsonl", stdin=text)
    assert auto.returncode == 0, auto.stderr
    record = json.loads(auto.stdout.splitlines()[0])
    status = {c["text"]: c["assertion"] for c in record["chunks"]}
    assert status["Niega disnea"] == "negated" and status["Sin soplos"] == "negated"
    assert record["doc"]["language"] == "es"
    forced = run_cli("chunk", "-", "--strategy", "assertion", "--lang", "en", "--format", "jsonl", stdin=text)
    record = json.loads(forced.stdout.splitlines()[0])
    assert record["doc"]["language"] == "en"
    assert {c["text"]: c["assertion"] for c in record["chunks"]}["Niega disnea"] == "affirmed"


# -- the cues of each language -------------------------------------------------------
@pytest.mark.parametrize("tokenizer", ["own", "en"])
@pytest.mark.parametrize("lang,text,concept,status", _cases())
def test_language_cues(tokenizer, lang, text, concept, status):
    doc = concept_doc(auto_nlp(lang if tokenizer == "own" else "en"), text, concept)
    span = doc.spans[KEY][0]
    assert (doc._.clin_language, span._.clin_assertion) == (lang, status), span._.clin_assertion_cues


# -- saved pipelines -----------------------------------------------------------------
def test_a_saved_auto_pipeline_carries_every_language_and_uses_what_it_saved(tmp_path):
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe(FACTORY, config={"span_keys": [KEY]})
    nlp.initialize()
    nlp.to_disk(tmp_path / "p")
    folder = tmp_path / "p" / FACTORY
    for lang in OTHER_LANGS:
        assert (folder / language_rules_file(lang)).is_file()
    cfg = json.loads((folder / "cfg.json").read_text(encoding="utf-8"))
    assert sorted(cfg["languages"]) == sorted(OTHER_LANGS) and cfg["source"]["lang"] == "auto"
    texts = {"es": ("Niega disnea.", "disnea"), "de": ("Kein Fieber.", "Fieber"), "fr": ("Pas d'embolie.", "embolie")}
    loaded = spacy.load(tmp_path / "p")
    for text, concept in texts.values():
        assert status_of(loaded, text, concept) == "negated"
    # the saved Spanish rules are the ones used: without "niega" the finding stands
    rules_file = folder / language_rules_file("es")
    rules = json.loads(rules_file.read_text(encoding="utf-8"))
    rules["context_rules"] = [r for r in rules["context_rules"] if r["literal"] != "niega"]
    rules_file.write_text(json.dumps(rules), encoding="utf-8")
    edited = spacy.load(tmp_path / "p")
    assert status_of(edited, *texts["es"]) == "affirmed"
    assert status_of(edited, *texts["de"]) == "negated"


def test_bytes_round_trip_of_an_auto_pipe_keeps_every_language():
    nlp = spacy.blank("en")
    pipe = nlp.add_pipe(FACTORY, config={"span_keys": [KEY]})
    pipe.add_rules([{"literal": "zonk", "category": "NEGATED_EXISTENCE", "direction": "FORWARD"}])
    other = spacy.blank("en").add_pipe(FACTORY, config={"span_keys": [KEY]})
    other.from_bytes(pipe.to_bytes())
    for lang in pipe.languages:
        assert other.rules_for(lang) == pipe.rules_for(lang)
        assert any(r["literal"] == "zonk" for r in other.rules_for(lang))


# -- the bundled notes ---------------------------------------------------------------
@pytest.fixture(scope="module")
def assertion_pipeline():
    return load_pipeline("assertion")


def _note(assertion_pipeline, lang):
    text = (EXAMPLES / f"discharge_summary_{lang}.txt").read_text(encoding="utf-8")
    expected = [json.loads(line) for line in (EXAMPLES / f"discharge_summary_{lang}.expected.jsonl").open(encoding="utf-8")]
    doc = assertion_pipeline(text)
    got = [{"start": s.start_char, "end": s.end_char, "text": s.text, "status": s._.clin_assertion} for s in doc.spans["clin_chunks"]]
    return doc, expected, got


@pytest.mark.parametrize("lang", OTHER_LANGS)
def test_bundled_note_is_detected_and_every_chunk_has_its_clinical_status(assertion_pipeline, lang):
    doc, expected, got = _note(assertion_pipeline, lang)
    assert doc._.clin_language == lang
    assert [(e["start"], e["end"], e["text"]) for e in expected] == [(g["start"], g["end"], g["text"]) for g in got]
    wrong = [(i, e["text"], e["status"], g["status"]) for i, (e, g) in enumerate(zip(expected, got))
             if e["status"] != g["status"]]
    assert not wrong

