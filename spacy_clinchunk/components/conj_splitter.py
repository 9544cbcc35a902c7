"""clin_conj_splitter: split before coordinating conjunctions and transition markers.

The conjunction starts the next chunk ("seizures" | "but no developmental delay").
Fixed expressions ("and/or", "back and forth") are never cut, and a conjunction
that joins single words ("aplastic or hypoplastic nails") is kept when fewer than
``min_words_before`` words precede it in the current chunk. With ``keep_coordinated``
(off by default) a conjunction inside a coordinated concept ("cleft lip and palate",
"carpal and tarsal bones") is kept too (see :mod:`spacy_clinchunk.components.coordination`).

With ``split_before_status_openers`` (off by default; on in the configs that assert) a word that
opens a part of the clause with a status of its own starts the next chunk too, as a conjunction
does (the ``status_openers`` list): a denial ("without", "with no", "ohne", "sans", "sin",
"zonder": "Tracheostomy site is clean" | "without blood or discharge") or a past event ("status
post", "Z.n.", "status na": "Darkened mole" | "status post punch biopsy"). The words before it
and the words after it have different statuses, and a chunk carries one status, so a chunk that
held both showed one of them wrong. A denial that calls the finding before it normal
("Abdomen ohne pathologischen Befund", "examen sans particularité") is one of the
``conjunction_fixed_expressions`` and stays whole.
"""

import re
from bisect import bisect_right, bisect_left
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from spacy.language import Language

from .base import ChunkRefiner, refiner_factory
from .coordination import COORDINATION_RESOURCES, rules_from_resources
from ..resources_io import Override
from ..spans import Range, strip_range
from .settings import PositiveInt

FACTORY = "clin_conj_splitter"
OPENERS = "status_openers"
_WORD = re.compile(r"\S+")
_SPACES = re.compile(r"\s+")
_SUSPENSION_HYPHENS = "-\u2010\u2011"  # hyphen-minus, hyphen, non-breaking hyphen


@refiner_factory(FACTORY, min_words_before=2, min_words_after=1, keep_coordinated=False, split_before_status_openers=False)
def make_conj_splitter(
    nlp: Language,
    name: str,
    min_words_before: PositiveInt,
    min_words_after: PositiveInt,
    keep_coordinated: bool,
    split_before_status_openers: bool,
    spans_key: str, language: Optional[str], overrides: Dict[str, Override], scorer: Optional[Callable],  # every refiner's
):
    return ConjSplitter(**locals())  # the class takes exactly the factory's settings


def _phrase_pattern(phrases: Sequence[str]) -> str:
    # longest first so "as well as" wins over "as"; internal spaces match any whitespace run
    ordered = sorted({p.strip().lower() for p in phrases if p.strip()}, key=len, reverse=True)
    return "|".join(r"\s+".join(re.escape(part) for part in p.split()) for p in ordered)


class ConjSplitter(ChunkRefiner):
    """Split chunks before conjunctions ("and", "but", "oder", "sino" ...)."""

    resource_names = ("coordinating_conjunctions", "transition_markers", "conjunction_fixed_expressions")
    compiled = ("marker_re", "fixed_re", "openers")

    def __init__(
        self,
        nlp: Language,
        name: str,
        *,
        min_words_before: int,
        min_words_after: int,
        keep_coordinated: bool,
        split_before_status_openers: bool,
        **kwargs,
    ) -> None:
        self.min_words_before = min_words_before
        self.min_words_after = min_words_after
        self.keep_coordinated = keep_coordinated
        self.split_before_status_openers = split_before_status_openers
        # a word list travels with the component only when its setting uses it
        self.resource_names = (
            type(self).resource_names
            + (COORDINATION_RESOURCES if keep_coordinated else ())
            + ((OPENERS,) if split_before_status_openers else ())
        )
        super().__init__(nlp, name, **kwargs)

    def setup(self) -> None:
        markers = list(self.resources["coordinating_conjunctions"]) + list(self.resources["transition_markers"])
        openers = list(self.resources[OPENERS]) if self.split_before_status_openers else []
        self.openers = frozenset(_normalized(o) for o in openers)
        self.marker_re = re.compile(rf"(?<!\S)(?:{_phrase_pattern(markers + openers)})(?=\s)", re.IGNORECASE)
        fixed = self.resources["conjunction_fixed_expressions"]
        self.fixed_re = (
            re.compile(rf"(?<![\w/])(?:{_phrase_pattern(fixed)})(?![\w/])", re.IGNORECASE) if fixed else None
        )
        self.coordination = rules_from_resources(self.resources, self.lang) if self.keep_coordinated else None

    def refine(self, text: str, start: int, end: int) -> Iterable[Range]:
        protected = self._protected(text, start, end)
        # word starts, found once: counting the words before and after a marker is a bisection,
        # so a long chunk with many markers stays linear
        starts = [m.start() for m in _WORD.finditer(text, start, end)]
        pieces: List[Range] = []
        cursor = start
        for match in self.marker_re.finditer(text, start, end):
            split = match.start()
            if protected and _inside(protected, split):
                continue
            if _suspends_a_compound(text, start, split):
                continue
            if bisect_left(starts, split) - bisect_left(starts, cursor) < self.min_words_before:
                continue
            if len(starts) - bisect_left(starts, match.end()) < self.min_words_after:
                continue
            # a status opener is no conjunction: it joins no concept's parts, so it is never kept as one
            if (
                self.coordination is not None
                and _normalized(match.group()) not in self.openers
                and self.coordination.keeps(text, (start, end), (split, match.end()))
            ):
                continue
            pieces.append((cursor, split))
            cursor = split
        pieces.append((cursor, end))
        return [r for r in (strip_range(text, s, e) for s, e in pieces) if r[0] < r[1]]

    def _protected(self, text: str, start: int, end: int) -> List[Tuple[int, int]]:
        """Ranges of the fixed expressions in the chunk, in order (they do not overlap)."""
        if self.fixed_re is None:
            return []
        return [(m.start(), m.end()) for m in self.fixed_re.finditer(text, start, end)]


def _suspends_a_compound(text: str, start: int, split: int) -> bool:
    """The word before the conjunction is the first half of a compound whose second half comes
    after it ("Ein- oder Durchschlafstörungen", "Aorten- u. Mitralklappe", "pre- or postoperative"):
    one word, written in two, which a split would cut into a stray "Ein-"."""
    end = split
    while end > start and text[end - 1] in " \t":
        end -= 1
    return end - 2 >= start and text[end - 1] in _SUSPENSION_HYPHENS and text[end - 2].isalpha()


def _normalized(phrase: str) -> str:
    """A phrase as the marker pattern matches it: lower case, one space between words."""
    return _SPACES.sub(" ", phrase.strip().lower())


def _inside(ranges: Sequence[Tuple[int, int]], position: int) -> bool:
    """Whether ``position`` lies in one of the sorted, disjoint ``ranges``."""
    i = bisect_right(ranges, (position, float("inf"))) - 1
    return i >= 0 and ranges[i][0] <= position < ranges[i][1]
