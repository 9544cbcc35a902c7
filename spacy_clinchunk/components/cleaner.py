"""clin_cleaner: trim cleanup words off chunk edges and drop low-value chunks.

Text is never rewritten: the cleaner only moves span edges inward or drops spans.
Negation words ("no", "without", "kein") are never trimmed, so a cleaned chunk keeps
what it negates.
"""

import re
from typing import Callable, Dict, Iterable, List, Optional, Tuple

from spacy.language import Language

from .base import ChunkRefiner, refiner_factory
from ..resources_io import Override
from ..spans import Range, _LIST_MARKER, normalize_word, strip_range
from .settings import NonNegativeInt

FACTORY = "clin_cleaner"
_WORD = re.compile(r"\S+")
_ALNUM = re.compile(r"[^\W_]")


@refiner_factory(
    FACTORY,
    max_cleanup_passes=3,
    min_cleaned_chunk_length_chars=1,
    filter_short_low_value_chunks_max_words=2,
    strip_list_markers=True,
)
def make_cleaner(
    nlp: Language,
    name: str,
    max_cleanup_passes: NonNegativeInt,
    min_cleaned_chunk_length_chars: NonNegativeInt,
    filter_short_low_value_chunks_max_words: NonNegativeInt,
    strip_list_markers: bool,
    spans_key: str, language: Optional[str], overrides: Dict[str, Override], scorer: Optional[Callable],  # every refiner's
):
    return ChunkCleaner(**locals())  # the class takes exactly the factory's settings


class ChunkCleaner(ChunkRefiner):
    """Shrink chunks past leading/trailing cleanup words; drop empty-of-meaning chunks."""

    resource_names = ("leading_cleanup_words", "trailing_cleanup_words", "low_value_words", "negation_words")
    compiled = ("negations", "leading", "trailing", "low_value", "filler")

    def __init__(
        self,
        nlp: Language,
        name: str,
        *,
        max_cleanup_passes: int,
        min_cleaned_chunk_length_chars: int,
        filter_short_low_value_chunks_max_words: int,
        strip_list_markers: bool,
        **kwargs,
    ) -> None:
        self.max_cleanup_passes = max_cleanup_passes
        self.min_chars = min_cleaned_chunk_length_chars
        self.short_max_words = filter_short_low_value_chunks_max_words
        self.strip_list_markers = strip_list_markers
        super().__init__(nlp, name, **kwargs)

    def setup(self) -> None:
        self.negations = {w.lower() for w in self.resources["negation_words"]}
        self.leading = {w.lower() for w in self.resources["leading_cleanup_words"]} - self.negations
        self.trailing = {w.lower() for w in self.resources["trailing_cleanup_words"]} - self.negations
        self.low_value = {w.lower() for w in self.resources["low_value_words"]} - self.negations
        self.filler = self.low_value | self.leading | self.trailing

    def refine(self, text: str, start: int, end: int) -> Iterable[Range]:
        start, end = strip_range(text, start, end)
        if self.strip_list_markers:
            marker = _LIST_MARKER.match(text, start, end)
            if marker and marker.end() < end:
                start, end = strip_range(text, marker.end(), end)
        words = [(m.start(), m.end()) for m in _WORD.finditer(text, start, end)]
        first, last = 0, len(words)
        for _ in range(self.max_cleanup_passes):
            # a pass trims the whole run of cleanup words at each edge, so a second
            # run of the component finds nothing left to trim (idempotent)
            before = (first, last)
            while first < last and self._word(text, words[first]) in self.leading:
                first += 1
            while first < last and self._word(text, words[last - 1]) in self.trailing:
                last -= 1
            if (first, last) == before:
                break
        if first >= last:
            return []
        kept = words[first:last]
        if self._low_value(text, kept):
            return []
        start, end = kept[0][0], kept[-1][1]
        if end - start < self.min_chars:
            return []
        return [(start, end)]

    @staticmethod
    def _word(text: str, bounds: Tuple[int, int]) -> str:
        return normalize_word(text[bounds[0]:bounds[1]])

    def _low_value(self, text: str, words: List[Tuple[int, int]]) -> bool:
        """Only low-value words (any length), only filler (short chunks), or no letters at all.

        A negation word keeps a multi-word chunk. Stops at the first content word.
        """
        many = len(words) > 1
        short = len(words) <= self.short_max_words
        for s, e in words:
            word = normalize_word(text[s:e])
            if many and word in self.negations:
                return False
            if not word or not _ALNUM.search(word) or word in self.low_value:
                continue
            if not short or (word not in self.filler and not word.isdigit()):
                return False
        return True
