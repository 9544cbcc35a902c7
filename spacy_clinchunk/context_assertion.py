"""clin_context_assertion: ConText assertion status for chunks and any span group.

medspaCy's ConText is the engine: rules are :class:`medspacy.context.ConTextRule`
objects; each cue found becomes a :class:`~medspacy.context.ConTextModifier` whose
scope is cut by other modifiers (TERMINATE cues, same-category cues) with
``ConTextModifier.limit_scope`` in ``ConTextGraph.update_scopes`` order, and
``ConTextModifier.modifies`` decides whether a cue outside a span governs it.
Overlapping cues are pruned with medspaCy's longest-match rule.

What we add around it:

* Scope units. A cue's scope is the sentence it is in (the whole doc when no
  sentence boundaries are set, then at most ``max_scope`` or 30 tokens), further cut at hard line breaks (blank lines,
  header and list lines) and before section headers / form labels
  ("IMPRESSION:", "Clinical history:"); then limited to ``max_scope`` tokens.
  Scope is independent of chunk boundaries, so "She denies fever, chills, or
  night sweats" negates all three chunks.
* Cues inside a span. ConText never lets a cue modify a target it overlaps; a
  chunk is often "no developmental delay" with the cue inside. A cue inside the
  span governs it when nothing but light words (stop words, "patient", ...) of the
  span lies before the cue's scope: "no developmental delay" is negated, "skin warm
  and dry without lesions" is not (the cue governs only the tail).
* Whitespace and case. Every rule is compiled to a token pattern on ``LOWER`` that
  tolerates runs of whitespace and line breaks between its words
  ("NEGATIVE   FOR").
* One label per span by precedence (:data:`PRECEDENCE`), plus one flag per
  category, plus the cues that decided the label.

Heavy imports (medspaCy pulls in torch and PyRuSH) happen on first use.
"""

import copy
import json
import logging
import re
import warnings
from bisect import bisect_left, bisect_right
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

import srsly
from spacy.language import Language
from spacy.pipeline import Pipe
from spacy.tokens import Doc, Span
from spacy.util import ensure_path, registry

from . import attrs
from .resources_io import (
    FALLBACK_LANGUAGE,
    SUPPORTED_LANGUAGES,
    ResourceError,
    load_json_resource,
    load_word_list,
)
from .spans import hard_breaks
from .base import require_extra
from .settings import check_settings

FACTORY = "clin_context_assertion"
RULES_RESOURCE = "context_rules"
LIGHT_WORDS_RESOURCE = "assertion_light_words"
RULES_FILE = "context_rules.json"
CFG_FILE = "cfg.json"
ENTS = "ents"
# Scope limit (tokens) when the doc has no sentence boundaries and max_scope is null.
UNSEGMENTED_MAX_SCOPE = 30

logger = logging.getLogger("spacy_clinchunk")

# ConText category -> our label. Categories not listed (TERMINATE/PSEUDO rules,
# user categories) never decide a label.
CATEGORY_LABELS: Dict[str, str] = {
    "NEGATED_EXISTENCE": "negated",
    "POSSIBLE_EXISTENCE": "uncertain",
    "UNCERTAIN": "uncertain",
    "HYPOTHETICAL": "hypothetical",
    "CONDITIONAL": "hypothetical",
    "FAMILY": "family",
    "HISTORICAL": "historical",
    "NORMAL": "normal",
}
# When cues of several categories govern a span, the first label here wins;
# "affirmed" only when none governs.
PRECEDENCE: Tuple[str, ...] = (
    "negated",
    "uncertain",
    "hypothetical",
    "family",
    "historical",
    "normal",
)
FLAG_OF_LABEL = {label: f"is_{label}" for label in PRECEDENCE}
DIRECTIONS = ("FORWARD", "BACKWARD", "BIDIRECTIONAL", "TERMINATE", "PSEUDO")
RULE_KEYS = {
    "literal", "category", "direction", "pattern", "metadata",
    "allowed_types", "excluded_types", "max_targets", "max_scope",
}

# Section headers and form labels: an upper-case label followed by ':', or a short
# label at the start of a line followed by ':' and whitespace.
_UPPER_HEADER = re.compile(r"(?<![\w/])[A-Z][A-Z0-9/&()'\-]+(?:[ \t]+[A-Z0-9/&()'\-]+)*[ \t]*:(?!\d)")
_LINE_LABEL = re.compile(r"^[ \t]*[^\W\d_][^\n:.;,]{0,40}?:(?=\s)", re.MULTILINE)

RuleDict = Dict[str, Any]


class ContextRulesError(ResourceError):
    """A context rules file or rule is malformed."""


# -- rules -------------------------------------------------------------------
def validate_rules(data: Any, origin: str) -> List[RuleDict]:
    """Check rules in medspaCy's JSON format; errors name ``origin`` and the rule."""
    if isinstance(data, dict):
        if "context_rules" not in data:
            raise ContextRulesError(f"{origin}: expected an object with a 'context_rules' list")
        data = data["context_rules"]
    if not isinstance(data, list):
        raise ContextRulesError(f"{origin}: 'context_rules' must be a list of rule objects")
    rules: List[RuleDict] = []
    for i, rule in enumerate(data):
        where = f"{origin}: rule #{i}"
        if not isinstance(rule, dict):
            raise ContextRulesError(f"{where}: expected an object, got {type(rule).__name__}")
        literal = rule.get("literal")
        if isinstance(literal, str):
            where = f"{where} ('{literal}')"
        unknown = sorted(set(rule) - RULE_KEYS)
        if unknown:
            raise ContextRulesError(f"{where}: unknown key(s) {unknown}; allowed: {sorted(RULE_KEYS)}")
        if not isinstance(literal, str) or not literal.strip():
            raise ContextRulesError(f"{where}: 'literal' must be a non-empty string")
        if not isinstance(rule.get("category"), str) or not rule["category"].strip():
            raise ContextRulesError(f"{where}: 'category' must be a non-empty string")
        direction = str(rule.get("direction", "BIDIRECTIONAL")).upper()
        if direction not in DIRECTIONS:
            raise ContextRulesError(f"{where}: direction '{rule.get('direction')}' is not one of {DIRECTIONS}")
        pattern = rule.get("pattern")
        if pattern is not None:
            if isinstance(pattern, str):
                try:
                    re.compile(pattern)
                except re.error as err:
                    raise ContextRulesError(f"{where}: invalid regular expression: {err}") from err
            elif not (isinstance(pattern, list) and pattern and all(isinstance(p, dict) for p in pattern)):
                raise ContextRulesError(f"{where}: 'pattern' must be a regex string or a list of token objects")
        for key in ("max_scope", "max_targets"):
            value = rule.get(key)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value <= 0):
                raise ContextRulesError(f"{where}: '{key}' must be a positive integer")
        clean = dict(rule)
        clean["direction"] = direction
        clean["category"] = rule["category"].upper()
        rules.append(clean)
    return rules


def read_rules_file(path: Union[str, Path]) -> List[RuleDict]:
    """Rules from a JSON file in medspaCy's format (``{"context_rules": [...]}``)."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"context rules file not found: {path}")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ContextRulesError(f"{path}: not valid JSON: {err}") from err
    return validate_rules(data, str(path))


def shipped_rules(lang: str) -> List[RuleDict]:
    """Our rules for ``lang`` (``resources/<lang>/context_rules.json``)."""
    return validate_rules(load_json_resource(lang, RULES_RESOURCE), f"{lang}/{RULES_RESOURCE}.json")


def medspacy_default_rules(lang: str) -> List[RuleDict]:
    """medspaCy's packaged rules for ``lang`` (empty when it ships none)."""
    import medspacy  # noqa: F401  (locates the packaged resources)

    _quiet_loguru()
    root = Path(medspacy.__file__).resolve().parents[1] / "resources" / lang / "context_rules.json"
    if not root.is_file():
        return []
    return validate_rules(json.loads(root.read_text(encoding="utf-8")), f"medspacy:{lang}/context_rules.json")


def merge_rules(defaults: Sequence[RuleDict], ours: Sequence[RuleDict]) -> List[RuleDict]:
    """``defaults`` followed by ``ours``; a rule of ours replaces defaults with the same literal."""
    redefined = {r["literal"].strip().lower() for r in ours}
    kept = [r for r in defaults if r["literal"].strip().lower() not in redefined]
    return [copy.deepcopy(r) for r in kept] + [copy.deepcopy(r) for r in ours]


@registry.misc("spacy_clinchunk.ContextRules.v1")
def context_rules_v1(
    lang: str = "en", path: Optional[str] = None, include_default_rules: bool = True
) -> List[RuleDict]:
    """Effective rules, usable in config: ``@misc = "spacy_clinchunk.ContextRules.v1"``.

    ``path`` (a medspaCy rules JSON) replaces our shipped rules for ``lang``;
    ``include_default_rules`` adds medspaCy's English defaults (English only).
    """
    ours = read_rules_file(path) if path else shipped_rules(lang)
    defaults = medspacy_default_rules("en") if include_default_rules and lang == "en" else []
    return merge_rules(defaults, ours)


def _quiet_loguru() -> None:
    """PyRuSH/medspaCy log through loguru at DEBUG; keep our users' stderr clean."""
    try:
        from loguru import logger as loguru_logger  # type: ignore

        loguru_logger.disable("PyRuSH")
        loguru_logger.disable("medspacy")
    except Exception:  # loguru not installed
        pass
    for name in ("PyRuSH", "medspacy"):
        logging.getLogger(name).setLevel(logging.WARNING)


# -- component ---------------------------------------------------------------
@Language.factory(
    FACTORY,
    default_config={
        "span_keys": [attrs.CHUNKS_KEY],
        "language": None,
        "rules": None,
        "include_default_rules": True,
        "max_scope": None,
    },
    assigns=[f"span._.{name}" for name in ("assertion", "assertion_cues", *FLAG_OF_LABEL.values())],
)
def make_context_assertion(
    nlp: Language,
    name: str,
    span_keys: List[str],
    language: Optional[str],
    rules: Optional[Union[str, List[Dict[str, Any]]]],
    include_default_rules: bool,
    max_scope: Optional[int],
):
    check_settings(FACTORY, name, locals())
    require_extra(nlp, "context")
    return ContextAssertion(
        nlp,
        name,
        span_keys=span_keys,
        language=language,
        rules=rules,
        include_default_rules=include_default_rules,
        max_scope=max_scope,
    )


class ContextAssertion(Pipe):
    """Assertion status (``Span._.assertion``) for every span of the named groups."""

    def __init__(
        self,
        nlp: Language,
        name: str = FACTORY,
        *,
        span_keys: Sequence[str] = (attrs.CHUNKS_KEY,),
        language: Optional[str] = None,
        rules: Optional[Union[str, List[Dict[str, Any]]]] = None,
        include_default_rules: bool = True,
        max_scope: Optional[int] = None,
    ) -> None:
        attrs.register_extensions()
        if isinstance(span_keys, str):
            span_keys = [span_keys]
        if max_scope is not None and (not isinstance(max_scope, int) or max_scope <= 0):
            raise ValueError(f"{name}: max_scope must be a positive integer or None, not {max_scope!r}")
        self.nlp = nlp
        self.name = name
        self.span_keys = list(span_keys)
        self.lang = _resolve_language(language or nlp.lang, name)
        self.max_scope = max_scope
        self.include_default_rules = bool(include_default_rules)
        self._rules_source = copy.deepcopy(rules)  # settings; the rules built from them are data
        self._pending_error: Optional[Exception] = None
        self._rules: List[RuleDict] = []
        self._compiled = None
        try:
            if isinstance(rules, (list, tuple)):
                ours = validate_rules(list(rules), f"{name}: inline rules")
                defaults = medspacy_default_rules("en") if self.include_default_rules and self.lang == "en" else []
                self._rules = merge_rules(defaults, ours)
            else:
                self._rules = context_rules_v1(self.lang, rules, self.include_default_rules)
        except FileNotFoundError as err:
            # A saved pipeline whose config names a file that has moved still loads:
            # from_disk supplies the rules. Used without them, the error surfaces.
            self._pending_error = err
        self._light_words: Optional[List[str]] = None  # data: from the package or a saved pipeline

    # -- rules ---------------------------------------------------------------
    @property
    def rules(self) -> List[RuleDict]:
        """The effective rules (medspaCy JSON format); a copy."""
        return copy.deepcopy(self._rules)

    def add_rules(self, rules: Iterable[RuleDict]) -> None:
        """Add rules (medspaCy dicts); a rule replaces existing ones with the same literal."""
        new = validate_rules(list(rules), f"{self.name}: add_rules")
        self._rules = merge_rules(self._rules, new)
        self._compiled = None

    def _matcher_and_rules(self):
        if self._pending_error is not None:
            raise self._pending_error
        if self._compiled is None:
            self._compiled = _compile(self.nlp, self.name, self._rules, self.max_scope)
        return self._compiled

    def initialize(self, get_examples=None, *, nlp=None) -> None:
        self._matcher_and_rules()

    # -- processing ----------------------------------------------------------
    def __call__(self, doc: Doc) -> Doc:
        error_handler = self.get_error_handler()
        try:
            self._annotate(doc)
            return doc
        except Exception as err:
            error_handler(self.name, self, [doc], err)
            return doc

    def _annotate(self, doc: Doc) -> None:
        groups = [self._targets(doc, key) for key in self.span_keys]
        if not any(groups) or not len(doc):
            return
        matcher = self._matcher_and_rules()
        has_sents = doc.has_annotation("SENT_START")
        units = scope_units(doc, has_sents)
        unit_starts = [u[0] for u in units]
        limit = self.max_scope if (self.max_scope or has_sents) else UNSEGMENTED_MAX_SCOPE
        per_unit = [_UnitModifiers(mods) for mods in self._modifiers(doc, matcher, units, unit_starts, limit)]
        for targets in groups:
            for target in targets:
                self._assign(target, per_unit, unit_starts)

    def _targets(self, doc: Doc, key: str) -> List[Span]:
        if key == ENTS:
            return list(doc.ents)
        if key in doc.spans:
            return list(doc.spans[key])
        return []

    def _modifiers(self, doc, matcher, units, unit_starts, limit) -> List[List[Any]]:
        """Modifiers per scope unit, with scopes already cut by medspaCy's ConText logic."""
        from medspacy.context import ConTextModifier

        per_unit: List[List[Any]] = [[] for _ in units]
        for match_id, start, end in matcher(doc):
            rule = matcher.rule_map[doc.vocab.strings[match_id]]
            u = bisect_right(unit_starts, start) - 1
            u_start, u_end = units[u]
            end = min(end, u_end)  # a cue never reaches into the next unit
            max_scope = rule.max_scope or limit
            scope_start, scope_end = _scope(rule.direction, max_scope, start, end, u_start, u_end)
            carries = rule.direction == "FORWARD" and u + 1 < len(units) and _only_space(doc, end, u_end)
            if carries:  # "NEGATIVE FOR" at the end of a line governs the next one
                scope_end = units[u + 1][1] if max_scope is None else min(units[u + 1][1], end + max_scope)
            modifier = ConTextModifier(rule, start, end, None, scope_start=scope_start, scope_end=scope_end)
            per_unit[u].append(modifier)
            if carries:
                per_unit[u + 1].append(modifier)
        for mods in per_unit:
            if len(mods) > 1:
                mods.sort(key=lambda m: m.modifier_span)
                _update_scopes(mods)
        return per_unit

    def _assign(self, target: Span, per_unit: List["_UnitModifiers"], unit_starts: List[int]) -> None:
        first = max(bisect_right(unit_starts, target.start) - 1, 0)
        last = max(bisect_left(unit_starts, target.end) - 1, first)
        cues: Dict[str, List[Dict[str, Any]]] = {}
        seen = set()
        for u in range(first, last + 1):
            for modifier in per_unit[u].near(target.start, target.end):
                if id(modifier) in seen:
                    continue
                seen.add(id(modifier))
                label = CATEGORY_LABELS.get(modifier.category)
                if label is None or modifier.direction in ("TERMINATE", "PSEUDO"):
                    continue
                if self._governs(modifier, target):
                    cues.setdefault(label, []).append(_cue(target.doc, modifier))
        decided = next((label for label in PRECEDENCE if label in cues), "affirmed")
        target._.assertion = decided
        target._.assertion_cues = sorted(cues.get(decided, []), key=lambda c: (c["start_char"], c["end_char"]))
        for label, flag in FLAG_OF_LABEL.items():
            setattr(target._, flag, label in cues)

    def _governs(self, modifier, target: Span) -> bool:
        m_start, m_end = modifier.modifier_span
        if m_end <= target.start or m_start >= target.end:  # cue outside: plain ConText
            return modifier.modifies(target)
        if m_start < target.start:  # cue straddles the span start: treat as leading cue
            return True
        # cue inside the span: what of the span lies before the cue's reach must be light
        reach = m_start
        if modifier.direction != "FORWARD":
            s_start, s_end = modifier.scope_span
            if s_end > s_start:
                reach = min(m_start, s_start)
        return reach <= target.start or self._light(target.doc, target.start, reach)

    def _light(self, doc: Doc, start: int, end: int) -> bool:
        for token in doc[start:end]:
            if token.is_space or token.is_punct or token.is_stop or token.like_num:
                continue
            if token.lower_ in self.light_words:
                continue
            return False
        return True

    # -- serialization: data only (rules, light words); settings stay with the config --
    @property
    def light_words(self) -> set:
        """Words that may precede a cue inside a span (``assertion_light_words``)."""
        if self._light_words is None:
            self._light_words = load_word_list(self.lang, LIGHT_WORDS_RESOURCE)
            self._light_set = {w.lower() for w in self._light_words}
        return self._light_set

    def _source(self) -> Dict[str, Any]:
        """What the data was built from; a saved copy is used only while this is unchanged."""
        return {"lang": self.lang, "rules": self._rules_source, "include_default_rules": self.include_default_rules}

    def _data(self) -> Dict[str, Any]:
        self.light_words  # noqa: B018  (loads them)
        return {"format": 2, "source": self._source(), "light_words": self._light_words}

    def _load_data(self, cfg: Dict[str, Any], rules: Any, origin: str) -> None:
        source = cfg.get("source") or {  # format 1 held settings; only its language counts
            "lang": cfg.get("lang", self.lang),
            "rules": self._rules_source,
            "include_default_rules": cfg.get("include_default_rules", self.include_default_rules),
        }
        if source != json.loads(json.dumps(self._source())):
            return  # the config asks for other rules: keep those built from it
        if rules is not None:
            self._set_rules(rules, origin)
        if cfg.get("light_words") is not None:
            self._light_words = list(cfg["light_words"])
            self._light_set = {w.lower() for w in self._light_words}

    def _set_rules(self, data: Any, origin: str) -> None:
        self._rules = validate_rules(data, origin)
        self._pending_error = None
        self._compiled = None

    def to_bytes(self, *, exclude: Iterable[str] = tuple()) -> bytes:
        return srsly.json_dumps({"cfg": self._data(), "context_rules": self._rules}).encode("utf-8")

    def from_bytes(self, bytes_data: bytes, *, exclude: Iterable[str] = tuple()) -> "ContextAssertion":
        data = srsly.json_loads(bytes_data)
        self._load_data(data.get("cfg", {}), data.get("context_rules"), f"{self.name}: bytes")
        return self

    def to_disk(self, path: Any, *, exclude: Iterable[str] = tuple()) -> None:
        path = ensure_path(path)
        path.mkdir(parents=True, exist_ok=True)
        srsly.write_json(path / CFG_FILE, self._data())
        srsly.write_json(path / RULES_FILE, {"context_rules": self._rules})

    def from_disk(self, path: Any, *, exclude: Iterable[str] = tuple()) -> "ContextAssertion":
        path = ensure_path(path)
        cfg = srsly.read_json(path / CFG_FILE) if (path / CFG_FILE).exists() else {}
        rules = srsly.read_json(path / RULES_FILE) if (path / RULES_FILE).exists() else None
        self._load_data(cfg, rules, str(path / RULES_FILE))
        return self


# -- helpers -----------------------------------------------------------------
_warned_languages: set = set()


def _resolve_language(lang: Optional[str], component: str) -> str:
    code = (lang or FALLBACK_LANGUAGE).split("_")[0].split("-")[0].lower()
    if code in SUPPORTED_LANGUAGES:
        return code
    if code not in _warned_languages:  # one warning per language and process
        _warned_languages.add(code)
        warnings.warn(
            f"{component}: no context rules for language '{code}'; using English rules. "
            f"Supported: {', '.join(SUPPORTED_LANGUAGES)}.",
            UserWarning,
            stacklevel=4,
        )
    return FALLBACK_LANGUAGE


def _compile(nlp: Language, name: str, rules: Sequence[RuleDict], max_scope: Optional[int]) -> "CueMatcher":
    """medspaCy ConTextRules for ``rules`` and a matcher that finds their cues."""
    _quiet_loguru()
    from medspacy.context import ConTextRule

    matcher = CueMatcher(nlp)
    for i, rule in enumerate(rules):
        data = dict(rule)
        if data.get("max_scope") is None and max_scope is not None:
            data["max_scope"] = max_scope
        try:
            context_rule = ConTextRule.from_dict(data)
        except (TypeError, ValueError) as err:
            raise ContextRulesError(f"{name}: rule #{i} ('{rule.get('literal')}'): {err}") from err
        try:
            matcher.add(f"{name}:{i}", context_rule, rule)
        except Exception as err:
            raise ContextRulesError(f"{name}: rule #{i} ('{rule.get('literal')}') cannot be compiled: {err}") from err
    return matcher


_MAX_PHRASES = 4096  # a token pattern expanding to more phrases goes to spaCy's Matcher
_SPACE_RUN = {"IS_SPACE": True, "OP": "*"}


class CueMatcher:
    """Finds the cues of ConText rules in a doc, in any letter case and across whitespace.

    Token patterns made of ``LOWER`` words and ``IN`` lists (optionally ``"OP": "?"``)
    are expanded into phrases for spaCy's PhraseMatcher, run on the doc's non-space
    tokens, so "NEGATIVE   FOR" and "negative\nfor" match "negative for". Other token
    patterns go to spaCy's Matcher with optional whitespace between elements; regex
    patterns to medspaCy's RegexMatcher. Overlapping matches are pruned with
    medspaCy's longest-match rule.
    """

    def __init__(self, nlp: Language) -> None:
        from medspacy.common.regex_matcher import RegexMatcher
        from spacy.matcher import Matcher, PhraseMatcher

        self.nlp = nlp
        self.vocab = nlp.vocab
        self.phrases = PhraseMatcher(nlp.vocab, attr="LOWER")
        self.tokens = Matcher(nlp.vocab)
        self.regex = RegexMatcher(nlp.vocab)
        self.rule_map: Dict[str, Any] = {}
        self._has = {"phrases": False, "tokens": False, "regex": False}
        self._word_cache: Dict[str, List[str]] = {}

    def add(self, key: str, context_rule: Any, rule: RuleDict) -> None:
        self.rule_map[key] = context_rule
        pattern = rule.get("pattern")
        if isinstance(pattern, str):
            self.regex.add(key, [pattern])
            self._has["regex"] = True
            return
        if pattern is None:
            pattern = [{"LOWER": w} for w in self._words(rule["literal"])]
            if not pattern:
                return
        phrases = self._expand(pattern)
        if phrases is None:
            self.tokens.add(key, [_with_space_runs(pattern)])
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
            options = [self._words(v.lower()) or [v.lower()] for v in values]
            if op == "?":
                options.append([])
            phrases = [p + o for p in phrases for o in options]
            if len(phrases) > _MAX_PHRASES:
                return None
        return phrases

    def __call__(self, doc: Doc) -> List[Tuple[int, int, int]]:
        from medspacy.common.util import prune_overlapping_matches

        matches: List[Tuple[int, int, int]] = []
        if self._has["phrases"]:
            kept = [t.i for t in doc if not t.is_space]
            if len(kept) == len(doc):
                matches.extend(self.phrases(doc))
            elif kept:
                shadow = Doc(doc.vocab, words=[doc[i].text for i in kept])
                for match_id, start, end in self.phrases(shadow):
                    matches.append((match_id, kept[start], kept[end - 1] + 1))
        if self._has["tokens"]:
            matches.extend(self.tokens(doc))
        if self._has["regex"]:
            matches.extend(self.regex(doc))
        return prune_overlapping_matches(matches) if matches else matches


def _with_space_runs(pattern: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    tolerant: List[Dict[str, Any]] = []
    for i, element in enumerate(pattern):
        if i:
            tolerant.append(dict(_SPACE_RUN))
        tolerant.append(element)
    return tolerant


def _scope(direction: str, limit: Optional[int], start: int, end: int, u_start: int, u_end: int) -> Tuple[int, int]:
    if direction == "FORWARD":
        return end, (u_end if limit is None else min(u_end, end + limit))
    if direction == "BACKWARD":
        return (u_start if limit is None else max(u_start, start - limit)), start
    if direction == "BIDIRECTIONAL":
        if limit is None:
            return u_start, u_end
        return max(u_start, start - limit), min(u_end, end + limit)
    return start, end  # TERMINATE / PSEUDO


def _update_scopes(mods: List[Any]) -> None:
    """medspaCy's ``ConTextGraph.update_scopes`` (same pair order, same ``limit_scope``),
    skipping pairs whose scopes cannot overlap, so a long unit is not quadratic."""
    back = max(m.modifier_span[0] - m.scope_span[0] for m in mods)
    for i in range(len(mods) - 1):
        first = mods[i]
        reach = max(first.scope_span[1], first.modifier_span[1])
        for j in range(i + 1, len(mods)):
            second = mods[j]
            if second.modifier_span[0] - back >= reach:
                break
            first.limit_scope(second)
            second.limit_scope(first)


class _UnitModifiers:
    """The modifiers of one scope unit, sorted, with a fast lookup of those near a span."""

    __slots__ = ("mods", "starts", "before", "after")

    def __init__(self, mods: List[Any]) -> None:
        self.mods = mods
        self.starts = [m.modifier_span[0] for m in mods]
        # how far a scope reaches right of its cue start / left of its cue start
        self.before = max((max(m.scope_span[1], m.modifier_span[1]) - m.modifier_span[0] for m in mods), default=0)
        self.after = max((m.modifier_span[0] - min(m.scope_span[0], m.modifier_span[0]) for m in mods), default=0)

    def near(self, start: int, end: int) -> List[Any]:
        lo = bisect_left(self.starts, start - self.before)
        hi = bisect_right(self.starts, end + self.after)
        return self.mods[lo:hi]


def _only_space(doc: Doc, start: int, end: int) -> bool:
    return all(token.is_space for token in doc[start:end])


def _cue(doc: Doc, modifier) -> Dict[str, Any]:
    start, end = modifier.modifier_span
    span = doc[start:end]
    return {
        "text": span.text,
        "category": modifier.category,
        "direction": modifier.direction,
        "literal": modifier.rule.literal,
        "start_char": span.start_char,
        "end_char": span.end_char,
    }


def scope_units(doc: Doc, has_sents: Optional[bool] = None) -> List[Tuple[int, int]]:
    """Token ranges that bound every cue's scope, covering the doc without gaps.

    Sentences (or the whole doc when none are set), cut at hard line breaks and
    before section headers / form labels.
    """
    n = len(doc)
    starts = {0}
    if doc.has_annotation("SENT_START") if has_sents is None else has_sents:
        starts.update(t.i for t in doc if t.is_sent_start)
    text = doc.text
    char_starts = []
    for _, b_end in hard_breaks(text):
        char_starts.append(b_end)
    for regex in (_UPPER_HEADER, _LINE_LABEL):
        for match in regex.finditer(text):
            head = match.start()
            while head < len(text) and text[head].isspace():
                head += 1
            char_starts.append(head)
    if char_starts:
        token_starts = [t.idx for t in doc]
        for c in char_starts:
            i = bisect_left(token_starts, c)
            if 0 < i < n:
                starts.add(i)
    ordered = sorted(s for s in starts if s < n)
    return [(s, ordered[k + 1] if k + 1 < len(ordered) else n) for k, s in enumerate(ordered)]
