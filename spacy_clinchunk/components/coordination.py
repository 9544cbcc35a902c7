"""Coordinated concepts that a split would cut ("cleft lip and palate", "cleft lip, cleft palate").

Rules used by the splitters when ``keep_coordinated`` is on (off by default, so the
existing strategies keep their output). They look only at a few words on each side of
the candidate split, so a list of any length is judged in linear time:

* at a conjunction: never keep two bare one-word findings that end their clause part
  ("seizures and microcephaly": two findings, two chunks); keep the coordination when the
  right conjunct (up to a stop word or punctuation) has at most ``max_conjunct_words`` words
  and either it is one word ("cleft lip and palate"), the left conjunct has at most two words ("kidney or collecting
  system"), the word before the conjunction is a modifier sharing the right conjunct's
  head ("aplastic or hypoplastic nails", "carpal and tarsal bones"), or the two conjuncts
  share their first or last word; never when the right conjunct has several words and opens
  with a capitalised name ("the store and Mary went to school": a clause; not in German);
* at a comma: keep it between one-word list items ("eye, ear, oral, and craniofacial
  anomalies") and between short phrases that share their first or last word ("cleft lip,
  cleft palate", "carpal bones, tarsal bones").

Modifiers are recognised by suffix (``modifier_suffixes`` per language), stop words end
a conjunct (``coordination_stop_words``: verbs and prepositions that start a new clause
part). Nothing is rewritten: the rules only decline a split.
"""
import re
from typing import Dict, List, Optional, Sequence, Set, Tuple

from ..resources_io import load_word_list

COORDINATION_RESOURCES = ("coordination_joiners", "coordination_stop_words", "modifier_suffixes")
MAX_CONJUNCT_WORDS = 3
_WORD = re.compile(r"[^\s,;:()]+")
_EDGE = ".,;:!?\"'()[]{}"


class CoordinationRules:
    """Decides whether a split point sits inside a coordinated concept."""

    def __init__(
        self,
        joiners: Sequence[str],
        suffixes: Sequence[str],
        stop_words: Sequence[str],
        max_conjunct_words: int = MAX_CONJUNCT_WORDS,
        capitals_name: bool = True,
    ) -> None:
        self.capitals_name = capitals_name  # a capital inside a sentence marks a name (not German nouns)
        self.joiners: Set[str] = {" ".join(w.lower().split()) for w in joiners}
        self.suffixes = tuple(sorted({s.lower() for s in suffixes if s}, key=len, reverse=True))
        # the suffixes by length: a word's test is one slice and set lookup per length, not a
        # test of every suffix (the ceiling asks about nearly every word of a run-on text)
        lengths = sorted({len(s) for s in self.suffixes})
        self._suffixes_by_length = tuple((n, frozenset(s for s in self.suffixes if len(s) == n)) for n in lengths)
        self.stop_words: Set[str] = {w.lower() for w in stop_words}
        self.max_words = max(1, int(max_conjunct_words))

    def is_modifier(self, word: str) -> bool:
        word = word.lower().strip(_EDGE)
        size = len(word)
        if size <= 3:
            return False
        for n, suffixes in self._suffixes_by_length:
            if size <= n + 1:
                return False  # longer suffixes leave no stem either
            if word[-n:] in suffixes:
                return True
        return False

    def _right(self, text: str, start: int, end: int) -> Tuple[List[str], bool]:
        """Up to max_words + 1 words of the conjunct starting at ``start`` (stop words end it),
        and whether it runs to the end of the chunk or to punctuation."""
        words: List[str] = []
        for match in _WORD.finditer(text, start, end):
            word = match.group().strip(_EDGE).lower()
            if words and word in self.joiners:
                return words, True  # the next list item starts
            if not word or word in self.stop_words:
                return words, False
            words.append(word)
            if len(words) > self.max_words:
                return words, False
            if match.end() < end and text[match.end()] in ",;:()":
                return words, True
        return words, True

    def _left(self, text: str, start: int, end: int) -> List[str]:
        """Up to max_words + 1 words before ``end`` (back to punctuation or a stop word)."""
        window_start = max(start, end - 200)
        words = [m for m in _WORD.finditer(text, window_start, end)]
        out: List[str] = []
        for match in reversed(words):
            word = match.group().strip(_EDGE).lower()
            if out and match.end() < end and text[match.end()] in ",;:()":
                break  # this word closes an earlier list item
            if not word or word in self.stop_words:
                break
            out.append(word)
            if len(out) > self.max_words:
                break
        return out[::-1]

    def keeps(self, text: str, chunk: Tuple[int, int], split: Tuple[int, int]) -> bool:
        """Whether a split at ``split`` (a conjunction or a comma) would cut a coordinated concept."""
        marker = " ".join(text[split[0]:split[1]].lower().split())
        if marker in {",", ";"}:
            return self.keeps_comma(text, chunk, split)
        return marker in self.joiners and self.keeps_conjunction(text, chunk, split)

    def keeps_conjunction(self, text: str, chunk: Tuple[int, int], conj: Tuple[int, int]) -> bool:
        """Whether the conjunction at ``conj`` joins parts of one concept."""
        left = self._left(text, chunk[0], conj[0])
        right, closed = self._right(text, conj[1], chunk[1])
        if not left or not right or len(right) > self.max_words:
            return False
        if len(right) > 1 and self._opens_with_a_name(text, conj[1], chunk[1]):
            return False  # "the store and Mary went": a new clause with its own subject
        if len(left) == 1 and len(right) == 1 and closed and not self.is_modifier(left[0]):
            # "seizures and microcephaly": two findings, nothing shared between them; not when a
            # verb or preposition follows ("Neurology and genetics will follow": one subject)
            return False
        if len(right) == 1 or len(left) <= 2 or self.is_modifier(left[-1]):
            return True  # "lip and palate", "kidney or collecting system", "carpal and tarsal bones"
        return _share_edge_word(left[-len(right):], right)

    def _opens_with_a_name(self, text: str, start: int, end: int) -> bool:
        """Whether the conjunct after ``start`` opens with a capitalised word that is not an
        acronym ("Mary", not "MRI"): in running English, Spanish, French or Dutch, a name."""
        match = _WORD.search(text, start, end)
        word = match.group() if match else ""
        return self.capitals_name and len(word) > 1 and word[0].isupper() and word[1:].islower()

    def keeps_comma(self, text: str, chunk: Tuple[int, int], comma: Tuple[int, int]) -> bool:
        """Whether the comma at ``comma`` separates phrases of one shared-word list."""
        left = self._left(text, chunk[0], comma[0])
        after = comma[1]
        joiner = self._joiner_at(text, after, chunk[1])
        right, closed = self._right(text, joiner or after, chunk[1])
        if not left or not right or len(right) > self.max_words:
            return False
        if len(left) == 1 and (joiner or (len(right) == 1 and closed)):
            return True  # a list of bare modifiers: "eye, ear, oral, and craniofacial anomalies"
        if len(right) < 2 or len(left) < len(right):
            return False
        return _share_edge_word(left[-len(right):], right)

    def _joiner_at(self, text: str, start: int, end: int) -> int:
        """End of a joiner ("and", "or") right after ``start``, or 0."""
        match = _WORD.search(text, start, end)
        if match and " ".join(match.group().lower().split()) in self.joiners:
            return match.end()
        return 0


def _share_edge_word(left: Sequence[str], right: Sequence[str]) -> bool:
    if not left or not right:
        return False
    return left[0] == right[0] or left[-1] == right[-1]


def rules_from_resources(resources: Dict[str, List[str]], lang: Optional[str] = None) -> CoordinationRules:
    """Rules from a component's word lists (shipped lists fill in any that a saved pipeline lacks)."""

    def words(name: str) -> List[str]:
        if name in resources:
            return resources[name]
        return load_word_list(lang or "en", name)

    return CoordinationRules(
        words("coordination_joiners"), words("modifier_suffixes"), words("coordination_stop_words"),
        capitals_name=(lang or "en") != "de",  # German capitalises every noun
    )
