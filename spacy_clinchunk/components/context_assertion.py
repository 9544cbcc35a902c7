"""clin_context_assertion: ConText assertion status for chunks and any span group.

medspaCy's ConText is the engine: rules are :class:`medspacy.context.ConTextRule`
objects; each cue found becomes a :class:`~medspacy.context.ConTextModifier` whose
scope is cut by other modifiers (TERMINATE cues, same-category cues) with
``ConTextModifier.limit_scope`` in ``ConTextGraph.update_scopes`` order, and
``ConTextModifier.modifies`` decides whether a cue outside a span governs it.
Overlapping cues are pruned by medspaCy's longest-match rule (a HISTORICAL cue inside a
longer cue of another kind survives: "no history of" negates and dates).

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
* Sections. Where a finding stands gives its default status: past medical/surgical
  history -> historical, family history -> family (``resources/<lang>/assertion_sections.json``,
  or medspaCy's sectionizer when it has run). Header words are never cues, no cue spans
  two scope units, and ``Span._.clin_section`` records the section.

Heavy imports (medspaCy pulls in torch and PyRuSH) happen at ``initialize`` or on the
first doc, never in the constructor.
"""

import copy
import json
import logging
import re
from bisect import bisect_left, bisect_right
from pathlib import Path
from functools import lru_cache
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

import srsly
from spacy.attrs import IDX, IS_SPACE, SENT_START
from spacy.language import Language
from spacy.pipeline import Pipe
from spacy.tokens import Doc, Span
from spacy.util import ensure_path, registry

from .. import attrs
from ..logs import quiet_medspacy_loguru
from ..resources_io import (
    ResourceError,
    load_json_resource,
    load_word_list,
    read_json_file,
    resolve_language,
)
from ..spans import hard_breaks
from .base import require_extra
from .settings import check_settings

FACTORY = "clin_context_assertion"
RULES_RESOURCE = "context_rules"
LIGHT_WORDS_RESOURCE = "assertion_light_words"
SECTIONS_RESOURCE = "assertion_sections"
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
# The category a section's status stands for in its cue.
LABEL_CATEGORY = {
    "negated": "NEGATED_EXISTENCE",
    "uncertain": "POSSIBLE_EXISTENCE",
    "hypothetical": "HYPOTHETICAL",
    "family": "FAMILY",
    "historical": "HISTORICAL",
    "normal": "NORMAL",
}
# medspaCy sectionizer categories -> the status their sections give what they hold.
SECTIONIZER_STATUS = {
    "past_medical_history": "historical",
    "past_surgical_history": "historical",
    "family_history": "family",
}
DIRECTIONS = ("FORWARD", "BACKWARD", "BIDIRECTIONAL", "TERMINATE", "PSEUDO")
RULE_KEYS = {
    "literal", "category", "direction", "pattern", "metadata",
    "allowed_types", "excluded_types", "max_targets", "max_scope",
}

# Section headers and form labels: an upper-case label followed by ':', or a short
# label at the start of a line followed by ':' and whitespace.
_UPPER_HEADER = re.compile(r"(?<![\w/])[A-Z][A-Z0-9/&()'\-]+(?:[ \t]+[A-Z0-9/&()'\-]+)*[ \t]*:(?!\d)")
# (at most five words: "Call for any of the following:" opens a list, it is no label)
_LINE_LABEL = re.compile(r"^[ \t]*[^\W\d_][^\s:.;,]*(?:[ \t]+[^\s:.;,]+){0,4}[ \t]*:(?=\s)", re.MULTILINE)
_PARAGRAPH = re.compile(r"\n[^\S\n]*\n")

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
    try:
        data = read_json_file(path, "context rules")
    except ContextRulesError:
        raise
    except ResourceError as err:
        raise ContextRulesError(str(err)) from err
    return validate_rules(data, str(Path(path).expanduser()))


def shipped_rules(lang: str) -> List[RuleDict]:
    """Our rules for ``lang`` (``resources/<lang>/context_rules.json``)."""
    return validate_rules(load_json_resource(lang, RULES_RESOURCE), f"{lang}/{RULES_RESOURCE}.json")


def medspacy_default_rules(lang: str) -> List[RuleDict]:
    """medspaCy's packaged rules for ``lang`` (empty when it ships none)."""
    import medspacy  # noqa: F401  (locates the packaged resources)

    quiet_medspacy_loguru()
    root = Path(medspacy.__file__).resolve().parents[1] / "resources" / lang / "context_rules.json"
    if not root.is_file():
        return []
    return validate_rules(read_json_file(root, "medspaCy rules"), f"medspacy:{lang}/context_rules.json")


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
    return merge_rules(_default_rules(lang, include_default_rules), ours)


def _default_rules(lang: str, include_default_rules: bool) -> List[RuleDict]:
    return medspacy_default_rules("en") if include_default_rules and lang == "en" else []


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
    assigns=[f"span._.{attrs.ext(field)}" for field in ("assertion", "assertion_cues", "assertion_statuses", "section")],
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
    """Assertion status (``Span._.clin_assertion``) for every span of the named groups."""

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
        self.lang = resolve_language(language or nlp.lang, FACTORY)
        self.max_scope = max_scope
        self.include_default_rules = bool(include_default_rules)
        self._rules_source = copy.deepcopy(rules)  # settings; the rules built from them are data
        self._pending_error: Optional[Exception] = None
        # Our rules are read now (cheap, and errors show at add_pipe); medspaCy's
        # defaults are merged in on first use, so add_pipe does not import medspaCy.
        self._own_rules: List[RuleDict] = []
        self._merged: Optional[List[RuleDict]] = None
        self._compiled = None
        try:
            if isinstance(rules, (list, tuple)):
                self._own_rules = validate_rules(list(rules), f"{name}: inline rules")
            else:
                self._own_rules = read_rules_file(rules) if rules else shipped_rules(self.lang)
        except FileNotFoundError as err:
            # A saved pipeline whose config names a file that has moved still loads:
            # from_disk supplies the rules. Used without them, the error surfaces.
            self._pending_error = err
        self._light_words: Optional[List[str]] = None  # data: from the package or a saved pipeline
        self._sections: Optional[Dict[str, Any]] = None  # data: section headers and their status
        self._section_table: Optional[SectionTable] = None

    # -- rules ---------------------------------------------------------------
    @property
    def _rules(self) -> List[RuleDict]:
        """Effective rules: medspaCy's defaults (when asked for) merged under ours."""
        if self._merged is None:
            defaults = [] if self._pending_error else _default_rules(self.lang, self.include_default_rules)
            self._merged = merge_rules(defaults, self._own_rules)
        return self._merged

    @_rules.setter
    def _rules(self, rules: List[RuleDict]) -> None:
        self._merged = list(rules)

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
        layout = DocLayout(doc, self.section_table, doc.text)
        limit = self.max_scope if (self.max_scope or layout.has_sents) else UNSEGMENTED_MAX_SCOPE
        per_unit = [_UnitModifiers(mods) if mods else _NO_MODIFIERS for mods in self._modifiers(doc, matcher, layout, limit)]
        for targets in groups:
            for target in targets:
                self._assign(target, per_unit, layout)

    def _targets(self, doc: Doc, key: str) -> List[Span]:
        if key == ENTS:
            return list(doc.ents)
        if key in doc.spans:
            return list(doc.spans[key])
        return []

    def _modifiers(self, doc, matcher, layout: "DocLayout", limit) -> List[List[Any]]:
        """Modifiers per scope unit, with scopes already cut by medspaCy's ConText logic."""
        from medspacy.context import ConTextModifier

        units, unit_starts = layout.units, layout.unit_starts
        per_unit: List[List[Any]] = [[] for _ in units]
        for match_id, start, end in matcher(doc, layout.is_cue_site, layout.text, layout.space):
            rule = matcher.rule_map[doc.vocab.strings[match_id]]
            u = bisect_right(unit_starts, start) - 1
            u_start, u_end = units[u]
            max_scope = rule.max_scope or limit
            scope_start, scope_end = _scope(rule.direction, max_scope, start, end, u_start, u_end)
            later = self._later_units(doc, layout, rule.direction, u, end, scope_end)
            if later:  # "NEGATIVE FOR" at the end of a line, "Call if:" over its list
                last = units[later[-1]][1]
                scope_end = last if max_scope is None else min(last, end + max_scope)
            modifier = ConTextModifier(rule, start, end, None, scope_start=scope_start, scope_end=scope_end)
            per_unit[u].append(modifier)
            for k in later:
                per_unit[k].append(modifier)
        for mods in per_unit:
            if len(mods) > 1:
                mods.sort(key=lambda m: m.modifier_span)
                _update_scopes(mods)
        return per_unit

    def _later_units(self, doc: Doc, layout: "DocLayout", direction: str, u: int, end: int, scope_end: int) -> List[int]:
        """Units after ``u`` that a forward cue governs: the next one when nothing follows
        the cue in its unit; every list item when its unit ends with a colon."""
        units = layout.units
        if direction != "FORWARD" or u + 1 >= len(units):
            return []
        u_end = units[u][1]
        if scope_end >= u_end and _last_word(layout.space, doc, units[u]) == ":":
            items = []
            k = u + 1
            while k < len(units) and _is_list_item(doc, layout.space, units[k]):
                items.append(k)
                if k + 1 < len(units) and _is_bare_marker(doc, layout.space, units[k]):
                    items.append(k + 1)  # a sentence splitter cut "1." from its item
                    k += 1
                k += 1
            if items:
                return items
        return [u + 1] if _ends_unit(doc, layout.space, end, u_end) else []

    def _assign(self, target: Span, per_unit: List["_UnitModifiers"], layout: "DocLayout") -> None:
        unit_starts = layout.unit_starts
        first = max(bisect_right(unit_starts, target.start) - 1, 0)
        last = max(bisect_left(unit_starts, target.end) - 1, first)
        governing: Dict[str, List[Any]] = {}
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
                    governing.setdefault(label, []).append(modifier)
        section = layout.section_at(target.start)
        if section is not None and section.label and section.label not in governing:
            governing[section.label] = [section]
        decided = next((label for label in PRECEDENCE if label in governing), "affirmed")
        cues = [_cue(target.doc, m) for m in governing.get(decided, ())]
        ext = target._
        ext.clin_assertion = decided
        ext.clin_assertion_statuses = [label for label in PRECEDENCE if label in governing]
        ext.clin_assertion_cues = sorted(cues, key=lambda c: (c["start_char"], c["end_char"])) if len(cues) > 1 else cues
        ext.clin_section = section.name if section is not None else None

    def _governs(self, modifier, target: Span) -> bool:
        m_start, m_end = modifier.modifier_span
        if m_end <= target.start or m_start >= target.end:  # cue outside: plain ConText
            return modifier.modifies(target)
        if m_start < target.start:  # cue straddles the span start: treat as leading cue
            return True
        if _in_compound(target, m_start, m_end):  # "history" in "history-taking" names the concept
            return False
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

    @property
    def section_table(self) -> "SectionTable":
        """Section headers and the status each section gives (``assertion_sections``)."""
        if self._section_table is None:
            if self._sections is None:
                self._sections = section_data(self.lang)
            self._section_table = SectionTable(self._sections, f"{self.name}: sections")
        return self._section_table

    def _source(self) -> Dict[str, Any]:
        """What the data was built from; a saved copy is used only while this is unchanged."""
        return {"lang": self.lang, "rules": self._rules_source, "include_default_rules": self.include_default_rules}

    def _data(self) -> Dict[str, Any]:
        self.light_words  # noqa: B018  (loads them)
        self.section_table  # noqa: B018
        return {"format": 2, "source": self._source(), "light_words": self._light_words, "sections": self._sections}

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
        if isinstance(cfg.get("sections"), dict):
            self._sections, self._section_table = cfg["sections"], None

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
def _compile(nlp: Language, name: str, rules: Sequence[RuleDict], max_scope: Optional[int]) -> "CueMatcher":
    """medspaCy ConTextRules for ``rules`` and a matcher that finds their cues."""
    quiet_medspacy_loguru()
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
        from spacy.matcher import Matcher, PhraseMatcher

        self.nlp = nlp
        self.vocab = nlp.vocab
        self.phrases = PhraseMatcher(nlp.vocab, attr="LOWER")
        self.tokens = Matcher(nlp.vocab)
        self.regex: List[Tuple[int, "re.Pattern[str]"]] = []
        self.rule_map: Dict[str, Any] = {}
        self._has = {"phrases": False, "tokens": False, "regex": False}
        self._word_cache: Dict[str, List[str]] = {}
        self._sentence_initial: set = set()  # match ids of cues that must open a sentence
        self._historical: set = set()
        self._pseudo: set = set()

    def add(self, key: str, context_rule: Any, rule: RuleDict) -> None:
        self.rule_map[key] = context_rule
        if rule["category"] == "HISTORICAL":
            self._historical.add(self.vocab.strings.add(key))
        elif rule["direction"] in ("PSEUDO", "TERMINATE"):
            self._pseudo.add(self.vocab.strings.add(key))
        pattern = rule.get("pattern")
        if isinstance(pattern, str):  # medspaCy's convention: case-insensitive
            self.regex.append((self.vocab.strings.add(key), re.compile(pattern, re.IGNORECASE)))
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
                self._sentence_initial.add(self.vocab.strings.add(key))
                pattern = [head, *pattern[1:]]
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

    def __call__(
        self,
        doc: Doc,
        keep: Optional[Callable[[int, int], bool]] = None,
        text: Optional[str] = None,
        space: Optional[List[int]] = None,
    ) -> List[Tuple[int, int, int]]:
        """Cue matches ``(match_id, start, end)``, longest first where they overlap;
        ``keep`` drops sites before overlaps are resolved."""
        matches: List[Tuple[int, int, int]] = []
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
        if self._has["tokens"]:
            matches.extend(self.tokens(doc))
        if self._has["regex"]:
            matches.extend(self._regex_matches(doc, doc.text if text is None else text))
        if keep is not None:
            matches = [m for m in matches if keep(m[1], m[2])]
        if len(matches) < 2:
            return matches
        kept = _longest_first(matches)
        if self._historical and len(kept) < len(matches):
            kept = self._nested_history(matches, kept)
        return kept

    def _nested_history(self, matches, kept):
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

    def _regex_matches(self, doc: Doc, text: str) -> List[Tuple[int, int, int]]:
        """Regex cues, widened to whole tokens."""
        found = []
        starts = None
        for match_id, regex in self.regex:
            for match in regex.finditer(text):
                if match.end() <= match.start():
                    continue
                if starts is None:
                    starts = doc.to_array(IDX).tolist()
                start = bisect_right(starts, match.start()) - 1
                end = bisect_right(starts, match.end() - 1)
                if start >= 0 and end > start:
                    found.append((match_id, start, end))
        return found


def _longest_first(matches: List[Tuple[int, int, int]]) -> List[Tuple[int, int, int]]:
    """Overlapping matches resolved as medspaCy does: the longest wins, then the first."""
    ordered = sorted(matches, key=lambda m: (m[1] - m[2], m[1]))
    taken: set = set()
    kept = []
    for match in ordered:
        tokens = range(match[1], match[2])
        if not any(t in taken for t in tokens):
            taken.update(tokens)
            kept.append(match)
    kept.sort(key=lambda m: (m[1], m[2]))
    return kept


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


# Cues whose scope reaches further than this many tokens from the cue are looked up
# one by one; the others through a window, so a long unit with many cues stays linear.
_NEAR = 64


def _extent(m: Any) -> Tuple[int, int]:
    """Tokens a modifier touches: its cue and its scope."""
    return min(m.scope_span[0], m.modifier_span[0]), max(m.scope_span[1], m.modifier_span[1])


def _update_scopes(mods: List[Any]) -> None:
    """medspaCy's ``ConTextGraph.update_scopes`` (same pair order, same ``limit_scope``),
    skipping pairs whose scopes cannot overlap, so a long unit is not quadratic."""
    starts = [m.modifier_span[0] for m in mods]
    far_left = [k for k, m in enumerate(mods) if starts[k] - _extent(m)[0] > _NEAR]
    for i in range(len(mods) - 1):
        first = mods[i]
        window_end = max(i + 1, bisect_left(starts, _extent(first)[1] + _NEAR))
        others = far_left[bisect_left(far_left, window_end):]
        for j in [*range(i + 1, window_end), *others]:
            second = mods[j]
            first.limit_scope(second)
            second.limit_scope(first)


class _NoModifiers:
    """The modifiers of a unit without cues."""

    __slots__ = ()

    def near(self, start: int, end: int) -> List[Any]:
        return []


_NO_MODIFIERS = _NoModifiers()


class _UnitModifiers:
    """The modifiers of one scope unit, sorted, with a fast lookup of those near a span."""

    __slots__ = ("mods", "starts", "before", "after", "far")

    def __init__(self, mods: List[Any]) -> None:
        near, self.far = [], []
        for m in mods:
            lo, hi = _extent(m)
            start = m.modifier_span[0]
            (near if hi - start <= _NEAR and start - lo <= _NEAR else self.far).append(m)
        self.mods = near
        self.starts = [m.modifier_span[0] for m in near]
        # how far a scope reaches right of its cue start / left of its cue start
        self.before = max((_extent(m)[1] - m.modifier_span[0] for m in near), default=0)
        self.after = max((m.modifier_span[0] - _extent(m)[0] for m in near), default=0)

    def near(self, start: int, end: int) -> List[Any]:
        lo = bisect_left(self.starts, start - self.before)
        hi = bisect_right(self.starts, end + self.after)
        found = self.mods[lo:hi]
        for m in self.far:
            m_lo, m_hi = _extent(m)
            if m_lo < end and start < m_hi:
                found.append(m)
        return found


_LIST_BULLETS = {"-", "*", "•", "·", "–", "+"}


def _last_word(space: List[int], doc: Doc, unit: Tuple[int, int]) -> str:
    for i in range(unit[1] - 1, unit[0] - 1, -1):
        if not space[i]:
            return doc[i].text
    return ""


def _is_list_item(doc: Doc, space: List[int], unit: Tuple[int, int]) -> bool:
    """A unit that opens with a bullet or an item number ("- fever", "2. rash")."""
    words = [i for i in range(unit[0], min(unit[1], unit[0] + 4)) if not space[i]]
    if not words:
        return False
    first = doc[words[0]].text
    if first in _LIST_BULLETS:
        return True
    return first.rstrip(".)").isdigit() and (first[-1] in ".)" or len(words) > 1 and doc[words[1]].text in ".)")


def _is_bare_marker(doc: Doc, space: List[int], unit: Tuple[int, int]) -> bool:
    return all(space[i] or doc[i].is_punct or doc[i].is_digit for i in range(*unit))


def _ends_unit(doc: Doc, space: List[int], cue_end: int, unit_end: int) -> bool:
    """Nothing follows the cue in its unit but space, or the period of an abbreviated
    cue that a sentence splitter took for a full stop ("V.a. Pneumonie")."""
    rest = [i for i in range(cue_end, unit_end) if not space[i]]
    if not rest:
        return True
    if len(rest) != 1:
        return False
    word = doc[rest[0]].text
    return word == ":" or (word == "." and "." in doc[cue_end - 1].text)


def _cue(doc: Doc, modifier) -> Dict[str, Any]:
    if isinstance(modifier, Section):
        return modifier.cue()
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


def _in_compound(target: Span, start: int, end: int) -> bool:
    """A cue glued by a hyphen to a word of the concept is part of its name."""
    doc = target.doc
    after = end + 1 < target.end and doc[end].text == "-" and not doc[end - 1].whitespace_
    before = start - 2 >= target.start and doc[start - 1].text == "-" and not doc[start - 2].whitespace_
    return after or before


# -- sections ------------------------------------------------------------------
_NOT_LABEL = re.compile(r"^[\s\d.)(\-*•#]+|[\s:.\-]+$")
_SPACES = re.compile(r"\s+")


class SectionTable:
    """Section headers of one language and the status a section gives what it holds.

    Read from ``resources/<lang>/assertion_sections.json``: ``{"sections": {name:
    {"status": label or null, "headers": [...]}}}``; ``name`` follows medspaCy's
    section categories, so either source of sections records the same names.
    """

    def __init__(self, sections: Dict[str, Dict[str, Any]], origin: str) -> None:
        self.by_header: Dict[str, Tuple[str, Optional[str]]] = {}
        self.status: Dict[str, Optional[str]] = {}
        for name, entry in sections.items():
            status = entry.get("status")
            if status is not None and status not in PRECEDENCE:
                raise ContextRulesError(f"{origin}: section '{name}': unknown status {status!r}")
            self.status[name] = status
            for header in entry.get("headers", []):
                self.by_header[normalize_header(header)] = (name, status)
        words = sorted(self.by_header, key=len, reverse=True)
        alternatives = "|".join(re.escape(w).replace("\\ ", r"\s+") for w in words) or "(?!)"
        # a known header alone on its line, with or without a colon
        self.line_header = re.compile(rf"(?im)^[ \t]*(?:{alternatives})[ \t]*:?[ \t]*$")

    @classmethod
    def from_resource(cls, lang: str) -> "SectionTable":
        return cls(section_data(lang), f"{lang}/{SECTIONS_RESOURCE}.json")

    def lookup(self, label: str) -> Tuple[Optional[str], Optional[str]]:
        """(section name, status) of a header label; (None, None) when unknown."""
        key = normalize_header(label)
        if key in self.by_header:
            return self.by_header[key]
        for known, value in self.by_header.items():  # "past medical history (reviewed)"
            if key.startswith(known) and not key[len(known)].isalnum():
                return value
        return None, None


def normalize_header(label: str) -> str:
    return _SPACES.sub(" ", _NOT_LABEL.sub("", label.lower()))


def section_data(lang: str) -> Dict[str, Dict[str, Any]]:
    """The ``sections`` object of ``resources/<lang>/assertion_sections.json``, checked."""
    data = load_json_resource(lang, SECTIONS_RESOURCE)
    if not isinstance(data, dict) or not isinstance(data.get("sections"), dict):
        raise ContextRulesError(f"{lang}/{SECTIONS_RESOURCE}.json: expected an object with a 'sections' object")
    return data["sections"]


@lru_cache(maxsize=None)
def section_table(lang: str) -> SectionTable:
    return SectionTable.from_resource(lang)


class Section:
    """A header and the body it heads, in tokens; ``label`` is the status it gives."""

    __slots__ = ("doc", "head_start", "head_end", "end", "name", "label")

    def __init__(self, doc: Doc, head_start: int, head_end: int, end: int, name: Optional[str], label: Optional[str]):
        self.doc, self.head_start, self.head_end, self.end = doc, head_start, head_end, end
        self.name, self.label = name, label

    def cue(self) -> Dict[str, Any]:
        end = self.head_end
        while end > self.head_start + 1 and (self.doc[end - 1].is_space or self.doc[end - 1].text == ":"):
            end -= 1
        header = self.doc[self.head_start:end]
        return {
            "text": header.text,
            "category": LABEL_CATEGORY[self.label],
            "direction": "SECTION",
            "literal": self.name,
            "start_char": header.start_char,
            "end_char": header.end_char,
        }


class DocLayout:
    """Where a doc's sentences, headers and sections are, in tokens.

    Sections come from medspaCy's sectionizer when it has run (``doc._.sections``),
    else from our header detection. Scope units are sentences (the whole doc when
    none are set), cut at hard line breaks and before headers; header words are never
    cues, and no cue spans two units.
    """

    def __init__(self, doc: Doc, table: SectionTable, text: Optional[str] = None) -> None:
        n = len(doc)
        self.doc = doc
        self.text = doc.text if text is None else text
        rows = doc.to_array([SENT_START, IS_SPACE]).tolist()
        sent = [row[0] for row in rows]  # 1 start, -1 (as unsigned) not, 0 unset
        self.space = [row[1] for row in rows]
        self.has_sents = n > 1 and any(sent[1:])
        starts = {i for i, value in enumerate(sent) if value == 1} if self.has_sents else set()
        starts.add(0)
        self.idx: Optional[List[int]] = None
        # header label token ranges (never cues) and sections
        self.labels: List[Tuple[int, int]] = []
        self.sections: List[Section] = []
        sectionized = Doc.has_extension("sections") and doc._.sections
        if sectionized:
            self._from_sectionizer(doc, table, starts)
        else:
            self._from_headers(doc, table, starts)
        ordered = sorted(s for s in starts if 0 <= s < n)
        self.unit_starts = ordered
        self.units = [(s, ordered[k + 1] if k + 1 < len(ordered) else n) for k, s in enumerate(ordered)]
        self.label_starts = [a for a, _ in self.labels]
        self.section_starts = [sec.head_start for sec in self.sections]

    def _stands_as_header(self, head: int, body: int) -> bool:
        """A title opens its line or ends with a colon."""
        doc, text = self.doc, self.text
        start = doc[head].idx
        if not text[text.rfind("\n", 0, start) + 1:start].strip():
            return True
        title_end = doc[body - 1].idx + len(doc[body - 1])
        return text[title_end - 1:title_end] == ":" or text[title_end:title_end + 1] == ":"

    def _token_at(self, char: int) -> int:
        """Index of the first token starting at or after ``char``."""
        if self.idx is None:
            self.idx = self.doc.to_array(IDX).tolist()
        return bisect_left(self.idx, char)

    def _from_sectionizer(self, doc: Doc, table: SectionTable, starts: set) -> None:
        for section in doc._.sections:
            head, body, end = section.title_start, section.body_start, section.body_end
            if head is not None and body is not None and body > head and not self._stands_as_header(head, body):
                continue  # "No known drug allergies." names no section
            name = section.category
            label = SECTIONIZER_STATUS.get(name) if name else None
            if head is not None and body is not None and body > head:
                self.labels.append((head, body))
                starts.update((head, body))
            starts.add(body)
            if name:
                self.sections.append(Section(doc, head if head is not None else body, body, end, name, label))
        self.labels.sort()
        self.sections.sort(key=lambda sec: sec.head_start)

    def _from_headers(self, doc: Doc, table: SectionTable, starts: set) -> None:
        text = self.text
        for _, b_end in hard_breaks(text) if "\n" in text else ():
            starts.add(self._token_at(b_end))
        headers = _find_headers(text, table)
        for k, (head, label_end, body) in enumerate(headers):
            head_tok, label_tok = self._token_at(head), self._token_at(label_end)
            name, label = table.lookup(text[head:label_end])
            if name is None and label_tok > head_tok and doc[label_tok - 1].is_stop:
                continue  # "Call if:" opens a list; a label ends in a noun
            starts.add(head_tok)
            if name is None:
                continue  # an unknown label ends scope, but "Denies:" still negates what follows
            if label_tok > head_tok:
                self.labels.append((head_tok, label_tok))
            end = headers[k + 1][0] if k + 1 < len(headers) else len(text)
            end = _body_end(text, body, end)
            self.sections.append(Section(doc, head_tok, label_tok, self._token_at(end), name, label))

    def is_cue_site(self, start: int, end: int) -> bool:
        """A cue lies within one scope unit and outside every header label."""
        starts = self.unit_starts
        if bisect_right(starts, start) != bisect_right(starts, end - 1):
            return False
        j = bisect_right(self.label_starts, end - 1) - 1
        return j < 0 or self.labels[j][1] <= start

    def section_at(self, token: int) -> Optional[Section]:
        i = bisect_right(self.section_starts, token) - 1
        if i >= 0:
            section = self.sections[i]
            if section.head_end <= token < section.end:
                return section
        return None


def _find_headers(text: str, table: SectionTable) -> List[Tuple[int, int, int]]:
    """(start, label end, body start) char offsets of the headers and form labels in ``text``."""
    found: List[Tuple[int, int, int]] = []
    regexes = [_UPPER_HEADER, _LINE_LABEL] if ":" in text else []
    if "\n" in text:
        regexes.append(table.line_header)
    for regex in regexes:
        for match in regex.finditer(text):
            head, label_end = match.start(), match.end()
            while head < label_end and text[head].isspace():
                head += 1
            while label_end > head and (text[label_end - 1].isspace() or text[label_end - 1] == ":"):
                label_end -= 1
            if label_end > head:
                found.append((head, label_end, match.end()))
    # of labels ending at the same colon, the shortest: "No fever IMPRESSION:" -> "IMPRESSION"
    shortest: Dict[int, Tuple[int, int, int]] = {}
    for header in found:
        if header[2] not in shortest or header[0] > shortest[header[2]][0]:
            shortest[header[2]] = header
    kept: List[Tuple[int, int, int]] = []
    for header in sorted(shortest.values()):
        if kept and header[0] < kept[-1][2]:
            continue
        kept.append(header)
    return kept


def _body_end(text: str, body: int, end: int) -> int:
    """A section ends at the next header, or at a blank line once its body has begun."""
    for match in _PARAGRAPH.finditer(text, body, end):
        if text[body:match.start()].strip():
            return match.start()
    return end


def scope_units(doc: Doc, has_sents: Optional[bool] = None) -> List[Tuple[int, int]]:
    """Token ranges that bound every cue's scope, covering the doc without gaps.

    Sentences (or the whole doc when none are set), cut at hard line breaks and
    before section headers / form labels.
    """
    return DocLayout(doc, section_table("en")).units
