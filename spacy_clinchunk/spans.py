"""Character-range helpers shared by the chunking components.

Components compute chunk boundaries as character ranges on ``doc.text`` and turn
them into token-aligned :class:`Span` objects here. Whitespace never starts or ends
a chunk, and paragraph breaks and list/header line breaks are hard boundaries.
"""
from __future__ import annotations

import re
import weakref
from bisect import bisect_left, bisect_right
from typing import Iterable, Iterator, List, Optional, Sequence, Tuple

from spacy.attrs import IDX, LENGTH
from spacy.tokens import Doc, Span

Range = Tuple[int, int]

_LINE_BREAK = re.compile(r"\n\s*")
# A line break that an export flattened into a comma (MTSamples and many EHR exports: "...stable.,PAST
# MEDICAL HISTORY:, He has", "Service: Neurology,,CHIEF COMPLAINT:,Recurrent"): commas glued to the next
# word, after a sentence or label end, doubled, or before a capital or a list marker.
_FLATTENED_BREAK = re.compile(
    r"(?<=[.:;!?]),+(?=[^\s,])|,{2,}(?=[^\s,])|(?<=[^\s\d,]),(?=[A-Z\u2022*-]|\d{1,2}[.)][ \t])"
)
# An item number inside a line ("Diagnosen: 1. Kein Anhalt für Malignität 2. Chronische Gastritis 3. Hiatushernie"):
# a number and its period or bracket after a space, before a capitalised word; taken as an item only where the
# number before or after it in the sequence stands on the same line (see inline_item_breaks), so an ordinal
# ("am 3. Tag", "Verbrennung 2. Grades") stays inside its sentence.
_INLINE_ITEM = re.compile(r"(?<![^\s:;,])([1-9]\d?)[.)](?=[ \t]+[A-Z\u00c0-\u00de])")
# words before an ordinal, not an item number ("am 3. Tag", "des 2. Strahls", "on 2. March")
_ORDINAL_LEADS = frozenset({
    "am", "vom", "im", "zum", "zur", "bis", "ab", "seit", "nach", "um", "des", "der", "dem", "den", "die", "das",
    "the", "on", "of", "el", "la", "le", "du", "de", "het",
})
# (a letter and its period before another, "o. B.", "z. B.", is an abbreviation, not an item marker)
_LIST_MARKER = re.compile(
    r"[^\S\n]*(?:[-*\u2022\u25aa\u25cf\u2013\u00b7>]|\(?\d{1,3}[.)]|\(?[a-zA-Z][.)](?![ \t][^\W\d_]\.)|\(?[ivxIVX]{1,4}[.)])(?=\s)"
)
_SENTENCE_END = re.compile(r"[.!?;:][\"')\]]*[^\S\n]*$")
_DOTTED_ABBREVIATION = re.compile(r"^(?:[^\W\d_]{1,2}\.){2,}$")  # b.i.d. A.B. z.B. p.o.
_INITIAL = re.compile(r"^[^\W\d_]\.$")
_LABEL_LINE = re.compile(r"[^\S\n]*[^\W\d_][^\W_]*(?:[^\S\n][^\W\d_][^\W_]*){0,3}:[^\S\n]+\S")
# A line of a dated timeline ("04/2023 tumorfreier Sentinellymphknoten", "15.04.2029: Debridement", "2048
# TIPS-Revision", "04/2020 - 08/2020 6 Zyklen"): a date, then a colon, a range dash or a capitalised word. A
# date that goes on with a comma, a period or a lower-case word ("den\n05.08.2022 vorgesehen") wraps a sentence.
# A bare year's range dash needs a space after it ("2019 - 2021"), a full date's does not ("04/2020 -08/2020").
_DATED_LINE = re.compile(
    r"[^\S\n]*(?:(?P<full_date>(?:\d{1,2}[./]){1,2}(?:\d{4}|\d{2}))|(?:19|20)\d\d)(?![\d./])"
    r"(?:[^\S\n]*:|[^\S\n]+[-\u2013](?(full_date)|[^\S\n])|[^\S\n]+[A-Z\u00c0-\u00de])"
)
# a lower-case word ending the line before a date keeps the sentence going ("seit\n2019 Beschwerden")
_ENDS_LOWER_WORD = re.compile(r"(?:^|[^\w-])[a-zß\u00e0-\u00ff][\w-]*$")
_EDGE_PUNCT = "\"'`.,;:!?()[]{}<>«»“”‘’„-–—*•·/\\"


def normalize_word(word: str) -> str:
    """A word as the word lists spell it: edge punctuation stripped, lower case."""
    return word.strip(_EDGE_PUNCT).lower()


_TEXT_CACHE: "weakref.WeakKeyDictionary[Doc, str]" = weakref.WeakKeyDictionary()


def doc_text(doc: Doc) -> str:
    """``doc.text``, computed once per doc (spaCy rebuilds it from tokens on every access)."""
    try:
        return _TEXT_CACHE[doc]
    except KeyError:
        text = _TEXT_CACHE[doc] = doc.text
        return text
    except TypeError:  # not weak-referenceable in some spaCy build
        return doc.text


class Abbreviations:
    """Decides whether a word ending in '.' keeps its period (Dr., b.i.d., J.), and whether it is one
    that never ends a sentence (``prenominal``: written before the word it modifies, "path.", "Z.n.")."""

    def __init__(self, words: Iterable[str], prenominal: Iterable[str] = ()) -> None:
        self.words = {w.lower() for w in words}
        self.prenominal = {w.lower() for w in prenominal}

    def never_ends_a_sentence(self, word: str) -> bool:
        return word.lower() in self.prenominal

    def listed(self, word: str) -> bool:
        """``word`` is in one of the word lists (no pattern guesses: "v.a.", not any "x.y.")."""
        lower = word.lower()
        return lower in self.words or lower in self.prenominal

    def __call__(self, word: str) -> bool:
        return bool(
            word.lower() in self.words
            or _DOTTED_ABBREVIATION.match(word)
            or (_INITIAL.match(word) and word[0].isupper())
        )


class TokenIndex:
    """Sorted token start/end offsets of a doc, for fast char -> token lookups."""

    __slots__ = ("doc", "text", "starts", "ends")

    def __init__(self, doc: Doc, text: Optional[str] = None) -> None:
        self.doc = doc
        self.text = doc_text(doc) if text is None else text
        if len(doc):
            table = doc.to_array([IDX, LENGTH])
            self.starts = table[:, 0].tolist()
            self.ends = (table[:, 0] + table[:, 1]).tolist()
        else:
            self.starts, self.ends = [], []

    def span(self, start_char: int, end_char: int, label: str = "") -> Optional[Span]:
        """Token-aligned span covering ``[start_char, end_char)`` minus edge whitespace."""
        bounds = self.bounds(start_char, end_char)
        return None if bounds is None else Span(self.doc, bounds[0], bounds[1], label=label)

    def bounds(self, start_char: int, end_char: int) -> Optional[Tuple[int, int]]:
        """``(start, end)`` tokens of :meth:`span`, without building the span (None: no token)."""
        start_char, end_char = strip_range(self.text, start_char, end_char)
        if start_char >= end_char:
            return None
        first = bisect_right(self.starts, start_char) - 1
        last = bisect_left(self.ends, end_char)
        if first < 0 or last >= len(self.ends):
            return None
        return first, last + 1


def strip_range(text: str, start: int, end: int) -> Range:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


# A line this short (stripped) followed by a line opening with a capital or a digit is a list item.
ITEM_LINE_MAX_CHARS = 60


def is_hard_break(text: str, match_start: int, match_end: int) -> bool:
    """Whether the line break(s) at ``text[match_start:match_end]`` end a unit.

    Blank lines always do. A single line break does when the line before it is a
    header (ends with ':' or is mostly upper case) or a list item, or when the next
    line starts a list item; a line wrapped inside a sentence does not.
    """
    if text.count("\n", match_start, match_end) >= 2:
        return True
    line_start = text.rfind("\n", 0, match_start) + 1
    prev_line = text[line_start:match_start]
    if not prev_line.strip():
        return True
    if _LIST_MARKER.match(text, match_end) or _LIST_MARKER.match(prev_line):
        return True
    stripped = prev_line.strip()
    if stripped.endswith(":"):
        return True
    letters = [c for c in stripped if c.isalpha()]
    if letters and len(stripped) <= 80 and sum(c.isupper() for c in letters) >= 0.8 * len(letters):
        return True
    if _SENTENCE_END.search(prev_line):
        return True
    if _LABEL_LINE.match(text, match_end):
        return True  # the next line is a form's field ("Diagnose: ...")
    if _opens_dated_line(text, match_end, stripped):
        return True
    if _continues_its_list(stripped):
        return False  # "Negativ sind h-Caldesmon, EMA," / "Hormonrezeptoren.": the list wraps, also
        # on a line a label opens ("Phänotyp: ... Negativ sind h-Caldesmon, EMA,")
    if _LABEL_LINE.match(prev_line):
        return True  # "Admission date: 03/14/2024" lines of a form
    # one item per line: a short line before a line that opens with a capital or a digit
    # ("Arterielle Hypertonie" / "V.a. KHK"); prose wraps at its full width, not short of it
    following = text[match_end:match_end + 1]
    return len(stripped) <= ITEM_LINE_MAX_CHARS and (following.isupper() or following.isdigit())


def _opens_dated_line(text: str, at: int, prev_line: str) -> bool:
    """The next line is a timeline's entry ("04/2023 tumorfreier Sentinellymphknoten") after a line
    that does not stop on a lower-case word: a letter's history lists one event a line, and a line
    that runs longer than a list item's must not carry the previous event's "tumorfrei" into it."""
    return _DATED_LINE.match(text, at) is not None and not _ENDS_LOWER_WORD.search(prev_line)


_LIST_JOINER_END = re.compile(r"(?:^|[\s,])(?:and|or|nor|und|oder|sowie|bzw\.?|y|o|ni|et|ou|en|of|noch)$", re.IGNORECASE)


def _continues_its_list(line: str) -> bool:
    """A line that stops inside a list: after a joiner ("Fieber, Husten und"), or after a comma
    once the line has listed an item already ("h-Caldesmon, EMA,"); a line that holds one item
    and its comma ("Ramipril 5 mg,") may be one item of a list of lines."""
    if _LIST_JOINER_END.search(line):
        return True
    return line.endswith(",") and ", " in line[:-1]


def hard_breaks(text: str, start: int = 0, end: Optional[int] = None) -> Iterator[Range]:
    """Hard boundaries (as char ranges of the whitespace, or the flattened commas, that form
    them) in a range, in text order: line breaks that end a unit, commas an export made of line
    breaks, and the spaces before item numbers in sequence inside a line."""
    end = len(text) if end is None else end
    lines = ((m.start(), m.end()) for m in _LINE_BREAK.finditer(text, start, end) if is_hard_break(text, m.start(), m.end()))
    items = inline_item_breaks(text, start, end)
    if "," not in text[start:end] and not items:
        yield from lines
        return
    flattened = ((m.start(), m.end()) for m in _FLATTENED_BREAK.finditer(text, start, end))
    yield from sorted({*lines, *flattened, *items})


def inline_item_breaks(text: str, start: int = 0, end: Optional[int] = None) -> List[Range]:
    """The spaces before item numbers inside a line, as char ranges, in text order: numbers
    in sequence ("1. Kein Anhalt für Malignität 2. Chronische Gastritis 3. Hiatushernie"), each
    with a neighbour one less before it or one more after it in ``text[start:end]``. A number
    at the start of a line is a list marker already (:func:`hard_breaks`); a lone ordinal ("am 3.
    Tag") or one after an article or preposition ("des 2. Strahls") is no item."""
    end = len(text) if end is None else end
    found = []
    for m in _INLINE_ITEM.finditer(text, start, end):
        before = text.rfind(" ", start, m.start() - 1) + 1 if m.start() > start else start
        lead = text[max(before, start):m.start()].strip().lower()
        if lead in _ORDINAL_LEADS:
            continue
        head = text[m.end():min(end, m.end() + 40)].split(None, 1)
        found.append((int(m.group(1)), m.start(), head[0].lower() if head else ""))
    if len(found) < 2:
        return []
    breaks = []
    for k, (_, at, _) in enumerate(found):
        after_one = k > 0 and _next_item(text, found[k - 1], found[k])
        before_one = k + 1 < len(found) and _next_item(text, found[k], found[k + 1])
        if not (after_one or before_one):
            continue
        gap = at
        while gap > start and text[gap - 1] in " \t":
            gap -= 1
        if gap < at and gap > start and text[gap - 1] != "\n":  # inside a line, after a word
            breaks.append((gap, at))
    return breaks


def _next_item(text: str, first: Tuple[int, int, str], second: Tuple[int, int, str]) -> bool:
    """``second`` numbers the item after ``first``: one more, on the same line, and not an ordinal
    series of one noun ("1. Zyklus ..., 2. Zyklus")."""
    return second[0] == first[0] + 1 and "\n" not in text[first[1]:second[1]] and first[2] != second[2]


def has_breaks(text: str, start: int = 0, end: Optional[int] = None) -> bool:
    """Whether ``text[start:end]`` may hold a hard boundary (a line break, or a comma an export
    made of one): a cheap test before :func:`hard_breaks`."""
    segment = text[start:end]
    return "\n" in segment or "," in segment or _INLINE_ITEM.search(segment) is not None


def split_at_hard_breaks(text: str, start: int, end: int) -> List[Range]:
    if not has_breaks(text, start, end):
        return [strip_range(text, start, end)] if text[start:end].strip() else []
    pieces: List[Range] = []
    cursor = start
    for b_start, b_end in hard_breaks(text, start, end):
        pieces.append((cursor, b_start))
        cursor = b_end
    pieces.append((cursor, end))
    return [r for r in (strip_range(text, s, e) for s, e in pieces) if r[0] < r[1]]


def seed_ranges(doc: Doc, abbreviations: Optional[Abbreviations] = None, text: Optional[str] = None) -> List[Range]:
    """Initial chunks: sentences when boundaries are set, else paragraphs.

    Sentence boundaries that a rule-based sentencizer put after an abbreviation
    ("81 mg p.o. | daily") are undone when the next sentence starts in lower case, and after one
    that never ends a sentence whatever follows ("keine path. | Geräusche", "bei St.p. | SHT": German
    writes every noun with a capital).
    """
    text = doc_text(doc) if text is None else text
    if len(doc) and doc.has_annotation("SENT_START"):
        units = _rejoin_glued_marks(text, [(s.start_char, s.end_char) for s in doc.sents])
        if abbreviations is not None:
            units = _rejoin_abbreviation_breaks(text, units, abbreviations)
    else:
        units = [(0, len(text))]
    ranges: List[Range] = []
    for start, end in units:
        ranges.extend(split_at_hard_breaks(text, start, end))
    return ranges


def opens_its_word(text: str, mark: int) -> bool:
    """The question mark at ``mark`` opens the word glued after it rather than ending a sentence:
    a character an export could not encode ("GOT, ?-GT, CK") or a query ("?PE"), standing after a
    space, a comma or a bracket."""
    return (
        text[mark] == "?"
        and mark + 1 < len(text)
        and not text[mark + 1].isspace()
        and (mark == 0 or text[mark - 1].isspace() or text[mark - 1] in ",;(/")
    )


def _rejoin_glued_marks(text: str, units: List[Range]) -> List[Range]:
    """Undo a sentence break after a question mark that opens a word (:func:`opens_its_word`)."""
    if "?" not in text:
        return units
    merged: List[Range] = []
    for start, end in units:
        if merged and merged[-1][1] == start and start > 0 and opens_its_word(text, start - 1):
            merged[-1] = (merged[-1][0], end)
            continue
        merged.append((start, end))
    return merged


def _rejoin_abbreviation_breaks(text: str, units: List[Range], abbreviations: Abbreviations) -> List[Range]:
    merged: List[Range] = []
    for start, end in units:
        if merged:
            prev_start, prev_end = merged[-1]
            _, stripped_end = strip_range(text, prev_start, prev_end)
            word_start = stripped_end
            while word_start > prev_start and not text[word_start - 1].isspace():
                word_start -= 1
            word = text[word_start:stripped_end]
            following = text[prev_end:end].lstrip(" \t")
            if (
                word.endswith(".")
                and abbreviations(word)
                and following[:1]
                and (
                    following[0].islower()
                    or following[0].isdigit()
                    or abbreviations.never_ends_a_sentence(word)
                    or _opens_and_closes(text, prev_start, word_start, word, following, abbreviations)
                )
            ):
                merged[-1] = (prev_start, end)
                continue
        merged.append((start, end))
    return merged


def _opens_and_closes(
    text: str, unit_start: int, word_start: int, word: str, following: str, abbreviations: Abbreviations
) -> bool:
    """A listed abbreviation that is its unit's only word, capitalised, before a word on the same
    line: it opened a sentence, which it cannot close by itself ("Unauff. Brustwandableitungen",
    "Bds. Unterschenkelödeme": written before the noun it describes). Only listed ones: an initial
    ("J.") is not guessed."""
    return (
        word[:1].isupper()
        and following[0].isalpha()
        and not text[unit_start:word_start].strip()
        and abbreviations.listed(word)
    )


def current_ranges(
    doc: Doc, spans_key: str, abbreviations: Optional[Abbreviations] = None, text: Optional[str] = None
) -> List[Range]:
    """Ranges of the existing chunk group, or seeded ones when the group is absent."""
    text = doc_text(doc) if text is None else text
    if spans_key in doc.spans:
        ranges: List[Range] = []
        for span in doc.spans[spans_key]:
            ranges.extend(split_at_hard_breaks(text, span.start_char, span.end_char))
        return ranges
    return seed_ranges(doc, abbreviations, text)


def ranges_to_spans(doc: Doc, ranges: Iterable[Range], index: Optional[TokenIndex] = None) -> List[Span]:
    """Token-aligned, sorted, non-overlapping, non-empty spans for ``ranges``."""
    index = index or TokenIndex(doc)
    spans: List[Span] = []
    for start, end in sorted(ranges):
        span = index.span(start, end)
        if span is None:
            continue
        if spans and span.start < spans[-1].end:  # alignment pulled it onto the previous chunk
            previous = spans.pop()
            span = Span(doc, previous.start, max(previous.end, span.end))
        spans.append(span)
    return spans


def write_group(doc: Doc, spans_key: str, ranges: Sequence[Range], text: Optional[str] = None) -> None:
    doc.spans[spans_key] = ranges_to_spans(doc, ranges, TokenIndex(doc, text))
