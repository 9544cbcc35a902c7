"""Invariants of every structural component, alone and chained, on arbitrary text (hypothesis)."""
import pytest
import spacy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import CONFIG_DIR

COMPONENTS = ("clin_punct_splitter", "clin_conj_splitter", "clin_cleaner")

# clinical-looking pieces mixed with arbitrary unicode, punctuation runs and line breaks
PIECES = st.sampled_from(
    [
        " ", "  ", "\n", "\n\n", "\t", ".", ",", ";", ":", "?", "!", ". ", ", ", "\n- ", "\n1. ", "HISTORY:\n",
        "Dr.", "e.g.,", "i.e.", "b.i.d.", "98.6", "1,5", "A.B.", "and", "but", "or", "and/or", "back and forth",
        "followed by", "the", "no", "without", "patient", "fever", "\u200b", "\u202e", "\x07", "\r\n", "😷", "患者",
        "שלום", "mg/dL.", "HIV.", "(", ")",
    ]
)
TEXT = st.lists(st.one_of(PIECES, st.text(max_size=6)), max_size=40).map("".join)
HYPOTHESIS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def pipelines():
    built = {}
    for name in COMPONENTS:
        nlp = spacy.blank("en")
        nlp.add_pipe(name)
        built[name] = nlp
        with_sents = spacy.blank("en")
        with_sents.add_pipe("sentencizer")
        with_sents.add_pipe(name)
        built[f"sentencizer+{name}"] = with_sents
    config = spacy.util.load_config(CONFIG_DIR / "punct_conj_cleaned.cfg")
    built["punct_conj_cleaned"] = spacy.util.load_model_from_config(config, auto_fill=True)
    return built


PIPELINES = pipelines()


def check_group(doc, key="clin_chunks"):
    assert key in doc.spans
    group = doc.spans[key]
    text = doc.text
    previous_end = 0
    for span in group:
        assert 0 <= span.start_char < span.end_char <= len(text)
        assert span.start_char >= previous_end  # sorted and non-overlapping
        previous_end = span.end_char
        assert span.text == text[span.start_char : span.end_char]
        assert span.text.strip(), "empty or whitespace-only chunk"
        assert not span.text[0].isspace() and not span.text[-1].isspace()
    return [(s.start_char, s.end_char) for s in group]


def rerun(nlp, doc):
    for name, proc in nlp.pipeline:
        if name.startswith("clin_"):
            doc = proc(doc)
    return doc


@pytest.mark.parametrize("name", sorted(PIPELINES))
@HYPOTHESIS
@given(text=TEXT)
def test_invariants_and_idempotence(name, text):
    nlp = PIPELINES[name]
    doc = nlp(text)
    assert doc.text == text  # no component rewrites text
    first = check_group(doc)
    second = check_group(rerun(nlp, doc))
    assert second == first
    assert doc.text == text


@HYPOTHESIS
@given(text=st.text(max_size=200))
def test_invariants_on_arbitrary_unicode(text):
    nlp = PIPELINES["punct_conj_cleaned"]
    doc = nlp(text)
    first = check_group(doc)
    assert check_group(rerun(nlp, doc)) == first
