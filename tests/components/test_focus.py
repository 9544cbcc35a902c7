"""clin_focus: framing-free focus spans linked to their clause chunks; coordinated concepts kept."""
import time

import pytest
import spacy
from spacy.tokens import DocBin

import spacy_clinchunk.components.focus  # noqa: F401  (the factory, also reachable through entry points)
from conftest import CONFIG_DIR, chunk_texts
from spacy_clinchunk import attrs
from spacy_clinchunk.pipeline import load_pipeline

FOCUS = attrs.FOCUS_KEY


def focus_nlp(lang="en", coordinated=True, **focus_config):
    nlp = spacy.blank(lang)
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("clin_punct_splitter", config={"keep_coordinated": coordinated})
    nlp.add_pipe("clin_conj_splitter", config={"keep_coordinated": coordinated})
    nlp.add_pipe("clin_cleaner")
    nlp.add_pipe("clin_focus", config=focus_config)
    return nlp


@pytest.fixture(scope="module")
def nlp():
    return focus_nlp()


def focus_texts(doc):
    return chunk_texts(doc, FOCUS)


def check_offsets_and_links(doc):
    chunks, focus = doc.spans[attrs.CHUNKS_KEY], doc.spans[FOCUS]
    assert [(s.start_char, s.end_char) for s in focus] == sorted((s.start_char, s.end_char) for s in focus)
    for position, span in enumerate(focus):
        assert span.text == doc.text[span.start_char:span.end_char]
        owner = chunks[span._.clin_focus_of]
        assert owner.start_char <= span.start_char and span.end_char <= owner.end_char
        assert position in owner._.clin_focus_ids
    for number, chunk in enumerate(chunks):
        assert all(focus[i]._.clin_focus_of == number for i in chunk._.clin_focus_ids)


def test_framing_is_trimmed_and_links_go_both_ways(nlp):
    doc = nlp("She was noted to have a heart murmur. Examination revealed hepatomegaly. Patient has seizures.")
    assert focus_texts(doc) == ["heart murmur", "hepatomegaly", "seizures"]
    assert chunk_texts(doc)[1] == "Examination revealed hepatomegaly"
    check_offsets_and_links(doc)


def test_subject_and_finding_both_kept_around_a_framing_verb(nlp):
    doc = nlp("Most patients with Townes-Brocks syndrome have normal intelligence.")
    assert focus_texts(doc) == ["Townes-Brocks syndrome", "normal intelligence"]
    assert doc.spans[attrs.CHUNKS_KEY][0]._.clin_focus_ids == [0, 1]


def test_coordinated_concepts_stay_whole_with_contiguous_distributive_extras(nlp):
    doc = nlp("She was noted to have aplastic or hypoplastic nails. Examination revealed cleft lip and palate.")
    assert chunk_texts(doc) == ["She was noted to have aplastic or hypoplastic nails", "Examination revealed cleft lip and palate"]
    assert focus_texts(doc) == ["aplastic or hypoplastic nails", "hypoplastic nails", "cleft lip", "cleft lip and palate", "palate"]
    check_offsets_and_links(doc)


def test_shared_word_comma_list_stays_one_chunk(nlp):
    doc = nlp("He had cleft lip, cleft palate and synostosis of some carpal and tarsal bones.")
    assert any("cleft lip, cleft palate" in text for text in chunk_texts(doc))
    assert any(text.endswith("synostosis of some carpal and tarsal bones") for text in chunk_texts(doc))
    assert "tarsal bones" in focus_texts(doc)
    assert "synostosis of some carpal" not in focus_texts(doc)  # a conjunct without its head is no reading


def test_without_keep_coordinated_the_splitters_cut_as_before():
    doc = focus_nlp(coordinated=False)("Examination revealed cleft lip and palate.")
    assert chunk_texts(doc) == ["Examination revealed cleft lip", "palate"]


def focus_of_negated_chunk(nlp, text, cues=()):
    """Run the pipeline on ``text`` with its first chunk marked negated before clin_focus."""
    doc = nlp.make_doc(text)
    for name, proc in nlp.pipeline[:-1]:
        doc = proc(doc)
    chunk = doc.spans[attrs.CHUNKS_KEY][0]
    chunk._.clin_assertion, chunk._.clin_assertion_statuses = "negated", ["negated"]
    if cues:
        chunk._.clin_assertion_cues = list(cues)
    return nlp.get_pipe("clin_focus")(doc), chunk


def test_focus_keeps_the_chunk_assertion_decided_on_the_full_clause(nlp):
    cue = {"text": "no", "start_char": 10, "end_char": 12}
    doc, chunk = focus_of_negated_chunk(nlp, "There was no evidence of pneumonia.", [cue])
    (focus,) = doc.spans[FOCUS]
    assert focus.text == "pneumonia"
    assert (focus._.clin_assertion, focus._.clin_negated) == ("negated", True)
    assert focus._.clin_assertion_cues == chunk._.clin_assertion_cues
    assert focus._.clin_assertion_cues is not chunk._.clin_assertion_cues


@pytest.mark.slow
def test_assertion_carry_over_with_the_real_context_component():
    nlp = focus_nlp()
    nlp.add_pipe("clin_context_assertion", before="clin_focus")
    doc = nlp("The patient denies chest pain. Mother has diabetes mellitus.")
    chunks, focus = doc.spans[attrs.CHUNKS_KEY], doc.spans[FOCUS]
    texts = [s.text for s in focus]
    assert texts[0] == "chest pain" and "diabetes mellitus" in texts
    for span in focus:
        assert span._.clin_assertion == chunks[span._.clin_focus_of]._.clin_assertion is not None
    assert focus[0]._.clin_assertion == "negated"  # the cue "denies" is outside the focus span


def test_head_of_a_prepositional_tail_is_an_extra_focus(nlp):
    text = "Examination revealed hypotonia with poor feeding."
    assert focus_texts(nlp(text)) == ["hypotonia", "hypotonia with poor feeding"]
    assert focus_texts(focus_nlp(head_extras=False)(text)) == ["hypotonia with poor feeding"]


def test_eye_ear_list_of_modifiers_keeps_its_head(nlp):
    doc = nlp("The syndrome consists of eye, ear, oral, and craniofacial anomalies.")
    assert any(text.endswith("eye, ear, oral, and craniofacial anomalies") for text in chunk_texts(doc))
    assert "craniofacial anomalies" in focus_texts(doc)


def test_trim_negation_off_keeps_the_cue():
    doc = focus_nlp(trim_negation=False)("No fever. Absence of speech.")
    assert focus_texts(doc) == ["No fever", "fever", "Absence of speech", "speech"]  # cue-free finding as an extra
    assert [s._.clin_focus_of for s in doc.spans[FOCUS]] == [0, 0, 1, 1]


@pytest.mark.parametrize("text", ["Patient has.", "She was noted to have.", "a", "x.", ""])
def test_all_framing_and_one_character_chunks_give_no_focus(nlp, text):
    doc = nlp(text)
    assert focus_texts(doc) == []
    assert all(c._.clin_focus_ids == [] for c in doc.spans[attrs.CHUNKS_KEY])


def test_min_focus_chars_drops_short_pieces():
    assert focus_texts(focus_nlp()("Patient has ab.")) == ["ab"]
    assert focus_texts(focus_nlp(min_focus_chars=3)("Patient has ab.")) == []


def test_a_list_of_fifty_coordinated_items_is_bounded(nlp):
    text = "Examination revealed " + ", ".join(f"cleft item{i}" for i in range(50)) + " and cleft end."
    doc = nlp(text)
    check_offsets_and_links(doc)
    assert len(doc.spans[FOCUS]) <= 2 * len(doc.spans[attrs.CHUNKS_KEY]) + 60


@pytest.mark.slow
def test_million_character_note_stays_linear(nlp):
    nlp = focus_nlp()
    nlp.max_length = 2_000_000
    sentence = "Patient has cleft lip, cleft palate and aplastic or hypoplastic nails. "
    short = sentence * 500
    start = time.perf_counter()
    nlp(short)
    small = time.perf_counter() - start
    doc = nlp(sentence * 14100)  # over 1M characters
    large = time.perf_counter() - start - small
    assert len(doc.text) > 1_000_000
    assert len(doc.spans[FOCUS]) == 14100 * 4
    assert large < small * 28 * 3 + 5  # 28 times the text: linear, not quadratic (784x)


def test_spans_key_and_focus_key_must_differ(blank_nlp):
    with pytest.raises(ValueError, match="must differ"):
        blank_nlp.add_pipe("clin_focus", config={"focus_key": attrs.CHUNKS_KEY})


def test_extension_values_survive_docbin(nlp):
    doc = nlp("Examination revealed cleft lip and palate.")
    restored = list(DocBin(docs=[doc], store_user_data=True).get_docs(nlp.vocab))[0]
    assert focus_texts(restored) == focus_texts(doc)
    assert [s._.clin_focus_of for s in restored.spans[FOCUS]] == [s._.clin_focus_of for s in doc.spans[FOCUS]]
    assert list(restored.spans[attrs.CHUNKS_KEY][0]._.clin_focus_ids) == doc.spans[attrs.CHUNKS_KEY][0]._.clin_focus_ids == [0, 1, 2]


def test_save_and_load_round_trip_keeps_data_and_config_settings(tmp_path):
    nlp = focus_nlp(overrides={"focus_lead_phrases": ["zzframe"]})
    nlp.to_disk(tmp_path / "p")
    loaded = spacy.load(tmp_path / "p", config={"components.clin_focus.min_focus_chars": 3})
    pipe = loaded.get_pipe("clin_focus")
    assert pipe.resources["focus_lead_phrases"] == ["zzframe"]
    assert pipe.min_focus_chars == 3
    text = "Zzframe pallor. Examination revealed cleft lip and palate."
    assert focus_texts(loaded(text)) == focus_texts(nlp(text))
    assert focus_texts(loaded(text))[0] == "pallor"


@pytest.mark.parametrize("lang", ["de", "es", "fr", "nl"])
def test_other_languages_trim_their_framing(lang):
    text = {
        "de": "Der Patient hat eine Gaumenspalte.",
        "es": "El paciente presenta paladar hendido.",
        "fr": "Le patient présente une fente palatine.",
        "nl": "De patiënt heeft een gespleten gehemelte.",
    }[lang]
    expected = {"de": "Gaumenspalte", "es": "paladar hendido", "fr": "fente palatine", "nl": "gespleten gehemelte"}[lang]
    assert focus_texts(focus_nlp(lang)(text)) == [expected]


def test_retrieval_config_assembles_and_writes_both_groups():
    nlp = load_pipeline(CONFIG_DIR / "retrieval.cfg")
    doc = nlp("Examination revealed cleft lip and palate.")
    assert chunk_texts(doc) == ["Examination revealed cleft lip and palate"]
    assert "cleft lip and palate" in focus_texts(doc)


@pytest.mark.slow
def test_n_process_two_gives_the_same_focus_and_links():
    nlp = load_pipeline(CONFIG_DIR / "retrieval.cfg")
    texts = ["Examination revealed cleft lip and palate.", "Patient has seizures and hypotonia at birth."] * 4
    single = [(focus_texts(d), [s._.clin_focus_of for s in d.spans[FOCUS]]) for d in nlp.pipe(texts)]
    multi = [(focus_texts(d), [s._.clin_focus_of for s in d.spans[FOCUS]]) for d in nlp.pipe(texts, n_process=2)]
    assert multi == single


def test_long_piece_is_cut_into_segments_that_replace_it(nlp):
    doc = nlp("He had meningiomas in the lumbar spine on the follow up MRI scan.")
    assert focus_texts(doc) == ["meningiomas", "lumbar spine", "follow up MRI scan"]  # the long piece is replaced
    check_offsets_and_links(doc)
    assert focus_texts(focus_nlp(segment_min_words=0)("He had meningiomas in the spine.")) == ["meningiomas", "meningiomas in the spine"]


def test_short_piece_is_not_segmented(nlp):
    assert focus_texts(nlp("Examination revealed tumors in the neck.")) == ["tumors", "tumors in the neck"]


def test_a_clause_tail_after_a_relative_word_is_its_own_segment(nlp):
    doc = nlp("She has a common dominant form of hearing impairment that was previously mapped to 8q.")
    texts = focus_texts(doc)
    assert "common dominant form of hearing impairment" in texts  # "of" stays inside a concept
    assert all("that" not in text.split() for text in texts)
    check_offsets_and_links(doc)


def test_leading_counts_and_measure_nouns_are_trimmed(nlp):
    assert focus_texts(nlp("MRI showed 41 acoustic neuromas.")) == ["MRI", "acoustic neuromas"]
    assert focus_texts(nlp("Patient has two meningiomas.")) == ["meningiomas"]
    assert "medulloblastoma" in focus_texts(nlp("We assessed the incidence of medulloblastoma in children with the syndrome."))
    assert focus_texts(focus_nlp(trim_counts=False)("MRI showed 41 acoustic neuromas.")) == ["MRI", "41 acoustic neuromas"]
    assert focus_texts(nlp("Patient has 2-3 cps spikes.")) == ["2-3 cps spikes"]  # a range is no count of findings


def test_segments_keep_the_chunk_assertion_and_links(nlp):
    doc, chunk = focus_of_negated_chunk(nlp, "There was no meningioma in the spine on the follow up MRI scan.")
    focus = doc.spans[FOCUS]
    assert {s.text for s in focus} >= {"meningioma", "spine", "follow up MRI scan"}
    assert all((s._.clin_assertion, s._.clin_negated, s._.clin_focus_of) == ("negated", True, 0) for s in focus)
    assert chunk._.clin_focus_ids == list(range(len(focus)))
    check_offsets_and_links(doc)


@pytest.mark.parametrize(
    "lang, text, expected",
    [
        ("de", "Zwei Meningeome, die in der Kontroll-MRT nachgewiesen wurden.", "Meningeome"),
        ("es", "Dos meningiomas que fueron confirmados en la resonancia de control.", "meningiomas"),
        ("fr", "Deux méningiomes qui ont été confirmés sur une IRM de contrôle.", "méningiomes"),
        ("nl", "Twee meningeomen die werden bevestigd op een controle MRI scan.", "meningeomen"),
    ],
)
def test_other_languages_segment_and_trim_counts(lang, text, expected):
    doc = focus_nlp(lang)(text)
    assert focus_texts(doc)[0] == expected
    check_offsets_and_links(doc)


@pytest.mark.parametrize("setting, value", [("segment_min_words", -1), ("min_conjunct_words", 0), ("max_conjuncts", -2)])
def test_focus_settings_out_of_range_fail_at_add_pipe(setting, value):
    with pytest.raises(Exception, match=setting):
        focus_nlp(**{setting: value})


def test_long_pieces_with_many_breaks_stay_linear():
    nlp = focus_nlp()
    text = "Examination revealed " + " in ".join(f"lesion{i}" for i in range(5000)) + "."
    start = time.perf_counter()
    doc = nlp(text)
    assert time.perf_counter() - start < 30
    focus = doc.spans[FOCUS]
    assert len(focus) >= 5000 and doc.spans[attrs.CHUNKS_KEY][0]._.clin_focus_ids == list(range(len(focus)))
    text = doc.text
    assert all(span.text == text[span.start_char:span.end_char] for span in focus)


# -- the phrase patterns' cheap test (issue 25: speed) ---------------------------------
PHRASES = ["are characterized by", "with", "d'une", "x-ray of", "due to", "ſtatus", "İleri"]
GATE_TEXTS = [
    "Hypotonia with poor feeding.", "WITH", "without fever", "Notwithstanding", "a d'une b", "D'UNE fois",
    "chest X-RAY OF the hand", "due\n  to sepsis", "sustained to", "status post", "ſtatus asthmaticus",
    "ileri evre", "İLERİ", "Ileri", "patients are characterized   by short stature", "are characterized", "",
    "fièvre avec toux", "Straße with", "-with-", "(with)", "co-with", "ΑΒΓ with", "σ with",
]


@pytest.mark.parametrize("text", GATE_TEXTS)
def test_phrase_pattern_finds_exactly_what_its_regex_finds(text):
    from spacy_clinchunk.components.focus import phrase_regex

    pattern = phrase_regex(PHRASES)
    for start in range(len(text) + 1):
        for end in range(start, len(text) + 1):
            expected = [m.span() for m in pattern.regex.finditer(text, start, end)]
            assert [m.span() for m in pattern.finditer(text, start, end)] == expected, (text, start, end)
            found = pattern.search(text, start, end)
            assert (found.span() if found else None) == (expected[0] if expected else None)


def test_phrase_pattern_skips_the_search_of_a_text_without_any_lead():
    from spacy_clinchunk.components.focus import phrase_regex

    pattern = phrase_regex(["are characterized by", "with"])
    assert pattern.leads == {"are", "with"}
    assert not pattern.may_occur("Short stature and hypotonia.", 0, 28)
    assert not pattern.may_occur("without", 0, 7)  # a longer word is no lead
    assert pattern.may_occur("short, with hypotonia", 0, 21)
    # a text the lowered test cannot answer for is always searched
    assert pattern.may_occur("ſome İtem", 0, 9)
    # a phrase whose first character is no word character disables the test
    assert phrase_regex(["(see", "with"]).leads is None
