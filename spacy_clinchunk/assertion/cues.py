"""Finding cues: medspaCy ``ConTextRule`` objects and a matcher for their phrases and patterns.

Every rule is compiled to a match on ``LOWER`` that tolerates runs of whitespace and line
breaks between its words ("NEGATIVE   FOR"). Overlapping cues are pruned by medspaCy's
longest-match rule, except that a HISTORICAL cue inside a longer cue of another kind
survives ("no history of" negates and dates).
"""
import re
from bisect import bisect_right
from typing import Any, Callable, Dict, FrozenSet, List, Optional, Sequence, Set, Tuple

import numpy
from spacy.attrs import IDX, IS_SPACE, LOWER
from spacy.language import Language
from spacy.tokens import Doc

from ..logs import quiet_medspacy_loguru
from .lists import GOVERNS_LIST
from .prefilter import Condition, Conditions, all_hold, anchors_hold, fold_safe, token_anchors
from .regex_form import scan_form
from .rules import AFTER_CUE_ONLY, PASSES, QUALIFIES_WORD, SPARES, ContextRulesError, RuleDict
from .token_patterns import Reach, capital_spellings, capitalised_words, token_reach, with_space_runs

Match = Tuple[int, int, int]  # (match_id, start token, end token)

_MAX_PHRASES = 4096  # a token pattern expanding to more phrases goes to spaCy's Matcher
# A regex rule with this metadata flag cuts nothing inside a list that goes on to an alternative.
SPARES_ALTERNATIVE_LISTS = "spares_alternative_lists"
_LETTER_BEFORE, _LETTER_AFTER = r"(?<![^\W\d_])", r"(?![^\W\d_])"
_LIST_REACH = 1500  # characters a list may run on to its alternative
CUE_GROUP = "cue"  # in a regex rule, the group that is the cue (the rest: context it needs)
_WINDOWED_MIN_TOKENS = 400  # a shorter doc is searched whole: finding its windows costs as much


def alternative_list_guard(joiners: Sequence[str], breaks: Sequence[str]) -> str:
    """A lookahead that fails where the list around a cue goes on to an alternative.

    A comma that ends a scope before a graded finding ("no fever, mild cough") must not cut
    a list that a later "or" shows to be one list ("denies fever, chills, increased pain,
    weakness, or rash"). The alternative counts when it comes before the clause ends (a
    period, semicolon, colon or line break) and before one of ``breaks`` ("and", "but",
    "which": a new clause or list may start there). Empty ``joiners``: no guard.
    """
    if not joiners:
        return ""
    step = r"[^.;:\n]"
    if breaks:
        step = f"(?:(?!{_LETTER_BEFORE}{_words_alternation(breaks)}{_LETTER_AFTER}){step})"
    return f"(?!{step}{{0,{_LIST_REACH}}}?{_LETTER_BEFORE}{_words_alternation(joiners)}{_LETTER_AFTER})"


def _words_alternation(words: Sequence[str]) -> str:
    return "(?:" + "|".join(re.escape(w) for w in words) + ")"


def with_list_guard(rule: RuleDict, guard: str) -> RuleDict:
    """``rule`` with ``guard`` after its regex when its metadata asks to spare alternative lists."""
    metadata = rule.get("metadata")
    if not (isinstance(metadata, dict) and metadata.get(SPARES_ALTERNATIVE_LISTS)):
        return rule
    if not isinstance(rule.get("pattern"), str):
        raise ContextRulesError(
            f"rule '{rule.get('literal')}': metadata.{SPARES_ALTERNATIVE_LISTS} needs a regex 'pattern'"
        )
    return {**rule, "pattern": rule["pattern"] + guard}


def compile_rules(
    nlp: Language, name: str, rules: Sequence[RuleDict], max_scope: Optional[int], list_guard: str = ""
) -> "CueMatcher":
    """medspaCy ConTextRules for ``rules`` and a matcher that finds their cues
    (imports medspaCy: call it at ``initialize`` or on first use).

    ``list_guard`` (see :func:`alternative_list_guard`) goes after the regex of every rule
    whose metadata sets ``spares_alternative_lists``.
    """
    quiet_medspacy_loguru()
    from medspacy.context import ConTextRule

    matcher = CueMatcher(nlp)
    for i, rule in enumerate(rules):
        try:
            rule = with_list_guard(rule, list_guard)
        except ContextRulesError as err:
            raise ContextRulesError(f"{name}: rule #{i}: {err}") from err
        data = dict(rule)
        if data.get("max_scope") is None and max_scope is not None:
            data["max_scope"] = max_scope
        try:
            context_rule = ConTextRule.from_dict(data)
            ended_by = (data.get("metadata") or {}).get("terminated_by") if isinstance(data.get("metadata"), dict) else None
            if ended_by:  # medspaCy's ``terminated_by``, which its JSON format has no key for
                if isinstance(ended_by, str) or not all(isinstance(c, str) for c in ended_by):
                    raise ValueError("metadata.terminated_by must be a list of categories")
                context_rule.terminated_by = {c.upper() for c in ended_by}
            _check_switches(data.get("metadata"))
        except (TypeError, ValueError) as err:
            raise ContextRulesError(f"{name}: rule #{i} ('{rule.get('literal')}'): {err}") from err
        try:
            matcher.add(f"{name}:{i}", context_rule, rule)
        except Exception as err:
            raise ContextRulesError(f"{name}: rule #{i} ('{rule.get('literal')}') cannot be compiled: {err}") from err
    return matcher


# rule-metadata switches read at match time, checked when the rules compile, by the kind of value they take
_BOOLEAN_SWITCHES = (GOVERNS_LIST, QUALIFIES_WORD, AFTER_CUE_ONLY)
_LIST_SWITCHES = (SPARES, PASSES)


def _check_switches(metadata: Any) -> None:
    """A one-line error for a switch of the wrong kind: ``governs_list``, ``qualifies_word`` and
    ``after_cue_only`` are true or false, ``spares`` (categories) and ``passes`` (terminator
    literals) are lists of strings. Caught here, a typo in a rules file names its rule instead of
    silently reading nothing."""
    if not isinstance(metadata, dict):
        return
    for key in _BOOLEAN_SWITCHES:
        if metadata.get(key) is not None and not isinstance(metadata[key], bool):
            raise ValueError(f"metadata.{key} must be true or false")
    for key in _LIST_SWITCHES:
        value = metadata.get(key)
        if value is not None and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            raise ValueError(f"metadata.{key} must be a list of strings")


class CueMatcher:
    """Finds the cues of ConText rules in a doc, in any letter case and across whitespace.

    Token patterns made of ``LOWER`` words and ``IN`` lists (optionally ``"OP": "?"``)
    are expanded into phrases for spaCy's PhraseMatcher, run on the doc's non-space
    tokens, so "NEGATIVE   FOR" and "negative\\nfor" match "negative for". Other token
    patterns go to spaCy's Matcher with optional whitespace between elements; regex
    patterns are searched in the text, case-insensitively, as medspaCy does, each in its
    scan form (:mod:`.regex_form`: the same matches, found faster).

    Regex and token patterns are searched only in docs that pass their prefilter
    (:mod:`.prefilter`): a doc without "," or any of the words of ", lungs clear" is not
    searched for it, which finds the same cues at a fraction of the cost.
    """

    def __init__(self, nlp: Language) -> None:
        from spacy.matcher import Matcher, PhraseMatcher

        self.nlp = nlp
        self.vocab = nlp.vocab
        self.phrases = PhraseMatcher(nlp.vocab, attr="LOWER")
        self.tokens = Matcher(nlp.vocab)
        self.regex: List[Tuple[int, "re.Pattern[str]"]] = []
        self._regex_needs: List[Tuple[Condition, ...]] = []  # per regex: what a text must hold
        self._conditions = Conditions()
        self._token_anchors: List[List[FrozenSet[int]]] = []  # per token pattern: LOWER hashes a doc must hold
        self._token_reach: List[Optional[List[Reach]]] = []  # per token pattern: see token_reach
        self.rule_map: Dict[str, Any] = {}
        self.rule_by_id: Dict[int, Any] = {}  # the same rules by match id
        self._order: Dict[int, Tuple[int, str]] = {}  # match id -> (rule position, category)
        self._has = {"phrases": False, "tokens": False, "regex": False}
        self._word_cache: Dict[str, List[str]] = {}
        self._sentence_initial: set = set()  # match ids of cues that must open a sentence
        self._historical: set = set()
        self._pseudo: set = set()

    def add(self, key: str, context_rule: Any, rule: RuleDict) -> None:
        match_id = self.vocab.strings.add(key)
        self.rule_map[key] = context_rule
        self.rule_by_id[match_id] = context_rule
        self._order[match_id] = (len(self._order), rule["category"])
        if rule["category"] == "HISTORICAL":
            self._historical.add(match_id)
        elif rule["direction"] in ("PSEUDO", "TERMINATE"):
            self._pseudo.add(match_id)
        pattern = rule.get("pattern")
        if isinstance(pattern, str):  # medspaCy's convention: case-insensitive
            self.regex.append((match_id, re.compile(scan_form(pattern), re.IGNORECASE)))
            self._regex_needs.append(self._conditions.of(pattern))
            self._has["regex"] = True
            return
        if pattern is None:
            pattern = [{"LOWER": w} for w in self._words(rule["literal"])]
            if not pattern:
                return
        first = pattern[0] if isinstance(pattern[0], dict) else {}
        if first.get("IS_SENT_START") is True and len(first) > 1:
            # phrases (fast) plus a check of the first token, instead of spaCy's Matcher
            head = {k: v for k, v in first.items() if k != "IS_SENT_START"}
            if self._expand([head, *pattern[1:]]) is not None:
                self._sentence_initial.add(match_id)
                pattern = [head, *pattern[1:]]
        phrases = self._expand(pattern)
        if phrases is None:
            for spelling in capital_spellings(pattern, self._words):
                self.tokens.add(key, [with_space_runs(spelling)])
                self._token_anchors.append(token_anchors(spelling, self.vocab.strings))
                self._token_reach.append(token_reach(spelling, self.vocab.strings))
            self._has["tokens"] = True
            return
        docs = [Doc(self.vocab, words=words) for words in phrases if words]
        if docs:
            self.phrases.add(key, docs)
            self._has["phrases"] = True

    def _words(self, text: str) -> List[str]:
        if text not in self._word_cache:
            self._word_cache[text] = [t.lower_ for t in self.nlp.make_doc(text) if not t.is_space]
        return self._word_cache[text]

    def _spellings(self, value: str) -> List[List[str]]:
        """The token sequences one ``IN`` value can match: as the tokenizer splits it alone,
        and, for a value without spaces that it splits, the value as one token too (alone,
        French "d'" is split in two; in "pas d'anomalie" it is one token); an abbreviation also
        as the tokenizer splits it capitalised, at the start of a sentence."""
        words = self._words(value) or [value]
        found = [words]
        if len(words) > 1 and not any(c.isspace() for c in value):
            found.append([value])
        capital = capitalised_words(value, self._words)  # "Evtl. beginnende Pneumonie"
        if capital and capital not in found:
            found.append(capital)
        return found

    def _expand(self, pattern: List[Dict[str, Any]]) -> Optional[List[List[str]]]:
        """All word sequences of a LOWER/IN/? pattern, or None when it is not one."""
        phrases: List[List[str]] = [[]]
        for element in pattern:
            if not isinstance(element, dict) or set(element) - {"LOWER", "OP"}:
                return None
            lower, op = element.get("LOWER"), element.get("OP")
            if op not in (None, "?"):
                return None
            if isinstance(lower, str):
                values = [lower]
            elif isinstance(lower, dict) and set(lower) == {"IN"} and all(isinstance(v, str) for v in lower["IN"]):
                values = lower["IN"]
            else:
                return None
            options = [words for v in values for words in self._spellings(v.lower())]
            if op == "?":
                options.append([])
            phrases = [p + o for p in phrases for o in options]
            if len(phrases) > _MAX_PHRASES:
                return None
        return phrases

    def __call__(
        self,
        doc: Doc,
        keep: Optional[Callable[[int, int], bool]] = None,
        text: Optional[str] = None,
        space: Optional[List[int]] = None,
        lowers: Optional[Set[int]] = None,
        starts: Optional[List[int]] = None,
    ) -> List[Match]:
        """Cue matches ``(match_id, start, end)``, longest first where they overlap;
        ``keep`` drops sites before overlaps are resolved. ``space``, ``lowers`` (the set
        of the tokens' ``LOWER`` hashes) and ``starts`` (token offsets) are the doc's, when
        the caller has them already."""
        matches: List[Match] = []
        if self._has["phrases"]:
            space = doc.to_array(IS_SPACE).tolist() if space is None else space
            if not any(space):
                matches.extend(self.phrases(doc))
            else:
                kept = [i for i, is_space in enumerate(space) if not is_space]
                if kept:
                    shadow = Doc(doc.vocab, words=[doc[i].text for i in kept])
                    for match_id, start, end in self.phrases(shadow):
                        matches.append((match_id, kept[start], kept[end - 1] + 1))
            if self._sentence_initial:
                matches = [m for m in matches if m[0] not in self._sentence_initial or doc[m[1]].is_sent_start]
        if self._has["tokens"] and self._tokens_may_match(doc, lowers):
            matches.extend(self._token_matches(doc, space))
        if self._has["regex"]:
            matches.extend(self._regex_matches(doc, doc.text if text is None else text, starts))
        if keep is not None:
            matches = [m for m in matches if keep(m[1], m[2])]
        if len(matches) < 2:
            return matches
        kept = _longest_first(matches, self._order)
        if self._historical and len(kept) < len(matches):
            kept = self._nested_history(matches, kept)
        return kept

    def _nested_history(self, matches: List[Match], kept: List[Match]) -> List[Match]:
        """Time is a dimension of its own: "history" inside "no history of" still dates
        the finding, while the negation cue decides its existence."""
        chosen = set(kept)
        hosts = [m for m in kept if m[0] not in self._historical and m[0] not in self._pseudo]
        extra = [
            m for m in matches
            if m not in chosen and m[0] in self._historical
            and any(h[1] <= m[1] and m[2] <= h[2] and (h[1], h[2]) != (m[1], m[2]) for h in hosts)
        ]
        return sorted(set(kept + extra), key=lambda m: (m[1], m[2])) if extra else kept

    def _tokens_may_match(self, doc: Doc, lowers: Optional[Set[int]]) -> bool:
        """Whether some token pattern has, for each word it must match, a token in ``doc``."""
        if lowers is None:
            lowers = set(doc.to_array(LOWER).tolist())
        for anchors in self._token_anchors:
            if anchors_hold(anchors, lowers):  # (a pattern without anchors always holds)
                return True
        return False

    def _token_matches(self, doc: Doc, space: Optional[List[int]] = None) -> List[Match]:
        """The token patterns' matches, found by spaCy's Matcher only in windows around the
        tokens that every match must use (:func:`token_reach`): a long note holds a few
        "mother" or "denies", and the Matcher's cost per token is paid on those windows alone.
        The same matches as one run over the doc, in the order of their tokens."""
        windows = self._windows(doc, space) if len(doc) >= _WINDOWED_MIN_TOKENS else None
        if windows is None:
            return list(self.tokens(doc))
        found = set()
        for a, b in windows:
            for match_id, start, end in self.tokens(doc[a:b]):
                found.add((match_id, a + start, a + end))
        return sorted(found, key=lambda m: (m[1], m[2], self._order.get(m[0], (0, ""))[0]))

    def _windows(self, doc: Doc, space: Optional[List[int]]) -> Optional[List[Tuple[int, int]]]:
        """Merged token windows that hold every match of every token pattern (None: a pattern
        has no bounded reach, so the whole doc is searched)."""
        if not self._token_reach or any(reach is None for reach in self._token_reach):
            return None
        lowers = doc.to_array(LOWER)
        is_space = numpy.asarray(doc.to_array(IS_SPACE) if space is None else space, dtype=bool)
        words = numpy.flatnonzero(~is_space)  # the non-space tokens, which anchors always are
        if not len(words):
            return []
        spans: List[Tuple[int, int]] = []
        for reach in self._token_reach:
            hits, before, after = min(
                ((numpy.flatnonzero(numpy.isin(lowers, hashes)), b, a) for hashes, b, a in reach),  # type: ignore[union-attr]
                key=lambda found: len(found[0]),
            )
            # each element before (after) the anchor takes at most one token, whitespace runs
            # between them any number: count the reach in non-space tokens
            at = numpy.searchsorted(words, hits)
            first, last = at - before, at + after
            starts = numpy.where(first <= 0, 0, words[numpy.clip(first, 0, len(words) - 1)])
            ends = numpy.where(last >= len(words) - 1, len(doc), words[numpy.clip(last, 0, len(words) - 1)] + 1)
            spans.extend(zip(starts.tolist(), ends.tolist()))
        merged: List[Tuple[int, int]] = []
        for start, end in sorted(spans):
            if merged and start <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], end))
            else:
                merged.append((start, end))
        return merged

    def _regex_matches(self, doc: Doc, text: str, starts: Optional[List[int]] = None) -> List[Match]:
        """Regex cues, widened to whole tokens (each regex only where its prefilter holds). A
        regex with a group named ``cue`` matches what it needs around the cue (a lookbehind of
        any width, which Python's ``re`` cannot write) and the cue is that group alone: "Mild
        cardiomegaly(?P<cue>,)" ends a backward scope at the comma without covering the finding
        (a cue over it would push aside every other cue there, the longest winning)."""
        found = []
        memo: Dict[Condition, bool] = {}
        lowered = text.lower() if fold_safe(text) else None
        for (match_id, regex), needs in zip(self.regex, self._regex_needs):
            if not all_hold(needs, text, lowered, memo):
                continue
            marked = CUE_GROUP in regex.groupindex
            for match in regex.finditer(text):
                first, last = match.span(CUE_GROUP) if marked else match.span()
                if first < 0:  # the marked part did not take part in this match: all of it is the cue
                    first, last = match.span()
                if last <= first:
                    continue
                if starts is None:
                    starts = doc.to_array(IDX).tolist()
                start = bisect_right(starts, first) - 1
                end = bisect_right(starts, last - 1)
                if start >= 0 and end > start:
                    found.append((match_id, start, end))
        return found


def _longest_first(matches: List[Match], order: Dict[int, Tuple[int, str]]) -> List[Match]:
    """Overlapping matches resolved as medspaCy does: the longest wins, then the first. Of
    cues of different categories on the same tokens, the rule listed later wins: a later rule
    refines an earlier one (under an English tokenizer "pas d'anomalie" is two tokens, as is
    "pas d'" + a finding; it reads normal). Cues of one category on the same tokens all stay:
    they say the same, each in its own direction and reach ("douteux" reads forward as
    "possible" and both ways as "douteux (postposé)"), so no choice hangs on the order a matcher
    reports them in (the hashes of the rules' keys, which moved when a rule was inserted)."""
    ordered = sorted(matches, key=lambda m: (m[1] - m[2], m[1], m[2], order.get(m[0], (0, ""))[0]))
    taken: set = set()
    kept: List[Match] = []
    for match in ordered:
        if kept and match[1:] == kept[-1][1:]:  # same tokens: sorted next to each other
            if _category(match[0], order) == _category(kept[-1][0], order):
                kept.append(match)
            elif _refines(match[0], kept[-1][0], order):
                # a later rule of another category replaces the cues found so far on these tokens
                while kept and kept[-1][1:] == match[1:]:
                    kept.pop()
                kept.append(match)
            continue
        tokens = range(match[1], match[2])
        if not any(t in taken for t in tokens):
            taken.update(tokens)
            kept.append(match)
    kept.sort(key=lambda m: (m[1], m[2]))
    return kept


def _category(match_id: int, order: Dict[int, Tuple[int, str]]) -> str:
    return order.get(match_id, (0, ""))[1]


def _refines(new: int, old: int, order: Dict[int, Tuple[int, str]]) -> bool:
    """Whether rule ``new`` is of another category than ``old`` and listed after it."""
    (new_at, new_category), (old_at, old_category) = order.get(new, (0, "")), order.get(old, (0, ""))
    return new_category != old_category and new_at > old_at
