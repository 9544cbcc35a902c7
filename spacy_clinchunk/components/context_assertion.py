"""clin_context_assertion: ConText assertion status for chunks and any span group.

medspaCy's ConText is the engine; :mod:`spacy_clinchunk.assertion` holds the machinery
(rules, cues and scopes, sections, the layout of a note). This module is the spaCy face of
it: the factory, the ``Pipe`` and its data.

* Settings (``span_keys``, ``language``, ``include_default_rules``, ``max_scope``,
  ``extension_prefix``, and the old ``rules``) come from the config; the factory signature
  holds their types and ranges, ``default_config`` their defaults.
* Data (the ConText rules, the section table, the light words) comes through
  :meth:`ContextAssertion.initialize` (``[initialize.components.clin_context_assertion]``),
  or from the package for the pipeline's language on first use, and is carried by
  ``to_disk``/``from_disk``/bytes.

Heavy imports (medspaCy pulls in torch and PyRuSH) happen at ``initialize`` or on the
first doc, never in the constructor.
"""

import copy
import json
from typing import Any, Dict, Iterable, List, Optional, Union

import srsly
from spacy.language import Language
from spacy.pipeline import Pipe
from spacy.tokens import Doc, Span
from spacy.util import ensure_path

from .. import attrs
from ..assertion.cues import compile_rules
from ..assertion.extensions import ExtensionNames
from ..assertion.rules import (  # noqa: F401  (PRECEDENCE ... shipped_rules: the public names of 0.1)
    PRECEDENCE,
    ContextRulesError,
    RuleDict,
    build_rules,
    context_rules_v1,
    merge_rules,
    read_rules_file,
    shipped_rules,
    validate_rules,
)
from ..assertion.sections import SectionData, SectionTable, check_sections, section_data
from ..assertion.status import AssertionEngine
from ..resources_io import load_word_list, resolve_language, resolve_override
from .base import require_extra
from .settings import PositiveInt, SettingError

try:  # spaCy validates with pydantic's v1 API under both pydantic generations
    from pydantic.v1 import StrictBool, constr
except ImportError:  # pragma: no cover - pydantic 1
    from pydantic import StrictBool, constr  # type: ignore[no-redef]

FACTORY = "clin_context_assertion"
LIGHT_WORDS_RESOURCE = "assertion_light_words"
RULES_FILE = "context_rules.json"
CFG_FILE = "cfg.json"
DATA_FORMAT = 2  # cfg.json of format 1 held settings; only its language counts
ENTS = "ents"

# the start of a Python identifier: extension names are attributes of ``Span._``
ExtensionPrefix = constr(strict=True, regex=r"^[A-Za-z_][A-Za-z0-9_]*$")


@Language.factory(
    FACTORY,
    default_config={
        "span_keys": [attrs.CHUNKS_KEY],
        "language": None,
        "rules": None,
        "include_default_rules": True,
        "max_scope": None,
        "extension_prefix": attrs.PREFIX,
    },
    assigns=[f"span._.{attrs.ext(field)}" for field in ("assertion", "assertion_cues", "assertion_statuses", "section")],
)
def make_context_assertion(
    nlp: Language,
    name: str,
    span_keys: List[str],
    language: Optional[str],
    rules: Optional[Union[str, List[Dict[str, Any]]]],
    include_default_rules: StrictBool,
    max_scope: Optional[PositiveInt],
    extension_prefix: ExtensionPrefix,
):
    require_extra(nlp, "context")
    return ContextAssertion(
        nlp,
        name,
        span_keys=span_keys,
        language=language,
        rules=rules,
        include_default_rules=include_default_rules,
        max_scope=max_scope,
        extension_prefix=extension_prefix,
    )


class ContextAssertion(Pipe):
    """Assertion status (``Span._.clin_assertion`` ...) for every span of the named groups.

    ``rules`` is the setting of 0.1: a rules file or inline rules to use instead of the
    shipped ones when :meth:`initialize` is given none.
    """

    def __init__(
        self,
        nlp: Language,
        name: str,
        *,
        span_keys: List[str],
        language: Optional[str],
        rules: Optional[Union[str, List[RuleDict]]],
        include_default_rules: bool,
        max_scope: Optional[int],
        extension_prefix: str,
    ) -> None:
        self.nlp = nlp
        self.name = name
        self.span_keys = list(span_keys)
        self.lang = resolve_language(language or nlp.lang, FACTORY)
        self.include_default_rules = include_default_rules
        self.max_scope = max_scope
        self.extension_prefix = extension_prefix
        self.extension_names = ExtensionNames(extension_prefix)
        taken = self.extension_names.read_only()
        if taken:
            raise SettingError(
                f"{name}: extension_prefix: Span._.{taken[0]} is another package's read-only attribute; "
                "choose another extension_prefix"
            )
        self.extension_names.register()
        if isinstance(rules, (list, tuple)):  # inline rules are checked at once (files on first use)
            validate_rules(list(rules), f"{name}: inline rules")
        self._rules_setting = copy.deepcopy(rules)
        # data: None until initialize, from_disk or first use supplies it
        self._rules: Optional[List[RuleDict]] = None
        self._light_words: Optional[List[str]] = None
        self._sections: Optional[SectionData] = None
        self._engine: Optional[AssertionEngine] = None

    # -- data ------------------------------------------------------------------
    def initialize(
        self,
        get_examples: Any = None,
        *,
        nlp: Optional[Language] = None,
        rules: Optional[Union[List[Dict[str, Any]], Dict[str, Any]]] = None,
        sections: Optional[Dict[str, Any]] = None,
        light_words: Optional[Union[List[str], str]] = None,
    ) -> None:
        """Set the data and compile the rules (medspaCy is imported here).

        rules: ConText rules in medspaCy's format (e.g. from ``spacy_clinchunk.ContextRules.v1``),
            used as they are; default: the shipped rules of the language (or the ``rules``
            setting) over medspaCy's English rules when ``include_default_rules``.
        sections: a section table (``spacy_clinchunk.AssertionSections.v1``); default: the
            shipped ``assertion_sections`` of the language.
        light_words: words that may precede a cue inside a span (a list, a JSON file, or
            ``spacy_clinchunk.ResourceList.v1``); default: the shipped ``assertion_light_words``.
        """
        self._rules = None if rules is None else validate_rules(rules, f"{self.name}: initialize rules")
        self._light_words = None if light_words is None else resolve_override(light_words, LIGHT_WORDS_RESOURCE)
        self._sections = None if sections is None else check_sections(sections, f"{self.name}: initialize sections")
        self._engine = None
        self.engine  # noqa: B018  (loads the defaults of what was not given, compiles the rules)

    @property
    def rules(self) -> List[RuleDict]:
        """The effective rules (medspaCy JSON format); a copy."""
        return copy.deepcopy(self._effective_rules())

    def add_rules(self, rules: Iterable[RuleDict]) -> None:
        """Add rules (medspaCy dicts); a rule replaces existing ones with the same literal.
        (``initialize`` resets the rules: add them after it.)"""
        new = validate_rules(list(rules), f"{self.name}: add_rules")
        self._rules = merge_rules(self._effective_rules(), new)
        self._engine = None

    @property
    def light_words(self) -> List[str]:
        """Words that may precede a cue inside a span (``assertion_light_words``)."""
        if self._light_words is None:
            self._light_words = load_word_list(self.lang, LIGHT_WORDS_RESOURCE)
        return self._light_words

    @property
    def sections(self) -> SectionData:
        """Section headers and the status each section gives (``assertion_sections``)."""
        if self._sections is None:
            self._sections = section_data(self.lang)
        return self._sections

    @property
    def engine(self) -> AssertionEngine:
        """The compiled data; built on first use when ``initialize`` was never called."""
        if self._engine is None:
            matcher = compile_rules(self.nlp, self.name, self._effective_rules(), self.max_scope)
            light = {w.lower() for w in self.light_words}
            self._engine = AssertionEngine(matcher, SectionTable(self.sections), light, self.max_scope)
        return self._engine

    def _effective_rules(self) -> List[RuleDict]:
        if self._rules is None:
            origin = f"{self.name}: inline rules"
            self._rules = build_rules(self.lang, self._rules_setting, self.include_default_rules, origin)
        return self._rules

    # -- processing ------------------------------------------------------------
    def __call__(self, doc: Doc) -> Doc:
        groups = [self._targets(doc, key) for key in self.span_keys]
        if not any(groups) or not len(doc):
            return doc
        engine = self.engine  # a data error is one of configuration, not of this doc: raised
        error_handler = self.get_error_handler()
        try:
            for span, result in engine.annotate(doc, groups):
                self.extension_names.write(span, result)
            self._declare_names(doc)
        except Exception as err:
            error_handler(self.name, self, [doc], err)
        return doc

    def _declare_names(self, doc: Doc) -> None:
        """Under another prefix, each annotated group says where its values are (records ask it)."""
        if self.extension_names.prefix == attrs.PREFIX:
            return
        for key in self.span_keys:
            if key != ENTS and key in doc.spans:
                attrs.declare_field_names(doc.spans[key], self.extension_names.fields)

    def _targets(self, doc: Doc, key: str) -> List[Span]:
        if key == ENTS:
            return list(doc.ents)
        if key in doc.spans:
            return list(doc.spans[key])
        return []

    # -- serialization: data only (rules, light words, sections); settings stay with the config
    def _source(self) -> Dict[str, Any]:
        """What the default data is built from; a saved copy is used only while this is unchanged."""
        return {"lang": self.lang, "rules": self._rules_setting, "include_default_rules": self.include_default_rules}

    def _cfg(self) -> Dict[str, Any]:
        return {"format": DATA_FORMAT, "source": self._source(), "light_words": self.light_words, "sections": self.sections}

    def _load(self, cfg: Dict[str, Any], rules: Any, origin: str) -> None:
        source = cfg.get("source") or {  # format 1 held settings; only its language counts
            "lang": cfg.get("lang", self.lang),
            "rules": self._rules_setting,
            "include_default_rules": cfg.get("include_default_rules", self.include_default_rules),
        }
        if source != json.loads(json.dumps(self._source())):
            return  # the config asks for other data: built from the package on first use
        if rules is not None:
            self._rules = validate_rules(rules, origin)
        if cfg.get("light_words") is not None:
            self._light_words = resolve_override(cfg["light_words"], f"{origin}: light_words")
        if cfg.get("sections") is not None:
            self._sections = check_sections(cfg["sections"], f"{origin}: sections")
        self._engine = None

    def to_bytes(self, *, exclude: Iterable[str] = tuple()) -> bytes:
        return srsly.json_dumps({"cfg": self._cfg(), "context_rules": self._effective_rules()}).encode("utf-8")

    def from_bytes(self, bytes_data: bytes, *, exclude: Iterable[str] = tuple()) -> "ContextAssertion":
        data = srsly.json_loads(bytes_data)
        self._load(data.get("cfg", {}), data.get("context_rules"), f"{self.name}: bytes")
        return self

    def to_disk(self, path: Any, *, exclude: Iterable[str] = tuple()) -> None:
        path = ensure_path(path)
        path.mkdir(parents=True, exist_ok=True)
        srsly.write_json(path / CFG_FILE, self._cfg())
        srsly.write_json(path / RULES_FILE, {"context_rules": self._effective_rules()})

    def from_disk(self, path: Any, *, exclude: Iterable[str] = tuple()) -> "ContextAssertion":
        path = ensure_path(path)
        cfg = srsly.read_json(path / CFG_FILE) if (path / CFG_FILE).exists() else {}
        rules = srsly.read_json(path / RULES_FILE) if (path / RULES_FILE).exists() else None
        self._load(cfg, rules, str(path / RULES_FILE))
        return self
