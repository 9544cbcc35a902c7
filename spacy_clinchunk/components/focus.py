"""clin_focus: the finding of each clause chunk, without its clinical framing.

A clause chunk such as "she was noted to have aplastic or hypoplastic nails" embeds
worse than the finding itself: the framing ("she was noted to have", "examination
revealed", "patients with ... have") pulls every chunk towards the same place. This
component writes a second, linked granularity to the ``clin_focus`` group:

* framing phrases (``focus_cut_phrases``) are cut out wherever they occur in a chunk,
  and the pieces are trimmed of leading/trailing framing (``focus_lead_phrases``,
  ``focus_trail_phrases``, the cleaner's edge words and, by default, negation cues);
* a piece with no content word, or shorter than ``min_focus_chars``, gives no focus;
* a coordinated piece ("cleft lip and palate", "aplastic or hypoplastic nails") stays
  whole; its contiguous conjuncts ("hypoplastic nails") may be added as extra focus
  spans (``distributive``), never rewritten text;
* a piece with a prepositional tail ("hypotonia at birth") or a bracket also gets its
  head as an extra focus span (``head_extras``, breaks in ``focus_head_breaks``);
* a long piece (at least ``segment_min_words`` words) is cut into segments at the head
  breaks and at the words that start a new clause part (``focus_segment_breaks``: relative
  and subordinating words, modal verbs, verbs of course and of reporting); the segments
  replace it ("two meningiomas" and "follow up MRI scan" of "two meningiomas on a follow
  up MRI scan"), each trimmed and given its own head and conjunct extras;
* a leading count is trimmed like framing ("two", "41", "(75%)": ``trim_counts``), and so
  are nouns that frame a finding by its measure ("the incidence of", "a form of", in
  ``focus_lead_phrases``).

Each focus span has ``Span._.clin_focus_of`` (index of its chunk in ``clin_chunks``); each
chunk has ``Span._.clin_focus_ids`` (indices into ``clin_focus``, possibly empty). Focus spans
keep the chunk's assertion: it is decided on the full clause, so run this component after
``clin_context_assertion``; the chunk's assertion attributes are copied as they are.

With ``pieces_key`` (null: off) the focus spans are cut from that group instead: the loose
pieces ``clin_size_ceiling`` writes under its own ``pieces_key``, whole clauses of punctuated
text that the tight ceiling cut for assertion. Each focus span is then linked to the chunk it
overlaps most (in tokens; ties: the first) and carries that chunk's assertion, so a focus span
may reach past its chunk. The pieces are scaffolding: the group is removed once cut from. A doc
without the group gets focus spans cut from the chunks, as with null.
"""

import re
from bisect import bisect_right
from typing import Dict, List, Optional, Sequence, Tuple

from spacy.language import Language
from spacy.tokens import Doc, Span

from .. import attrs
from .base import ChunkRefiner, factory_settings, refiner_factory
from .coordination import CoordinationRules
from .phrases import PhrasePattern, phrase_regex, reversed_phrase_regex  # noqa: F401  (phrase_regex: also for clin_concept_focus)
from ..resources_io import Override
from .settings import NonNegativeInt, PositiveInt, SettingError
from ..spans import Range, TokenIndex, doc_text

FACTORY = "clin_focus"
FOCUS_LABEL = "focus"
ASSERTION_FIELDS = ("assertion", "assertion_cues", "assertion_statuses")  # the flags derive from these
RESOURCE_NAMES = (
    "focus_cut_phrases",
    "focus_lead_phrases",
    "focus_trail_phrases",
    "leading_cleanup_words",
    "trailing_cleanup_words",
    "low_value_words",
    "negation_words",
    "coordinating_conjunctions",
    "modifier_suffixes",
    "focus_head_breaks",
    "focus_segment_breaks",
)
_WORD = re.compile(r"[^\W_][\w'’./-]*|[^\s]")
_EDGE = " \t\r\n,;:.!?-–—/\\*•·\"'`“”‘’"
_COUNT = re.compile(r"(?:\d+(?:[.,/]\d+)*%?|\(\d+(?:[.,]\d+)?%?\))(?=\s)")  # "41", "21/28", "(75%)"
_WORD_CHAR = re.compile(r"[\w-]")
_TRAIL_WINDOW = 160  # characters searched for trailing framing (keeps trimming linear)


@refiner_factory(
    FACTORY,
    scored=False,  # focus spans overlap (a piece beside its head and conjuncts): no chunking to score
    assigns=("doc.spans", "span._.clin_focus_of", "span._.clin_focus_ids"),
    focus_key=attrs.FOCUS_KEY,
    min_focus_chars=2,
    trim_negation=True,
    distributive=True,
    max_conjuncts=8,
    min_conjunct_words=1,
    head_extras=True,
    segment_min_words=5,
    trim_counts=True,
    pieces_key=None,
)
def make_focus(
    nlp: Language,
    name: str,
    focus_key: str,
    min_focus_chars: PositiveInt,
    trim_negation: bool,
    distributive: bool,
    max_conjuncts: NonNegativeInt,
    min_conjunct_words: PositiveInt,
    head_extras: bool,
    segment_min_words: NonNegativeInt,
    trim_counts: bool,
    pieces_key: Optional[str],
    spans_key: str, language: Optional[str], overrides: Dict[str, Override],  # every refiner's
) -> "ClinFocus":
    settings = factory_settings(locals())
    if spans_key == focus_key:
        raise SettingError(f"{name}: spans_key and focus_key must differ (both '{spans_key}')")
    if pieces_key in (spans_key, focus_key):
        raise SettingError(f"{name}: pieces_key ('{pieces_key}') must differ from spans_key and focus_key")
    return ClinFocus(nlp, name, **settings)


class ClinFocus(ChunkRefiner):
    """Write the framing-free focus of every chunk to a linked span group.

    Reuses the refiners' resource handling and data round-trip; unlike them it leaves the
    chunk group as it is and writes a second group.
    """

    resource_names = RESOURCE_NAMES
    compiled = ("cue_free_re", "cut_re", "lead_re", "trail_re", "trail_rev_re", "conj_re", "head_re", "segment_re", "modifier", "filler")

    def __init__(
        self,
        nlp: Language,
        name: str,
        *,
        focus_key: str,
        min_focus_chars: int,
        trim_negation: bool,
        distributive: bool,
        max_conjuncts: int,
        min_conjunct_words: int,
        head_extras: bool,
        segment_min_words: int,
        trim_counts: bool,
        pieces_key: Optional[str],
        **kwargs,
    ) -> None:
        self.focus_key = focus_key
        self.min_focus_chars = min_focus_chars
        self.trim_negation = trim_negation
        self.distributive = distributive
        self.max_conjuncts = max_conjuncts
        self.min_conjunct_words = min_conjunct_words
        self.head_extras = head_extras
        self.segment_min_words = segment_min_words
        self.trim_counts = trim_counts
        self.pieces_key = pieces_key
        # no scorer: focus spans overlap (extras beside their piece); they are not a chunking
        super().__init__(nlp, name, scorer=None, **kwargs)

    # -- rules --------------------------------------------------------------
    def setup(self) -> None:
        r = self.resources
        negations = {w.lower() for w in r["negation_words"]}
        lead = list(r["focus_lead_phrases"]) + list(r["leading_cleanup_words"])
        trail = list(r["focus_trail_phrases"]) + list(r["trailing_cleanup_words"])
        self.cue_free_re = phrase_regex(lead + sorted(negations))  # also past negation cues
        if self.trim_negation:
            lead += sorted(negations)
        else:
            lead = [w for w in lead if w.lower() not in negations]
        self.cut_re = phrase_regex(r["focus_cut_phrases"])
        self.lead_re = phrase_regex(lead)
        self.trail_re = phrase_regex(trail, anchor=r"\Z")
        self.trail_rev_re = reversed_phrase_regex(trail)
        self.conj_re = phrase_regex(r["coordinating_conjunctions"])
        self.head_re = phrase_regex(r["focus_head_breaks"])
        self.segment_re = phrase_regex(list(r["focus_head_breaks"]) + list(r["focus_segment_breaks"]))
        self.modifier = CoordinationRules((), r["modifier_suffixes"], ()).is_modifier
        filler = {w.lower() for w in (*r["low_value_words"], *r["leading_cleanup_words"], *r["trailing_cleanup_words"])}
        single_lead = {p.lower() for p in r["focus_lead_phrases"] if " " not in p.strip()}
        self.filler = filler | single_lead | negations

    def focus_ranges(self, text: str, start: int, end: int) -> List[Range]:
        """Focus ranges of one chunk: the whole pieces first, then their conjuncts."""
        pieces: List[Range] = []
        cursor = start
        if self.cut_re is not None:
            for match in self.cut_re.finditer(text, start, end):
                pieces.append((cursor, match.start()))
                cursor = match.end()
        pieces.append((cursor, end))
        result: List[Range] = []
        for s, e in pieces:
            trimmed = self._trim(text, s, e)
            if trimmed is None:
                continue
            segments = self._segments(text, *trimmed)
            if len(segments) != 1 or segments[0] == trimmed:
                segments = segments or [trimmed]
            else:  # one segment left ("incidence of medulloblastoma in them"): beside the piece
                segments = [trimmed, segments[0]]
            for segment in segments:
                self._add_piece(text, segment, result)
        return list(dict.fromkeys(result))

    def _segments(self, text: str, start: int, end: int) -> List[Range]:
        """Trimmed segments of a long piece between its breaks; [] for a short one."""
        if self.segment_min_words == 0 or self.segment_re is None or _words(text, start, end) < self.segment_min_words:
            return []
        out: List[Range] = []
        cursor = start
        for match in self.segment_re.finditer(text, start, end):
            part = self._trim(text, cursor, match.start())
            if part is not None:
                out.append(part)
            cursor = match.end()
        part = self._trim(text, cursor, end)
        if part is not None:
            out.append(part)
        return out

    def _add_piece(self, text: str, trimmed: Range, result: List[Range]) -> None:
        """A focus piece and its extras (cue-free finding, head, conjuncts)."""
        result.append(trimmed)
        if not self.trim_negation:  # "absence of speech" stays; "no ocular abnormalities" adds its finding
            bare = self._bare(text, *trimmed)
            if bare is not None and bare != trimmed:
                result.append(bare)
        if self.head_extras:
            head = self._head(text, *trimmed)
            if head is not None:
                result.append(head)
        if self.distributive:
            result.extend(r for r in self._conjuncts(text, *trimmed) if r != trimmed)

    def _bare(self, text: str, start: int, end: int) -> Optional[Range]:
        """The trimmed piece without its negation cue too. A trimmed piece has no framing left at
        either edge, so unless a negation cue opens it, trimming again gives the piece itself:
        one anchored match saves a whole second trim of most pieces."""
        match = self.cue_free_re.match(text, start, end) if self.cue_free_re is not None else None
        if match is None or match.end() <= start:
            return start, end
        return self._trim(text, start, end, lead_re=self.cue_free_re)

    def _trim(self, text: str, start: int, end: int, lead_re: Optional[PhrasePattern] = None) -> Optional[Range]:
        """Move the edges inward past framing; None when nothing of substance is left."""
        lead_re = lead_re or self.lead_re
        while True:
            start, end = _strip_edges(text, start, end)
            if start >= end:
                return None
            if lead_re is not None:
                match = lead_re.match(text, start, end)
                if match and match.end() > start:
                    start = match.end()
                    continue
            if self.trim_counts:
                match = _COUNT.match(text, start, end)
                if match and match.end() < end:
                    start = match.end()
                    continue
            if self.trail_re is not None:
                cut = self._trail_start(text, start, end)
                if cut is not None and cut < end:
                    end = cut
                    continue
            break
        if end - start < self.min_focus_chars or not self._has_content(text, start, end):
            return None
        return start, end

    def _trail_start(self, text: str, start: int, end: int) -> Optional[int]:
        """Start of the trailing framing phrase of ``text[start:end]`` (None: none).

        One anchored match on the reversed tail instead of a search over the window; the
        search stays as the fallback when the reversed match cannot check the word boundary.
        """
        low = max(start, end - _TRAIL_WINDOW)
        match = self.trail_rev_re.match(text[low:end][::-1])
        if match is None:
            return None
        begin = end - match.end()
        if begin == low and low > 0 and _WORD_CHAR.match(text, low - 1):
            found = self.trail_re.search(text, low, end)
            return found.start() if found else None
        return begin

    def _has_content(self, text: str, start: int, end: int) -> bool:
        for match in _WORD.finditer(text, start, end):
            word = match.group().strip(_EDGE).lower()
            if word and any(c.isalpha() for c in word) and word not in self.filler:
                return True
        return False

    def _conjuncts(self, text: str, start: int, end: int) -> List[Range]:
        """Contiguous conjuncts of a coordinated piece, at ``and``/``or`` and commas."""
        if self.conj_re is None or self.max_conjuncts == 0:
            return []
        cuts: List[Tuple[int, int]] = [(m.start(), m.end()) for m in self.conj_re.finditer(text, start, end)]
        cuts += [(m.start(), m.end()) for m in _COMMA.finditer(text, start, end)]
        if not cuts or len(cuts) > self.max_conjuncts:
            return []
        cuts.sort()
        out: List[Range] = []
        cursor = start
        for a, b in cuts + [(end, end)]:
            trimmed = self._trim(text, cursor, a)
            if trimmed is not None and _words(text, *trimmed) >= self.min_conjunct_words and not self._dangling(text, *trimmed):
                out.append(trimmed)
            cursor = max(cursor, b)
        return out

    def _head(self, text: str, start: int, end: int) -> Optional[Range]:
        """The finding before its first prepositional tail or bracket ("hypotonia" of "hypotonia with
        poor feeding", "Townes-Brocks syndrome" of "Townes-Brocks syndrome (TBS)")."""
        match = self.head_re.search(text, start, end) if self.head_re is not None else None
        cut = match.start() if match is not None else end
        bracket = text.find("(", start, cut)  # "Townes-Brocks syndrome (TBS)"
        cut = bracket if bracket > start else cut
        if cut <= start or cut >= end:
            return None
        head = self._trim(text, start, cut)
        return head if head is not None and head != (start, end) and not self._dangling(text, *head) else None

    def _dangling(self, text: str, start: int, end: int) -> bool:
        """A conjunct ending in a modifier ("synostosis of some carpal") lacks its shared head."""
        words = text[start:end].split()
        return bool(words) and self.modifier(words[-1])

    # -- spaCy API ----------------------------------------------------------
    def annotate(self, doc: Doc) -> None:
        text = doc_text(doc)
        chunks = list(doc.spans.get(self.spans_key, []))
        loose = self.pieces_key is not None and self.pieces_key in doc.spans
        sources = list(doc.spans[self.pieces_key]) if loose else chunks
        if loose:
            del doc.spans[self.pieces_key]  # scaffolding of the ceiling, not an output
        index = TokenIndex(doc, text)
        chunk_starts, chunk_ends = [chunk.start for chunk in chunks], [chunk.end for chunk in chunks]
        owners: List[Tuple[int, int, int]] = []  # (start token, end token, chunk number)
        for number, source in enumerate(sources):
            first, last = source.start, source.end
            for s, e in self.focus_ranges(text, source.start_char, source.end_char):
                bounds = index.bounds(s, e)
                if bounds is None or not (first <= bounds[0] and bounds[1] <= last):
                    continue
                owner = _most_overlapped(chunk_starts, chunk_ends, *bounds) if loose else number
                if owner is not None:
                    owners.append((*bounds, owner))
        write_linked_focus(doc, self.focus_key, self.spans_key, chunks, sorted(set(owners)))


def write_linked_focus(doc: Doc, focus_key: str, spans_key: str, chunks: Sequence[Span],
                       owners: Sequence[Tuple[int, int, int]]) -> None:
    """Write ``(start token, end token, chunk number)`` as the focus group, sorted, linked both
    ways to ``chunks`` (``clin_focus_of`` / ``clin_focus_ids``), each span carrying its chunk's
    assertion attributes (under the names the chunk group declares)."""
    focus = [Span(doc, s, e, label=FOCUS_LABEL) for s, e, _ in owners]
    doc.spans[focus_key] = focus
    names = attrs.field_names(doc.spans.get(spans_key))
    carried = {field: names[field] for field in ASSERTION_FIELDS}
    if carried != {field: attrs.ext(field) for field in ASSERTION_FIELDS}:  # assertion under another prefix
        attrs.declare_field_names(doc.spans[focus_key], carried)
    links: Dict[int, List[int]] = {number: [] for number in range(len(chunks))}
    statuses: Dict[int, Dict[str, object]] = {}
    focus_of = attrs.ext("focus_of")
    for position, (span, (_, _, number)) in enumerate(zip(focus, owners)):
        links[number].append(position)
        if number not in statuses:
            statuses[number] = _assertion_of(chunks[number], carried)
        values = {name: list(value) if isinstance(value, list) else value for name, value in statuses[number].items()}
        values[focus_of] = number
        attrs.write_span_values(span, values)
    focus_ids = attrs.ext("focus_ids")
    for number, chunk in enumerate(chunks):
        attrs.write_span_values(chunk, {focus_ids: links[number]})


def _most_overlapped(starts: Sequence[int], ends: Sequence[int], start: int, end: int) -> Optional[int]:
    """The number of the chunk (token ``starts`` and ``ends``) sharing the most tokens with
    ``[start, end)`` (ties: the first; None: no chunk overlaps). The chunks are sorted and
    disjoint: a bisection finds the first that ends after ``start``, and the scan stops at the
    first that starts at ``end``."""
    best, best_shared = None, 0
    number = bisect_right(ends, start)
    while number < len(starts) and starts[number] < end:
        shared = min(end, ends[number]) - max(start, starts[number])
        if shared > best_shared:
            best, best_shared = number, shared
        number += 1
    return best


def _assertion_of(chunk: Span, names: Dict[str, str]) -> Dict[str, object]:
    """The chunk's assertion attributes that are set, by attribute name (none when no assertion ran)."""
    if not Span.has_extension(names["assertion"]):
        return {}
    values = attrs.read_span_values(chunk, [(name, name, None) for name in names.values() if Span.has_extension(name)])
    return values if names["assertion"] in values else {}


_COMMA = re.compile(r"[,;](?=\s)")


def _strip_edges(text: str, start: int, end: int) -> Range:
    """Drop whitespace and dangling punctuation at both edges (brackets only when unbalanced)."""
    while True:
        before = (start, end)
        while start < end and (text[start] in _EDGE or text[start] in ")]}"):
            start += 1
        while end > start and (text[end - 1] in _EDGE or text[end - 1] in "([{"):
            end -= 1
        if start < end and text[start] in "([{" and text.find(_CLOSE[text[start]], start, end) < 0:
            start += 1
        if start < end and text[end - 1] in ")]}" and text.rfind(_OPEN[text[end - 1]], start, end) < 0:
            end -= 1
        if (start, end) == before:
            return start, end


_CLOSE = {"(": ")", "[": "]", "{": "}"}
_OPEN = {v: k for k, v in _CLOSE.items()}


def _words(text: str, start: int, end: int) -> int:
    return len(text[start:end].split())
