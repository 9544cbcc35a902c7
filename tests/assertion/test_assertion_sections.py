"""Sections that hold: a header (bullet, number, colon, capitals or none) opens a section that runs
over all its list items to the next header, in a blank pipeline and under medspaCy's sectionizer."""
import pytest

from assertion_helpers import assess, check

PMH_NUMBERED = "PAST MEDICAL HISTORY:\n1. Global developmental delay\n2. Asthma\n3. Hypertension\n"
PMH_GAP = "PAST MEDICAL HISTORY:\n1. Asthma\n2. Diabetes\n\n3. Hypertension\n"
FH_ITEMS = "FAMILY HISTORY:\n- Mother: diabetes\n- Father: hypertension\n\nSOCIAL HISTORY:\nSmokes.\n"
INSTRUCTIONS = "DISCHARGE INSTRUCTIONS:\n1. Keep a seizure diary.\n2. Take levetiracetam daily.\n"
AP = "A/P:\n* Pneumonia, start antibiotics\n* Hypertension, continue lisinopril\n* Diabetes, check HbA1c\n"

BLANK_CASES = [
    ("en", PMH_NUMBERED, "Hypertension", "historical"),
    ("en", PMH_GAP, "Hypertension", "historical"),
    ("en", "Past medical history\n- Asthma\n- Diabetes", "Diabetes", "historical"),
    ("en", "• Past medical history:\n• Asthma\n• Diabetes", "Diabetes", "historical"),
    ("en", "PMH\nAsthma\nDiabetes", "Diabetes", "historical"),
    ("en", "PAST MEDICAL HISTORY:\n1. CAD: s/p stent\n2. Diabetes", "Diabetes", "historical"),
    ("en", "1. Past medical history:\nAsthma\nDiabetes\n\n2. Physical exam:\nRash", "Rash", "affirmed"),
    ("en", "PAST MEDICAL HISTORY: asthma.\n\nShe presents with fever.", "fever", "affirmed"),
    ("en", FH_ITEMS, "hypertension", "family"),
    ("en", FH_ITEMS, "Smokes", "affirmed"),
    ("en", INSTRUCTIONS, "levetiracetam", "hypothetical"),
    ("en", AP, "Diabetes", "affirmed"),
    ("de", "• Vorerkrankungen:\n• Asthma\n• Diabetes", "Diabetes", "historical"),
    ("de", "Vorerkrankungen:\n1. Asthma\n2. Diabetes\n\n3. Hypertonie", "Hypertonie", "historical"),
    ("es", "• Antecedentes personales:\n• Asma\n• Diabetes", "Diabetes", "historical"),
    ("es", "1. Antecedentes personales:\nAsma\nDiabetes", "Diabetes", "historical"),
    ("es", "Antecedentes personales:\n- Asma\n- Diabetes", "Diabetes", "historical"),
    ("fr", "• Antécédents :\n• Asthme\n• Diabète", "Diabète", "historical"),
    ("nl", "Voorgeschiedenis:\n- 2022: myocardinfarct\n- 2019: appendectomie", "appendectomie", "historical"),
    # common headers of each language's notes (round 2)
    ("en", "Family hx:\n- Mother: breast cancer\n- Father: gout", "gout", "family"),
    ("de", "Familiäre Vorbelastung:\n- Vater: Gicht\n- Mutter: Brustkrebs", "Brustkrebs", "family"),
    ("de", "Bekannte Vorerkrankungen:\n- Asthma\n- Gicht", "Gicht", "historical"),
    ("es", "Antecedentes de interés:\n- Asma\n- Gota", "Gota", "historical"),
    ("es", "Enfermedades previas:\n- Asma\n- Gota", "Gota", "historical"),
    ("fr", "Antécédents médicaux et chirurgicaux :\n- Asthme\n- Goutte", "Goutte", "historical"),
    ("fr", "ATCD familiaux :\n- Père : goutte", "goutte", "family"),
    ("nl", "Familie-anamnese:\n- Vader: jicht\n- Moeder: borstkanker", "borstkanker", "family"),
    ("nl", "Relevante voorgeschiedenis:\n- Astma\n- Jicht", "Jicht", "historical"),
    # a differential-diagnosis header makes what it lists uncertain (round 3)
    ("en", "Differential diagnosis:\n1. Pneumonia\n2. Pulmonary embolism", "Pulmonary embolism", "uncertain"),
    ("de", "Differentialdiagnose:\n- Pneumonie\n- Lungenembolie", "Lungenembolie", "uncertain"),
    ("es", "Diagnóstico diferencial:\n- Neumonía\n- Tromboembolismo pulmonar", "Tromboembolismo pulmonar", "uncertain"),
    ("fr", "Diagnostic différentiel : pneumopathie ou embolie pulmonaire.", "embolie pulmonaire", "uncertain"),
    ("nl", "Differentiaal diagnose:\n- Pneumonie\n- Longembolie", "Longembolie", "uncertain"),
]

# a year at the start of a line dates its finding, in any language
DATED_LINES = [
    ("en", "Timeline\n2019: appendectomy\n2021 - pneumonia", "pneumonia", "historical"),
    ("de", "Verlauf\n2019: Appendektomie", "Appendektomie", "historical"),
    ("es", "Evolución\n2019: apendicectomía", "apendicectomía", "historical"),
    ("fr", "Évolution\n2019 : appendicectomie", "appendicectomie", "historical"),
    ("nl", "Controle.\n2022: myocardinfarct", "myocardinfarct", "historical"),
    ("nl", "Controle.\n2019 - appendectomie", "appendectomie", "historical"),
    ("nl", "Controle op 12-03-2022: geen klachten.", "klachten", "negated"),
    # round 3: a year and a finding, no colon; a number of units is no year
    ("en", "Surgical history\n2011 cholecystectomy\n2016 hernia repair", "hernia repair", "historical"),
    ("en", "Insulin:\n2000 units per week", "units", "affirmed"),
    ("de", "Operationen\n2015 Cholezystektomie", "Cholezystektomie", "historical"),
    ("es", "Cirugías\n2015 colecistectomía", "colecistectomía", "historical"),
    ("fr", "Chirurgie\n2015 cholécystectomie", "cholécystectomie", "historical"),
    ("nl", "Operaties\n2015 cholecystectomie", "cholecystectomie", "historical"),
]

SECTIONIZER_CASES = [
    (PMH_NUMBERED, "Hypertension", "historical"),
    (PMH_GAP, "Hypertension", "historical"),
    ("Past Medical History:\n* Asthma\n* Diabetes", "Diabetes", "historical"),
    (FH_ITEMS, "hypertension", "family"),
    (INSTRUCTIONS, "levetiracetam", "hypothetical"),
]


@pytest.mark.parametrize("lang,text,concept,expected", BLANK_CASES)
def test_section_status_covers_every_item(lang, text, concept, expected):
    check(lang, text, concept, expected)


@pytest.mark.parametrize("lang,text,concept,expected", DATED_LINES)
def test_a_dated_line_is_history(lang, text, concept, expected):
    check(lang, text, concept, expected)


@pytest.mark.parametrize("text,concept,expected", SECTIONIZER_CASES)
def test_section_status_under_medspacys_sectionizer(text, concept, expected):
    check("en", text, concept, expected, sectionizer=True)


@pytest.mark.parametrize("sectionizer", [False, True])
def test_a_p_covers_all_its_bullets(sectionizer):
    for item in ("Pneumonia", "Hypertension", "Diabetes"):
        span = assess("en", AP, item, sectionizer)
        assert span._.clin_section == "observation_and_plan", (item, span._.clin_section)
        assert span._.clin_assertion == "affirmed"


@pytest.mark.parametrize("sectionizer", [False, True])
def test_every_numbered_item_names_its_section(sectionizer):
    for item in ("Global developmental delay", "Asthma", "Hypertension"):
        span = assess("en", PMH_NUMBERED, item, sectionizer)
        assert span._.clin_section == "past_medical_history"
        assert span._.clin_assertion_cues[0]["direction"] == "SECTION"


def test_a_header_keeps_its_own_status():
    """A form label is not reached by a backward cue of its line, nor is it a section cue."""
    text = "HEENT: Normocephalic appearance is not present.\nPAST MEDICAL HISTORY:\nAsthma"
    check("en", text, "HEENT", "affirmed")
    check("en", text, "Normocephalic appearance", "negated")
    check("en", text, "PAST MEDICAL HISTORY", "affirmed")
