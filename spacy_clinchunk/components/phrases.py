"""Phrase lists as word-bounded, case-insensitive regexes, with a cheap test before each search.

Used by ``clin_focus`` (framing, cut and head phrases) and ``clin_concept_focus`` (joiners).
"""
import re
from typing import FrozenSet, Iterable, Iterator, Optional, Sequence

from ..assertion.prefilter import fold_safe

_RUN = re.compile(r"[\w-]+")  # a run of word characters or hyphens (a phrase's lead)


def reversed_phrase_regex(phrases: Iterable[str]) -> Optional["re.Pattern[str]"]:
    """:func:`phrase_regex` of the phrases spelled backwards, for an anchored match on reversed text."""
    ordered = sorted({p.strip().lower()[::-1] for p in phrases if p.strip()}, key=len, reverse=True)
    if not ordered:
        return None
    body = "|".join(r"\s+".join(re.escape(part) for part in p.split()) for p in ordered)
    return re.compile(rf"(?:{body})(?![\w-])", re.IGNORECASE)


def phrase_regex(phrases: Iterable[str], anchor: str = "") -> Optional["PhrasePattern"]:
    """Word-bounded, case-insensitive alternation of ``phrases`` (longest first)."""
    ordered = sorted({p.strip().lower() for p in phrases if p.strip()}, key=len, reverse=True)
    if not ordered:
        return None
    body = "|".join(r"\s+".join(re.escape(part) for part in p.split()) for p in ordered)
    return PhrasePattern(re.compile(rf"(?<![\w-])(?:{body})(?![\w-]){anchor}", re.IGNORECASE), ordered)


class PhrasePattern:
    """A :func:`phrase_regex` and a cheap test that rules most texts out before it searches.

    A search of a long alternation costs a test of every branch at every position, and most
    chunks hold none of the phrases. Any match starts at a word boundary with one of the
    phrases' *leads* (the first run of word characters or hyphens of its first word: "are" of
    "are characterized by", "d" of "d'une"), and the text's run of such characters there is
    exactly that lead. So a text whose runs hold no lead cannot match, and is not searched.
    The test compares lowered strings, which answers as ``re.IGNORECASE`` only for texts of
    :func:`fold_safe` characters; any other text, or phrases without a lead, is searched."""

    __slots__ = ("regex", "pattern", "leads")

    def __init__(self, regex: "re.Pattern[str]", phrases: Sequence[str]) -> None:
        self.regex = regex
        self.pattern = regex.pattern
        leads = [_RUN.match(p) for p in phrases]
        usable = all(leads) and all(fold_safe(p) for p in phrases)
        self.leads: Optional[FrozenSet[str]] = frozenset(m.group() for m in leads if m) if usable else None

    def may_occur(self, text: str, start: int, end: int) -> bool:
        """False only where no phrase can match ``text[start:end]``."""
        if self.leads is None:
            return True
        piece = text[start:end]
        return not fold_safe(piece) or not self.leads.isdisjoint(_RUN.findall(piece.lower()))

    def finditer(self, text: str, start: int, end: int) -> Iterator["re.Match[str]"]:
        return self.regex.finditer(text, start, end) if self.may_occur(text, start, end) else iter(())

    def search(self, text: str, start: int, end: int) -> Optional["re.Match[str]"]:
        return self.regex.search(text, start, end) if self.may_occur(text, start, end) else None

    def match(self, text: str, start: int, end: int) -> Optional["re.Match[str]"]:
        return self.regex.match(text, start, end)  # anchored: as fast as any test of its lead
