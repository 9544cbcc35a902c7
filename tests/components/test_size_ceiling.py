"""clin_size_ceiling: cut order, guarantees on bad input, linear work, offsets, serialization."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import spacy

from spacy_clinchunk import attrs
from spacy_clinchunk.components.size_ceiling import CUE_LISTS, DEFAULT_MAX_TOKENS, work_of
from spacy_clinchunk.resources_io import SUPPORTED_LANGUAGES, resource_path

from conftest import blank_with, chunk_texts

_WORD = re.compile(r"\S+")
ROOT = Path(__file__).resolve().parents[2]  # tests/<wing>/test_x.py -> the repository
TOKENS = {"@misc": "spacy_clinchunk.EmbedderTokenCounter.v1", "model": "all-MiniLM-L6-v2"}


def ceiling_nlp(lang="en", sentencizer=False, **config):
    return blank_with("clin_size_ceiling", lang, sentencizer, **config)


def check(doc, max_tokens):
    """Every piece fits (or is one word), keeps its offsets, and the pieces cover every word in order."""
    text = doc.text
    spans = list(doc.spans[attrs.CHUNKS_KEY])
    for span in spans:
        assert span.text == text[span.start_char:span.end_char]
        assert len(span.text.split()) <= max_tokens or len(span.text.split()) == 1
    assert [w for s in spans for w in s.text.split()] == text.split()
    return [s.text for s in spans]


@pytest.fixture(scope="module")
def small():
    return ceiling_nlp(max_tokens=4)


# -- settings --------------------------------------------------------------------------------
def test_defaults():
    pipe = ceiling_nlp().get_pipe("clin_size_ceiling")
    assert pipe.max_tokens == DEFAULT_MAX_TOKENS
    assert type(pipe.token_counter).__name__ == "AutoTokenCounter"
    assert pipe.spans_key == attrs.CHUNKS_KEY


@pytest.mark.parametrize("bad", [0, -3, 2.5, "ten"])
def test_bad_ceiling_is_rejected(bad):
    with pytest.raises(Exception, match="max_tokens"):
        ceiling_nlp(max_tokens=bad)


def test_short_pieces_and_empty_docs_are_left_alone(small):
    assert chunk_texts(small("fever and cough today")) == ["fever and cough today"]
    assert chunk_texts(small("")) == []
    assert chunk_texts(small(" \n\t ")) == []


# -- where it cuts -----------------------------------------------------------------------------
def test_a_line_break_comes_before_every_cue():
    # the single line break is a soft one (a wrapped line): only the ceiling cuts there
    text = "fever and cough since monday\nwith pain in the knee"
    assert chunk_texts(ceiling_nlp(max_tokens=6)(text)) == ["fever and cough since monday", "with pain in the knee"]
    assert check(ceiling_nlp(max_tokens=4)(text), 4) == ["fever and cough", "since monday", "with pain", "in the knee"]


def test_list_markers_inside_a_line():
    nlp = ceiling_nlp(max_tokens=3)
    assert check(nlp("meds - metformin daily - lisinopril daily"), 3) == [
        "meds", "- metformin daily", "- lisinopril daily",
    ]


def test_conjunctions_then_report_verbs_then_prepositions_then_the_middle(small):
    # a conjunction wins over a preposition nearer the middle
    assert chunk_texts(small("left knee pain severe but swelling of ankle")) == ["left knee pain severe", "but swelling of ankle"]
    assert chunk_texts(small("severe pain in the knee but swelling")) == ["severe pain", "in the knee", "but swelling"]
    # a verb of report when there is no conjunction
    assert chunk_texts(small("the mother of patient reports staring spells at night")) == [
        "the mother of patient", "reports staring spells", "at night",
    ]
    # a preposition when there is neither
    assert chunk_texts(small("severe throbbing headache with photophobia")) == ["severe throbbing headache", "with photophobia"]
    # no cue at all: the word boundary in the middle
    assert chunk_texts(small("one two three four five six seven eight")) == ["one two three four", "five six seven eight"]


def test_a_cue_is_not_taken_when_it_leaves_a_fragment():
    nlp = ceiling_nlp(max_tokens=8)
    # "reports" after the first word would leave "Patient" alone: the preposition wins
    assert chunk_texts(nlp("Patient reports chest pain radiating to the left arm since yesterday")) == [
        "Patient reports chest pain radiating", "to the left arm since yesterday",
    ]


def test_a_conjunction_inside_one_concept_is_no_cue():
    nlp = ceiling_nlp(max_tokens=6)
    assert chunk_texts(nlp("examination showed cleft lip and palate with a murmur")) == [
        "examination showed cleft lip and palate", "with a murmur",
    ]


def test_multiword_cues_and_case():
    nlp = ceiling_nlp(max_tokens=5)
    assert chunk_texts(nlp("fever since Monday As Well As rash today")) == ["fever since Monday", "As Well As rash today"]


def test_wordpiece_counter_counts_the_embedders_tokens():
    pytest.importorskip("transformers")
    nlp = ceiling_nlp(max_tokens=6, token_counter=TOKENS)
    counter = nlp.get_pipe("clin_size_ceiling").token_counter
    assert counter(["fever", "hepatosplenomegaly"])[0] == 1 and counter(["hepatosplenomegaly"])[0] > 2
    text = "hepatosplenomegaly and lymphadenopathy with thrombocytopenia noted"
    tokenizer = counter.tokenizer
    pieces = chunk_texts(nlp(text))
    assert len(pieces) > 1
    for piece in pieces:
        assert len(tokenizer(piece, add_special_tokens=False)["input_ids"]) <= 6 or len(piece.split()) == 1
    # the same text in words is one piece under the same ceiling
    assert chunk_texts(ceiling_nlp(max_tokens=6)(text)) == [text]


def test_auto_counter_counts_words_and_loads_no_model_without_an_embedder():
    # a fresh interpreter: the flagship has no embedder, so the ceiling counts words and never
    # imports a model library (spaCy itself may import torch where it is installed)
    script = (
        "import sys\n"
        "from spacy_clinchunk.pipeline import load_pipeline\n"
        "nlp = load_pipeline('default')\n"
        "doc = nlp('patient reports chest pain radiating to the left arm with shortness of breath since yesterday')\n"
        "print(nlp.get_pipe('clin_size_ceiling').token_counter.name)\n"
        "print(max(len(s.text.split()) for s in doc.spans['clin_chunks']))\n"
        "print(sorted(m for m in ('transformers', 'sentence_transformers', 'tokenizers') if m in sys.modules))\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300, check=True)
    name, longest, imported = out.stdout.split("\n")[:3]
    assert name == "auto: words"
    assert int(longest) <= DEFAULT_MAX_TOKENS
    assert imported == "[]"


def test_auto_counter_counts_the_wordpieces_of_a_downstream_embedder():
    pytest.importorskip("transformers")
    nlp = spacy.blank("en")
    nlp.add_pipe("clin_size_ceiling", config={"max_tokens": 6})
    nlp.add_pipe("clin_semantic_window")  # after the ceiling: its embedder is still the one that reads the chunks
    ceiling = nlp.get_pipe("clin_size_ceiling")
    text = "hepatosplenomegaly and lymphadenopathy with thrombocytopenia noted"
    pieces = chunk_texts(ceiling(nlp.make_doc(text)))  # the ceiling alone: the embedder is only looked up
    counter = ceiling.token_counter
    assert counter.name == "auto: tokens of all-MiniLM-L6-v2"
    assert len(pieces) > 1
    tokenizer = counter.delegate.tokenizer
    for piece in pieces:
        assert len(tokenizer(piece, add_special_tokens=False)["input_ids"]) <= 6 or len(piece.split()) == 1
    # without the embedder the same ceiling counts words: one piece
    alone = ceiling_nlp(max_tokens=6)
    assert chunk_texts(alone(text)) == [text]
    assert alone.get_pipe("clin_size_ceiling").token_counter.name == "auto: words"


# -- guarantees on bad input -----------------------------------------------------------------------
def test_no_punctuation_at_all():
    nlp = ceiling_nlp(max_tokens=12, sentencizer=True)
    text = " ".join(f"finding{i} and unremarkable exam with normal tone" for i in range(300))
    pieces = check(nlp(text), 12)
    assert max(len(p.split()) for p in pieces) <= 12


def test_one_line_of_200000_characters(small):
    text = ("pain " * 40_000).strip()
    assert len(text) >= 199_990
    pieces = check(small(text), 4)
    assert len(pieces) == 10_000


def test_fifty_thousand_list_items():
    nlp = ceiling_nlp(max_tokens=5)
    lines = "\n".join(f"- item {i} daily" for i in range(50_000))
    assert len(check(nlp(lines), 5)) == 50_000  # each item a hard break, each under the ceiling
    assert len(lines) < 1_000_000
    inline = " ".join(f"- item {i} given daily" for i in range(5_000))  # one line of list items
    assert check(nlp(inline), 5) == [f"- item {i} given daily" for i in range(5_000)]


def test_ceiling_of_one_token_gives_one_word_pieces():
    nlp = ceiling_nlp(max_tokens=1, sentencizer=True)
    text = "Fever, cough and rash since Monday.\nNo vomiting"
    assert chunk_texts(nlp(text)) == text.split()


def test_million_character_note_without_punctuation():
    nlp = ceiling_nlp(max_tokens=DEFAULT_MAX_TOKENS)
    text = ("fever cough with rash and pain " * 40_000)[:1_000_000]
    assert len(text) == 1_000_000
    doc = nlp(text)
    spans = doc.spans[attrs.CHUNKS_KEY]
    assert all(len(s.text.split()) <= DEFAULT_MAX_TOKENS for s in spans)
    assert sum(len(s.text.split()) for s in spans) == len(text.split())


def work_per_word(settings, words):
    """The ceiling's work (words scanned plus cuts made) per word on 2,000 and 100,000 words."""
    per_word = []
    for n in (2_000, 100_000):
        pipe = ceiling_nlp(**settings).get_pipe("clin_size_ceiling")
        per_word.append(work_of(pipe, " ".join(words * (n // len(words)))) / n)
    return per_word


def test_work_grows_linearly_with_the_text():
    """Words scanned plus cuts made, per word, stay the same from 2,000 to 100,000 words."""
    small, large = work_per_word({"max_tokens": 7}, ["dose", "with", "food", "and", "water"])
    assert large <= 1.1 * small
    assert large < 2


# -- invariants ------------------------------------------------------------------------------------
def test_offsets_and_idempotence_after_the_clause_chain():
    nlp = spacy.blank("en")
    for name in ("sentencizer", "clin_punct_splitter", "clin_conj_splitter", "clin_cleaner"):
        nlp.add_pipe(name)
    nlp.add_pipe("clin_size_ceiling", config={"max_tokens": 5})
    text = "Patient reports  chest pain radiating to the left arm with shortness of breath since yesterday.\n" * 3
    doc = nlp(text)
    first = [(s.start_char, s.end_char) for s in doc.spans[attrs.CHUNKS_KEY]]
    for s in doc.spans[attrs.CHUNKS_KEY]:
        assert s.text == text[s.start_char:s.end_char] and len(s.text.split()) <= 5
    again = nlp.get_pipe("clin_size_ceiling")(doc)
    assert [(s.start_char, s.end_char) for s in again.spans[attrs.CHUNKS_KEY]] == first


@pytest.mark.parametrize("lang", SUPPORTED_LANGUAGES)
def test_every_language_has_its_cue_lists_and_cuts_at_them(lang):
    names = [n for group in CUE_LISTS for n in group if n.startswith("ceiling_")]
    for name in names:
        data = json.loads(resource_path(lang, f"{name}.json").read_text(encoding="utf-8"))
        assert data and all(isinstance(w, str) and w == w.strip() and w for w in data)
        assert len({w.lower() for w in data}) == len(data)
    conj = json.loads(resource_path(lang, "coordinating_conjunctions.json").read_text(encoding="utf-8"))[0]
    prep = json.loads(resource_path(lang, "ceiling_prepositions.json").read_text(encoding="utf-8"))[0]
    nlp = ceiling_nlp(lang=lang, max_tokens=4)
    assert chunk_texts(nlp(f"alpha beta gamma {conj} delta epsilon zeta")) == ["alpha beta gamma", f"{conj} delta epsilon zeta"]
    assert chunk_texts(nlp(f"alpha beta gamma {prep} delta epsilon")) == ["alpha beta gamma", f"{prep} delta epsilon"]


def test_n_process_two_gives_the_same_pieces():
    nlp = ceiling_nlp(max_tokens=3, sentencizer=True)
    texts = ["fever and cough with rash since monday", "", "one two three four five six seven"] * 4
    single = [chunk_texts(d) for d in nlp.pipe(texts)]
    assert [chunk_texts(d) for d in nlp.pipe(texts, n_process=2, batch_size=3)] == single


def test_disk_round_trip_keeps_the_lists_and_the_ceiling(tmp_path):
    nlp = ceiling_nlp(max_tokens=3)
    nlp.get_pipe("clin_size_ceiling").initialize(resources={"ceiling_prepositions": ["amid"]})
    text = "alpha beta gamma amid delta epsilon"
    expected = chunk_texts(nlp(text))
    assert expected == ["alpha beta gamma", "amid delta epsilon"]
    nlp.to_disk(tmp_path / "p")
    loaded = spacy.load(tmp_path / "p")
    assert loaded.get_pipe("clin_size_ceiling").max_tokens == 3
    assert chunk_texts(loaded(text)) == expected
    bigger = spacy.load(tmp_path / "p", config={"components": {"clin_size_ceiling": {"max_tokens": 10}}})
    assert chunk_texts(bigger(text)) == [text]


def test_no_cut_right_after_a_negation():
    nlp = ceiling_nlp(max_tokens=4)
    # the middle of these eight words falls right after "none": the cut moves to the next boundary
    assert chunk_texts(nlp("alpha beta gamma none delta epsilon zeta eta")) == ["alpha beta", "gamma none delta", "epsilon zeta eta"]
    # "no" is a function word too: the cut falls before it, and it stays with what it negates
    assert chunk_texts(nlp("alpha beta gamma no delta epsilon zeta eta")) == ["alpha beta gamma", "no delta", "epsilon zeta eta"]
    # nothing but negations: the guarantee wins over the rule
    assert check(nlp("no " * 9), 4) == ["no no no"] * 3


def test_no_cut_inside_a_noun_phrase():
    four, five = ceiling_nlp(max_tokens=4), ceiling_nlp(max_tokens=5)
    # a modifier stays with its noun ("developmental delay")
    assert check(four("child mild developmental delay was seen today after birth"), 4) == [
        "child mild developmental delay", "was seen today", "after birth"]
    # "of" stays with the noun before it, and no piece ends with "of" or "the"
    assert check(five("we describe anomalies of the facial nerve in this family today"), 5) == [
        "we describe", "anomalies of the facial nerve", "in this family today"]
    assert check(five("unilateral duplication anomalies of the facial nerve seen today"), 5) == [
        "unilateral duplication", "anomalies of the facial nerve", "seen today"]
    # a line break is still a boundary after a modifier
    assert chunk_texts(four("patient has bilateral\nfever cough rash since monday")) == [
        "patient has bilateral", "fever cough rash", "since monday"]


def test_the_start_of_a_function_word_run_comes_before_the_middle():
    # no cue but the auxiliary "was": the cut falls before it, and inside the noun phrase
    # only between two nouns ("onset" | "bilateral")
    nlp = ceiling_nlp(max_tokens=5)
    assert chunk_texts(nlp("sudden onset bilateral sensorineural hearing loss was noted yesterday evening")) == [
        "sudden onset", "bilateral sensorineural hearing loss", "was noted yesterday evening"]


# -- a ceiling that adapts to the text ------------------------------------------------------------
ADAPTIVE = {"max_tokens": 8, "punctuated_max_tokens": 32, "sentence_starts": True}
LONG_CLAUSE = ("The child had a long history of severe global developmental delay with marked "
               "hypotonia since early infancy")  # 16 words, no clause mark, no conjunction


def clause_chain(**config):
    nlp = spacy.blank("en")
    for name in ("sentencizer", "clin_punct_splitter", "clin_conj_splitter", "clin_cleaner"):
        nlp.add_pipe(name)
    nlp.add_pipe("clin_size_ceiling", config=config)
    return nlp


def blank_punctuation(text):
    return re.sub(r"[.,;:]", " ", text)


def fits(doc, max_tokens):
    """Every piece keeps its offsets and fits (or is one word); the pieces' texts."""
    spans = list(doc.spans[attrs.CHUNKS_KEY])
    for span in spans:
        assert span.text == doc.text[span.start_char:span.end_char]
        assert len(span.text.split()) <= max_tokens or len(span.text.split()) == 1
    return [s.text for s in spans]


def test_a_punctuated_note_keeps_its_long_clause_whole_up_to_the_loose_ceiling():
    nlp = clause_chain(**ADAPTIVE)
    note = f"Seen today, in clinic. {LONG_CLAUSE}. Mother, father: healthy. Review in one year."
    texts = chunk_texts(nlp(note))
    assert LONG_CLAUSE.removeprefix("The ") in texts  # 15 words: the cleaner drops the article
    assert all(len(t.split()) <= 32 for t in texts)
    # the same note with its punctuation blanked (same offsets): cut at the tight ceiling
    spoken = blank_punctuation(note)
    doc = nlp(spoken)
    assert fits(doc, 8) and not any("hypotonia" in t and "history" in t for t in chunk_texts(doc))
    # and where a sentence lost its period, a new piece begins ("... clinic The child ...")
    assert any(t.startswith("The child") for t in chunk_texts(doc))
    assert any(t.startswith("Review") for t in chunk_texts(doc))
    # without the adaptive settings the punctuated clause is cut at 8 like any other
    assert all(len(t.split()) <= 8 for t in chunk_texts(clause_chain(max_tokens=8)(note)))


def test_the_loose_ceiling_still_cuts_a_clause_over_it():
    nlp = clause_chain(max_tokens=4, punctuated_max_tokens=10, punctuated_every=40)
    clause = " ".join(["pain"] * 25)
    texts = fits(nlp(f"Seen today, in clinic. {clause}. Well, stable."), 10)
    assert 4 < max(len(t.split()) for t in texts) <= 10


def test_a_capital_inside_punctuated_text_is_a_name_not_a_sentence_start():
    nlp = clause_chain(**ADAPTIVE)
    note = "Seen today, in clinic. Patients with Kabuki syndrome were reviewed. Stable, well."
    assert "Patients with Kabuki syndrome were reviewed" in chunk_texts(nlp(note))
    # unpunctuated: no cut after "of" or a negation, nor inside a run of names
    texts = chunk_texts(nlp("the child had a history of Marfan features no Pierre Robin sequence"))
    assert texts == ["the child had a history of Marfan features", "no Pierre Robin sequence"] or all(
        not t.endswith(("of", "no")) for t in texts)
    assert not any(t.startswith("Robin") for t in texts)


def test_adaptive_settings_on_a_200000_character_line_without_punctuation():
    nlp = ceiling_nlp(**ADAPTIVE)
    pipe = nlp.get_pipe("clin_size_ceiling")
    text = ("fever with rash and pain We " * 8_000).strip()
    assert len(text) >= 199_990
    pieces = check(nlp(text), 8)
    assert all(p.startswith("We") or p == pieces[0] for p in pieces if "We" in p.split()[:1]) and len(pieces) >= 8_000
    assert work_of(pipe, text) < 4 * len(text.split())


def test_adaptive_work_grows_linearly_with_the_text():
    small, large = work_per_word(ADAPTIVE, ["dose", "with", "food", "and", "Water"])
    assert large <= 1.1 * small
    assert large < 4


def test_adaptive_ceiling_of_one_token_gives_one_word_pieces():
    nlp = clause_chain(max_tokens=1, punctuated_max_tokens=1, sentence_starts=True)
    text = "Fever, cough and rash since Monday.\nNo vomiting We report"
    assert chunk_texts(nlp(text)) == blank_punctuation(text).split()


def test_a_loose_ceiling_under_the_tight_one_is_rejected():
    with pytest.raises(Exception, match="punctuated_max_tokens"):
        ceiling_nlp(max_tokens=8, punctuated_max_tokens=4)


@pytest.mark.parametrize(
    "text, phrase",
    [
        ("He was admitted due to a fall at home and was given analgesics for the pain in his left hip.", "due to"),
        ("She was transferred because of worsening shortness of breath overnight on the ward.", "because of"),
    ],
)
def test_no_cut_falls_inside_a_cue_of_several_words(text, phrase):
    """A peer's test case: the flagship cut "admitted due | to a fall", leaving a lone "due"."""
    from spacy_clinchunk.pipeline import resolve_pipeline

    resolved = resolve_pipeline("default")
    doc = resolved.nlp(text)
    chunks = [span.text for span in doc.spans[resolved.chunks_key]]
    first, second = phrase.split()
    assert not any(chunk.split()[-1] == first for chunk in chunks), chunks
    assert not any(chunk.split()[0] == second for chunk in chunks), chunks


def test_a_semicolon_is_a_clause_boundary_for_the_ceiling():
    """A peer's kind of case: the cut falls at the semicolon, not inside "rule out"."""
    from spacy_clinchunk.pipeline import resolve_pipeline

    resolved = resolve_pipeline("simple")
    doc = resolved.nlp("Poor weight gain, likely secondary to reduced intake; rule out malabsorption if weight loss continues.")
    assert [span.text for span in doc.spans[resolved.chunks_key]] == [
        "Poor weight gain, likely secondary to reduced intake;",
        "rule out malabsorption if weight loss continues.",
    ]
