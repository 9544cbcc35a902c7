"""Rounds 31 to 38 of issue 40: German results and complaints written negative, risks and questions
still open, what cannot be excluded, functions, studies and states said normal, what used to be (31, 32);
scopes that end where a new clause starts in five languages, German post-negation after a report verb,
German 'z.A.' (33, 34); English 'neither ... nor', 'not diagnostic of' in five languages, hypotheses,
risk lists, a new subject after 'and' (35); a bracketed aside that closes a chunk (36); instructions to
watch for, working diagnoses, the potential for a harm (37); diagnoses called unlikely, what is clear of
or hard to exclude, what a German study did not show, two hedges side by side (38). Regression sentences written from clinical
knowledge, kept as data (``tests/data/assertion_round3[1-578].json``); the judge is the annotated real-note
split (bench/real_notes.py)."""
import pytest

from assertion_helpers import case_groups, check, chunk_statuses_of as held_by

GROUPS31, CASES31 = case_groups("assertion_round31")
GROUPS32, CASES32 = case_groups("assertion_round32")
GROUPS33, CASES33 = case_groups("assertion_round33")
GROUPS34, CASES34 = case_groups("assertion_round34")
GROUPS35, CASES35 = case_groups("assertion_round35")
GROUPS37, CASES37 = case_groups("assertion_round37")
GROUPS38, CASES38 = case_groups("assertion_round38")
GROUPS = {**GROUPS31, **GROUPS32, **GROUPS33, **GROUPS34, **GROUPS35, **GROUPS37, **GROUPS38}
CASES = CASES31 + CASES32 + CASES33 + CASES34 + CASES35 + CASES37 + CASES38


@pytest.mark.parametrize("lang,text,concept,expected", CASES)
def test_round31_to_38_patterns(lang, text, concept, expected):
    check(lang, text, concept, expected)


def test_every_group_says_why_and_has_cases():
    assert all(data["why"] and len(data["cases"]) >= 3 for data in GROUPS.values())


@pytest.mark.parametrize("lang,text,word,status", [
    ("de", "Urin-Stix: Leuko neg., Nitrit neg.", "Nitrit", "normal"),
    ("de", "Fieber neg., Nachtschweiß neg.", "Nachtschweiß", "negated"),
    ("en", "The patient tolerated the procedure and anesthesia well.", "anesthesia", "normal"),
    ("en", "Cannot entirely exclude a small fracture.", "fracture", "uncertain"),
    ("en", "Negative for malignancy, showing chronic inflammation.", "inflammation", "affirmed"),
    ("fr", "Sans signe de fracture, on note un hématome étendu de la cuisse.", "hématome", "affirmed"),
    ("es", "Sin evidencia de fractura, se observa un hematoma extenso en el muslo.", "hematoma", "affirmed"),
    ("en", "Without fever, the patient presented with abdominal pain.", "abdominal", "affirmed"),
    ("en", "Neither hematuria nor dysuria.", "dysuria", "negated"),
    ("en", "He has no fever and his lungs are clear.", "lungs", "normal"),
    ("de", "Mögliche Nebenwirkungen sind Übelkeit und Haarausfall.", "Haarausfall", "hypothetical"),
    ("en", "Abdomen nontender (limited by habitus).", "nontender", "normal"),
    ("en", "Will start heparin for DVT prophylaxis (per protocol).", "DVT", "hypothetical"),
    ("de", "Patient raucht nicht (Nikotinabstinenz seit 2010), trinkt keinen Alkohol.", "raucht", "negated"),
    ("en", "Unlikely infection.", "infection", "uncertain"),
    ("en", "The lungs are clear of focal airspace disease.", "airspace", "negated"),
    ("en", "Pulmonary embolism is unlikely given the normal D-dimer.", "embolism", "uncertain"),
    ("es", "La apendicitis parece poco probable dada la ecografía normal.", "apendicitis", "uncertain"),
    ("nl", "Appendicitis lijkt onwaarschijnlijk gezien de echo.", "Appendicitis", "uncertain"),
])
def test_the_chunk_shows_the_same_status(lang, text, word, status):
    assert held_by(lang, text, word) == [status]
