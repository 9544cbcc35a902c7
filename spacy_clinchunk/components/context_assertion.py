"""clin_context_assertion: ConText assertion status for chunks and any span group.

medspaCy's ConText is the engine; :mod:`spacy_clinchunk.assertion` holds the machinery
(rules, cues and scopes, sections, the layout of a note). This module is the spaCy face of
it: the factory, the ``Pipe`` and its data.

* Settings (``span_keys``, ``language``, ``include_default_rules``, ``max_scope``,
  ``extension_prefix``, ``sections_key``, and the old ``rules``) come from the config; the factory signature
  holds their types and ranges, ``default_config`` their defaults.
* Data (the ConText rules, the section table, the light words) comes through
  :meth:`ContextAssertion.initialize` (``[initialize.components.clin_context_assertion]``),
  or from the package for the pipeline's language on first use, and is carried by
  ``to_disk``/``from_disk``/bytes.
* ``language``: ``"auto"`` (the default) detects each document's language
  (:mod:`spacy_clinchunk.assertion.language`), records it in ``Doc._.clin_language`` and
  applies that language's data; a document whose language is unsure or unsupported gets
  the rules of the pipeline's language (``nlp.lang``) when it is one we ship, else English,
  and the pipe warns once. A code ("es") forces that language; ``null`` is
  the pipeline's ``nlp.lang`` (the meaning it had in 0.1). With ``"auto"`` the data of all
  languages is saved and loaded, so a saved pipeline needs no package data.
* ``sections_key`` (``clin_sections``): the section span group, one span per section labelled with
  its category. A doc that has it keeps it and its sections are the ones that give statuses; a doc
  without it gets the sections found here written to it. ``null``: neither read nor written.

Heavy imports (medspaCy pulls in torch and PyRuSH) happen at ``initialize`` or on the
first doc, never in the constructor.
"""

import copy
import json
import warnings
from typing import Any, Callable, Dict, Iterable, List, Optional, Union

from spacy.language import Language
from spacy.pipeline import Pipe
from spacy.tokens import Doc, Span
from spacy.util import ensure_path

from .. import attrs
from ..assertion.cues import alternative_list_guard, compile_rules
from ..assertion.extensions import ExtensionNames
from ..assertion.language import detect_language, foreign_stop_words, recorded_language
from ..assertion.layout import LOWERCASE_CONTINUES, abbreviation_set
from ..assertion.lists import list_grammar
from ..assertion.rules import RuleDict, build_rules, merge_rules, validate_rules
from ..assertion.sections import SectionData, SectionTable, check_sections, section_data
from ..assertion.status import AssertionEngine
from ..assertion.word_lists import (ABBREVIATIONS_RESOURCE, ATTRIBUTIVE_RESOURCE, BREAKS_RESOURCE, JOINERS_RESOURCE,
                                    LIGHT_WORDS_RESOURCE, LIST_JOINERS_RESOURCE, SAVED_KEYS, WORD_LISTS)
from ..groundtruth.assertion_score import ASSERTION_SCORE_WEIGHTS
from ..resources_io import (
    FALLBACK_LANGUAGE,
    SUPPORTED_LANGUAGES,
    load_word_list,
    resolve_language,
    resolve_override,
)
from .base import factory_settings, json_from_bytes, json_from_disk, json_to_bytes, json_to_disk, require_extra
from .settings import PositiveInt, SettingError

try:  # spaCy validates with pydantic's v1 API under both pydantic generations
    from pydantic.v1 import StrictBool, constr
except ImportError:  # pragma: no cover - pydantic 1
    from pydantic import StrictBool, constr  # type: ignore[no-redef]

FACTORY = "clin_context_assertion"
RULES_FILE = "context_rules.json"
CFG_FILE = "cfg.json"
DATA_FORMAT = 2  # of cfg.json: the data of the main language and the source it was built from
AUTO_DATA_FORMAT = 3  # format 2 plus the data of the other languages ("languages")
AUTO = "auto"
ENTS = "ents"
_LANGUAGE, _LANGUAGE_SCORE = attrs.ext("language"), attrs.ext("language_score")  # Doc._ names

# the start of a Python identifier: extension names are attributes of ``Span._``
ExtensionPrefix = constr(strict=True, regex=r"^[A-Za-z_][A-Za-z0-9_]*$")


@Language.factory(
    FACTORY,
    default_config={
        "span_keys": [attrs.CHUNKS_KEY],
        "language": AUTO,
        "rules": None,
        "include_default_rules": True,
        "max_scope": None,
        "extension_prefix": attrs.PREFIX,
        "sections_key": attrs.SECTIONS_KEY,
        "scorer": {"@scorers": "spacy_clinchunk.AssertionScorer.v1"},
    },
    default_score_weights=ASSERTION_SCORE_WEIGHTS,
    assigns=[f"span._.{attrs.ext(field)}" for field in ("assertion", "assertion_cues", "assertion_statuses", "section")]
    + ["doc.spans"],
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
    sections_key: Optional[str],
    scorer: Optional[Callable],
):
    settings = factory_settings(locals())
    require_extra(nlp, "context")
    return ContextAssertion(nlp, name, **settings)


class ContextAssertion(Pipe):
    """Assertion status (``Span._.clin_assertion`` ...) for every span of the named groups.

    ``rules`` is the setting of 0.1: a rules file or inline rules to use instead of the
    shipped ones when :meth:`initialize` is given none. ``lang`` is the language whose data
    the properties (``rules``, ``sections`` ...) show: the configured one, or with
    ``"auto"`` the fallback (English); ``languages`` are all the languages it may apply.
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
        sections_key: Optional[str] = attrs.SECTIONS_KEY,
        scorer: Optional[Callable] = None,
    ) -> None:
        self.nlp = nlp
        self.scorer = scorer
        self.sections_key = sections_key
        self.name = name
        self.span_keys = list(span_keys)
        self.auto = language == AUTO
        self.lang = FALLBACK_LANGUAGE if self.auto else resolve_language(language or nlp.lang, FACTORY)
        self.languages = tuple(SUPPORTED_LANGUAGES) if self.auto else (self.lang,)
        # an unsure document: the pipeline's own language is the best guess left (a short
        # Dutch line in a spacy.blank("nl") pipeline is Dutch), English when it is not shipped
        self.unsure_lang = nlp.lang if self.auto and nlp.lang in self.languages else self.lang
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
        # data per language: absent until initialize, from_disk or first use supplies it
        self._rules: Dict[str, List[RuleDict]] = {}
        self._lists: Dict[str, Dict[str, List[str]]] = {name: {} for name in WORD_LISTS}  # list -> lang -> words
        self._sections: Dict[str, SectionData] = {}
        self._engines: Dict[str, AssertionEngine] = {}
        self._warned_unsure = False

    # -- data ------------------------------------------------------------------
    def initialize(
        self,
        get_examples: Any = None,
        *,
        nlp: Optional[Language] = None,
        rules: Optional[Union[List[Dict[str, Any]], Dict[str, Any]]] = None,
        sections: Optional[Dict[str, Any]] = None,
        light_words: Optional[Union[List[str], str]] = None,
        abbreviations: Optional[Union[List[str], str]] = None,
        attributive_abbreviations: Optional[Union[List[str], str]] = None,
        alternative_joiners: Optional[Union[List[str], str]] = None,
        alternative_breaks: Optional[Union[List[str], str]] = None,
        list_joiners: Optional[Union[List[str], str]] = None,
    ) -> None:
        """Set the data and compile the rules (medspaCy is imported here).

        rules: ConText rules in medspaCy's format (e.g. from ``spacy_clinchunk.ContextRules.v1``),
            used as they are; default: the shipped rules of the language (or the ``rules``
            setting) over medspaCy's English rules when ``include_default_rules``.
        sections: a section table (``spacy_clinchunk.AssertionSections.v1``); default: the
            shipped ``assertion_sections`` of the language.
        light_words: words that may precede a cue inside a span (a list, a JSON file, or
            ``spacy_clinchunk.ResourceList.v1``); default: the shipped ``assertion_light_words``.
        abbreviations: words ending in a period that ends no sentence ("bds.", "Pat."): a
            sentence start after one, before a lower-case word, does not cut a cue's scope
            ("Pupillen bds. isokor"); default: the shipped ``abbreviations`` of the language.
        attributive_abbreviations: abbreviations that stand before their noun ("path.", "Dr."):
            a sentence start after one ends no scope before a capitalised word either ("keine
            path. Geräusche"); default: the shipped ``attributive_abbreviations``.
        alternative_joiners: words that make a list one list of alternatives ("or", "nor"): the
            rules whose metadata sets ``spares_alternative_lists`` (a comma before a graded item)
            cut nothing in a list that goes on to one before the clause ends ("denies fever,
            chills, increased pain, weakness, or rash"); default: the shipped list; empty: no guard.
        alternative_breaks: words before which such a list has ended ("and", "but", "which");
            default: the shipped ``alternative_breaks``.
        list_joiners: words that join the items of a list ("and", "und"): a rule whose metadata
            sets ``governs_list`` governs the whole list its short scope ends in ("Na, K, Cl, Ca,
            CRP unauff."); default: the shipped ``coordination_joiners`` of the language.

        With ``language = "auto"`` what is given applies to every language, and the data of
        every language is loaded here; each language's rules compile on its first document.
        """
        given_rules = None if rules is None else validate_rules(rules, f"{self.name}: initialize rules")
        given_sections = None if sections is None else check_sections(sections, f"{self.name}: initialize sections")
        given_lists = {name: resolve_override(value, name) for name, value in zip(
            WORD_LISTS, (light_words, abbreviations, attributive_abbreviations, alternative_joiners,
                         alternative_breaks, list_joiners)) if value is not None}
        self._rules, self._sections, self._engines = {}, {}, {}
        self._lists = {name: {} for name in WORD_LISTS}
        for lang in self.languages:
            if given_rules is not None:
                self._rules[lang] = copy.deepcopy(given_rules)
            if given_sections is not None:
                self._sections[lang] = copy.deepcopy(given_sections)
            for name in WORD_LISTS:
                if name in given_lists:
                    self._lists[name][lang] = list(given_lists[name])
                self.word_list(name, lang)
            self._effective_rules(lang)
            self.sections_for(lang)
        self.engine  # noqa: B018  (compiles the rules of the main language)

    @property
    def rules(self) -> List[RuleDict]:
        """The effective rules (medspaCy JSON format); a copy."""
        return copy.deepcopy(self._effective_rules())

    def add_rules(self, rules: Iterable[RuleDict]) -> None:
        """Add rules (medspaCy dicts); a rule replaces existing ones with the same literal.
        (``initialize`` resets the rules: add them after it.)"""
        new = validate_rules(list(rules), f"{self.name}: add_rules")
        for lang in self.languages:  # with "auto", a rule of the user holds in every language
            self._rules[lang] = merge_rules(self._effective_rules(lang), new)
        self._engines = {}

    @property
    def light_words(self) -> List[str]:
        """Words that may precede a cue inside a span (``assertion_light_words``)."""
        return self.light_words_for(self.lang)

    @property
    def sections(self) -> SectionData:
        """Section headers and the status each section gives (``assertion_sections``)."""
        return self.sections_for(self.lang)

    @property
    def engine(self) -> AssertionEngine:
        """The compiled data of :attr:`lang`; built on first use when ``initialize`` was never called."""
        return self.engine_for(self.lang)

    def word_list(self, name: str, lang: str) -> List[str]:
        """One of the :data:`WORD_LISTS` of ``lang``: given, loaded from disk, or the shipped one."""
        by_lang = self._lists[name]
        if lang not in by_lang:
            by_lang[lang] = load_word_list(lang, name)
        return by_lang[lang]

    def light_words_for(self, lang: str) -> List[str]:
        return self.word_list(LIGHT_WORDS_RESOURCE, lang)

    def abbreviations_for(self, lang: str) -> List[str]:
        return self.word_list(ABBREVIATIONS_RESOURCE, lang)

    def sections_for(self, lang: str) -> SectionData:
        if lang not in self._sections:
            self._sections[lang] = section_data(lang)
        return self._sections[lang]

    def rules_for(self, lang: str) -> List[RuleDict]:
        """The effective rules of one of :attr:`languages`; a copy."""
        return copy.deepcopy(self._effective_rules(lang))

    def engine_for(self, lang: str) -> AssertionEngine:
        """The compiled data of ``lang``, one per language, built on its first use."""
        engine = self._engines.get(lang)
        if engine is None:
            guard = alternative_list_guard(self.word_list(JOINERS_RESOURCE, lang), self.word_list(BREAKS_RESOURCE, lang))
            matcher = compile_rules(self.nlp, self.name, self._effective_rules(lang), self.max_scope, guard)
            light = {w.lower() for w in self.light_words_for(lang)} | foreign_stop_words(self.nlp.lang, lang)
            sections, abbreviations = SectionTable(self.sections_for(lang)), abbreviation_set(self.abbreviations_for(lang))
            attributive = abbreviation_set(self.word_list(ATTRIBUTIVE_RESOURCE, lang))
            grammar = list_grammar(lang, self.word_list(LIST_JOINERS_RESOURCE, lang))
            engine = AssertionEngine(
                matcher, sections, light, self.max_scope, abbreviations, attributive, lang in LOWERCASE_CONTINUES, grammar
            )
            self._engines[lang] = engine
        return engine

    def _effective_rules(self, lang: Optional[str] = None) -> List[RuleDict]:
        lang = lang or self.lang
        if lang not in self._rules:
            origin = f"{self.name}: inline rules"
            self._rules[lang] = build_rules(lang, self._rules_setting, self.include_default_rules, origin)
        return self._rules[lang]

    # -- processing ------------------------------------------------------------
    def __call__(self, doc: Doc) -> Doc:
        if not len(doc):
            return doc
        text = doc.text  # spaCy joins the tokens on each read: once per doc
        lang = self._language_of(doc, text)
        groups = [self._targets(doc, key) for key in self.span_keys]
        if not any(groups):
            return doc
        engine = self.engine_for(lang)  # a data error is one of configuration, not of this doc: raised
        error_handler = self.get_error_handler()
        try:
            for span, result in engine.annotate(doc, groups, text, self.sections_key):
                self.extension_names.write(span, result)
            self._declare_names(doc)
        except Exception as err:
            error_handler(self.name, self, [doc], err)
        return doc

    def _language_of(self, doc: Doc, text: str) -> str:
        """The language whose rules apply to ``doc``, recorded on it (``Doc._.clin_language``);
        detected only with ``"auto"``: a fixed language costs nothing per doc."""
        score: Optional[float] = None
        lang = self.lang
        if self.auto and recorded_language(doc, (_LANGUAGE, _LANGUAGE_SCORE)) in self.languages:
            return str(doc._.get(_LANGUAGE))  # an earlier component ("auto" chunking) detected it, surely
        if self.auto:
            guess = detect_language(text, self.languages)
            if guess.sure:
                lang, score = str(guess.language), guess.score
            else:
                lang = self.unsure_lang
                self._warn_unsure()
        attrs.set_doc_values(doc, {_LANGUAGE: lang, _LANGUAGE_SCORE: score})
        return lang

    def _warn_unsure(self) -> None:
        """One warning per pipe, never the text: the rules of a wrong language mislead silently."""
        if self._warned_unsure:
            return
        self._warned_unsure = True
        warnings.warn(
            f"{self.name}: the language of a document is unsure or not one of {', '.join(self.languages)}; "
            f"{self.unsure_lang} rules apply to it (Doc._.clin_language_score is None for such documents). "
            "Set the component's 'language' to force a language.",
            UserWarning,
            stacklevel=3,
        )

    def _declare_names(self, doc: Doc) -> None:
        """Under another prefix, each annotated group says where its values are (records ask it)."""
        if self.extension_names.prefix == attrs.PREFIX:
            return
        for key in self.span_keys:
            if key != ENTS and key in doc.spans:
                attrs.declare_field_names(doc.spans[key], self.extension_names.fields)

    def score(self, examples: Iterable[Any], **kwargs: Any) -> Dict[str, Any]:
        """The ``scorer`` on the first group this component annotates (``{}`` without one)."""
        if self.scorer is None:
            return {}
        return self.scorer(examples, **{**kwargs, "spans_key": self.span_keys[0]})

    def _targets(self, doc: Doc, key: str) -> List[Span]:
        if key == ENTS:
            return list(doc.ents)
        if key in doc.spans:
            return list(doc.spans[key])
        return []

    # -- serialization: data only (rules, light words, sections); settings stay with the config
    def _source(self) -> Dict[str, Any]:
        """What the default data is built from; a saved copy is used only while this is unchanged."""
        lang = AUTO if self.auto else self.lang
        return {"lang": lang, "rules": self._rules_setting, "include_default_rules": self.include_default_rules}

    def _other_languages(self) -> List[str]:
        return [lang for lang in self.languages if lang != self.lang]

    def _cfg(self) -> Dict[str, Any]:
        cfg = {"format": DATA_FORMAT, "source": self._source(), **self._language_data(self.lang)}
        if self.auto:
            cfg["format"] = AUTO_DATA_FORMAT
            cfg["languages"] = {lang: self._language_data(lang) for lang in self._other_languages()}
        return cfg

    def _language_data(self, lang: str) -> Dict[str, Any]:
        lists = {key: self.word_list(name, lang) for name, key in SAVED_KEYS.items()}
        return {**lists, "sections": self.sections_for(lang)}

    def _load(self, cfg: Dict[str, Any], rules: Any, origin: str, other_rules: Optional[Dict[str, Any]] = None) -> None:
        source = cfg.get("source")
        if source != json.loads(json.dumps(self._source())):
            return  # the config asks for other data: built from the package on first use
        self._engines = {}
        self._load_language(self.lang, cfg, rules, origin)
        languages = cfg.get("languages") or {}
        for lang in self._other_languages():
            self._load_language(lang, languages.get(lang) or {}, (other_rules or {}).get(lang), f"{origin} ({lang})")

    def _load_language(self, lang: str, data: Dict[str, Any], rules: Any, origin: str) -> None:
        if rules is not None:
            self._rules[lang] = validate_rules(rules, origin)
        if data.get("sections") is not None:
            self._sections[lang] = check_sections(data["sections"], f"{origin}: sections")
        for name, key in SAVED_KEYS.items():
            if data.get(key) is not None:
                self._lists[name][lang] = resolve_override(data[key], f"{origin}: {key}")

    # spaCy's contract: a serializers dict through spacy.util, ``exclude`` honoured by name
    # ("cfg", "context_rules": the rules of every language)
    def _writers(self) -> Dict[str, Any]:
        """File name -> the JSON value saved under it."""
        writers: Dict[str, Any] = {CFG_FILE: self._cfg, RULES_FILE: lambda: {"context_rules": self._effective_rules()}}
        for lang in self._other_languages() if self.auto else ():
            writers[language_rules_file(lang)] = lambda lang=lang: {"context_rules": self._effective_rules(lang)}
        return writers

    def _read(self, origin: str, read: Any) -> None:
        """Collect what ``read`` (spaCy's from_bytes / from_disk over our readers) finds, then load it."""
        found: Dict[str, Any] = {}
        names = [CFG_FILE, RULES_FILE, *(language_rules_file(lang) for lang in self._other_languages())]
        read({name: (lambda value, name=name: found.__setitem__(name, value)) for name in names})
        others = {lang: found[language_rules_file(lang)] for lang in self._other_languages() if language_rules_file(lang) in found}
        self._load(found.get(CFG_FILE, {}), found.get(RULES_FILE), origin, others)

    def to_bytes(self, *, exclude: Iterable[str] = tuple()) -> bytes:
        return json_to_bytes(self._writers(), exclude)

    def from_bytes(self, bytes_data: bytes, *, exclude: Iterable[str] = tuple()) -> "ContextAssertion":
        self._read(f"{self.name}: bytes", lambda readers: json_from_bytes(bytes_data, readers, exclude))
        return self

    def to_disk(self, path: Any, *, exclude: Iterable[str] = tuple()) -> None:
        json_to_disk(path, self._writers(), exclude)

    def from_disk(self, path: Any, *, exclude: Iterable[str] = tuple()) -> "ContextAssertion":
        origin = str(ensure_path(path) / RULES_FILE)
        self._read(origin, lambda readers: json_from_disk(path, readers, exclude))
        return self


def language_rules_file(lang: str) -> str:
    """The saved rules of a language other than the main one (``language = "auto"``)."""
    return f"context_rules.{lang}.json"
