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
    ("en", "The troponin is negative.", "troponin", "negated"),
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
    ("de", "Der HIV-Test war negativ.", "HIV-Test", "negated"),
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
    check("en", "Her rash has resolved.", "rash", "negated")
