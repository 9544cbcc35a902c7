"""clin_cleaner: trims cleanup words off chunk edges, drops low-value chunks, never rewrites text."""
import pytest
import spacy

from conftest import chunk_texts


def cleaner(lang="en", **config):
    nlp = spacy.blank(lang)
    nlp.add_pipe("clin_cleaner", config=config)
    return nlp


def clean(pieces, lang="en", **config):
    """Run the cleaner on a doc whose chunk group is exactly ``pieces`` (joined by spaces)."""
    nlp = cleaner(lang, **config)
    doc = nlp.make_doc(" ".join(pieces))
    spans, cursor = [], 0
    for piece in pieces:
        span = doc.char_span(cursor, cursor + len(piece))
        assert span is not None, piece
        spans.append(span)
        cursor += len(piece) + 1
    doc.spans["clin_chunks"] = spans
    doc = nlp.get_pipe("clin_cleaner")(doc)
    for span in doc.spans["clin_chunks"]:
        assert span.text == doc.text[span.start_char : span.end_char]
    return chunk_texts(doc)


def test_seed_example_exact():
    assert clean(["the patient", "with seizures", "and", "a small head"]) == ["patient", "seizures", "small head"]


def test_multi_pass_nested_cleanup():
    assert clean(["the and the patient"]) == ["patient"]
    assert clean(["the and the patient"], max_cleanup_passes=0) == ["the and the patient"]


def test_trailing_cleanup_words():
    assert clean(["seizures with onset in the"]) == ["seizures with onset"]


@pytest.mark.parametrize(
    "lang, piece, expected",
    [
        ("en", "and no seizures", "no seizures"),
        ("en", "without fever", "without fever"),
        ("en", "the patient denies chest pain", "patient denies chest pain"),
        ("de", "und kein Fieber", "kein Fieber"),
        ("de", "ohne Erbrechen", "ohne Erbrechen"),
        ("es", "y sin fiebre", "sin fiebre"),
        ("fr", "et sans fièvre", "sans fièvre"),
        ("nl", "en geen koorts", "geen koorts"),
    ],
)
def test_negation_at_the_edge_is_never_trimmed(lang, piece, expected):
    assert clean([piece], lang=lang) == [expected]


def test_negation_word_is_never_trimmed_even_if_listed_as_cleanup():
    overrides = {"leading_cleanup_words": ["no", "the"], "negation_words": ["no"]}
    assert clean(["no the fever"], overrides=overrides) == ["no the fever"]


def test_low_value_chunks_are_dropped():
    assert clean(["this is it", "fever"]) == ["fever"]
    assert clean(["...", "fever"]) == ["fever"]


def test_short_low_value_filter():
    # "one" is low value; "2" is a bare number: short (<= 2 words) filler chunks go
    assert clean(["fever", "per 2"]) == ["fever"]
    assert clean(["fever", "per 2"], filter_short_low_value_chunks_max_words=0) == ["fever", "2"]


def test_min_cleaned_chunk_length_chars():
    assert clean(["rash", "pain in the leg"], min_cleaned_chunk_length_chars=5) == ["pain in the leg"]


def test_list_markers_are_stripped_unless_disabled():
    assert clean(["- fever", "2. cough"]) == ["fever", "cough"]
    assert clean(["- fever", "2. cough"], strip_list_markers=False) == ["- fever", "2. cough"]


def test_never_rewrites_text():
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("clin_punct_splitter")
    nlp.add_pipe("clin_cleaner")
    text = "The patient, with seizures and a small head. No fever!"
    doc = nlp(text)
    assert doc.text == text
    assert chunk_texts(doc) == ["patient", "seizures and a small head", "No fever"]


def test_seeds_alone_from_paragraphs():
    nlp = cleaner()
    doc = nlp("The fever\n\nand the cough")
    assert chunk_texts(doc) == ["fever", "cough"]


def test_empty_doc_and_running_twice():
    nlp = cleaner()
    assert len(nlp("").spans["clin_chunks"]) == 0
    doc = nlp("the the and patient with the")
    first = [(s.start_char, s.end_char) for s in doc.spans["clin_chunks"]]
    nlp.get_pipe("clin_cleaner")(doc)
    assert [(s.start_char, s.end_char) for s in doc.spans["clin_chunks"]] == first == [(12, 19)]


def test_settings_round_trip_through_disk(tmp_path):
    nlp = cleaner(max_cleanup_passes=0, min_cleaned_chunk_length_chars=4, overrides={"low_value_words": ["meh"]})
    nlp.to_disk(tmp_path / "p")
    loaded = spacy.load(tmp_path / "p")
    pipe = loaded.get_pipe("clin_cleaner")
    assert pipe.max_cleanup_passes == 0 and pipe.min_chars == 4 and pipe.resources["low_value_words"] == ["meh"]
    text = "the fever\n\nmeh\n\nabc"
    assert chunk_texts(loaded(text)) == chunk_texts(nlp(text)) == ["the fever"]
