"""clin_punct_splitter: clause splitting at . , : ; ? ! followed by whitespace."""
import pytest
import spacy

from conftest import blank_with, chunk_texts

SEED = "Patient has arachnodactyly, i.e., long fingers; heart rate is 98.6 bpm."


def punct(lang="en", sentencizer=False, **config):
    return blank_with("clin_punct_splitter", lang, sentencizer, **config)


def chunks(text, **kwargs):
    return chunk_texts(punct(**kwargs)(text))


@pytest.mark.parametrize("sentencizer", [False, True])
def test_seed_example_exact(sentencizer):
    assert chunks(SEED, sentencizer=sentencizer) == [
        "Patient has arachnodactyly",
        "i.e., long fingers",
        "heart rate is 98.6 bpm",
    ]


def test_offsets_match_the_text_and_trailing_period_is_excluded():
    doc = punct()(SEED)
    last = doc.spans["clin_chunks"][-1]
    assert doc.text[last.start_char : last.end_char] == last.text
    assert doc.text[last.end_char :] == "."


@pytest.mark.parametrize(
    "text",
    [
        "Dr. Smith and Mrs. Jones examined Mr. Brown today",
        "Seen by J. Doe, Ph.D. vs. the St. Mary team",  # comma splits, abbreviations do not
        "Results compared with p. 12 of the report cf. appendix",
        "Seen by Jr. staff and Sr. staff together",
    ],
)
def test_abbreviations_do_not_split(text):
    result = chunks(text)
    assert all(not c.endswith((" Dr", " Mrs", " Mr", " vs", " St", " cf", " p", " Jr", " Sr")) for c in result)
    assert "".join(result).replace(" ", "") == text.replace(",", "").replace(" ", "")


def test_abbreviation_examples_exact():
    assert chunks("Seen by J. Doe, Ph.D. vs. the St. Mary team") == ["Seen by J. Doe", "Ph.D. vs. the St. Mary team"]
    assert chunks("Dr. Smith and Mrs. Jones examined Mr. Brown today") == [
        "Dr. Smith and Mrs. Jones examined Mr. Brown today"
    ]


def test_decimals_numbers_times_and_dates_are_kept():
    text = "Temperature 98.6 F at 10:30 on 03.05.2021, weight 1,250 g"
    assert chunks(text) == ["Temperature 98.6 F at 10:30 on 03.05.2021", "weight 1,250 g"]


def test_decimal_comma_in_german_and_french():
    assert chunks("Temperatur 38,5 Grad, Puls 90 pro Minute.", lang="de") == [
        "Temperatur 38,5 Grad",
        "Puls 90 pro Minute",
    ]
    assert chunks("Température 38,5 degrés, pouls 90.", lang="fr") == ["Température 38,5 degrés", "pouls 90"]


def test_initials_and_dotted_dosages_are_kept():
    assert chunks("A.B. Jones started 5 mg b.i.d. p.o. for pain; no rash.") == [
        "A.B. Jones started 5 mg b.i.d. p.o. for pain",
        "no rash",
    ]


def test_list_enumerator_starts_a_chunk_and_never_forms_one():
    text = "1. Aspirin 81 mg daily\n2. Metoprolol 25 mg twice daily\n3. Lisinopril"
    assert chunks(text) == ["1. Aspirin 81 mg daily", "2. Metoprolol 25 mg twice daily", "3. Lisinopril"]


def test_german_ordinal_period_is_not_a_boundary():
    assert chunks("Am 3. Tag trat Fieber auf, danach Husten.", lang="de") == ["Am 3. Tag trat Fieber auf", "danach Husten"]
    # English has no ordinal periods: "day 3." ends the clause
    assert chunks("Fever on day 3. Cough after.") == ["Fever on day 3", "Cough after"]


def test_question_and_exclamation_marks_split():
    assert chunks("Any fever? No! Cough: mild") == ["Any fever", "No", "Cough", "mild"]


def test_punctuation_without_following_whitespace_is_not_a_boundary():
    assert chunks("ratio 3:1,normal range,x;y") == ["ratio 3:1,normal range,x;y"]


def test_boundary_inside_a_token_extends_to_the_token_end():
    # spaCy keeps "dL." as one token; chunks are token spans, so the period comes along
    doc = punct()("Hemoglobin 12.4 g/dL. Sodium normal.")
    assert chunk_texts(doc) == ["Hemoglobin 12.4 g/dL.", "Sodium normal"]
    assert doc.text == "Hemoglobin 12.4 g/dL. Sodium normal."


def test_paragraphs_headers_and_list_lines_are_hard_boundaries():
    text = "HISTORY:\nfever for two days\n\nPLAN\n- rest\n- fluids"
    assert chunks(text) == ["HISTORY", "fever for two days", "PLAN", "- rest", "- fluids"]


def test_wrapped_line_inside_a_sentence_is_not_a_boundary():
    assert chunks("fever and cough\nfor two days") == ["fever and cough\nfor two days"]


def test_abbreviation_override_inline_list():
    nlp = punct(overrides={"abbreviations": ["approx."], "introducer_abbreviations": []})
    # "Dr." is no longer protected, so it ends a chunk; spaCy keeps "Dr." as one token, so the span keeps it
    assert chunk_texts(nlp("Dr. Smith saw approx. ten patients")) == ["Dr.", "Smith saw approx. ten patients"]


def test_language_parameter_overrides_nlp_lang():
    # "z.B." is dotted; "bzw." only in the German list
    assert chunks("Fieber bzw. Schüttelfrost", language="de") == ["Fieber bzw. Schüttelfrost"]
    assert chunks("Fieber bzw. Schüttelfrost", language="en") == ["Fieber bzw", "Schüttelfrost"]


def test_empty_doc_gives_an_empty_group():
    doc = punct()("")
    assert "clin_chunks" in doc.spans and len(doc.spans["clin_chunks"]) == 0


def test_custom_spans_key():
    doc = punct(spans_key="clauses")(SEED)
    assert "clin_chunks" not in doc.spans
    assert len(doc.spans["clauses"]) == 3


def test_running_twice_gives_the_same_group():
    nlp = punct(sentencizer=True)
    doc = nlp("Dr. Smith: fever, cough; 98.6 F. Seen 3 p.m. today! OK?\n\n1. Rest\n2. Fluids")
    first = [(s.start_char, s.end_char) for s in doc.spans["clin_chunks"]]
    nlp.get_pipe("clin_punct_splitter")(doc)
    assert [(s.start_char, s.end_char) for s in doc.spans["clin_chunks"]] == first


def test_refines_an_existing_group_in_place():
    nlp = spacy.blank("en")
    doc = nlp.make_doc("fever, cough. rash, itch")
    doc.spans["clin_chunks"] = [doc[0:4]]  # "fever, cough." only
    nlp.add_pipe("clin_punct_splitter")
    doc = nlp.get_pipe("clin_punct_splitter")(doc)
    assert chunk_texts(doc) == ["fever", "cough"]


def test_bytes_and_disk_round_trip(tmp_path):
    nlp = punct(overrides={"abbreviations": ["approx."]})
    pipe = nlp.get_pipe("clin_punct_splitter")
    other = punct(overrides={"abbreviations": ["approx."]}).get_pipe("clin_punct_splitter")
    other.from_bytes(pipe.to_bytes())
    assert other.resources == pipe.resources and other.resources["punct_rules"] == {"ordinal_period": False}
    differently_configured = punct().get_pipe("clin_punct_splitter")
    differently_configured.from_bytes(pipe.to_bytes())  # its config asks for the shipped list
    assert "dr." in differently_configured.resources["abbreviations"]
    nlp.to_disk(tmp_path / "p")
    loaded = spacy.load(tmp_path / "p")
    text = "Dr. Smith saw approx. ten patients, all well."
    assert chunk_texts(loaded(text)) == chunk_texts(nlp(text))


def test_n_process_2_matches_single_process():
    nlp = punct(sentencizer=True)
    texts = [SEED, "Dr. Smith: fever, cough.", "No punctuation here", ""] * 3
    single = [chunk_texts(d) for d in nlp.pipe(texts)]
    multi = [chunk_texts(d) for d in nlp.pipe(texts, n_process=2, batch_size=4)]
    assert multi == single


@pytest.mark.parametrize(
    "text, expected",
    [
        # a flattened export's line break after a space: the comma opens no chunk (issue 42: 227
        # chunks of 30 real notes read ",FAMILY HISTORY", ",Clear")
        ("Has cancer.  ,FAMILY HISTORY: Mother.", ["Has cancer", "FAMILY HISTORY", "Mother"]),
        ("CHEST: ,Clear. Heart: ,Regular.", ["CHEST", "Clear", "Heart", "Regular"]),
        ("PAST MEDICAL HISTORY: ;Hypertension.", ["PAST MEDICAL HISTORY", "Hypertension"]),
    ],
)
def test_a_separator_glued_to_the_next_word_never_leads_a_chunk(text, expected):
    doc = punct()(text)
    spans = list(doc.spans["clin_chunks"])
    assert [s.text for s in spans] == expected
    assert all(doc.text[s.start_char : s.end_char] == s.text and s.text[0] not in ",;:" for s in spans)


def test_the_default_pipeline_trims_flattened_separators_from_every_chunk():
    """End to end: no chunk of the default starts with the separator of a flattened header."""
    from spacy_clinchunk.pipeline import load_pipeline

    text = "SUBJECTIVE:, This patient has cancer.  ,FAMILY HISTORY:, Mother had breast cancer.  ,SOCIAL HISTORY: ,Smoker."
    doc = load_pipeline("default")(text)
    texts = [s.text for s in doc.spans["clin_chunks"]]
    assert "FAMILY HISTORY" in texts and "Smoker" in texts
    assert not [t for t in texts if t[0] in ",;:"]
