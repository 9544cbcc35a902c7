"""clin_concept_focus: learned concept spans as each chunk's focus, the rule focus spans elsewhere.

The learned spans are put in their group by hand here, exactly where the trained span_finder
writes them (``annotations``), so that every case is chosen; tests/training/test_concept_spans.py runs
the component behind a real (tiny) trained span_finder.
"""
import pytest
import spacy

from spacy_clinchunk import attrs
from spacy_clinchunk.components.concept_focus import combine_focus, nearest_spans
from spacy_clinchunk.components.settings import SettingError
from spacy_clinchunk.pipeline import load_pipeline

LEARNED = "annotations"
TEXT = ("She was noted to have aplastic or hypoplastic nails and no seizures. "
        "Examination revealed short stature with brachydactyly type C in both hands.")


@pytest.fixture(scope="module")
def nlp():
    nlp = load_pipeline("default")  # clause chunks, ceiling, assertion, rule focus
    nlp.add_pipe("clin_concept_focus")
    return nlp


def run(nlp, text, learned_phrases=(), learned_ranges=()):
    """The pipeline on ``text``, the learned group set (by phrase or range) before clin_concept_focus."""
    doc = nlp.make_doc(text)
    for name, proc in nlp.pipeline:
        if name == "clin_concept_focus":
            ranges = [(text.index(p), text.index(p) + len(p)) for p in learned_phrases] + list(learned_ranges)
            doc.spans[LEARNED] = [doc.char_span(s, e, alignment_mode="expand") for s, e in ranges]
        doc = proc(doc)
    return doc


def texts(doc, key):
    return [s.text for s in doc.spans[key]]


def check_offsets_and_links(doc):
    chunks, focus = doc.spans[attrs.CHUNKS_KEY], doc.spans[attrs.FOCUS_KEY]
    assert [(s.start_char, s.end_char) for s in focus] == sorted((s.start_char, s.end_char) for s in focus)
    for position, span in enumerate(focus):
        assert span.text == doc.text[span.start_char:span.end_char] and span.text.strip()
        owner = chunks[span._.clin_focus_of]
        assert owner.start_char < span.end_char and span.start_char < owner.end_char
        assert position in owner._.clin_focus_ids
        assert span._.clin_assertion == owner._.clin_assertion
    for number, chunk in enumerate(chunks):
        assert all(focus[i]._.clin_focus_of == number for i in chunk._.clin_focus_ids)


def test_without_learned_spans_the_rule_focus_stays(nlp):
    rules = load_pipeline("default")(TEXT)
    doc = run(nlp, TEXT)
    assert texts(doc, attrs.FOCUS_KEY) == texts(rules, attrs.FOCUS_KEY)
    check_offsets_and_links(doc)


def test_learned_spans_replace_the_rules_only_in_the_chunks_they_overlap(nlp):
    rules = texts(run(nlp, TEXT), attrs.FOCUS_KEY)
    assert {"brachydactyly type C", "hands", "short stature", "seizures"} <= set(rules)
    doc = run(nlp, TEXT, ["brachydactyly"])  # inside "with brachydactyly type C in both hands"
    focus = texts(doc, attrs.FOCUS_KEY)
    assert "brachydactyly" in focus and "brachydactyly type C" not in focus and "hands" not in focus
    assert "short stature" in focus and "seizures" in focus  # other chunks: their rule focus stays
    check_offsets_and_links(doc)


def test_a_coordination_overlapping_a_learned_span_stays_whole(nlp):
    doc = run(nlp, TEXT, ["hypoplastic nails"])
    focus = texts(doc, attrs.FOCUS_KEY)
    assert "hypoplastic nails" in focus and "aplastic or hypoplastic nails" in focus
    apart = nlp.get_pipe("clin_concept_focus")
    apart.keep_coordination = False
    try:
        assert "aplastic or hypoplastic nails" not in texts(run(nlp, TEXT, ["hypoplastic nails"]), attrs.FOCUS_KEY)
    finally:
        apart.keep_coordination = True


def test_focus_spans_carry_the_assertion_of_the_chunk_they_overlap_most(nlp):
    doc = run(nlp, TEXT, ["seizures", "nails and no seizures"])
    by_text = {s.text: s for s in doc.spans[attrs.FOCUS_KEY]}
    assert by_text["seizures"]._.clin_assertion == "negated"
    straddling = by_text["nails and no seizures"]  # 5 characters in one chunk, 11 in "no seizures"
    assert doc.spans[attrs.CHUNKS_KEY][straddling._.clin_focus_of].text == "no seizures"
    assert straddling._.clin_assertion == "negated"
    check_offsets_and_links(doc)


def test_nearest_keeps_the_shortest_span_of_each_start():
    assert nearest_spans([(0, 9), (0, 4), (5, 9), (12, 20)]) == [(0, 4), (5, 9), (12, 20)]
    assert nearest_spans([]) == []


def test_combine_links_each_span_to_the_chunk_it_overlaps_most():
    text = "aaaa bbbb cccc dddd"
    chunks = [(0, 9), (10, 19)]
    owners = combine_focus(text, chunks, [(0, 4), (10, 14)], [[0], [1]], [(5, 14)], None)
    # (5, 14) overlaps chunk 0 by 4 characters and chunk 1 by 4: the first wins; neither chunk
    # keeps its rule focus (each overlaps a learned span), and nothing is left unlinked
    assert owners == [(5, 14, 0)]
    owners = combine_focus(text, chunks, [(0, 4), (10, 14)], [[0], [1]], [(7, 19)], None)
    assert owners == [(7, 19, 1)]


def test_keep_uncovered_keeps_the_rule_spans_no_learned_span_overlaps():
    text = "aaaa bbbb cccc dddd"
    chunks = [(0, 19)]
    rules, links = [(0, 4), (5, 9), (15, 19)], [[0, 1, 2]]
    # one learned span over "bbbb": without keep_uncovered the chunk's rule spans all go
    assert combine_focus(text, chunks, rules, links, [(5, 9)], None) == [(5, 9, 0)]
    # with it, "aaaa" and "dddd" (the concepts the model missed) stay; "bbbb" is the learned one
    assert combine_focus(text, chunks, rules, links, [(5, 9)], None, keep_uncovered=True) == [
        (0, 4, 0), (5, 9, 0), (15, 19, 0)]
    # a rule span the learned span overlaps only in part is replaced, not kept beside it
    assert combine_focus(text, chunks, [(0, 9)], [[0]], [(5, 9)], None, keep_uncovered=True) == [(5, 9, 0)]


def test_a_learned_span_outside_every_chunk_is_left_out(nlp):
    text = "Fever. And, also, the."  # the cleaner drops the second sentence: no chunk there
    doc = run(nlp, text, learned_ranges=[(7, 10)])
    assert all(s.start_char < 6 for s in doc.spans[attrs.FOCUS_KEY])
    check_offsets_and_links(doc)


@pytest.mark.parametrize("text", ["", "   \n ", "。" * 50, "x" * 20000])
def test_empty_blank_and_odd_docs_give_exact_linked_groups(nlp, text):
    doc = run(nlp, text, learned_ranges=[(0, len(text))] if text.strip() else [])
    check_offsets_and_links(doc)


def test_keys_must_differ():
    nlp = spacy.blank("en")
    with pytest.raises(SettingError, match="must differ"):
        nlp.add_pipe("clin_concept_focus", config={"concepts_key": attrs.FOCUS_KEY})


def test_to_disk_and_spacy_load_reproduce_the_output(nlp, tmp_path):
    nlp.to_disk(tmp_path / "p")
    loaded = spacy.load(tmp_path / "p")
    for text, learned in ((TEXT, ["hypoplastic nails", "brachydactyly"]), ("No fever.", [])):
        a, b = run(nlp, text, learned), run(loaded, text, learned)
        assert [(s.start_char, s.end_char, s._.clin_focus_of, s._.clin_assertion) for s in a.spans[attrs.FOCUS_KEY]] == \
               [(s.start_char, s.end_char, s._.clin_focus_of, s._.clin_assertion) for s in b.spans[attrs.FOCUS_KEY]]
