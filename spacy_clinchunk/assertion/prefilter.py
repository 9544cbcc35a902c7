"""Cheap tests that a cue pattern cannot match a doc, so its costly search can be skipped.

Most sentences hold none of the regex cues ("year-old", ", lungs clear", "1)") and none
of the long token patterns ("her mother reports"), yet searching for them took a third of
the component's time. Each test here is a *necessary* condition derived from the pattern
itself, never from the rules' content, so skipping a search it rules out never changes a
match:

* a regex: the literal strings any match must contain (a match of ``, (?=... clear)``
  needs "," and one of the words of its lookahead), read from the parsed pattern;
* a token pattern: for each element every match must use, the ``LOWER`` values one of
  the doc's tokens must have.

Unsure parts of a pattern (classes, negative lookarounds, optional parts) add no
condition; a pattern no condition can be read from is always searched.
"""
import re
from typing import Any, Dict, FrozenSet, Iterable, List, Optional, Sequence, Set, Tuple

try:  # Python 3.11+: the parser's home; sre_parse is its deprecated alias
    from re import _parser as _sre_parse  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - Python < 3.11
    import sre_parse as _sre_parse  # type: ignore[no-redef]

Needed = FrozenSet[str]  # one of these strings must occur in the text

_MAX_CONDITIONS = 3  # the most selective conditions kept per pattern
_MAX_CLASS = 8  # a character class of at most this many single characters is a condition
_CASELESS = set("0123456789 \t\n!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")  # ASCII that no case folding reaches
# Characters whose case-insensitive matching in ``re`` is exactly ``str.lower`` equality, each
# lowering to one character: Latin-1, Latin Extended-A and general punctuation, less "İ", "ı"
# and "ſ", which ``re`` also equates with "i" and "s" (tests/assertion/test_assertion_prefilter.py checks
# this against ``re`` itself). Between a text and a string made of these only, a lowered
# substring test answers as ``re.IGNORECASE`` does, at a tenth of its cost.
_NOT_FOLD_SAFE = re.compile("[^\x00-\u017f\u2000-\u206f]|[\u0130\u0131\u017f]")


def fold_safe(text: str) -> bool:
    """Whether ``text`` holds only characters that ``str.lower`` compares as ``re.IGNORECASE`` does."""
    return text.isascii() or _NOT_FOLD_SAFE.search(text) is None


class RegexPrefilter:
    """Conditions of one regex: all must hold in a text where the regex can match."""

    __slots__ = ("conditions",)

    def __init__(self, pattern: str, flags: int = re.IGNORECASE) -> None:
        self.conditions: List[Needed] = []
        try:
            parsed = _sre_parse.parse(pattern, flags)
        except Exception:  # noqa: BLE001 - an unreadable pattern is always searched
            return
        found = [needed for needed in set(_sequence_needs(list(parsed))) if not all(s.isspace() for s in needed)]
        found.sort(key=_selectivity, reverse=True)
        # the most selective, tested cheapest first: a text without "," is done with in one test
        self.conditions = sorted(found[:_MAX_CONDITIONS], key=lambda needed: (len(needed), _selectivity(needed)))


class Condition:
    """A text holds one of ``strings`` (case-insensitively): the test, compiled once."""

    __slots__ = ("caseless", "lowered", "pattern")

    def __init__(self, strings: Needed) -> None:
        ordered = sorted(strings, key=len, reverse=True)
        self.caseless = tuple(s for s in ordered if set(s) <= _CASELESS)  # a plain substring test is exact
        cased = [s for s in ordered if not set(s) <= _CASELESS]
        self.lowered = tuple(s.lower() for s in cased) if all(fold_safe(s) for s in cased) else None
        alternatives = "|".join(re.escape(s) for s in cased)
        self.pattern = re.compile(alternatives, re.IGNORECASE) if cased else None

    def holds(self, text: str, lowered: Optional[str]) -> bool:
        """``lowered``: ``text.lower()`` when ``text`` is :func:`fold_safe`, else None."""
        for s in self.caseless:
            if s in text:
                return True
        if self.pattern is None:
            return False
        if lowered is not None and self.lowered is not None:
            for s in self.lowered:
                if s in lowered:
                    return True
            return False
        return self.pattern.search(text) is not None


class Conditions:
    """One :class:`Condition` per distinct set of strings, shared by the patterns that need it."""

    def __init__(self) -> None:
        self._compiled: Dict[Needed, Condition] = {}

    def of(self, pattern: str) -> Tuple[Condition, ...]:
        """The conditions of a regex, most selective first."""
        found = []
        for needed in RegexPrefilter(pattern).conditions:
            if needed not in self._compiled:
                self._compiled[needed] = Condition(needed)
            found.append(self._compiled[needed])
        return tuple(found)


def all_hold(conditions: Sequence[Condition], text: str, lowered: Optional[str], memo: Dict[Condition, bool]) -> bool:
    """Whether every condition holds in ``text`` (each answered once per text, in ``memo``)."""
    for condition in conditions:
        answer = memo.get(condition)
        if answer is None:
            answer = memo[condition] = condition.holds(text, lowered)
        if not answer:
            return False
    return True


def token_anchors(pattern: Sequence[Any], strings: Any) -> List[FrozenSet[int]]:
    """For each element every match of a spaCy token pattern uses (no ``OP``, or ``+``) and
    that tests ``LOWER`` by a value or an ``IN`` list: the hashes one token's ``LOWER`` must be."""
    anchors: List[FrozenSet[int]] = []
    for element in pattern:
        if not isinstance(element, dict) or element.get("OP") not in (None, "+"):
            continue
        lower = element.get("LOWER")
        if isinstance(lower, str):
            values: Iterable[Any] = [lower]
        elif isinstance(lower, dict) and set(lower) == {"IN"} and isinstance(lower["IN"], list):
            values = lower["IN"]
        else:
            continue
        if all(isinstance(v, str) for v in values):
            anchors.append(frozenset(strings.add(v) for v in values))
    return anchors


def _selectivity(needed: Needed) -> Tuple[int, int, Tuple[str, ...]]:
    """Longer strings are rarer, fewer alternatives rarer still (then a fixed order)."""
    return (min(len(s) for s in needed), -len(needed), tuple(sorted(needed)))


def _sequence_needs(items: List[Any]) -> List[Needed]:
    """Conditions of a sequence: each literal run, and those of the parts it must contain."""
    found: List[Needed] = []
    run: List[str] = []
    for op, av in items:
        name = getattr(op, "name", str(op))
        if name == "LITERAL":
            run.append(chr(av))
            continue
        if run:
            found.append(frozenset(["".join(run)]))
            run = []
        found.extend(_item_needs(name, av))
    if run:
        found.append(frozenset(["".join(run)]))
    return found


def _item_needs(name: str, av: Any) -> List[Needed]:
    if name == "SUBPATTERN":
        return _sequence_needs(list(av[-1]))
    if name == "ATOMIC_GROUP":
        return _sequence_needs(list(av))
    if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
        low, _, inner = av
        return _sequence_needs(list(inner)) if low >= 1 else []
    if name == "ASSERT":  # a positive lookaround: what it needs stands in the text
        return _sequence_needs(list(av[1]))
    if name == "BRANCH":
        return _branch_needs(av[1])
    if name == "IN":
        return _class_needs(av)
    return []  # AT, ANY, CATEGORY, NOT_LITERAL, ASSERT_NOT, GROUPREF...: no condition


def _branch_needs(alternatives: Sequence[Any]) -> List[Needed]:
    """One condition for ``a|b|c``: the best condition of each alternative, pooled."""
    pooled: Set[str] = set()
    for alternative in alternatives:
        options = _sequence_needs(list(alternative))
        if not options:
            return []
        pooled.update(max(options, key=_selectivity))
    return [frozenset(pooled)]


def _class_needs(members: Sequence[Any]) -> List[Needed]:
    chars: Set[str] = set()
    for op, av in members:
        if getattr(op, "name", str(op)) != "LITERAL":
            return []  # a range, a category or a negated class
        chars.add(chr(av))
    return [frozenset(chars)] if 0 < len(chars) <= _MAX_CLASS else []


def anchors_hold(anchors: Sequence[FrozenSet[int]], lowers: Set[int]) -> bool:
    """Whether a doc whose tokens have the ``LOWER`` hashes ``lowers`` may match."""
    for anchor in anchors:
        if lowers.isdisjoint(anchor):
            return False
    return True


def needed_strings(pattern: str) -> List[Needed]:
    """The conditions read from ``pattern`` (for tests and diagnostics)."""
    return RegexPrefilter(pattern).conditions
