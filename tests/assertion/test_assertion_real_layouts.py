"""Real layouts (issue 40): flattened and abbreviated headers, long lists, one item per line,
German abbreviations, the section span group, bad input in linear work. Each case is a pattern
the real notes showed, written here as a regression test (the judge is the annotated real-note
split, bench/real_notes.py)."""
import pytest

from spacy_clinchunk import attrs
from spacy_clinchunk.assertion import status as status_module
from spacy_clinchunk.pipeline import load_pipeline

from assertion_helpers import default_for, status_of as concept


@pytest.fixture(scope="module")
def default_nlp():
    return load_pipeline("default")


@pytest.fixture(scope="module")
def german_nlp():
    return load_pipeline("default", lang="de")


def statuses(nlp, text, key=attrs.CHUNKS_KEY):
    doc = nlp(text)
    return {s.text: s._.clin_assertion for s in doc.spans[key]}


def held_by(doc, word):
    """The statuses of the chunks that hold ``word``."""
    return [s._.clin_assertion for s in doc.spans[attrs.CHUNKS_KEY] if word in s.text]


def shown(doc):
    return [(s.text, s._.clin_assertion) for s in doc.spans[attrs.CHUNKS_KEY]]


# -- sections ---------------------------------------------------------------------------
def test_a_flattened_header_ends_the_family_history(default_nlp):
    got = statuses(default_nlp, "FAMILY HISTORY:, Mother had breast cancer.,HOME MEDICATIONS:, Lisinopril 10 mg daily, "
                                "aspirin.,SOCIAL HISTORY:, Smokes one pack a day.")
    assert got["Mother had breast cancer"] == "family"
    assert got["Lisinopril 10 mg daily"] == got["aspirin"] == "affirmed"


def test_sections_are_a_span_group_with_categories(default_nlp):
    text = ("CHIEF COMPLAINT:, Pain.,FAMILY HISTORY:, Mother had cancer.,REVIEW OF SYSTEMS:, Denies fever.,"
            "LABORATORY DATA:, Sodium 138.,ASSESSMENT AND PLAN:, Observe.")
    doc = default_nlp(text)
    groups = [(s.label_, s.text) for s in doc.spans[attrs.SECTIONS_KEY]]
    assert [label for label, _ in groups] == ["chief_complaint", "family_history", "review_of_systems", "labs",
                                              "observation_and_plan"]
    for (_, section), (_, following) in zip(groups, groups[1:]):
        assert text.index(section) + len(section) <= text.index(following)  # ends at the next header, never later
    spans = list(doc.spans[attrs.SECTIONS_KEY])
    assert all(s.text == text[s.start_char:s.end_char] for s in spans)
    assert [s.start for s in spans] == sorted(s.start for s in spans)


def test_a_doc_that_has_the_section_group_keeps_it(default_nlp):
    text = "HISTORY:, Her mother had breast cancer. No fever."
    doc = default_nlp.make_doc(text)
    doc.spans[attrs.SECTIONS_KEY] = [doc.char_span(0, len(text), label="family_history")]
    for _, proc in default_nlp.pipeline:
        doc = proc(doc)
    assert [s.label_ for s in doc.spans[attrs.SECTIONS_KEY]] == ["family_history"]
    assert {s._.clin_section for s in doc.spans[attrs.CHUNKS_KEY] if s.start > 2} == {"family_history"}


@pytest.mark.parametrize("text", ["HISTORY OF PRESENT ILLNESS:", "Allergies:\n\nMedications:\n", "PLAN:"])
def test_headers_with_nothing_after_them(default_nlp, text):
    doc = default_nlp(text)
    assert all(s.text == text[s.start_char:s.end_char] for s in doc.spans[attrs.SECTIONS_KEY])
    assert all(s._.clin_assertion == "affirmed" for s in doc.spans[attrs.CHUNKS_KEY])


def test_a_header_word_inside_a_sentence_is_no_header(default_nlp):
    doc = default_nlp("There is no history of present illness to report and no family history of cancer.")
    assert not list(doc.spans[attrs.SECTIONS_KEY])
    assert [s._.clin_assertion for s in doc.spans[attrs.CHUNKS_KEY] if "cancer" in s.text] == ["negated"]


# -- lists and clauses ---------------------------------------------------------------------
ROS_ITEMS = ("fever, chills, night sweats, weight loss, headache, vision changes, hearing loss, sore throat, "
             "chest pain, palpitations, shortness of breath, cough, nausea, vomiting, diarrhea, constipation, "
             "dysuria, hematuria, joint pain, rash, depression, anxiety, easy bruising, or cancer")


def test_a_long_denied_list_keeps_its_cue(default_nlp):
    got = statuses(default_nlp, f"REVIEW OF SYSTEMS:, Denies {ROS_ITEMS}.")
    assert {status for text, status in got.items() if text != "REVIEW OF SYSTEMS"} == {"negated"}


@pytest.mark.parametrize("text,phrase,expected", [
    ("No fever, mild cough.", "mild cough", "affirmed"),
    ("No fever, mild cough.", "fever", "negated"),
    ("There is no sign of infection or bleeding, and a new rash appeared on the arm.", "new rash", "affirmed"),
    ("Risk of anesthesia, bleeding, infection, pain, MI, DVT, PE was discussed.", "PE", "hypothetical"),
    ("We discussed side effects such as nausea and diarrhea.", "diarrhea", "hypothetical"),
    ("Hematuria, resolved.", "Hematuria", "historical"),
    ("Chest pain has resolved.", "Chest pain", "historical"),
    ("Denies fever, chills, and night sweats.", "night sweats", "negated"),
])
def test_english_clauses(text, phrase, expected):
    assert concept("en", text, phrase) == expected


@pytest.mark.parametrize("lang,text,phrase,expected", [
    ("de", "Kein Fieber, und die Wunde ist gerötet.", "Wunde ist gerötet", "affirmed"),
    ("de", "Keine Ödeme, leichte Dyspnoe.", "Dyspnoe", "affirmed"),
    ("es", "Sin fiebre, y la herida está enrojecida.", "herida", "affirmed"),
    ("es", "Sin fiebre, leve tos.", "tos", "affirmed"),
    ("fr", "Pas de fièvre, et le patient présente une éruption.", "éruption", "affirmed"),
    ("fr", "Pas de fièvre, légère toux.", "toux", "affirmed"),
    ("fr", "Informé des effets secondaires tels que nausées et vomissements.", "vomissements", "hypothetical"),
    ("nl", "Geen koorts, en de wond is rood.", "wond", "affirmed"),
    ("nl", "Geen koorts, lichte hoest.", "hoest", "affirmed"),
    ("nl", "Geen koorts, lichte hoest.", "koorts", "negated"),
    ("nl", "Koorts had hij niet.", "Koorts", "negated"),  # post-negation: "niet" ends its clause
    ("nl", "Pijn op de borst had patiënt niet, maar wel hoesten.", "hoesten", "affirmed"),
])
def test_scopes_end_where_the_clause_ends_in_every_language(lang, text, phrase, expected):
    assert concept(lang, text, phrase) == expected


# -- German letters ------------------------------------------------------------------------
@pytest.mark.parametrize("text,phrase,expected", [
    ("Keine path. Geräusche, Reflexe bds. neg.", "Geräusche", "negated"),
    ("Fußpulse re. n. tastbar.", "Fußpulse", "negated"),
    ("Bauchschmerzen habe das Mädchen nicht.", "Bauchschmerzen", "negated"),
    ("Gefäßmalformationen zeigen sich zwar nicht, aber dysplastische Venen.", "dysplastische Venen", "affirmed"),
    ("Diabetes mellitus Typ 2, ED 2050, aktuell unter Metformin.", "Diabetes mellitus Typ 2", "affirmed"),
    ("Die Transfusionen verliefen komplikationslos.", "komplikationslos", "negated"),
    ("Hier lässt sich eine Infiltration nicht ausschließen.", "Infiltration", "uncertain"),
    ("Negativ sind h-Caldesmon, EMA, Hormonrezeptoren.", "Hormonrezeptoren", "negated"),
    ("Eine erneute Rißbildung bestätigte sich nicht, die frische Naht hielt.", "erneute Rißbildung", "negated"),
    ("Eine Anastomosierung hätte zu einer Stuhlinkontinenz geführt hätte.", "Stuhlinkontinenz", "hypothetical"),
    ("Verlauf: Herr Muster wurde elektiv zum Drainagewechsel aufgenommen. Dieser wurde ohne \n"
     "Komplikationen durchgeführt.", "Komplikationen", "negated"),  # a wrapped long line: the cue goes on
])
def test_german_abbreviations_and_post_negation(text, phrase, expected):
    assert concept("de", text, phrase) == expected


def test_a_denied_list_after_its_label_line(german_nlp):
    got = statuses(german_nlp, "Gezielt verneint werden:\nBluterbrechen, Teerstuhl, Fieber, Infektzeichen.\n\n"
                               "Aktuelles Vegetativum:\nTrinkmenge 2 Liter")
    assert {got[k] for k in got if k in ("Bluterbrechen", "Teerstuhl", "Fieber", "Infektzeichen")
            or "Bluterbrechen" in k or "Infektzeichen" in k} == {"negated"}
    assert got["Trinkmenge 2 Liter"] == "affirmed"


def test_one_item_per_line_keeps_each_items_cues(german_nlp):
    got = statuses(german_nlp, "Medikation:\nRamipril 5 mg 1-0-0\nZopiclon 7,5 mg z.N.\nMetamizol 500 mg bei Bedarf\n"
                               "Pantoprazol 40 mg 1-0-0\n\nDiagnosen:\nArterielle Hypertonie\nV.a. KHK\nAdipositas")
    assert got["Zopiclon 7,5 mg z.N."] == "affirmed"  # "z.N." (at night) is no "Z.n."
    assert got["Pantoprazol 40 mg 1-0-0"] == "affirmed"  # "bei Bedarf" stays on its line
    assert got["Arterielle Hypertonie"] == got["Adipositas"] == "affirmed"
    assert got["V.a. KHK"] == "uncertain"  # "V.a." never ends a sentence: one chunk


def test_a_list_wrapped_after_a_labelled_line_stays_one_chunk(german_nlp):
    got = statuses(german_nlp, "Phänotyp: kräftige Expression von Vimentin. Negativ sind h-Caldesmon, EMA,\n"
                               "Hormonrezeptoren.\nDiagnose: Leiomyosarkom")
    held = [k for k in got if "Hormonrezeptoren" in k]
    assert held and all("Negativ sind" in k and got[k] == "negated" for k in held)
    assert got["Leiomyosarkom"] == "affirmed"  # a field's line is a new unit


def test_a_question_mark_that_opens_a_word_ends_no_chunk(german_nlp):
    doc = german_nlp("Normwerte für Na, K, GOT, ?-GT, A-PT, CK, Quick, PTT. Harnsäure erhöht.")
    chunks = doc.spans[attrs.CHUNKS_KEY]
    assert not any(s.text.startswith("-GT") for s in chunks)  # "?-GT" is one word
    assert all(s._.clin_assertion == "normal" for s in chunks if "CK" in s.text or "PTT" in s.text)
    assert [s._.clin_assertion for s in chunks if "Harnsäure" in s.text] == ["affirmed"]


@pytest.mark.parametrize("lang,text,finding", [
    ("en", "A little-to-no pus was received from the wound.", "pus"),
    ("en", "Little or no drainage was seen from the incision.", "drainage"),
    ("fr", "Il y a peu ou pas de fièvre depuis deux jours.", "fièvre"),
])
def test_a_quantity_down_to_nothing_denies_its_chunk(lang, text, finding):
    """"little to no pus": the chunk opens with the denial it holds, and "or" inside the phrase cuts nothing."""
    doc = default_for(lang)(text)
    held = [s for s in doc.spans[attrs.CHUNKS_KEY] if finding in s.text]
    assert len(held) == 1 and held[0]._.clin_assertion == "negated", [(s.text, s._.clin_assertion) for s in held]
    assert not any(s.text.lower() in ("little", "a little") for s in doc.spans[attrs.CHUNKS_KEY])


def test_a_clause_closed_by_a_word_of_no_complication_reads_negated(german_nlp):
    got = statuses(german_nlp, "Die Anämie wurde mit zwei Konserven behandelt. Die Transfusionen verliefen komplikationslos.")
    assert got["Transfusionen verliefen komplikationslos"] == "negated"


def test_details_not_further_known_deny_nothing_in_the_chunk(german_nlp):
    got = statuses(german_nlp, "Familienanamnese: Großmutter gynäkologischer Tumor (nicht weiter bekannt). Vater Diabetes mellitus.")
    held = [k for k in got if "Tumor" in k]
    assert held and all(got[k] == "family" for k in held), got


def test_a_german_abbreviation_keeps_its_period_in_the_chunks(german_nlp):
    """"Bek. NINS", "chron. organ. Psychosyndrom": the period belongs to the abbreviation, so no chunk
    ends or starts inside it; written before its noun, it ends no chunk either (round 17): "chron. organ."
    stays with "Psychosyndrom"."""
    doc = german_nlp("Bek. NINS 1°\nSchwerwiegende Sprachstörung und chron. organ. Psychosyndrom bei St.p. SHT 1995\n")
    texts = [s.text for s in doc.spans[attrs.CHUNKS_KEY]]
    assert "Bek. NINS 1°" in texts and "Bek" not in texts, texts
    assert any(t.endswith("chron. organ. Psychosyndrom") for t in texts) and "organ" not in texts, texts


def test_o_b_with_a_space_is_one_chunk(german_nlp):
    got = statuses(german_nlp, "Abdomen: weich, o. B., keine Resistenzen.")
    assert "o. B." in got and got["keine Resistenzen"] == "negated"


def test_a_german_letter_gets_german_chunking_with_language_auto(default_nlp, german_nlp):
    from conftest import ROOT

    text = (ROOT / "resources" / "examples" / "discharge_summary_de.txt").read_text(encoding="utf-8")
    auto, forced = default_nlp(text), german_nlp(text)
    assert auto._.clin_language == "de"
    key = lambda d: [(s.start_char, s.end_char, s._.clin_assertion) for s in d.spans[attrs.CHUNKS_KEY]]  # noqa: E731
    assert key(auto) == key(forced)


@pytest.mark.parametrize("lang,text,kept,opened,statuses", [
    ("en", "The patient tolerated the procedure well without complications.", "tolerated", "complications", ("normal", "negated")),
    ("en", "Flexion revealed good stability with no impingement.", "good stability", "impingement", ("normal", "negated")),
    ("de", "Seit 10 Tagen grippaler Infekt ohne Fieber.", "grippaler Infekt", "Fieber", ("affirmed", "negated")),
    ("fr", "Toux productive sans fièvre depuis trois jours.", "Toux", "fièvre", ("affirmed", "negated")),
    ("es", "Dolor torácico intenso sin fiebre.", "Dolor", "fiebre", ("affirmed", "negated")),
    ("nl", "Productieve hoest zonder koorts.", "hoest", "koorts", ("affirmed", "negated")),
    ("en", "IMPRESSION: Darkened mole status post punch biopsy.", "mole", "biopsy", ("affirmed", "historical")),
    # a hedge after "with": the finding before it is affirmed, the one after it uncertain (round 19)
    ("en", "Bilateral hearing losses with probable otosclerosis.", "hearing losses", "otosclerosis", ("affirmed", "uncertain")),
    ("de", "Kniedistorsion mit V.a. Teilruptur MCL.", "Kniedistorsion", "Teilruptur", ("affirmed", "uncertain")),
    ("de", "Cholezystolithiasis mit fragl. Begleitcholezystitis.", "Cholezystolithiasis", "Begleitcholezystitis", ("affirmed", "uncertain")),
    ("fr", "Entorse du genou avec suspicion de rupture.", "Entorse", "rupture", ("affirmed", "uncertain")),
    ("es", "Esguince de rodilla con sospecha de rotura.", "Esguince", "rotura", ("affirmed", "uncertain")),
    ("nl", "Distorsie van de knie met verdenking op ruptuur.", "Distorsie", "ruptuur", ("affirmed", "uncertain")),
])
def test_a_status_opener_starts_a_chunk_of_its_own(lang, text, kept, opened, statuses):
    """"tolerated the procedure well without complications": the chunk that held both read negated, so
    the finding before the denial read absent in the chunk view ("mole status post biopsy": past). The
    word that opens the other status starts its own chunk now."""
    doc = default_for(lang)(text)
    assert (held_by(doc, kept), held_by(doc, opened)) == ([statuses[0]], [statuses[1]]), shown(doc)


def test_a_flow_that_returns_is_no_instruction_to_come_back(default_nlp):
    """medspaCy's bare "return" made "good blood return" hypothetical; an instruction names what
    would bring the patient back ("return if", "return for", "return precautions")."""
    got = statuses(default_nlp, "Good blood return was noted and all ports were flushed. Clear return was noted. "
                                "The priapism did return following this.")
    assert "hypothetical" not in got.values(), got
    got = statuses(default_nlp, "Return if fever. He should return immediately for chest pain. Return precautions given for bleeding.")
    assert set(got.values()) == {"hypothetical"}, got


@pytest.mark.parametrize("lang,text,word,expected", [
    ("en", "PLAN: Will start heparin drip for DVT prophylaxis.", "DVT", "hypothetical"),
    ("en", "Started on omeprazole for stress ulcer prophylaxis.", "stress ulcer", "hypothetical"),
    ("en", "GENERAL: An awake and alert 85-year-old gentleman who is afebrile.", "gentleman", "normal"),
    ("de", "Das Gangbild war zuletzt ausreichend sicher.", "Gangbild", "normal"),
    ("de", "Die Wundverhältnisse am linken Unterschenkel zuletzt reizlos.", "Wundverhältnisse", "normal"),
    # a joiner before the closing cue: two findings, the closing cue decides nothing for the first
    ("de", "Sie kann in gutem Allgemeinzustand und beschwerdefrei nach Hause entlassen werden.", "Allgemeinzustand", "normal"),
    # a cue that denies what lies inside it and calls the scan normal: the chunk reads normal
    ("es", "TC craneal sin hallazgos agudos.", "TC craneal", "normal"),
])
def test_a_cue_that_closes_its_chunk_speaks_for_the_finding_before_it(lang, text, word, expected):
    """"Will start heparin drip for [DVT] prophylaxis": a backward cue at the chunk's end governs the
    words just before it, where the chunk's finding stands (the mirror of a forward cue whose scope runs
    to the chunk's end); the chunk read affirmed."""
    doc = default_for(lang)(text)
    assert held_by(doc, word) == [expected], shown(doc)


def test_what_the_operator_could_see_or_do_is_no_hedge(default_nlp):
    got = statuses(default_nlp, "The lesion in the tongue could be seen. Fluid could be milked from the vas. "
                                "A wedge was cut that could be closed down later.")
    assert "uncertain" not in got.values(), got
    got = statuses(default_nlp, "This could be pneumonia. The rash may be an allergic reaction.")
    assert set(got.values()) == {"uncertain"}, got


def test_a_german_abbreviation_before_its_noun_ends_no_chunk(german_nlp, default_nlp):
    """"keine path. Geräusche", "bei St.p. Schädel-Hirn-Trauma": German writes every noun with a capital,
    so a period of an abbreviation that never ends a sentence cut the finding from its cue; "re." may end
    one ("Pleuraerguss re. Keine Infiltrate.")."""
    for nlp in (german_nlp, default_nlp):  # "--lang de" and the shipped "auto"
        doc = nlp("Cor: HT rein, keine path. Geräusche. Pleuraerguss re. Keine Infiltrate. "
                  "Organisches Psychosyndrom bei St.p. Schädel-Hirn-Trauma 1995.")
        got = dict(shown(doc))
        assert got["keine path. Geräusche"] == "negated", got
        assert "Pleuraerguss re." in got and got["Keine Infiltrate"] == "negated", got
        assert got["Organisches Psychosyndrom"] == "affirmed", got
        assert [v for k, v in got.items() if k.startswith("St.p. Schädel-Hirn-Trauma")] == ["historical"], got


def test_a_german_abbreviation_written_with_a_space_ends_no_chunk(german_nlp, default_nlp):
    """"mit V. a. CLOVES-Syndrom", "Z. n. Appendektomie": the pair's second letter ("a.", "n.") before a
    capitalised noun cut the suspicion from what it suspects, as the glued "V.a." never did. Only the
    pairs whose glued spelling is listed are read so; "a.e." and "o.g." are listed now."""
    for nlp in (german_nlp, default_nlp):
        got = dict(shown(nlp("Pat. mit V. a. CLOVES-Syndrom und Darmpolypen. Narbenhernie. Z. n. Appendektomie.")))
        assert got["V. a. CLOVES-Syndrom und Darmpolypen"] == "uncertain", got  # "mit V. a." opens a chunk
        assert got["Z. n. Appendektomie"] == "historical" and got["Narbenhernie"] == "affirmed", got
        got = dict(shown(nlp("Schmerzen im Knie, a. e. Gonarthrose. Die o. g. Beschwerden bestehen seit Jahren.")))
        assert got["a. e. Gonarthrose"] == "uncertain" and got["Schmerzen im Knie"] == "affirmed", got
        assert any(k.startswith("o. g. Beschwerden") for k in got), got
        got = dict(shown(nlp("Husten, a.e. Bronchitis. Kein Fieber.")))
        assert got["a.e. Bronchitis"] == "uncertain" and got["Kein Fieber"] == "negated", got
    # a pair that is not listed still ends its sentence where a capital follows
    doc = german_nlp("Schmerzen im Bein a. Nachts kein Fieber.")
    assert [t for t, _ in shown(doc)] == ["Schmerzen im Bein a.", "Nachts kein Fieber"], shown(doc)


@pytest.mark.parametrize("lang,text,word", [
    ("de", "Keine Instabilität, Meniskuszeichen für den Innenmeniskus diskret positiv.", "Meniskuszeichen"),
    ("en", "No instability, meniscal sign for the medial meniscus slightly positive.", "meniscal sign"),
    ("fr", "Pas de fièvre, signe de Murphy franchement positif.", "Murphy"),
    ("es", "Sin fiebre, signo de Murphy claramente positivo.", "Murphy"),
    ("nl", "Geen koorts, teken van Murphy duidelijk positief.", "Murphy"),
])
def test_a_list_item_reported_positive_is_out_of_the_denial(lang, text, word):
    """"keine Instabilität, Meniskuszeichen für den Innenmeniskus diskret positiv": the comma rule that
    ends a denial before an item with its own predicate looks four words ahead; an item reported
    positive is present however many words name it."""
    assert concept(lang, text, word) == "affirmed"
    first = {"de": "Instabilität", "en": "instability", "fr": "fièvre", "es": "fiebre", "nl": "koorts"}[lang]
    assert concept(lang, text, first) == "negated"


@pytest.mark.parametrize("lang,text,word", [
    ("en", "No fever, chills, night sweats or weight loss.", "weight loss"),
    ("de", "Kein Fieber, kein Nachtschweiß, keine Gewichtsabnahme.", "Gewichtsabnahme"),
    ("en", "Negative for chest pain, shortness of breath, or positive orthostatic changes.", "orthostatic changes"),
])
def test_a_denied_list_without_a_positive_report_stays_denied(lang, text, word):
    assert concept(lang, text, word) == "negated"


@pytest.mark.parametrize("text,phrase,expected", [
    # a list of risks goes on past items worded like findings and past semicolons (round 19)
    ("Risks were discussed including bleeding, infection, elevated pressure, worsening of glaucoma, and corneal edema.",
     "corneal edema", "hypothetical"),
    ("Risks were discussed including bleeding, infection, elevated pressure, worsening of glaucoma, and corneal edema.",
     "elevated pressure", "hypothetical"),
    ("He accepts all treatment-associated risks to include but not be limited to bleeding requiring transfusion; "
     "infection; sepsis; heart attack; stroke.", "stroke", "hypothetical"),
    # ... while a denial still ends at the comma before a graded finding or at a semicolon
    ("No fever, elevated jugular venous pressure.", "jugular venous pressure", "affirmed"),
    ("No fever; mild cough.", "cough", "affirmed"),
    ("Denies chest pain; reports dyspnea on exertion.", "dyspnea", "affirmed"),
    # what a measure is to relieve or minimize before it happens
    ("Marcaine was injected to provide prolonged postoperative pain relief.", "postoperative pain", "hypothetical"),
    ("Marcaine was infiltrated around the wound for postanesthetic pain control.", "postanesthetic pain", "hypothetical"),
    ("She was given instructions on how to control her postoperative pain.", "postoperative pain", "hypothetical"),
    ("A pack was placed in the ostium to minimize swelling and obstruction.", "obstruction", "hypothetical"),
    ("Cefazolin was given to reduce the risk of infection.", "infection", "hypothetical"),
    ("He has postoperative pain at the incision.", "postoperative pain", "affirmed"),
    # guesses
    ("It was thought to be perhaps necrotic lung tissue, perhaps a deposit related to tuberculosis.", "tuberculosis",
     "uncertain"),
    ("Triventricular hydrocephalus most consistent with aqueductal stenosis.", "aqueductal stenosis", "uncertain"),
    ("Triventricular hydrocephalus most consistent with aqueductal stenosis.", "hydrocephalus", "affirmed"),
    ("Findings consistent with pneumonia.", "pneumonia", "affirmed"),
    # a state judged normal after its verb
    ("The patient was stable on operative release.", "patient", "normal"),
    ("The heart rate and blood pressure were stable throughout the procedure.", "heart rate", "normal"),
    ("He has stable angina.", "stable angina", "affirmed"),
    ("The pressure was felt to be adequate.", "pressure", "normal"),
    ("The cervix seemed to be hemostatic.", "cervix", "normal"),
    ("He had what appeared to be a recurrent tumor.", "recurrent tumor", "uncertain"),
])
def test_fresh_operative_notes_kinds(text, phrase, expected):
    """Kinds of miss found on the 79 operative notes annotated in round 19 (fresh to every rule)."""
    assert concept("en", text, phrase) == expected


@pytest.mark.parametrize("lang,text,phrase,expected", [
    # written from clinical knowledge in round 20 (case-report and radiology wording, no split holds them)
    ("en", "A diagnosis of Wegener granulomatosis was considered.", "Wegener granulomatosis", "uncertain"),
    ("en", "Sarcoidosis was also entertained but the biopsy was negative.", "Sarcoidosis", "uncertain"),
    ("en", "The patient was considered stable for discharge.", "patient", "affirmed"),
    ("en", "Interval resolution of the right pleural effusion.", "right pleural effusion", "historical"),
    ("en", "Subsequent imaging showed resolution of the abscess.", "abscess", "historical"),
    ("en", "There was only partial resolution of the pleural effusion.", "pleural effusion", "affirmed"),
    ("en", "Previously seen nodule is no longer visualized.", "nodule", "negated"),
    ("en", "Clinical correlation for pneumonia is recommended.", "pneumonia", "uncertain"),
    ("es", "No se pudo descartar una endocarditis.", "endocarditis", "uncertain"),
    ("es", "Se planteó el diagnóstico de sarcoidosis.", "sarcoidosis", "uncertain"),
    ("de", "Eine Sarkoidose wurde diskutiert.", "Sarkoidose", "uncertain"),
    ("en", "The area was checked for any stenosis with the dilators and none was present.", "stenosis", "negated"),
    ("en", "We looked carefully for bleeding and none was seen.", "bleeding", "negated"),
])
def test_hypotheses_resolutions_and_absences_in_reports(lang, text, phrase, expected):
    assert concept(lang, text, phrase) == expected


def test_a_presumed_cause_opens_a_chunk_of_its_own(default_nlp):
    """"fever of presumed infectious origin": the doubt is about the origin; the fever's chunk reads affirmed."""
    doc = default_nlp("The patient presented with fever of presumed infectious origin.")
    assert held_by(doc, "fever") == ["affirmed"] and held_by(doc, "infectious origin") == ["uncertain"], shown(doc)


def test_perhaps_is_a_guess_in_german_too():
    assert concept("de", "Im Röntgen vielleicht eine beginnende Pneumonie.", "Pneumonie") == "uncertain"


@pytest.mark.parametrize("lang,text,word,expected", [
    # a result reported negative after what it reports on is normal, as the guide reads "urinalysis negative"
    ("en", "Troponin negative x3.", "Troponin", "normal"),
    ("en", "D-dimer negative.", "D-dimer", "normal"),
    ("en", "Review of systems was negative.", "Review of systems", "normal"),
    ("en", "The patient is HIV negative.", "HIV", "normal"),
    ("de", "Hepatitis-Serologie: HCV IgG negativ.", "HCV IgG", "normal"),
    ("de", "Labor: TPHA neg., CRP 3 mg/l.", "TPHA", "normal"),
    ("de", "Troponin negativ bei Aufnahme.", "Troponin", "normal"),
    # "negative for X" denies X; a sign reported negative denies what it tests for
    ("en", "The biopsy was negative for malignancy.", "malignancy", "negated"),
    ("en", "Murphy's sign was negative.", "Murphy", "negated"),
    ("de", "Lasègue und Babinski bds. neg.", "Babinski", "negated"),
    ("de", "Murphy-Zeichen negativ.", "Murphy", "negated"),
    # "negativ" that follows no word of its own still denies
    ("de", "MRSA-/VRE-Status: ne/negativ.", "MRSA", "negated"),
])
def test_a_result_reported_negative_is_normal_and_a_sign_stays_denied(lang, text, word, expected):
    doc = default_for(lang)(text)
    assert held_by(doc, word) == [expected], shown(doc)


@pytest.mark.parametrize("lang,text,label", [
    ("en", "SOCIAL HISTORY: Tobacco: denies. Alcohol: occasional.", "Tobacco"),
    ("de", "Noxen: Nikotin: verneint. Alkohol gelegentlich.", "Nikotin"),
    ("de", "Noxen: Nikotin negiert, Alkohol gelegentlich.", "Nikotin"),
    ("de", "Allergien: negiert.", "Allergien"),
])
def test_a_label_answered_by_a_denial_is_negated(lang, text, label):
    """"Tobacco: denies.", "Nikotin negiert": the answer after a label denies the label; the next item
    ("Alkohol gelegentlich") keeps its own status."""
    doc = default_for(lang)(text)
    assert held_by(doc, label) == ["negated"], shown(doc)
    assert all(v == "affirmed" for k, v in shown(doc) if "Alkohol" in k or "Alcohol" in k), shown(doc)


@pytest.mark.parametrize("lang,text,finding", [
    ("en", "Anemia of unclear etiology. Fever of unknown origin.", "Anemia"),
    ("en", "Syncope, etiology unclear.", "Syncope"),
    ("de", "Anämie unklarer Genese.", "Anämie"),
    ("de", "Fieber unklarer Ursache seit zwei Wochen.", "Fieber"),
    ("fr", "Fièvre d'origine indéterminée.", "Fièvre"),
    ("es", "Anemia de causa no aclarada.", "Anemia"),
    ("es", "Dolor abdominal no filiado.", "Dolor abdominal"),
    ("nl", "Koorts van onbekende oorsprong.", "Koorts"),
])
def test_a_finding_of_unknown_cause_is_affirmed(lang, text, finding):
    """The doubt is about the cause, not the finding: "anemia of unclear etiology" has anemia (the chunk,
    which holds the hedge word, read uncertain; in Spanish "no aclarada" negated it)."""
    doc = default_for(lang)(text)
    assert held_by(doc, finding) == ["affirmed"], shown(doc)


def test_a_hedge_beside_a_finding_of_unknown_cause_still_counts(default_nlp):
    got = dict(shown(default_nlp("Chest pain of unclear etiology, possibly cardiac.")))
    assert got == {"Chest pain of unclear etiology": "affirmed", "possibly cardiac": "uncertain"}, got


@pytest.mark.parametrize("lang,text,finding", [
    ("en", "He does not know if his father had diabetes.", "diabetes"),
    ("en", "Unknown whether he has had hepatitis.", "hepatitis"),
    ("de", "Es ist nicht bekannt, ob der Vater Diabetes hatte.", "Diabetes"),
    ("fr", "La mère ne sait pas si l'enfant a eu des convulsions.", "convulsions"),
    ("es", "La paciente no recuerda si pasó la varicela.", "varicela"),
    ("nl", "Hij weet niet of zijn vader diabetes had.", "diabetes"),
])
def test_not_knowing_whether_leaves_a_finding_uncertain(lang, text, finding):
    """"does not know if": the negation word inside the phrase denies nothing (it read negated)."""
    assert concept(lang, text, finding) == "uncertain"


def test_a_finding_not_known_stays_denied():
    assert concept("de", "Vorerkrankungen sind nicht bekannt.", "Vorerkrankungen") == "negated"
    assert concept("en", "He is not aware of any allergies.", "allergies") == "negated"


@pytest.mark.parametrize("text,phrase,expected", [
    ("General: He is alert. Answers slowly.", "He", "normal"),
    ("Extraocular movements are intact. Oropharynx is moist.", "Oropharynx", "normal"),
    ("The patient currently is comfortable. CBI is running.", "patient", "normal"),
    ("A nice viable testicle was present.", "viable testicle", "normal"),
    # backward and near only: what follows the word is not what it calls normal
    ("Be alert for signs of bleeding.", "bleeding", "hypothetical"),
    ("Repair of the third-degree midline laceration.", "third-degree midline laceration", "affirmed"),
])
def test_a_bedside_word_calls_what_stands_before_it_normal(text, phrase, expected):
    assert concept("en", text, phrase) == expected


def test_a_bedside_word_without_its_verb_leaves_a_mixed_value_alone(default_nlp):
    """"General: Alert but tired.": the value holds a finding too, so neither chunk reads normal."""
    got = dict(shown(default_nlp("General: Alert but tired.")))
    assert "normal" not in got.values(), got


def test_a_predicative_normal_word_reads_back_only():
    """"HT rhythmisch 3/6 syst II IC re.": "rhythmisch" (uninflected, after its noun) calls the heart tones
    regular and says nothing of the murmur after it; "rhythmische Herzaktion" still reads forward."""
    text = "C: HT rhythmisch 3/6 syst II IC re."
    assert concept("de", text, "3/6 syst II IC re") == "affirmed"
    assert concept("de", text, "HT") == "normal"
    assert concept("de", "Cor: rhythmische Herzaktion.", "Herzaktion") == "normal"


def test_the_full_stop_after_a_year_ends_a_chunk_under_german_rules(german_nlp, default_nlp):
    """spaCy's German tokenizer kept "1995." as an ordinal, so the chunk and the past event ran on into the
    next sentence ("St.p. SHT 1995. Pleuraerguss re." read the effusion historical)."""
    for nlp in (german_nlp, default_nlp):
        got = dict(shown(nlp("St.p. SHT 1995. Pleuraerguss re.")))
        assert got == {"St.p. SHT 1995": "historical", "Pleuraerguss re.": "affirmed"}, got


def test_the_list_of_abbreviations_that_never_end_a_sentence_can_be_replaced():
    import spacy

    nlp = spacy.blank("de")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("clin_punct_splitter", config={"overrides": {"prenominal_abbreviations": []}})
    doc = nlp("Herz: keine path. Geräusche.")
    assert [s.text for s in doc.spans[attrs.CHUNKS_KEY]][-2:] == ["keine path.", "Geräusche"]


# -- bad input: a defined result in linear work -----------------------------------------------
def _governs_calls(monkeypatch, nlp, text):
    calls = []
    original = status_module.AssertionEngine._governs

    def counted(self, *args):
        calls.append(1)
        return original(self, *args)

    monkeypatch.setattr(status_module.AssertionEngine, "_governs", counted)
    doc = nlp(text)
    monkeypatch.setattr(status_module.AssertionEngine, "_governs", original)
    return doc, len(calls)


@pytest.mark.parametrize("item", ["fever", "no fever"])
def test_the_work_on_a_list_grows_linearly(monkeypatch, default_nlp, item):
    """Counted, not timed: the cue checks per chunk stay bounded when the list doubles (a
    50-item list with no punctuation, and one where every item has its own cue)."""
    counts = []
    for n in (50, 100, 200):
        text = "Patient denies " + " ".join(f"{item}{i}" for i in range(n)) + "."
        doc, calls = _governs_calls(monkeypatch, default_nlp, text)
        assert all(s.text == text[s.start_char:s.end_char] for s in doc.spans[attrs.CHUNKS_KEY])
        counts.append(calls)
    assert counts[2] <= 2.5 * counts[1] and counts[1] <= 2.5 * counts[0], counts


def test_a_flattened_note_of_200000_characters(monkeypatch, default_nlp):
    part = ("REVIEW OF SYSTEMS:, Denies fever, chills, or rash.,FAMILY HISTORY:, Mother had cancer.,"
            "PHYSICAL EXAMINATION:, Abdomen soft, no tenderness.,")
    small = part * 100
    _, small_calls = _governs_calls(monkeypatch, default_nlp, small)
    text = (part * (200_000 // len(part) + 1))[:200_000]
    doc, calls = _governs_calls(monkeypatch, default_nlp, text)
    assert calls <= 2.5 * small_calls * len(text) / len(small)
    chunks = list(doc.spans[attrs.CHUNKS_KEY])
    assert chunks and all(s.text == text[s.start_char:s.end_char] for s in chunks)
    assert {s._.clin_assertion for s in chunks if s.text == "Mother had cancer"} == {"family"}


def test_a_mixed_language_letter_gets_one_language_and_a_status_everywhere(default_nlp):
    text = ("Sehr geehrte Kollegin, wir berichten über Ihre Patientin. Keine Dyspnoe, kein Fieber. "
            "Anamnese: Z.n. Appendektomie. The patient denies chest pain. Mit freundlichen Grüßen")
    doc = default_nlp(text)
    assert doc._.clin_language == "de"
    assert all(s._.clin_assertion in attrs.ASSERTION_LABELS for s in doc.spans[attrs.CHUNKS_KEY])
    assert {s._.clin_assertion for s in doc.spans[attrs.CHUNKS_KEY] if "Dyspnoe" in s.text} == {"negated"}
