"""Precision of ConText cues in five languages: reporter vs experiencer, ages, post-negation,
"without", and scopes that end at a new finding, a new clause or a new list item."""
import pytest

from assertion_helpers import check

# The relative who reports or denies is no experiencer; the relative who has, dies of or is
# "with" a condition is.
REPORTER = [
    ("en", "Her mother reports that the child has had staring spells.", "staring spells", "affirmed"),
    ("en", "Per mother, she has had fever for two days.", "fever", "affirmed"),
    ("en", "The father says that he has been coughing at night.", "coughing", "affirmed"),
    ("en", "The mother is unsure whether the child has had night sweats.", "night sweats", "uncertain"),
    ("en", "The parents deny any ingestion of medications.", "ingestion of medications", "negated"),
    ("en", "Her mother reports no fever.", "fever", "negated"),
    ("en", "She lives with both parents and one sibling, attends school.", "attends school", "affirmed"),
    ("en", "Dr. Sample discussed the findings with the family.", "findings", "affirmed"),
    ("en", "The child has asthma.", "asthma", "affirmed"),
    ("en", "Her child has asthma.", "asthma", "family"),
    ("en", "Her mother has epilepsy.", "epilepsy", "family"),
    ("en", "Brother with asthma.", "asthma", "family"),
    ("en", "Mother died of breast cancer.", "breast cancer", "family"),
    ("en", "Family history of diabetes.", "diabetes", "family"),
    ("en", "Her mother has diabetes and hypertension.", "hypertension", "family"),
    ("de", "Die Mutter berichtet, dass das Kind Fieber hatte.", "Fieber", "affirmed"),
    ("de", "Die Mutter berichtet kein Fieber.", "Fieber", "negated"),
    ("de", "Die Eltern verneinen eine Einnahme von Medikamenten.", "Einnahme", "negated"),
    ("de", "Die Mutter hat Epilepsie.", "Epilepsie", "family"),
    ("es", "La madre refiere que el niño ha tenido fiebre.", "fiebre", "affirmed"),
    ("es", "Según la madre, no ha tenido vómitos.", "vómitos", "negated"),
    ("es", "La madre niega fiebre.", "fiebre", "negated"),
    ("es", "Su padre tiene diabetes e hipertensión.", "hipertensión", "family"),
    ("fr", "La mère rapporte que l'enfant a de la fièvre.", "fièvre", "affirmed"),
    ("fr", "Selon la mère, pas de vomissements.", "vomissements", "negated"),
    ("fr", "Son père a un diabète et une hypertension.", "hypertension", "family"),
    ("nl", "Moeder vertelt dat het kind koorts had.", "koorts", "affirmed"),
    ("nl", "Volgens moeder geen braken.", "braken", "negated"),
    ("nl", "Ouders ontkennen inname van medicatie.", "inname", "negated"),
    ("nl", "Vader heeft diabetes en hypertensie.", "hypertensie", "family"),
]

# An age is no "old" history cue; an old infarct is.
AGES = [
    ("en", "A 58-year-old man with chest pain and fever.", "fever", "affirmed"),
    ("en", "A 3-month-old infant with cough.", "cough", "affirmed"),
    ("en", "A 58 year old man with fever.", "fever", "affirmed"),
    ("en", "The patient is a 45-year-old woman with a history of asthma.", "asthma", "historical"),
    ("en", "ECG shows an old infarct.", "infarct", "historical"),
    ("en", "Old MI on ECG.", "MI", "historical"),
    ("de", "Ein 58-jähriger Patient mit Fieber.", "Fieber", "affirmed"),
    ("es", "Varón de 58 años con fiebre.", "fiebre", "affirmed"),
    ("es", "Paciente de 3 meses con tos.", "tos", "affirmed"),
    ("fr", "Patient âgé de 58 ans avec fièvre.", "fièvre", "affirmed"),
    ("nl", "Een 58-jarige man met koorts.", "koorts", "affirmed"),
    ("nl", "Een 3 maanden oude zuigeling met koorts.", "koorts", "affirmed"),
]

# A negation after the finding, "without", and words that negate the word they are glued to.
POST_NEGATION = [
    ("en", "Mediastinal lymph nodes are not enlarged.", "Mediastinal lymph nodes", "negated"),
    ("en", "Normocephalic appearance is not present.", "Normocephalic appearance", "negated"),
    ("en", "The troponin is negative.", "troponin", "normal"),  # a test result (issue 40, round 18)
    ("en", "Chest x-rays were unremarkable.", "Chest x-rays", "normal"),
    ("en", "The heart is normal in size and the liver is not enlarged.", "heart", "normal"),
    ("en", "Fat stranding without necrosis.", "necrosis", "negated"),
    ("en", "Abdomen non-tender.", "tender", "negated"),
    ("en", "Non-small cell lung cancer.", "lung cancer", "affirmed"),
    ("en", "She remained seizure-free.", "seizure", "negated"),
    ("en", "Metabolic cause has not been fully excluded.", "Metabolic cause", "uncertain"),
    ("en", "Rash, possibly viral rather than allergic.", "allergic", "uncertain"),
    ("en", "The rash is viral rather than allergic.", "allergic", "negated"),
    ("de", "Lymphknoten nicht vergrößert.", "Lymphknoten", "negated"),
    ("de", "Der HIV-Test war negativ.", "HIV-Test", "normal"),  # round 3: a test reported negative is normal
    ("de", "Fettgewebsimbibierung ohne Nekrose.", "Nekrose", "negated"),
    ("es", "Ganglios no aumentados de tamaño.", "Ganglios", "negated"),
    ("es", "Serología VIH negativa.", "Serología VIH", "negated"),
    ("es", "Sin soplos.", "soplos", "negated"),
    ("fr", "Ventricule gauche non dilaté.", "Ventricule gauche", "negated"),
    ("fr", "La sérologie VIH est négative.", "sérologie VIH", "negated"),
    ("fr", "Infiltration sans nécrose.", "nécrose", "negated"),
    ("nl", "Lymfeklieren niet vergroot.", "Lymfeklieren", "negated"),
    ("nl", "Vetinfiltratie zonder necrose.", "necrose", "negated"),
]

# A comma (or "and") that opens a new finding with its own predicate ends the scope; a list of
# findings under one cue stays under it. Where the new finding is a normal-exam word of its
# language ("souple", "schoon", "soepel"), it reads "normal", not "negated": the scope ended.
SCOPE_ENDS = [
    ("en", "No murmurs, lungs clear.", "lungs clear", "normal"),
    ("en", "No murmurs, lungs clear.", "murmurs", "negated"),
    ("en", "No edema, pulses are 2+ bilaterally.", "pulses", "affirmed"),
    ("en", "No fever and she has a cough.", "cough", "affirmed"),
    ("en", "No fever, chills, or rigors.", "rigors", "negated"),
    ("en", "No fever, chills or rigors were reported.", "rigors", "negated"),
    ("en", "No murmurs, rubs or gallops.", "gallops", "negated"),
    ("en", "Denies fever, chills, night sweats.", "night sweats", "negated"),
    ("en", "If she has any new tingling, any weakness, increasing pain, or change in color, she should return.",
     "change in color", "hypothetical"),
    ("en", "Findings: 1) pneumonia 2) no effusion 3) cardiomegaly", "cardiomegaly", "affirmed"),
    ("en", "Findings: 1) pneumonia 2) no effusion 3) cardiomegaly", "effusion", "negated"),
    ("de", "Keine Herzgeräusche, Lunge frei.", "Lunge frei", "normal"),
    ("de", "Kein Fieber, Schüttelfrost oder Husten.", "Husten", "negated"),
    ("es", "Sin soplos, pulmones limpios.", "pulmones limpios", "normal"),
    ("es", "No fiebre, escalofríos ni tos.", "tos", "negated"),
    ("es", "Sin soplos ni roces.", "roces", "negated"),
    ("fr", "Pas de souffle, poumons clairs.", "poumons clairs", "normal"),
    ("fr", "Pas de fièvre, abdomen souple.", "abdomen souple", "normal"),
    ("fr", "Pas de fièvre, frissons ou toux.", "toux", "negated"),
    ("nl", "Geen souffles, longen schoon.", "longen schoon", "normal"),
    ("nl", "Geen oedeem, buik soepel.", "buik soepel", "normal"),
    ("nl", "Geen koorts, rillingen of hoest.", "hoest", "negated"),
]


@pytest.mark.parametrize("lang,text,concept,expected", REPORTER)
def test_reporter_is_not_experiencer(lang, text, concept, expected):
    check(lang, text, concept, expected)


@pytest.mark.parametrize("lang,text,concept,expected", AGES)
def test_ages_are_no_history(lang, text, concept, expected):
    check(lang, text, concept, expected)


@pytest.mark.parametrize("lang,text,concept,expected", POST_NEGATION)
def test_post_negation_and_without(lang, text, concept, expected):
    check(lang, text, concept, expected)


@pytest.mark.parametrize("lang,text,concept,expected", SCOPE_ENDS)
def test_scope_ends_at_a_new_finding(lang, text, concept, expected):
    check(lang, text, concept, expected)


def test_reporter_cue_is_named():
    """The negation of "parents deny" is one cue, reported as such."""
    span = check("en", "The parents deny any ingestion of medications.", "ingestion", "negated")
    assert [c["text"] for c in span._.clin_assertion_cues] == ["The parents deny"]
    assert "family" not in span._.clin_assertion_statuses


def test_resolved_history_stays_historical():
    """A history cue dates what "resolved" ends: historical, not negated."""
    span = check("en", "History of febrile seizures at age 2, resolved without treatment.", "febrile seizures", "historical")
    assert "negated" not in span._.clin_assertion_statuses
    check("en", "Her rash has resolved.", "rash", "historical")  # issue 40: resolved is historical


# Round 3. "No (acute) abnormality" calls the exam or study before it normal, in every
# language and after a form label; a concept inside the cue (the abnormality itself) is negated.
NO_ABNORMALITY = [
    ("en", "Head CT: no acute intracranial findings.", "Head CT", "normal"),
    ("en", "Portable chest film: no acute cardiopulmonary process.", "Portable chest film", "normal"),
    ("en", "The abdominal CT showed no acute findings.", "abdominal CT", "normal"),
    ("en", "Resting ECG: no acute ischemic changes.", "Resting ECG", "normal"),
    ("en", "Impression: No acute intracranial abnormality.", "acute intracranial abnormality", "negated"),
    ("en", "She is in no acute distress.", "acute distress", "negated"),
    ("en", "Neurologic examination nonfocal.", "Neurologic examination", "normal"),
    ("de", "Röntgen Thorax: keine akuten Veränderungen.", "Röntgen Thorax", "normal"),
    ("de", "Das MRT zeigt keine frischen Läsionen.", "MRT", "normal"),
    ("de", "Befund: keine akuten Veränderungen.", "akuten Veränderungen", "negated"),
    ("es", "La TC abdominal no muestra hallazgos patológicos.", "TC abdominal", "normal"),
    ("es", "Radiografía de columna sin lesiones agudas.", "Radiografía de columna", "normal"),
    ("es", "Exploración neurológica: sin focalidad neurológica.", "Exploración neurológica", "normal"),
    ("es", "Sin alteraciones agudas.", "alteraciones agudas", "negated"),
    ("fr", "Radiographie thoracique : pas d'anomalie.", "Radiographie thoracique", "normal"),
    ("fr", "Échographie rénale : absence d'anomalie notable.", "Échographie rénale", "normal"),
    ("fr", "Aucune anomalie de la repolarisation.", "anomalie de la repolarisation", "negated"),
    ("fr", "Examen neurologique : sans déficit.", "Examen neurologique", "normal"),
    ("fr", "Examen neurologique sans déficit moteur.", "déficit moteur", "negated"),
    ("fr", "Pas de déficit moteur.", "déficit moteur", "negated"),
    ("fr", "Bruits du cœur réguliers.", "Bruits du cœur", "normal"),
    ("nl", "Cor en pulmones: g.b.", "pulmones", "normal"),
    ("nl", "Buikonderzoek: n.b.", "Buikonderzoek", "normal"),
    ("nl", "N.B. patiënt gebruikt anticoagulantia.", "anticoagulantia", "affirmed"),
    ("nl", "Nierfunctie en elektrolyten in orde.", "elektrolyten", "normal"),
    ("nl", "Neurologisch: geen focale uitval.", "Neurologisch", "normal"),
    ("nl", "Neurologisch onderzoek zonder uitval.", "uitval", "negated"),
]

# A dated past event is historical; what it left ("residual", "séquellaire", "restparese") is
# present; a dose is no year ("Metformin 2000 mg").
DATED = [
    ("en", "In June 2014 he had a myocardial infarction.", "myocardial infarction", "historical"),
    ("en", "Metformin 2000 mg daily.", "Metformin", "affirmed"),
    ("en", "Prior subarachnoid hemorrhage with sequelae of memory loss.", "memory loss", "affirmed"),
    ("de", "Im Oktober 2019 Bandscheibenvorfall.", "Bandscheibenvorfall", "historical"),
    ("de", "Hirninfarkt 2016 mit Restaphasie.", "Restaphasie", "affirmed"),
    ("de", "Metformin 2000 mg täglich.", "Metformin", "affirmed"),
    ("es", "En octubre de 2019 presentó una hernia discal.", "hernia discal", "historical"),
    ("es", "Ictus isquémico en 2016 con disartria residual.", "disartria residual", "affirmed"),
    ("fr", "En octobre 2019, hernie discale opérée.", "hernie discale", "historical"),
    ("fr", "AVC en 2016 avec dysarthrie séquellaire.", "dysarthrie séquellaire", "affirmed"),
    ("nl", "In oktober 2019 een hernia nuclei pulposi.", "hernia nuclei pulposi", "historical"),
    ("nl", "Hartinfarct 2016, gedotterd.", "Hartinfarct", "historical"),
    ("nl", "CVA in 2016 met restafasie.", "restafasie", "affirmed"),
    ("nl", "Metformine 2000 mg per dag.", "Metformine", "affirmed"),
]

# Doubt, exclusion and instructions in the wordings of round 3.
ROUND3_CUES = [
    ("de", "Weder Fieber noch Schüttelfrost.", "Schüttelfrost", "negated"),
    ("de", "Noch leichtes Fieber.", "Fieber", "affirmed"),
    ("es", "Vigilar la aparición de fiebre.", "fiebre", "hypothetical"),
    ("fr", "Une embolie pulmonaire n'est pas exclue.", "embolie pulmonaire", "uncertain"),
    ("fr", "Le ventricule droit n'est pas dilaté.", "ventricule droit", "negated"),
    ("nl", "Let op verschijnselen van infectie zoals koorts.", "koorts", "hypothetical"),
    ("nl", "Let op: allergie voor penicilline.", "allergie", "affirmed"),
]


# Two findings joined before one predicate share it ("Strength and sensation intact"); an
# "and" after a finding of its own still starts a new clause ("No edema and lungs clear").
COORDINATED_SUBJECTS = [
    ("en", "Tone and bulk are normal.", "Tone", "normal"),
    ("en", "No edema and lungs clear.", "edema", "negated"),
    ("en", "No edema and lungs clear.", "lungs", "normal"),
    ("de", "Motorik und Sensibilität seitengleich.", "Motorik", "normal"),
    ("de", "Keine Ödeme und Lunge frei.", "Lunge", "normal"),
    ("es", "Tono y fuerza conservados.", "Tono", "normal"),
    ("fr", "Tonus et force normaux.", "Tonus", "normal"),
    ("nl", "Tonus en kracht normaal.", "Tonus", "normal"),
    ("nl", "Geen oedeem en longen schoon.", "oedeem", "negated"),
]


@pytest.mark.parametrize("lang,text,concept,expected", NO_ABNORMALITY + DATED + ROUND3_CUES + COORDINATED_SUBJECTS)
def test_round3_wordings(lang, text, concept, expected):
    """No-abnormality forms, dated events and their residue, and the doubt, exclusion and
    instruction wordings added in rule round 3."""
    check(lang, text, concept, expected)
