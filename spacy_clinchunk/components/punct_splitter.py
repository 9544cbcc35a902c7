"""clin_punct_splitter: clause splitting at ``. , : ; ? !`` followed by whitespace.

Never splits inside abbreviations (per-language list plus dotted forms such as
``b.i.d.`` and initials ``A.B.``), numbers (``98.6``, ``1,5``), times, dates, or
after a list enumerator at the start of a line. The punctuation that causes a split
belongs to neither chunk, nor does a separator glued to the word after a space
(" ,FAMILY HISTORY", the line break of a flattened export). With ``keep_coordinated`` (off by default) a comma between
short phrases sharing a word ("cleft lip, cleft palate") is kept (see
:mod:`spacy_clinchunk.components.coordination`).
"""

import re
from typing import Callable, Dict, Iterable, List, Optional

from spacy.language import Language

from .base import ChunkRefiner, refiner_factory
from .coordination import COORDINATION_RESOURCES, rules_from_resources
from ..resources_io import Override
from ..spans import Range, strip_range

FACTORY = "clin_punct_splitter"

# a run of punctuation before whitespace; or a separator glued to the next word after whitespace:
# a flattened export's line break (" ,FAMILY HISTORY:", "Heart: ,Regular") separates, it opens no chunk
_CANDIDATE = re.compile(r"[.,:;?!]+(?=\s|$)|(?<!\S)[,;:]+(?=\S)")
_ENUMERATOR = re.compile(r"^\(?(?:\d{1,3}|[a-zA-Z]|[ivxlcIVXLC]{1,5})[.)]$")
_ORDINAL = re.compile(r"^\d{1,3}\.$")  # "am 3. Tag", "12. SSW"; a year ("1995.") ends its sentence
# a two-letter abbreviation written with a space between its letters ("o. B.", "z. B.", "V. a.")
_SPACED_PAIR = re.compile(r"[^\W\d_]\.[ \t][^\W\d_]\.")
_SPACED_HEAD = re.compile(r"[^\W\d_]\.[ \t]")  # the pair's first letter, its period and the space


@refiner_factory(FACTORY, keep_coordinated=False)
def make_punct_splitter(
    nlp: Language,
    name: str,
    keep_coordinated: bool,
    spans_key: str, language: Optional[str], overrides: Dict[str, Override], scorer: Optional[Callable],  # every refiner's
):
    return PunctSplitter(
        nlp, name, spans_key=spans_key, language=language, overrides=overrides, scorer=scorer,
        keep_coordinated=keep_coordinated,
    )


class PunctSplitter(ChunkRefiner):
    """Split chunks into clauses at sentence and clause punctuation."""

    resource_names = ("abbreviations", "introducer_abbreviations", "prenominal_abbreviations")
    package_data = ("punct_rules",)
    compiled = ("introducers", "ordinal_period")

    def __init__(self, nlp: Language, name: str, *, keep_coordinated: bool, **kwargs) -> None:
        self.keep_coordinated = keep_coordinated
        if self.keep_coordinated:  # its word lists travel with the component only when used
            self.resource_names = type(self).resource_names + COORDINATION_RESOURCES
        super().__init__(nlp, name, **kwargs)

    def setup(self) -> None:
        self.coordination = rules_from_resources(self.resources, self.lang) if self.keep_coordinated else None
        self.introducers = {a.lower() for a in self.resources["introducer_abbreviations"]}
        self.ordinal_period = bool(self.resources["punct_rules"].get("ordinal_period", False))

    def refine(self, text: str, start: int, end: int) -> Iterable[Range]:
        pieces: List[Range] = []
        cursor = start
        for match in _CANDIDATE.finditer(text, start, end):
            boundary = self._boundary(text, match.start(), match.end(), start, end)
            if boundary is None:
                continue
            if self.coordination is not None and match.group() == "," and self.coordination.keeps_comma(
                text, (cursor, end), (match.start(), match.end())
            ):
                continue
            pieces.append((cursor, boundary))
            cursor = match.end()
        pieces.append((cursor, end))
        return [r for r in (strip_range(text, s, e) for s, e in pieces) if r[0] < r[1]]

    def _boundary(self, text: str, p: int, q: int, start: int, end: int) -> Optional[int]:
        """Where the chunk before the punctuation run ``text[p:q]`` ends, or None to keep it."""
        word_start = p
        while word_start > start and not text[word_start - 1].isspace():
            word_start -= 1
        body = text[word_start:p]  # the word without the punctuation run
        if not body:  # a lone punctuation mark between spaces is a boundary
            return p
        punct = text[p:q]
        if punct == "." and len(body) == 1:
            if _SPACED_PAIR.match(text, word_start):
                return None  # "o. B.", "z. B.", "V. a.": one abbreviation written with a space
            if self._ends_spaced_abbreviation(text, word_start, body, start):
                return None  # "V. a.", "Z. n.": the pair's second letter closes no sentence either
        if punct[0] == "." and self.abbreviation_rule(body + "."):
            body, p, punct = body + ".", p + 1, punct[1:]  # the period belongs to the word
            if not punct:
                return None
        word = body + punct
        if _ENUMERATOR.match(word) and _at_line_start(text, word_start):
            return None  # "1." at line start opens a chunk
        if punct == "." and self.ordinal_period and _ORDINAL.match(word) and _continues_with_word(text, q, end):
            return None
        if punct in {",", ":"} and body.lower() in self.introducers:
            return None  # "i.e., long fingers": the comma belongs to the introducer
        return p

    def _ends_spaced_abbreviation(self, text: str, word_start: int, letter: str, start: int) -> bool:
        """``letter`` closes a listed abbreviation written with a space ("V. a.", "Z. n.", "z. B."):
        read glued ("v.a.") against the word lists, so the pair keeps the finding after it in its
        chunk ("mit V. a. CLOVES-Syndrom") as the glued spelling does. Only listed pairs: a lone
        letter after an initial ("Dr. J. a.") is not guessed."""
        first = word_start - 3
        if first < start or not _SPACED_HEAD.match(text, first, word_start):
            return False
        if first > start and not text[first - 1].isspace():
            return False
        return self.abbreviation_rule.listed(f"{text[first]}.{letter}.")


def _at_line_start(text: str, index: int) -> bool:
    line_start = text.rfind("\n", 0, index) + 1
    return not text[line_start:index].strip()


def _continues_with_word(text: str, q: int, end: int) -> bool:
    """German ordinals ("am 3. Tag"): the period is kept when a word follows on the line."""
    rest = text[q:end].lstrip(" \t")
    return bool(rest) and rest[0].isalpha()
