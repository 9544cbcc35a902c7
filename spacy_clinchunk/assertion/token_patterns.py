"""What a rule's token pattern can match on spaCy's Matcher path: its spellings and its reach.

A token pattern with operators or attributes other than ``LOWER`` (those with only words go to
the phrase matcher, :class:`.cues.CueMatcher`) is run by spaCy's Matcher. Three facts about it
are worked out here, once, when the rules compile:

* its spellings: a dotted abbreviation the tokenizer splits when capitalised ("Vd.a." is
  "Vd.a" + ".", since spaCy's exceptions are written in lower case) is matched in that spelling
  too (:func:`capital_spellings`);
* its reach: how far from an anchor word every match lies, so the Matcher runs only in windows
  around the anchors (:func:`token_reach`);
* its tolerance of whitespace runs between elements (:func:`with_space_runs`).
"""
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy

Reach = Tuple["numpy.ndarray", int, int]  # (anchor LOWER hashes, elements before it, elements after it)

SPACE_RUN = {"IS_SPACE": True, "OP": "*"}
MAX_SPELLINGS = 4  # a token pattern and its capitalised abbreviation spellings, at most


def capital_spellings(pattern: List[Any], words: Callable[[str], List[str]]) -> List[List[Any]]:
    """``pattern``, and, where an element that every match uses (no ``OP``) lists dotted
    abbreviations, the pattern with that element in the spelling the tokenizer gives them
    capitalised: the stem, then a period (:func:`capitalised_words`). ``words``: the tokenizer's
    lower-case words of a text."""
    spellings: List[List[Any]] = [[]]
    for element in pattern:
        stems = _capital_stems(element, words)
        if stems and 2 * len(spellings) <= MAX_SPELLINGS:
            split = [_stem_element(element, stems), {"ORTH": "."}]
            spellings = [s + [element] for s in spellings] + [s + split for s in spellings]
        else:
            spellings = [s + [element] for s in spellings]
    return spellings


def _capital_stems(element: Any, words: Callable[[str], List[str]]) -> List[str]:
    """The lower-case stems of the dotted abbreviations an element without ``OP`` tests ``LOWER``
    for, whose capitalised spelling the tokenizer splits into stem and period (some, "vd.a.", it
    splits in lower case as well, so the listed spelling alone never matches)."""
    if not isinstance(element, dict) or element.get("OP") is not None:
        return []
    lower = element.get("LOWER")
    values = [lower] if isinstance(lower, str) else lower.get("IN") if isinstance(lower, dict) else None
    stems: List[str] = []
    for value in values if isinstance(values, list) else ():
        split = capitalised_words(value, words) if isinstance(value, str) else None
        if split is not None and len(split) == 2 and split[1] == "." and split[0] not in stems:
            stems.append(split[0])
    return stems


def capitalised_words(value: str, words: Callable[[str], List[str]]) -> Optional[List[str]]:
    """The tokenizer's words for a dotted abbreviation written capitalised, as at the start of
    a sentence (spaCy keeps "evtl." whole but splits "Evtl." into "Evtl" + ".", its exceptions
    being written in lower case); None for a value that is no dotted abbreviation. Both match
    paths read it: the phrase path (``CueMatcher._spellings``) and the token path
    (:func:`capital_spellings`)."""
    if not (value.endswith(".") and value[:1].isalpha()):
        return None
    return words(value[:1].upper() + value[1:])


def _stem_element(element: Dict[str, Any], stems: List[str]) -> Dict[str, Any]:
    """The element that matches the stems, keeping a ``TEXT`` exclusion of the original in the
    split spelling too (the "Z.n." rule excludes "z.N.", at night: so does its "Z.n" + ".")."""
    stem: Dict[str, Any] = {"LOWER": {"IN": stems}}
    text = element.get("TEXT")
    if isinstance(text, dict) and set(text) == {"NOT_IN"} and isinstance(text["NOT_IN"], list):
        excluded = [v for v in text["NOT_IN"] if isinstance(v, str)]
        stem["TEXT"] = {"NOT_IN": sorted({*excluded, *(v.rstrip(".") for v in excluded)})}
    return stem


def token_reach(pattern: Sequence[Any], strings: Any) -> Optional[List[Reach]]:
    """For each element that every match uses once (no ``OP``) and that tests ``LOWER`` by
    words without whitespace: its hashes and how many elements lie before and after it. Every
    element takes at most one token (``OP`` of None, ``?`` or ``!``), so a match lies within
    that many tokens (whitespace aside) of a token with one of those hashes. None when an
    element may take more (``*``, ``+``, ``{n,m}``) or no element anchors a match."""
    if not pattern or any(not isinstance(e, dict) or e.get("OP") not in (None, "?", "!") for e in pattern):
        return None
    reach: List[Reach] = []
    for position, element in enumerate(pattern):
        if element.get("OP") is not None:
            continue
        lower = element.get("LOWER")
        values = [lower] if isinstance(lower, str) else lower.get("IN") if isinstance(lower, dict) and set(lower) == {"IN"} else None
        if not isinstance(values, list) or not values or not all(isinstance(v, str) and v and not any(c.isspace() for c in v) for v in values):
            continue
        hashes = numpy.array(sorted({strings.add(v) for v in values}), dtype=numpy.uint64)
        reach.append((hashes, position, len(pattern) - 1 - position))
    return reach or None


def with_space_runs(pattern: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """``pattern`` with any run of whitespace tokens allowed between its elements."""
    tolerant: List[Dict[str, Any]] = []
    for i, element in enumerate(pattern):
        if i:
            tolerant.append(dict(SPACE_RUN))
        tolerant.append(element)
    return tolerant
