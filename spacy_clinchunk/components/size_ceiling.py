"""clin_size_ceiling: no chunk longer than ``max_tokens``; an over-long piece is cut inside.

Tokens are counted by ``token_counter``: by default (``AutoTokenCounter.v1``) the wordpieces of
the downstream embedder when the pipeline has one, words otherwise. A piece over the ceiling is cut at the best boundary inside it,
and the halves again, until every piece fits (or is one word). The boundaries, best first:

1. a line break inside the piece, or a list marker ("-", "•", "2)", "b.") starting a word;
2. a semicolon, or a coordinating conjunction or transition marker ("and", "as well as"), unless it joins
   the parts of one concept ("cleft lip and palate", the rules of ``keep_coordinated``);
3. a verb of report ("denies", "reports");
4. a preposition ("with", "due to");
5. the start of a run of function words ("was", "the", "has": ``coordination_stop_words``);
6. a word boundary: the middle, or where the piece divides into equal parts under the ceiling.

Within a class the boundary nearest the middle (in tokens) wins; a cue is taken only when
it leaves a quarter of the ceiling (at least one token) on each side. No cut falls inside a
noun phrase where the words say so: right after a negation ("no" | "fever"; ``negation_words``),
after a word no chunk should end with ("of" | "the facial nerve"; the cleaner's
``trailing_cleanup_words``), before a word that binds two nouns ("anomalies" | "of the facial
nerve"; ``ceiling_bound_words``), or between a modifier and the content word after it
("developmental" | "delay"; ``modifier_suffixes``), nor inside a cue of several words ("due" |
"to"). A line break or list marker is still a
boundary after any word but a negation. The candidates of a piece
are found once, in one pass over its words, and kept in sorted lists; each cut picks its
boundary by bisection, so a piece of n words costs O(n) to scan and O(log n) per cut.
Pieces are character ranges of ``doc.text``: the text is never rewritten.

The ceiling adapts to the text around a piece (``punctuated_max_tokens``, 0: off). A piece in
punctuated text (the piece and ``punctuation_window`` words on each side hold a clause mark
``. , ; : ! ?`` per ``punctuated_every`` words) is a clause its writer kept whole: it is cut
only over the loose ceiling, which protects the embedder. A piece in text without such marks
(dictated, copy-pasted) is a run-on the splitters could not cut: the tight ``max_tokens``
applies. With ``sentence_starts``, a piece of unpunctuated text is first cut where a sentence
lost its period: before a capitalized word that follows a word in lower case ("short stature
We report"), whatever the piece's size. The doc's word starts and marks are found in one pass;
each piece's test is two bisections.

With ``pieces_key`` (null: off) the loose ceiling goes to a second group instead: ``spans_key``
keeps the tight ``max_tokens`` everywhere (one assertion per short clause chunk), and
``pieces_key`` gets the pieces under the adaptive ceiling, which ``clin_focus`` (its own
``pieces_key``) cuts its focus spans from. Both come from one pass: a piece's words, counts and
cut candidates are found once and serve both ceilings.
"""

import re
import weakref
from bisect import bisect_left, bisect_right
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

from spacy.language import Language
from spacy.tokens import Doc

from .base import ChunkRefiner, factory_settings, refiner_factory
from .coordination import COORDINATION_RESOURCES, rules_from_resources
from ..resources_io import Override
from ..spans import Range, TokenIndex, doc_text, normalize_word, ranges_to_spans, write_group
from .settings import NonNegativeInt, PositiveInt, SettingError
from .token_counters import AutoTokenCounter, counts_words

FACTORY = "clin_size_ceiling"
DEFAULT_MAX_TOKENS = 8
DEFAULT_PUNCTUATED_MAX_TOKENS = 0  # 0: one ceiling for all text
DEFAULT_PUNCTUATION_WINDOW = 40  # words on each side of a piece
DEFAULT_PUNCTUATED_EVERY = 40  # punctuated: at least one clause mark per this many words
DEFAULT_COUNTER = {"@misc": "spacy_clinchunk.AutoTokenCounter.v1"}
CUE_LISTS = (  # word lists by rank (after line breaks and list markers, rank 0)
    ("coordinating_conjunctions", "transition_markers"),
    ("ceiling_report_verbs",),
    ("ceiling_prepositions",),
)
N_RANKS = 2 + len(CUE_LISTS)  # line breaks and list markers, the cue lists, function-word runs
_WORD = re.compile(r"\S+")
_CLAUSE_MARK = re.compile(r"[.,;:!?](?=\s|$)")  # ends a clause: "2.5" and "10:30" do not
_LOWER, _UPPER = "a-zß-öø-ÿ", "A-ZÀ-ÖØ-Þ"  # Latin letters, ASCII and Latin-1
# a word that starts and ends in lower case (or a digit), then a capitalized word: the match
# ends where the capitalized word starts
_LOST_START = re.compile(rf"(?<!\S)[{_LOWER}\d](?:\S*[{_LOWER}\d])?\s+(?=[{_UPPER}][{_LOWER}]+(?:\s|$))")
_LIST_MARKER = re.compile(r"(?:[-*•·–—▪]|\(?\d{1,3}[.)]|\(?[a-zA-Z][.)])$")

Phrases = Dict[str, List[Tuple[str, ...]]]  # first word -> phrases starting with it, longest first


@refiner_factory(
    FACTORY, scored=True, max_tokens=DEFAULT_MAX_TOKENS, punctuated_max_tokens=DEFAULT_PUNCTUATED_MAX_TOKENS,
    punctuation_window=DEFAULT_PUNCTUATION_WINDOW, punctuated_every=DEFAULT_PUNCTUATED_EVERY, sentence_starts=False,
    pieces_key=None, token_counter=DEFAULT_COUNTER,
)
def make_size_ceiling(
    nlp: Language,
    name: str,
    max_tokens: PositiveInt,
    punctuated_max_tokens: NonNegativeInt,
    punctuation_window: PositiveInt,
    punctuated_every: PositiveInt,
    sentence_starts: bool,
    pieces_key: Optional[str],
    token_counter: Callable[[Sequence[str]], List[int]],
    spans_key: str, language: Optional[str], overrides: Dict[str, Override], scorer: Optional[Callable],  # every refiner's
):
    settings = factory_settings(locals())
    if punctuated_max_tokens and punctuated_max_tokens < max_tokens:
        raise SettingError(
            f"{name}: punctuated_max_tokens ({punctuated_max_tokens}) must be 0 (off) or at least max_tokens ({max_tokens})"
        )
    if pieces_key == spans_key:
        raise SettingError(f"{name}: pieces_key and spans_key must differ (both '{spans_key}')")
    return SizeCeiling(nlp, name, **settings)


def _phrase_table(items: Iterable[str]) -> Phrases:
    table: Phrases = {}
    for item in items:
        phrase = tuple(normalize_word(w) for w in item.split())
        if phrase and all(phrase):
            table.setdefault(phrase[0], []).append(phrase)
    for phrases in table.values():
        phrases.sort(key=len, reverse=True)
    return table


class SizeCeiling(ChunkRefiner):
    """Cut every chunk over ``max_tokens`` at clause cues, then in the middle."""

    resource_names = (
        tuple(name for names in CUE_LISTS for name in names) + COORDINATION_RESOURCES + ("negation_words", "ceiling_bound_words", "trailing_cleanup_words")
    )
    compiled = ("cue_tables", "coordination", "negations", "bound_words", "trailing")

    def __init__(
        self,
        nlp: Language,
        name: str,
        *,
        max_tokens: int,
        token_counter: Callable[[Sequence[str]], List[int]],
        punctuated_max_tokens: int = 0,
        punctuation_window: int = DEFAULT_PUNCTUATION_WINDOW,
        punctuated_every: int = DEFAULT_PUNCTUATED_EVERY,
        sentence_starts: bool = False,
        pieces_key: Optional[str] = None,
        **kwargs: Any,
    ) -> None:
        self.max_tokens = max_tokens
        self.punctuated_max_tokens = punctuated_max_tokens
        self.punctuation_window = punctuation_window
        self.punctuated_every = punctuated_every
        self.sentence_starts = sentence_starts
        self.pieces_key = pieces_key
        self.token_counter = token_counter
        # the auto counter looks at the whole pipeline, so it is bound at the first run, when
        # the components after this one exist; a weak reference: the pipeline owns this component
        self._pipeline = weakref.ref(nlp) if isinstance(token_counter, AutoTokenCounter) else None
        super().__init__(nlp, name, **kwargs)

    def bind_counter(self) -> None:
        """Let the auto counter choose words or its embedder's wordpieces (once)."""
        if self._pipeline is not None:
            self.token_counter.bind(self._pipeline())  # type: ignore[attr-defined]
            self._pipeline = None

    def __getstate__(self) -> Dict[str, Any]:  # pickled (n_process): bind first, drop the reference
        self.bind_counter()
        return dict(self.__dict__)

    def setup(self) -> None:
        self.cue_tables = [_phrase_table(w for n in names for w in self.resources[n]) for names in CUE_LISTS]
        self.coordination = rules_from_resources(self.resources, self.lang)
        self.negations = {normalize_word(w) for w in self.resources["negation_words"]}
        self.bound_words = {normalize_word(w) for w in self.resources["ceiling_bound_words"]}
        self.trailing = {normalize_word(w) for w in self.resources["trailing_cleanup_words"]}

    def __call__(self, doc: Doc) -> Doc:
        worker = self.for_doc(doc)
        if worker is not self:  # language "auto": the copy for the doc's language
            return worker(doc)
        # fast path: counting words, a chunk of at most max_tokens tokens has at most as many
        # words, so a group where every chunk is that short is left as it is
        self.resources  # noqa: B018  (data errors surface on every doc, as in ChunkRefiner)
        self.bind_counter()
        group = doc.spans.get(self.spans_key) if self.spans_key in doc.spans else None
        if group is not None and counts_words(self.token_counter):
            if all(len(span) <= self.max_tokens for span in group) and not (
                self.sentence_starts and _LOST_START.search(doc_text(doc))
            ):
                if self.pieces_key is not None:  # every chunk fits the tight ceiling: the pieces are the chunks
                    doc.spans[self.pieces_key] = list(group)
                return doc
        return super().__call__(doc)

    def refine(self, text: str, start: int, end: int) -> Iterable[Range]:
        return self._refine(Scan(text), start, end)

    def _refine(self, scan: "Scan", start: int, end: int) -> List[Range]:
        return [r for a, b in self._parts(scan, start, end) for r in self._fit(scan, a, b, (True,))[0]]

    def write_refined(self, doc: Doc, text: str, ranges: Sequence[Range]) -> None:
        """Without ``pieces_key``, the chunks under the adaptive ceiling; with it, the chunks
        under the tight ceiling and the pieces under the adaptive one, from one pass. One
        :class:`Scan` of the doc's text serves every range (its marks are found once)."""
        scan = Scan(text)
        if self.pieces_key is None:
            write_group(doc, self.spans_key, [r for start, end in ranges for r in self._refine(scan, start, end)], text)
            return
        chunks: List[Range] = []
        pieces: List[Range] = []
        for start, end in ranges:
            for a, b in self._parts(scan, start, end):
                tight, adaptive = self._fit(scan, a, b, (False, True))
                chunks.extend(tight)
                pieces.extend(adaptive)
        index = TokenIndex(doc, text)  # one token index for both groups
        chunk_spans = ranges_to_spans(doc, chunks, index)
        doc.spans[self.spans_key] = chunk_spans
        # no clause over the tight ceiling in punctuated text (the common case): the same spans
        doc.spans[self.pieces_key] = chunk_spans if pieces == chunks else ranges_to_spans(doc, pieces, index)

    def _parts(self, scan: "Scan", start: int, end: int) -> List[Range]:
        """The range, cut first at its lost sentence starts (``sentence_starts``)."""
        starts = self.lost_sentence_starts(scan, start, end) if self.sentence_starts else []
        return list(zip([start] + starts, starts + [end]))

    def lost_sentence_starts(self, text: "Union[str, Scan]", start: int, end: int) -> List[int]:
        """Where a sentence began in a piece of unpunctuated text: a capitalized word (not one
        letter, not all capitals) after a word written in lower case ("... short stature We
        report ...", "... seizures Patients ..."). Dictated or pasted text lost the period there;
        in punctuated text the sentencizer already cut at sentence ends, so a capital inside a
        piece is a name, and no cue. Not after a negation or a word no chunk ends with ("of")."""
        scan = Scan.of(text)
        found = list(_LOST_START.finditer(scan.text, start, end))
        if not found or self.punctuated(scan, start, end):
            return []
        barred = self.negations | self.trailing
        return [m.end() for m in found if normalize_word(m.group().split()[0]) not in barred]

    def _fit(self, scan: "Scan", start: int, end: int, adaptive: Sequence[bool]) -> List[List[Range]]:
        """The piece cut under each ceiling asked for: the adaptive one (True: the loose ceiling in
        punctuated text, ``max_tokens`` elsewhere) or the tight one (False: ``max_tokens``). The
        words, counts and cut candidates are found once for all of them."""
        text = scan.text
        words = [(m.start(), m.end()) for m in _WORD.finditer(text, start, end)]
        scan.work += len(words)
        if not words:
            return [[] for _ in adaptive]
        whole = [(words[0][0], words[-1][1])]
        if counts_words(self.token_counter):
            if len(words) <= self.max_tokens:
                return [whole for _ in adaptive]
            counts: Sequence[int] = [1] * len(words)
        else:
            counts = self.token_counter([text[a:b] for a, b in words])
        prefix = [0]
        for count in counts:
            prefix.append(prefix[-1] + count)
        if prefix[-1] <= self.max_tokens:
            return [whole for _ in adaptive]
        loose = self.punctuated_max_tokens if self.punctuated_max_tokens and any(adaptive) and self.punctuated(scan, start, end) else 0
        candidates: Optional[Tuple[List[List[int]], List[bool]]] = None  # found at the first cut, kept for the next
        fitted: List[List[Range]] = []
        for wants_adaptive in adaptive:
            limit = loose if wants_adaptive and loose else self.max_tokens
            if prefix[-1] <= limit:
                fitted.append(whole)
                continue
            if candidates is None:
                candidates = self.candidates(text, words)
            fitted.append([(words[a][0], words[b - 1][1]) for a, b in self._cut(*candidates, prefix, limit, scan)])
        return fitted

    # -- punctuation around a piece ---------------------------------------------------
    def punctuated(self, text: "Union[str, Scan]", start: int, end: int) -> bool:
        """Whether the piece lies in punctuated text: the piece and ``punctuation_window`` words on
        each side hold at least one clause mark (``. , ; : ! ?`` before a space) per
        ``punctuated_every`` words. In punctuated text a long piece is one clause the writer kept
        whole, so only the loose ceiling (the embedder's limit) applies; in dictated or
        copy-pasted text without marks the splitters found no boundary, and the tight one does.
        The doc's word starts and marks are found once per :class:`Scan` (one pass), each piece
        is then two bisections."""
        scan = Scan.of(text)
        text, starts, marks = scan.text, *scan.marks()
        first = max(bisect_left(starts, start) - self.punctuation_window, 0)
        last = min(bisect_left(starts, end) + self.punctuation_window, len(starts))  # one past the window's last word
        if last <= first:
            return False
        low = starts[first]
        high = starts[last] if last < len(starts) else len(text)
        n_marks = bisect_left(marks, high) - bisect_left(marks, low)
        return n_marks * self.punctuated_every >= last - first

    # -- cutting ----------------------------------------------------------------
    def candidates(self, text: str, words: Sequence[Range]) -> Tuple[List[List[int]], List[bool]]:
        """For each rank, the sorted word indices before which a cut may fall, and for every word
        whether a cut before it is barred (inside a noun phrase: see the module's docstring).
        One pass over the words."""
        ranked: List[List[int]] = [[] for _ in range(N_RANKS)]
        normalized = [normalize_word(text[a:b]) for a, b in words]
        piece = (words[0][0], words[-1][1]) if words else (0, 0)
        stop_words, bound, is_modifier = self.coordination.stop_words, self.bound_words, self.coordination.is_modifier
        function = [w in stop_words for w in normalized]
        barred = [False] * len(words)
        inside_until = 0  # words before this index belong to a multiword cue ("due to"): no cut inside it
        for i in range(1, len(words)):
            before, word = normalized[i - 1], normalized[i]
            if i < inside_until:
                barred[i] = True
                continue
            cue = self._cue_at(normalized, i)
            inside_until = i + len(cue[1]) if cue is not None else inside_until
            if before in self.negations:
                barred[i] = True
                continue
            if "\n" in text[words[i - 1][1]:words[i][0]] or _LIST_MARKER.match(text, words[i][0], words[i][1]):
                ranked[0].append(i)  # a line break or list marker beats the noun-phrase rules
                continue
            if text[words[i - 1][1] - 1] == ";":
                ranked[1].append(i)  # a semicolon ends a clause: as good as a conjunction
                continue
            if (
                before in self.trailing or word in bound
                or (not function[i] and not function[i - 1] and is_modifier(before))
            ):
                barred[i] = True
                continue
            if cue is None:
                if function[i] and not function[i - 1]:
                    ranked[N_RANKS - 1].append(i)
                continue
            rank, phrase = cue
            marker = (words[i][0], words[min(i + len(phrase), len(words)) - 1][1])
            if rank == 1 and self.coordination.keeps(text, piece, marker):
                continue  # "aplastic or hypoplastic nails": a conjunction inside one concept is no cue
            ranked[rank].append(i)
        return ranked, barred

    def _cue_at(self, normalized: Sequence[str], i: int) -> Optional[Tuple[int, Tuple[str, ...]]]:
        """(rank, phrase) of the best-ranked cue starting at word ``i``, longest phrase first."""
        for rank, table in enumerate(self.cue_tables, start=1):
            phrase = next((p for p in table.get(normalized[i], ()) if tuple(normalized[i:i + len(p)]) == p), None)
            if phrase is not None:
                return rank, phrase
        return None

    def _cut(
        self, ranked: Sequence[List[int]], barred: Sequence[bool], prefix: Sequence[int], limit: int, scan: "Scan"
    ) -> List[Tuple[int, int]]:
        pieces: List[Tuple[int, int]] = []
        stack = [(0, len(prefix) - 1)]
        while stack:
            a, b = stack.pop()
            if prefix[b] - prefix[a] <= limit or b - a == 1:
                pieces.append((a, b))
                continue
            i = self._best_cut(ranked, barred, prefix, a, b, limit)
            scan.work += 1
            stack.append((i, b))
            stack.append((a, i))
        return pieces

    @staticmethod
    def _best_cut(
        ranked: Sequence[List[int]], barred: Sequence[bool], prefix: Sequence[int], a: int, b: int, max_tokens: int
    ) -> int:
        """The cut in (a, b) of the best rank that has one, nearest the token middle."""
        def nearest(options: Sequence[int], lo: int, hi: int, target: float) -> int:
            centre = min(max(bisect_left(prefix, target, a + 1, b), a + 1), b - 1)
            j = bisect_left(options, centre, lo, hi)
            near = [options[k] for k in (j - 1, j) if lo <= k < hi]
            return min(near, key=lambda i: (abs(prefix[i] - target), i))

        total = prefix[b] - prefix[a]

        # a cue cut leaves a quarter of the ceiling (at least one token) on each side, so
        # no cue makes a one-word fragment of a long piece
        margin = max(1.0, max_tokens / 4)
        first = max(bisect_left(prefix, prefix[a] + margin, a + 1, b), a + 1)
        last = bisect_right(prefix, prefix[b] - margin, a + 1, b) - 1
        for cuts in ranked:
            lo, hi = bisect_left(cuts, first), bisect_right(cuts, last)
            if lo < hi:
                return nearest(cuts, lo, hi, prefix[a] + total / 2)
        # no cue: the word boundary that shares the piece out in equal parts (the middle when
        # two parts suffice), so pieces come out near the ceiling, not at half of it
        parts = -(-total // max_tokens)
        i = nearest(range(a + 1, b), 0, b - a - 1, prefix[a] + (parts // 2) * total / parts)
        # not right after a negation: the next boundary on either side (a few steps at most,
        # so a run of negations costs no rescans; the guarantee beats the rule)
        if barred[i]:
            for j in (i + 1, i - 1, i + 2, i - 2, i + 3, i - 3):
                if a < j < b and not barred[j]:
                    return j
        return i


class Scan:
    """One pass over one doc's text: its word starts and clause marks, found on first use and
    shared by every range of the doc, and the work done (words scanned plus cuts made). It
    lives for one doc; the component keeps nothing of a doc between calls."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.work = 0
        self._marks: Optional[Tuple[List[int], List[int]]] = None

    @classmethod
    def of(cls, text: "Union[str, Scan]") -> "Scan":
        return text if isinstance(text, Scan) else cls(text)

    def marks(self) -> Tuple[List[int], List[int]]:
        """``(word starts, clause marks)`` of the text."""
        if self._marks is None:
            starts = [m.start() for m in _WORD.finditer(self.text)]
            self._marks = (starts, [m.start() for m in _CLAUSE_MARK.finditer(self.text)])
            self.work += len(starts)
        return self._marks


def work_of(pipe: SizeCeiling, text: str) -> int:
    """The work (words scanned plus cuts made) of ``pipe`` cutting ``text`` as one range (under
    both ceilings with ``pieces_key``): what the linear-time tests measure, without a counter
    on the component."""
    pipe.resources  # noqa: B018  (the data and the tables built from it)
    pipe.bind_counter()
    scan = Scan(text)
    if pipe.pieces_key is None:
        pipe._refine(scan, 0, len(text))
    else:  # both ceilings from one pass, as write_refined cuts them
        for a, b in pipe._parts(scan, 0, len(text)):
            pipe._fit(scan, a, b, (False, True))
    return scan.work
