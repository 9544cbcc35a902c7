"""ConText rules: the schema (medspaCy's JSON format), reading, merging, the registered reader.

A rule is a dict in medspaCy's format (``literal``, ``category``, ``direction``, optional
``pattern``, ``max_scope``, ...). Ours ship per language in
``resources/<lang>/context_rules.json``; for English, medspaCy's own default rules can go
underneath them (a rule of ours replaces a default with the same literal).
"""
import copy
import re
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from spacy.util import registry

from ..logs import quiet_medspacy_loguru
from ..resources_io import ResourceError, load_json_resource, read_json_file

RULES_RESOURCE = "context_rules"

RuleDict = Dict[str, Any]
RulesSource = Union[None, str, Sequence[RuleDict]]

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
DIRECTIONS = ("FORWARD", "BACKWARD", "BIDIRECTIONAL", "TERMINATE", "PSEUDO")
RULE_KEYS = {
    "literal", "category", "direction", "pattern", "metadata",
    "allowed_types", "excluded_types", "max_targets", "max_scope",
}


# rule-metadata switches read at match time (besides ``governs_list``, see :mod:`.lists`): on a
# TERMINATE rule, the categories whose scopes it leaves uncut; on a cue, the literals of the
# terminators its scope passes; a cue that speaks only of the word it is glued to; a TERMINATE
# rule that ends only what reads forward over it, never the backward reach of a cue after it
SPARES = "spares"
PASSES = "passes"
QUALIFIES_WORD = "qualifies_word"
AFTER_CUE_ONLY = "after_cue_only"


def rule_metadata(rule: Any, key: str) -> Any:
    """``key`` of a rule's metadata (None when absent or not a mapping): the one place that reads
    the per-rule switches (``inside_span``, ``governs_list``, ``spares``, ``passes``, ...)."""
    metadata = getattr(rule, "metadata", None)
    return metadata.get(key) if isinstance(metadata, dict) else None


class ContextRulesError(ResourceError):
    """A context rules file or rule is malformed."""


def validate_rules(data: Any, origin: str) -> List[RuleDict]:
    """Check rules in medspaCy's JSON format; errors name ``origin`` and the rule."""
    if isinstance(data, dict):
        if "context_rules" not in data:
            raise ContextRulesError(f"{origin}: expected an object with a 'context_rules' list")
        data = data["context_rules"]
    if isinstance(data, tuple):
        data = list(data)
    if not isinstance(data, list):
        raise ContextRulesError(f"{origin}: 'context_rules' must be a list of rule objects")
    return [_checked_rule(rule, f"{origin}: rule #{i}") for i, rule in enumerate(data)]


def _checked_rule(rule: Any, where: str) -> RuleDict:
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
    clean = copy.deepcopy(rule)
    clean["direction"] = direction
    clean["category"] = rule["category"].upper()
    return clean


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
    # medspaCy has no API for the path of its rule files; they sit beside the package
    root = Path(medspacy.__file__).resolve().parents[1] / "resources" / lang / "context_rules.json"
    if not root.is_file():
        return []
    return validate_rules(read_json_file(root, "medspaCy rules"), f"medspacy:{lang}/context_rules.json")


def merge_rules(defaults: Sequence[RuleDict], ours: Sequence[RuleDict]) -> List[RuleDict]:
    """``defaults`` followed by ``ours``; a rule of ours replaces defaults with the same literal."""
    redefined = {r["literal"].strip().lower() for r in ours}
    kept = [r for r in defaults if r["literal"].strip().lower() not in redefined]
    return [copy.deepcopy(r) for r in kept] + [copy.deepcopy(r) for r in ours]


def default_rules(lang: str, include_default_rules: bool) -> List[RuleDict]:
    """medspaCy's rules that go under ours: its English rules, for English only."""
    return medspacy_default_rules("en") if include_default_rules and lang == "en" else []


def build_rules(lang: str, source: RulesSource, include_default_rules: bool, origin: str) -> List[RuleDict]:
    """Effective rules: ``source`` (a rules file, inline rules, or None for our shipped
    rules of ``lang``) over medspaCy's defaults when ``include_default_rules``."""
    if isinstance(source, (list, tuple)):
        ours = validate_rules(list(source), origin)
    else:
        ours = read_rules_file(source) if source else shipped_rules(lang)
    return merge_rules(default_rules(lang, include_default_rules), ours)


@registry.misc("spacy_clinchunk.ContextRules.v1")
def context_rules_v1(
    lang: str = "en", path: Optional[str] = None, include_default_rules: bool = True
) -> List[RuleDict]:
    """Effective rules, usable in config: ``@misc = "spacy_clinchunk.ContextRules.v1"``.

    ``path`` (a medspaCy rules JSON) replaces our shipped rules for ``lang``;
    ``include_default_rules`` adds medspaCy's English defaults (English only).
    """
    return build_rules(lang, path, include_default_rules, "ContextRules.v1")
