"""The form a regex cue is searched in: the same matches, found faster.

Rule files write a word's start as a letter guard before it, ``(?<![^\\W\\d_])was``: readable,
and what a rule author means. Python's regex engine tests a leading lookbehind at every
position of the text, while a leading letter lets it skip ahead to that letter. So a pattern
that opens with the guard (and, optionally, literal lookbehinds such as ``(?<!not )``) before a
word, or before an alternation of words that all start with one letter, is compiled with the
letter first and the guards after it, each looking back one character more:
``w(?<![^\\W\\d_].)as``. A match is the same either way: "the character before the word is no
letter" holds at the word's start exactly when "the character two back from after its first
letter is no letter" holds after it (also at the start of the text, where neither sees one).

Words with different first letters (``(?:is|was|are)``) keep the written form: there the
engine finds no single letter to skip to, and the rewritten form was measured slower
(issue 40, round 11: 13 rules 1.1-3.8x slower over the shared transcriptions).
"""
import re
from typing import List, Optional, Tuple

LETTER_GUARD = "(?<![^\\W\\d_])"
_LITERAL_LOOKBEHIND = re.compile(r"\(\?<!([a-z' ]+)\)")
_WORD = re.compile(r"[^\W\d_]+")
_QUANTIFIERS = ("?", "*", "+", "{")


def scan_form(pattern: str) -> str:
    """``pattern`` with its leading letter guard moved after the word's first letter, where
    that is the same regex and a faster one (see the module docstring); else ``pattern``."""
    if not pattern.startswith(LETTER_GUARD):
        return pattern
    rest, lookbehinds = pattern[len(LETTER_GUARD):], []
    while True:
        found = _LITERAL_LOOKBEHIND.match(rest)
        if not found:
            break
        lookbehinds.append(found.group(1))
        rest = rest[found.end():]
    split = _head_words(rest)
    if split is None:
        return pattern
    words, tail = split
    if tail[:1] in _QUANTIFIERS:
        return pattern  # an optional head ("(?:very )?good"): without it the guard still holds
    firsts = {word[0].lower() for word in words}
    if len(firsts) != 1 or not all(word[0].isalpha() and not _quantified(word, tail) for word in words):
        return pattern
    guards = "(?<![^\\W\\d_].)" + "".join(f"(?<!{text}.)" for text in lookbehinds)
    return "(?:" + "|".join(word[0] + guards + word[1:] for word in words) + ")" + tail


def _quantified(word: str, tail: str) -> bool:
    """A quantifier right after the first letter ("a?") would bind to the moved guards."""
    return (word[1:] or tail)[:1] in _QUANTIFIERS


def _head_words(rest: str) -> Optional[Tuple[List[str], str]]:
    """The alternatives of a leading ``(?:a|b)`` group (or the one leading word) and what follows."""
    if rest.startswith("(?:"):
        return _alternatives(rest)
    word = _WORD.match(rest)
    if not word:
        return None
    return [word.group(0)], rest[word.end():]


def _alternatives(text: str) -> Optional[Tuple[List[str], str]]:
    """Split ``(?:a|b|...)rest`` at its top-level bars; None when the group does not close."""
    depth, i, start, parts = 0, 0, 3, []
    while i < len(text):
        char = text[i]
        if char == "\\":
            i += 2
            continue
        if char == "[":
            close = text.find("]", i + 2)
            if close < 0:
                return None
            i = close + 1
            continue
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                parts.append(text[start:i])
                return parts, text[i + 1:]
        elif char == "|" and depth == 1:
            parts.append(text[start:i])
            start = i + 1
        i += 1
    return None
