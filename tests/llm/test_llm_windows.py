"""clin_llm_context windows against a slow, obviously correct reference.

The reference below re-encodes every candidate window from scratch and walks word by
word; it is what the windowing meant before it was made linear, written out plainly.
The component must give exactly its windows (offsets), the same chunk ids and the same
cache keys, and its own cost must grow linearly with the note.
"""
import hashlib
import json
import random
from bisect import bisect_left, bisect_right

import pytest
import spacy

from conftest import llm_config

from llm_server import FakeLLMServer
from spacy_clinchunk.spans import seed_ranges
from spacy_clinchunk.llm.tokens import get_encoding

KEY = "clin_rag_chunks"
ENC = get_encoding("cl100k_base")
VOCAB = (
    "patient denies chest pain fever cough dyspnea reports mild headache since yesterday blood pressure "
    "was elevated metformin aspirin lisinopril daily follow up clinic abdomen soft nontender edema lungs "
    "clear heart regular rate rhythm pneumothorax hydrochlorothiazide 81mg b.i.d. q.6h. O2-sat 98% é°C"
).split()


def note(seed: int, sentences: int) -> str:
    rng = random.Random(seed)
    parts = []
    for i in range(sentences):
        if i % 7 == 0:
            parts.append(rng.choice(["\n\nHISTORY:\n", "\n\nMEDICATIONS:\n", "\n\nPLAN:\n", "\n- "]))
        words = [rng.choice(VOCAB) for _ in range(rng.randint(3, 16))]
        parts.append(" ".join(words).capitalize() + rng.choice([". ", "; ", ".  ", "! "]))
    return "".join(parts).strip() + "\n"


# -- the reference ----------------------------------------------------------------------
def token_extents(text):
    """Character extents of the note's tiktoken tokens, one char at a time (slow, plain)."""
    extents, byte_pos, char_of_byte = [], 0, []
    for index, char in enumerate(text):
        char_of_byte.extend([index] * len(char.encode("utf-8")))
    char_of_byte.append(len(text))
    for token in ENC.encode_ordinary(text):
        width = len(ENC.decode_single_token_bytes(token))
        first, last = char_of_byte[byte_pos], char_of_byte[byte_pos + width - 1] + 1
        extents.append((first, min(last, len(text))))
        byte_pos += width
    return extents


def reference_windows(doc, size, overlap, align, tolerance):
    text = doc.text
    words = [t.i for t in doc if not t.is_space]
    if not words:
        return []
    starts = [doc[i].idx for i in words]
    ends = [doc[i].idx + len(doc[i]) for i in words]
    extents = token_extents(text)

    def overlapping(a, b):  # tokens of the whole note touching [a, b)
        return sum(1 for s, e in extents if s < b and e > a) if b > a else 0

    def fresh(s, e):  # tokens of the window's text encoded on its own
        return len(ENC.encode_ordinary(text[starts[s] : ends[e - 1]]))

    boundaries = []
    if align != "tokens":
        found = set()
        for a, b in seed_ranges(doc):
            found.add(bisect_left(starts, a))
            found.add(bisect_right(ends, b))
        boundaries = sorted(b for b in found if 0 < b < len(starts))
    tolerance = min(tolerance, size // 4)
    n, s, windows = len(words), 0, []
    while True:
        e = s + 1
        while e < n and fresh(s, e + 1) <= size:  # the longest run of words that fits
            e += 1
        if e < n:
            snapped = [b for b in boundaries if s < b <= e]
            if snapped and overlapping(ends[snapped[-1] - 1], ends[e - 1]) <= tolerance:
                e = snapped[-1]
        windows.append((words[s], words[e - 1] + 1))
        if e >= n:
            return windows
        last = ends[e - 1]
        t = next(t for t in range(s + 1, e + 1) if t == e or overlapping(starts[t], last) <= overlap)
        near = [b for b in boundaries if s < b <= e and overlapping(*sorted((starts[min(b, t)], starts[max(b, t)]))) <= tolerance]
        if near:
            t = min(near, key=lambda b: (overlapping(starts[min(b, t)], starts[max(b, t)]), b))
        s = max(t, s + 1)


# -- the component ----------------------------------------------------------------------
def build(align="tokens", size=60, overlap=12, model=None, **config):
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe(
        "clin_llm_context",
        config=llm_config(
            chunk_size=size, chunk_overlap=overlap, align=align,
            model=model or {"@misc": "spacy_clinchunk.HeuristicContext.v1"}, **config,
        ),
    )
    return nlp


CASES = [(seed, sentences, align, size, overlap)
         for seed, sentences in ((1, 6), (2, 40), (3, 90))
         for align in ("tokens", "sentences")
         for size, overlap in ((60, 12), (200, 40))]


@pytest.mark.parametrize("seed,sentences,align,size,overlap", CASES)
def test_windows_equal_the_reference(seed, sentences, align, size, overlap):
    nlp = build(align, size, overlap)
    doc = nlp(note(seed, sentences))
    got = [(s.start, s.end) for s in doc.spans[KEY]]
    assert got == reference_windows(doc, size, overlap, align, 100)
    for span in doc.spans[KEY]:
        assert span.text == doc.text[span.start_char : span.end_char]
        assert span._.clin_token_count == len(ENC.encode_ordinary(span.text))


def test_chunk_ids_and_cache_keys_are_unchanged(tmp_path):
    """Keys: sha256 of [model identity, template version, note part, chunk text] as before."""
    from importlib import resources

    template = resources.files("spacy_clinchunk.resources").joinpath("prompts/context_v1.txt").read_text("utf-8")
    version = "context_v1:" + hashlib.sha256(template.encode("utf-8")).hexdigest()[:12]
    texts = [note(s, 12) for s in (4, 5)]
    cache = tmp_path / "keys.sqlite"
    with FakeLLMServer() as server:
        model = {"@misc": "spacy_clinchunk.Ollama.v1", "base_url": server.url}
        nlp = build("sentences", 60, 12, model=model, document_chars=None,
                    cache={"@misc": "spacy_clinchunk.SQLiteCache.v1", "path": str(cache)})
        docs = list(nlp.pipe(texts))
    expected = set()
    for text, doc in zip(texts, docs):
        doc._.clin_doc_id = None
        for index, (start, end) in enumerate(reference_windows(doc, 60, 12, "sentences", 100)):
            chunk = doc[start:end].text
            payload = json.dumps(["ollama:phi4", version, text, chunk], ensure_ascii=False)
            expected.add(hashlib.sha256(payload.encode("utf-8")).hexdigest())
            span = doc.spans[KEY][index]
            assert span._.clin_chunk_id == f"{hashlib.sha1(text.encode()).hexdigest()[:16]}_chunk_{index}"
    import sqlite3

    with sqlite3.connect(cache) as conn:
        stored = {row[0] for row in conn.execute("SELECT key FROM answers")}
    assert stored == expected


class CountingEncoding:
    """The real encoding, counting the characters it is asked to encode."""

    def __init__(self, encoding):
        self.encoding = encoding
        self.chars = 0

    def encode_ordinary(self, text):
        self.chars += len(text)
        return self.encoding.encode_ordinary(text)

    def __getattr__(self, name):
        return getattr(self.encoding, name)


@pytest.mark.parametrize("sentences", [60, 600, 6000])
def test_windowing_encodes_each_character_a_bounded_number_of_times(sentences, monkeypatch):
    """Linear in the note: the whole note once, then each window once (plus rare re-checks)."""
    import spacy_clinchunk.llm.tokens as tokens

    counting = CountingEncoding(ENC)
    monkeypatch.setattr(tokens, "get_encoding", lambda name: counting)
    nlp = build("sentences", 1000, 200)
    nlp.max_length = 2_000_000
    doc = nlp(note(8, sentences))
    windows = list(doc.spans[KEY])
    assert len(windows) >= sentences // 60
    window_chars = sum(len(span.text) for span in windows)
    assert window_chars <= 1.5 * len(doc.text)  # overlap 200 of 1000 tokens
    # the note once, then each window once to check its count; a re-check now and then
    assert counting.chars <= len(doc.text) + window_chars + 0.15 * len(doc.text)
