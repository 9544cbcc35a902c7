"""clin_conj_splitter: split before conjunctions and transition markers."""
import pytest
import spacy

from conftest import chunk_texts


def conj(lang="en", **config):
    nlp = spacy.blank(lang)
    nlp.add_pipe("clin_conj_splitter", config=config)
    return nlp


def chunks(text, **kwargs):
    return chunk_texts(conj(**kwargs)(text))


def test_seed_example_exact():
    assert chunks("Patient has seizures but no developmental delay") == [
        "Patient has seizures",
        "but no developmental delay",
    ]


def test_conjunction_starts_the_next_chunk_case_insensitively():
    assert chunks("Fever for two days And cough since Monday") == ["Fever for two days", "And cough since Monday"]


def test_transition_markers():
    assert chunks("Mild hypotonia in infancy progressing to generalized weakness") == [
        "Mild hypotonia in infancy",
        "progressing to generalized weakness",
    ]
    assert chunks("Brief staring spells followed by tonic-clonic seizures") == [
        "Brief staring spells",
        "followed by tonic-clonic seizures",
    ]


@pytest.mark.parametrize(
    "text",
    [
        "Patient rocks back and forth when upset",
        "Intermittent fever and/or chills at night",
        "Mild nausea and vomiting after meals",
    ],
)
def test_fixed_expressions_are_never_cut(text):
    assert chunks(text) == [text]


def test_single_words_joined_by_a_conjunction_stay_together():
    # one word before "or": below min_words_before=2
    assert chunks("aplastic or hypoplastic nails") == ["aplastic or hypoplastic nails"]
    assert chunks("aplastic or hypoplastic nails", min_words_before=1) == ["aplastic", "or hypoplastic nails"]


def test_min_words_after():
    assert chunks("Fever since Monday and chills") == ["Fever since Monday", "and chills"]
    assert chunks("Fever since Monday and chills", min_words_after=2) == ["Fever since Monday and chills"]


def test_conjunction_inside_a_word_is_not_a_marker():
    assert chunks("Sandy hand tremor, Oregon brand") == ["Sandy hand tremor, Oregon brand"]


@pytest.mark.parametrize(
    "lang, text, expected",
    [
        ("de", "Fieber seit zwei Tagen aber kein Erbrechen", ["Fieber seit zwei Tagen", "aber kein Erbrechen"]),
        ("de", "Patient schwankt hin und her beim Gehen", ["Patient schwankt hin und her beim Gehen"]),
        ("es", "Fiebre desde ayer pero sin vómitos", ["Fiebre desde ayer", "pero sin vómitos"]),
        ("es", "Dolor de cabeza y/o mareo ocasional", ["Dolor de cabeza y/o mareo ocasional"]),
        ("fr", "Fièvre depuis hier mais pas de toux", ["Fièvre depuis hier", "mais pas de toux"]),
        ("fr", "Hypotonie néonatale évoluant vers une faiblesse", ["Hypotonie néonatale", "évoluant vers une faiblesse"]),
        ("nl", "Koorts sinds gisteren maar geen hoest", ["Koorts sinds gisteren", "maar geen hoest"]),
        ("nl", "Hij loopt heen en weer door de kamer", ["Hij loopt heen en weer door de kamer"]),
    ],
)
def test_other_languages(lang, text, expected):
    assert chunks(text, lang=lang) == expected


def test_override_conjunction_list():
    nlp = conj(overrides={"coordinating_conjunctions": ["plus"], "transition_markers": []})
    assert chunk_texts(nlp("Fever for days plus cough and rash")) == ["Fever for days", "plus cough and rash"]


def test_seeds_from_sentences_when_set():
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("clin_conj_splitter")
    doc = nlp("No fever today. Cough persists but improving slowly.")
    assert chunk_texts(doc) == ["No fever today.", "Cough persists", "but improving slowly."]


def test_empty_doc_and_running_twice():
    nlp = conj()
    assert len(nlp("").spans["clin_chunks"]) == 0
    doc = nlp("Seizures but no delay and mild hypotonia or weakness followed by recovery")
    first = [(s.start_char, s.end_char) for s in doc.spans["clin_chunks"]]
    nlp.get_pipe("clin_conj_splitter")(doc)
    assert [(s.start_char, s.end_char) for s in doc.spans["clin_chunks"]] == first


def test_settings_round_trip_through_disk(tmp_path):
    nlp = conj(min_words_before=1, overrides={"coordinating_conjunctions": ["plus"]})
    nlp.to_disk(tmp_path / "p")
    loaded = spacy.load(tmp_path / "p")
    text = "fever plus cough and rash"
    assert chunk_texts(loaded(text)) == chunk_texts(nlp(text)) == ["fever", "plus cough and rash"]
    other = conj(overrides={"coordinating_conjunctions": ["plus"]}).get_pipe("clin_conj_splitter")
    other.from_bytes(nlp.get_pipe("clin_conj_splitter").to_bytes())
    # data travels in the bytes; settings stay those of the receiving component's config
    assert other.min_words_before == 2 and other.resources["coordinating_conjunctions"] == ["plus"]


def test_a_modifier_is_a_word_longer_than_three_letters_with_a_known_suffix_and_a_stem():
    """The suffix test looks up one slice per suffix length (speed, issue 25); its answer is
    the plain definition's: some suffix ends the word and leaves at least two letters before it."""
    import random

    from spacy_clinchunk.components.coordination import CoordinationRules

    suffixes = ["al", "ic", "ous", "ive", "ary", "é", "ée", "ischen", ""]
    rules = CoordinationRules((), suffixes, ())

    def plain(word):
        word = word.lower().strip(".,;:!?\"'()[]{}")
        return len(word) > 3 and any(s and word.endswith(s) and len(word) > len(s) + 1 for s in suffixes)

    assert rules.is_modifier("congenital") and rules.is_modifier("(Congenital),") and rules.is_modifier("KLINISCHEN")
    assert rules.is_modifier("oral") and not rules.is_modifier("xous") and not rules.is_modifier("ischen") and not rules.is_modifier("lip")
    letters = "alicousvryéÉSCHEN.,("
    rnd = random.Random(7)
    for _ in range(20000):
        word = "".join(rnd.choice(letters) for _ in range(rnd.randint(0, 10)))
        assert rules.is_modifier(word) == plain(word), word


@pytest.mark.parametrize(
    "lang, text, expected",
    [
        # a peer's test case: "and Mary went" opens a clause with its own subject
        ("en", "John went to the store and Mary went to school.", ["John went to the store", "Mary went to school"]),
        # one concept stays one chunk: no name opens the right conjunct
        ("en", "Cleft lip and palate were repaired.", ["Cleft lip and palate were repaired"]),
        # German capitalises every noun: a capital is no name there
        ("de", "Der Patient hat Fieber und Schüttelfrost seit gestern.", None),
    ],
)
def test_keep_coordinated_still_splits_before_a_clause_with_a_named_subject(lang, text, expected):
    from spacy_clinchunk.pipeline import resolve_pipeline

    resolved = resolve_pipeline("default", lang=lang)
    doc = resolved.nlp(text)
    chunks = [span.text for span in doc.spans[resolved.chunks_key]]
    if expected is None:
        assert any("Fieber und Schüttelfrost" in chunk for chunk in chunks), chunks
    else:
        assert chunks == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        # a peer's test case: two findings, nothing shared, become two chunks in the default
        ("seizures and microcephaly", ["seizures", "microcephaly"]),
        ("The child has seizures and microcephaly.", ["child has seizures", "microcephaly"]),
        # a modifier may share the head after it: one concept
        ("aplastic or hypoplastic nails", ["aplastic or hypoplastic nails"]),
        ("Cleft lip and palate.", ["Cleft lip and palate"]),
        # a verb after the right conjunct: the two are one subject of it
        ("Neurology and genetics will follow her.", ["Neurology and genetics will follow"]),
    ],
)
def test_the_default_splits_two_bare_findings(text, expected):
    from spacy_clinchunk.pipeline import resolve_pipeline

    resolved = resolve_pipeline("default", lang="en")
    doc = resolved.nlp(text)
    assert [span.text for span in doc.spans[resolved.chunks_key]] == expected


# -- split_before_status_openers (issue 40: the chunk shows the truth) ---------------------------------
@pytest.mark.parametrize(
    "lang, text, expected",
    [
        ("en", "Tracheostomy site is clean without discharge", ["Tracheostomy site is clean", "without discharge"]),
        ("en", "Positive myelogram w/o dural puncture", ["Positive myelogram", "w/o dural puncture"]),
        ("en", "Flexion revealed good stability with no impingement", ["Flexion revealed good stability", "with no impingement"]),
        ("de", "Seit 10 Tagen grippaler Infekt ohne Fieber", ["Seit 10 Tagen grippaler Infekt", "ohne Fieber"]),
        ("fr", "Toux productive sans fièvre", ["Toux productive", "sans fièvre"]),
        ("es", "Dolor torácico intenso sin fiebre", ["Dolor torácico intenso", "sin fiebre"]),
        ("nl", "Productieve hoest zonder koorts", ["Productieve hoest", "zonder koorts"]),
        ("en", "Darkened mole status post punch biopsy", ["Darkened mole", "status post punch biopsy"]),
        ("nl", "Hypertensie status na CVA in 2019", ["Hypertensie", "status na CVA in 2019"]),
    ],
)
def test_a_status_opener_starts_the_next_chunk(lang, text, expected):
    """What a denial (or a past event) follows and what it opens have different statuses: two chunks,
    one status each."""
    assert chunks(text, lang=lang, min_words_before=1, split_before_status_openers=True) == expected
    assert chunks(text, lang=lang, min_words_before=1) == [text]  # off by default


@pytest.mark.parametrize(
    "lang, text",
    [
        ("en", "CT of the abdomen with and without contrast"),
        ("en", "He ambulates without difficulty"),
        ("de", "Abdomen ohne pathologischen Befund"),
        ("de", "Pulmo ohne Besonderheiten"),
        ("fr", "Examen neurologique sans particularité"),
        ("es", "Exploración neurológica sin focalidad neurológica"),
        ("nl", "Neurologisch onderzoek zonder afwijkingen"),
    ],
)
def test_a_denial_that_calls_its_finding_normal_stays_whole(lang, text):
    """"Abdomen ohne pathologischen Befund" says the abdomen is normal: cut, "Abdomen" would say nothing."""
    assert chunks(text, lang=lang, min_words_before=1, split_before_status_openers=True) == [text]


def test_a_denial_is_not_kept_as_a_coordinated_concept():
    """``keep_coordinated`` keeps conjunctions inside one concept; a denial joins no concept's parts."""
    got = chunks("fever without chills", min_words_before=1, keep_coordinated=True, split_before_status_openers=True)
    assert got == ["fever", "without chills"]


def test_the_opener_list_travels_with_a_saved_pipeline_and_the_setting_stays_in_the_config(tmp_path):
    nlp = conj(min_words_before=1, split_before_status_openers=True, overrides={"status_openers": ["minus"]})
    nlp.to_disk(tmp_path / "p")
    text = "fever minus chills without cough"
    assert chunk_texts(spacy.load(tmp_path / "p")(text)) == ["fever", "minus chills without cough"]
    # switched off in the config of a saved pipeline: no denial cuts
    conj(min_words_before=1, split_before_status_openers=True).to_disk(tmp_path / "r")
    assert chunk_texts(spacy.load(tmp_path / "r")("fever without cough")) == ["fever", "without cough"]
    off = spacy.load(tmp_path / "r", config={"components.clin_conj_splitter.split_before_status_openers": False})
    assert chunk_texts(off("fever without cough")) == ["fever without cough"]
    # a pipeline saved without the setting gets the shipped list when the config turns it on
    conj(min_words_before=1).to_disk(tmp_path / "q")
    on = spacy.load(tmp_path / "q", config={"components.clin_conj_splitter.split_before_status_openers": True})
    assert chunk_texts(on("fever without cough")) == ["fever", "without cough"]
