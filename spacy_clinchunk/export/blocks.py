"""Parent passages of a document, worked out once per doc: its sentences, its section blocks
and its header labels.

A retrieved chunk ("Hematuria") is too small to answer from; the passage around it is what an
LLM reads (small-to-big retrieval). Records carry two such parents (:mod:`.records`):

- the **sentence** that holds the chunk (the pipeline's sentence boundaries; none when the
  pipeline sets none);
- the **block**: the text of the chunk's section (``clin_sections``; the text outside every
  section is a section without a title) cut into consecutive blocks of at most
  ``block_tokens`` tokens, at sentence boundaries; a sentence over the budget is cut at
  chunk boundaries, and a single chunk over it is a block of its own.

Tokens are counted by a token counter of :mod:`~spacy_clinchunk.components.token_counters`
(words in, one count per word out): by default :class:`WordpieceEstimate`, a cheap estimate of
the embedder's wordpieces that loads no tokenizer; ``EmbedderTokenCounter.v1`` counts exactly.

Header labels ("FAMILY HISTORY" of "FAMILY HISTORY:", "Heart" of "Heart: regular") come from
the header scanner the assertion component segments the note with
(:func:`~spacy_clinchunk.assertion.layout.scan_headers`, with that component's section table),
so a chunk is a header by the same rule that keeps header words from being cues (without the
pipeline at hand, with the shipped table of the doc's language; without one, the labels are
the headers of ``clin_sections``, up to a colon or line break).
"""
from __future__ import annotations

import re
from bisect import bisect_right
from functools import lru_cache
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from spacy.tokens import Doc, Span

from .. import attrs
from ..assertion.layout import scan_headers
from ..assertion.sections import SectionTable, section_data
from ..components.token_counters import DEFAULT_BLOCK_TOKENS, wordpiece_estimate

Range = Tuple[int, int]
Counter = Callable[[Sequence[str]], List[int]]
# what a block or sentence never starts or ends with: whitespace and a flattened line break (",")
_EDGE = " \t\r\n\f\v,;"
_LABEL_END = re.compile(r"[:\n]")
# a title line: up to six words in capitals alone on their line ("DISCHARGE SUMMARY",
# "DEKURS DER TUMORERKRANKUNG"), an optional colon after them; a letter in lower case or a digit
# makes it a finding ("NO ACUTE DISTRESS" stays a header only if nothing else is on its line)
_TITLE_LINE = re.compile(r"^[ \t]*((?:[^\W\d_a-zß-ÿ]{2,}[ \t/&-]+){0,5}[^\W\d_a-zß-ÿ]{2,})[ \t]*:?[ \t]*$", re.M)


@dataclass(frozen=True)
class Passage:
    """A parent passage in characters (``text[start:end]`` is its text); blocks carry their
    section's ``title`` (the header label text) and ``section`` (its category)."""

    start: int
    end: int
    title: Optional[str] = None
    section: Optional[str] = None


class Passages:
    """The sentences, blocks and header labels of one doc, looked up by character offset."""

    def __init__(self, sentences: List[Passage], blocks: List[Passage], headers: List[Range]) -> None:
        self.sentences = sentences
        self.blocks = blocks
        self.headers = headers
        self._sentence_starts = [p.start for p in sentences]
        self._block_starts = [p.start for p in blocks]
        self._header_starts = [a for a, _ in headers]

    def sentence_at(self, char: int) -> Optional[Passage]:
        """The sentence that holds ``char`` (None without sentence boundaries)."""
        return _holding(self.sentences, self._sentence_starts, char)

    def block_at(self, char: int) -> Optional[Passage]:
        """The block that holds ``char``."""
        return _holding(self.blocks, self._block_starts, char)

    def is_header(self, start: int, end: int) -> bool:
        """Whether ``[start, end)`` lies on or inside a header label: a title, not a finding."""
        i = bisect_right(self._header_starts, start) - 1
        return i >= 0 and end <= self.headers[i][1]


def _holding(passages: List[Passage], starts: List[int], char: int) -> Optional[Passage]:
    i = bisect_right(starts, char) - 1
    if i >= 0 and char < passages[i].end:
        return passages[i]
    return None


def passages_of(
    doc: Doc, text: str, chunks: Sequence[Span], budget: int = DEFAULT_BLOCK_TOKENS,
    counter: Optional[Counter] = None, nlp: Any = None,
) -> Passages:
    """The :class:`Passages` of ``doc`` (``text``: its text, read once): the one place a record's
    sentence, block and header flag are worked out. ``chunks`` are where an over-long sentence
    may be cut; ``nlp`` (the pipeline) lends its assertion component's section table."""
    count = _tokens(counter or wordpiece_estimate(_language_of(doc)))
    headers = header_ranges(doc, text, nlp)
    sentences = [Passage(*r) for r in _sentence_ranges(doc, text)]
    cuts = sorted({s.start_char for s in chunks})
    blocks: List[Passage] = []
    for start, end, section in _regions(doc, text):
        title = _title(text, start, headers) if section is not None else None
        units = [r for r in (trim(text, max(s.start, start), min(s.end, end)) for s in sentences if s.end > start and s.start < end) if r[0] < r[1]]
        pieces = [p for unit in (units or [trim(text, start, end)]) for p in _cut(text, unit, cuts, budget, count)]
        blocks.extend(Passage(a, b, title, section) for a, b in _pack(pieces, budget))
    return Passages(sentences, blocks, headers)


def _assessed_language(doc: Doc) -> Optional[str]:
    """The language the assertion component assessed the doc in (``Doc._.clin_language``)."""
    return doc._.get(attrs.ext("language")) if Doc.has_extension(attrs.ext("language")) else None


def _language_of(doc: Doc) -> str:
    """The assessed language, else the pipeline's: what the default block budget's estimate goes by."""
    return _assessed_language(doc) or doc.lang_


def _tokens(counter: Counter) -> Callable[[str], int]:
    def count(piece: str) -> int:
        words = piece.split()
        return sum(counter(words)) if words else 0

    return count


def trim(text: str, start: int, end: int, edge: str = _EDGE) -> Range:
    """``[start, end)`` without the characters of ``edge`` at its ends (default: whitespace and
    the separators a flattened export leaves)."""
    while start < end and text[start] in edge:
        start += 1
    while end > start and text[end - 1] in edge:
        end -= 1
    return start, end


def _sentence_ranges(doc: Doc, text: str) -> List[Range]:
    if not doc.has_annotation("SENT_START"):
        return []
    ranges = (trim(text, s.start_char, s.end_char) for s in doc.sents)
    return [r for r in ranges if r[0] < r[1]]


def _regions(doc: Doc, text: str) -> List[Tuple[int, int, Optional[str]]]:
    """(start, end, category) of the sections of ``clin_sections`` and of the text between them
    (category ``None``), in order, covering the whole text; a section that is only its header
    takes the untitled text after it."""
    sections = sorted(doc.spans[attrs.SECTIONS_KEY], key=lambda s: s.start_char) if attrs.SECTIONS_KEY in doc.spans else []
    regions: List[Tuple[int, int, Optional[str]]] = []
    cursor = 0
    for span in sections:
        if span.start_char < cursor:
            continue  # an overlapping section: the first one keeps its text
        if span.start_char > cursor:
            regions.append((cursor, span.start_char, None))
        regions.append((span.start_char, span.end_char, span.label_ or ""))
        cursor = span.end_char
    if cursor < len(text):
        regions.append((cursor, len(text), None))
    merged: List[Tuple[int, int, Optional[str]]] = []
    for start, end, category in regions:
        a, b = trim(text, start, end)
        if a >= b:
            continue
        if category is None and merged and merged[-1][2] is not None and _only_a_header(text, *merged[-1][:2]):
            merged[-1] = (merged[-1][0], end, merged[-1][2])  # "PHYSICAL EXAMINATION:" heads the lines below it
            continue
        merged.append((start, end, category))
    return merged


def _only_a_header(text: str, start: int, end: int) -> bool:
    """A section that holds its header and nothing else (its field labels opened sections of their own)."""
    a, b = trim(text, start, end)
    return text[a:b].endswith(":") and "\n" not in text[a:b]


def _title(text: str, start: int, headers: List[Range]) -> Optional[str]:
    """The header label the section starting at ``start`` opens with."""
    a, _ = trim(text, start, len(text))
    for head, end in headers:
        if head == a:
            return text[head:end]
        if head > a:
            break
    return None


def _cut(text: str, unit: Range, cuts: List[int], budget: int, count: Callable[[str], int]) -> List[Tuple[int, int, int]]:
    """(start, end, tokens) of ``unit`` as one piece, or cut at the chunk starts inside it when it
    is over ``budget``."""
    start, end = unit
    tokens = count(text[start:end])
    if tokens <= budget:
        return [(start, end, tokens)]
    inside = cuts[bisect_right(cuts, start):bisect_right(cuts, end - 1)]
    bounds = [start, *inside, end]
    pieces = (trim(text, a, b) for a, b in zip(bounds, bounds[1:]))
    return [(a, b, count(text[a:b])) for a, b in pieces if a < b]


def _pack(pieces: List[Tuple[int, int, int]], budget: int) -> List[Range]:
    """Consecutive pieces joined into blocks of at most ``budget`` tokens (a piece over it alone)."""
    blocks: List[Range] = []
    current: Optional[List[int]] = None
    for start, end, tokens in pieces:
        if current is not None and current[2] + tokens <= budget:
            current[1], current[2] = end, current[2] + tokens
            continue
        if current is not None:
            blocks.append((current[0], current[1]))
        current = [start, end, tokens]
    if current is not None:
        blocks.append((current[0], current[1]))
    return blocks


def header_ranges(doc: Doc, text: str, nlp: Any = None) -> List[Range]:
    """Character ranges of the header labels of ``doc``, sorted: the scanner's headers that open
    a section or a form field, with the section table of ``nlp``'s assertion component; else the
    labels of ``clin_sections`` (each span's text up to its colon or line break); and title
    lines in capitals alone on their line, which open no section the table knows."""
    titles = [m.span(1) for m in _TITLE_LINE.finditer(text)]
    table = _section_table(doc, nlp)
    if table is not None:
        hits = scan_headers(text, table, lambda word: doc.vocab[word].is_stop)
        return sorted({*((h.start, h.label_end) for h in hits if h.opens), *titles})
    ranges = []
    for span in doc.spans[attrs.SECTIONS_KEY] if attrs.SECTIONS_KEY in doc.spans else ():
        label = _LABEL_END.search(text, span.start_char, span.end_char)
        if label is not None:
            ranges.append(trim(text, span.start_char, label.start()))
    return sorted({*(r for r in ranges if r[0] < r[1]), *titles})


def _section_table(doc: Doc, nlp: Any) -> Any:
    """The section table the doc's headers are read with: that of the first pipe of ``nlp`` that
    assesses with one (``engine_for``: a pipeline's own section data), else the shipped table
    of the language the doc was assessed in (``Doc._.clin_language``, else its ``lang_``), so a
    doc read back from a DocBin flags the same headers; ``None`` for a language without one."""
    lang = _assessed_language(doc)
    for _, pipe in getattr(nlp, "pipeline", ()):
        engine_for = getattr(pipe, "engine_for", None)
        if callable(engine_for):
            return engine_for(lang or pipe.lang).sections
    return _shipped_table(str(lang or doc.lang_))


@lru_cache(maxsize=None)
def _shipped_table(lang: str) -> Optional[SectionTable]:
    try:
        return SectionTable(section_data(lang))
    except (OSError, ValueError, KeyError):  # no shipped section data for this language
        return None


def passage_id(doc_id: str, kind: str, passage: Passage) -> str:
    """Stable id of a sentence or block: ``<doc id>:<kind>:<start>-<end>`` (never a chunk's id)."""
    return f"{doc_id}:{kind}:{passage.start}-{passage.end}"


def passage_fields(doc_id: str, text: str, kind: str, passage: Optional[Passage]) -> Dict[str, Any]:
    """``<kind>_id``, ``_start``, ``_end``, ``_text`` of a record's sentence or block (all ``None``
    when there is none: a pipeline that sets no sentences)."""
    if passage is None:
        return {f"{kind}_{part}": None for part in ("id", "start", "end", "text")}
    return {
        f"{kind}_id": passage_id(doc_id, kind, passage),
        f"{kind}_start": passage.start,
        f"{kind}_end": passage.end,
        f"{kind}_text": text[passage.start:passage.end],
    }
