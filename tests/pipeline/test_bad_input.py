"""Bad and unusual input through punct_conj_cleaned: each case has a defined result."""
import pytest
import spacy

from conftest import CONFIG_DIR, EXAMPLE_NOTE, chunk_texts


@pytest.fixture(scope="module")
def nlp():
    config = spacy.util.load_config(CONFIG_DIR / "punct_conj_cleaned.cfg")
    return spacy.util.load_model_from_config(config, auto_fill=True)


def run(nlp, text):
    doc = nlp(text)
    assert doc.text == text
    for span in doc.spans["clin_chunks"]:
        assert span.text == text[span.start_char : span.end_char] and span.text.strip()
    return chunk_texts(doc)


@pytest.mark.parametrize("text", ["", " ", "   \n\n\t \r\n "])
def test_empty_and_whitespace_only_give_an_empty_group(nlp, text):
    assert run(nlp, text) == []


def test_emoji(nlp):
    assert run(nlp, "Patient has fever 🤒, cough 😷 and rash") == ["Patient has fever 🤒", "cough 😷", "rash"]


def test_cjk_full_width_punctuation_is_not_split(nlp):
    # only ASCII . , : ; ? ! followed by whitespace are boundaries
    assert run(nlp, "患者发热，咳嗽三天。无呕吐。") == ["患者发热，咳嗽三天。无呕吐。"]
    assert run(nlp, "患者发热, 咳嗽三天. 无呕吐.") == ["患者发热", "咳嗽三天", "无呕吐"]


def test_right_to_left_text(nlp):
    assert run(nlp, "החולה סובל מחום, שיעול וכאבי ראש") == ["החולה סובל מחום", "שיעול וכאבי ראש"]
    assert run(nlp, "المريض يعاني من الحمى, والسعال") == ["المريض يعاني من الحمى", "والسعال"]


def test_zero_width_and_control_characters(nlp):
    # they are not whitespace: kept inside chunks, never trimmed off; alone they carry no content
    assert run(nlp, "fever\u200b, cough\x07 today\u200b") == ["fever\u200b", "cough\x07 today\u200b"]
    assert run(nlp, "\u200b\u200b") == []
    assert run(nlp, "\x00\x01\x02") == []
    assert run(nlp, "\u202eevif\u202c fever, cough") == ["\u202eevif\u202c fever", "cough"]


def test_no_punctuation_at_all_is_one_chunk(nlp):
    text = "patient has fever cough rash since monday"
    assert run(nlp, text) == [text]


def test_ten_thousand_commas(nlp):
    assert run(nlp, ", " * 10_000) == []
    assert run(nlp, "fever" + ", " * 10_000 + "cough") == ["fever", "cough"]
    # without spaces spaCy's own tokenizer is quadratic in the run length (seconds at
    # 10,000); our components are linear, so a shorter run shows the same result
    assert run(nlp, "," * 1_000) == []
    assert run(nlp, "fever," + "," * 1_000 + " cough") == ["fever", "cough"]


@pytest.mark.slow
def test_a_line_of_ten_thousand_commas_without_spaces(nlp):
    """The literal case: ~13 s, all of it in spaCy's tokenizer; the result is defined (the run
    gives no chunk, its neighbours keep theirs). One run: a second one proves nothing more."""
    assert run(nlp, "Fever.\n" + "," * 10_000 + "\nNo cough.") == ["Fever", "No cough"]


def test_million_character_note(nlp):
    note = EXAMPLE_NOTE.read_text(encoding="utf-8").strip()
    single = run(nlp, note)
    copies = 1_000_000 // (len(note) + 2)
    text = "\n\n".join([note] * copies)
    text += "\n" * (1_000_000 - len(text))  # exactly 1,000,000 characters (spaCy's default max_length)
    assert len(text) == 1_000_000
    doc = nlp(text)
    # paragraph breaks are hard boundaries: every copy chunks exactly like the note alone
    assert len(doc.spans["clin_chunks"]) == copies * len(single)
    assert chunk_texts(doc)[: len(single)] == single
    assert chunk_texts(doc)[-len(single) :] == single


# -- the flagship default: bounded pieces on text without punctuation, in linear time -------------
@pytest.fixture(scope="module")
def flagship():
    pytest.importorskip("medspacy")
    from spacy_clinchunk.pipeline import load_pipeline

    return load_pipeline(CONFIG_DIR / "default.cfg")


def bounded(nlp, text):
    """Chunks as run() checks them, none over the ceiling; focus spans inside their chunk."""
    pieces = run(nlp, text)
    ceiling = nlp.get_pipe("clin_size_ceiling").max_tokens
    assert all(len(p.split()) <= ceiling for p in pieces)
    return pieces


def test_flagship_on_a_note_without_punctuation(flagship):
    text = ("patient reports fever and cough since monday with rash on both arms denies vomiting "
            "mother has asthma ") * 20
    doc = flagship(text)
    assert len(bounded(flagship, text)) > 40
    chunks = doc.spans["clin_chunks"]
    for focus in doc.spans["clin_focus"]:
        parent = chunks[focus._.clin_focus_of]
        assert parent.start_char <= focus.start_char and focus.end_char <= parent.end_char


def test_flagship_on_one_line_of_200000_characters(flagship):
    # linear: the conjunction splitter bisects, the ceiling cuts by position, ConText's scope is bounded
    text = ("patient has no fever and cough with rash " * 5_000)[:200_000]
    assert len(bounded(flagship, text)) > 4_000  # about one chunk per "and": 25,000 words


def test_flagship_on_fifty_thousand_list_items(flagship):
    text = "\n".join(f"- item {i} daily" for i in range(50_000))
    assert len(bounded(flagship, text)) == 50_000


def test_unknown_strategy_is_one_line():
    from spacy_clinchunk.pipeline import PipelineError, resolve_pipeline

    with pytest.raises(PipelineError) as info:
        resolve_pipeline("defualt")
    assert "unknown strategy 'defualt'" in str(info.value) and "\n" not in str(info.value)
