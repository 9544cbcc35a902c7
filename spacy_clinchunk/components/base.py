"""Shared machinery of the chunk-refining components (splitters, cleaner, semantic window, focus).

No ``from __future__ import annotations`` here: spaCy reads the annotations of
:meth:`ChunkRefiner.initialize` at run time to check ``[initialize.components.<name>]``.
"""
import copy
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Union

import srsly
from spacy.language import Language
from spacy.pipeline import Pipe
from spacy.tokens import Doc
from spacy.training import Example
from spacy import util
from spacy.util import ensure_path

from .. import attrs
from ..resources_io import Override, ResourceError, load_json_resource, load_word_list
from ..resources_io import SUPPORTED_LANGUAGES, resolve_language, resolve_override
from ..spans import Abbreviations, Range, current_ranges, doc_text, write_group

RESOURCES_FILE = "resources.json"
AUTO = "auto"  # ``language = "auto"``: each doc gets the word lists of the language it is written in
_LANGUAGE_NAMES = (attrs.ext("language"), attrs.ext("language_score"))  # Doc._ names
DATA_FORMAT = 2  # of resources.json: the data only (the source it was built from, the lists)
CHUNK_SCORER = {"@scorers": "spacy_clinchunk.ChunkScorer.v1"}
# what `spacy train` weighs (integrity and isolation pull against each other; coverage guards
# against dropped text) and the informational scores it shows but does not weigh
CHUNK_SCORE_WEIGHTS: Dict[str, Optional[float]] = {
    "chunk_integrity": 0.4,
    "chunk_isolation": 0.4,
    "chunk_coverage": 0.2,
    "chunk_iou": None,
    "chunks_per_doc": None,
    "words_per_chunk": None,
}
WordLists = Dict[str, Union[List[str], str]]  # list name -> inline list or path to a JSON list


def refiner_factory(name: str, *, scored: bool = True, assigns: Sequence[str] = ("doc.spans",), **defaults: Any):
    """``Language.factory`` of a refiner: ``defaults`` (its own settings) and the settings every
    refiner has (``spans_key``, ``language``, ``overrides`` and, when ``scored``, ``scorer``),
    which its factory takes last. This is the one place their defaults live."""
    config: Dict[str, Any] = {**defaults, "spans_key": attrs.CHUNKS_KEY, "language": None, "overrides": {}}
    if scored:
        config["scorer"] = dict(CHUNK_SCORER)
    weights = dict(CHUNK_SCORE_WEIGHTS) if scored else {}
    return Language.factory(name, default_config=config, assigns=list(assigns), default_score_weights=weights)


class ChunkRefiner(Pipe):
    """Base for components that read the chunk group, refine each chunk, write it back.

    Subclasses set ``resource_names`` and implement :meth:`refine`, which maps one
    chunk's character range to zero or more ranges. The first refiner in a pipeline
    seeds the group from sentences (when set) or paragraphs.

    Settings (constructor arguments, all required) come from the config only. Data (the
    word lists, the rules in ``package_data``) is loaded by :meth:`initialize`: the shipped
    lists of the language, the ``overrides`` setting applied, then the lists given to
    ``initialize`` (``[initialize.components.<name>.resources]``). Nobody calling
    ``initialize`` loads the shipped lists on first use. ``to_disk``/``from_disk`` carry
    the data, so a saved pipeline never reads ``resources/`` again.

    ``language = "auto"``: each doc is refined with the lists of the language it is written in
    (a German letter gets German abbreviations and conjunctions); the language is detected once
    per doc and recorded in ``Doc._.clin_language``, where later components (the assertion's
    ``"auto"`` too) read it. A doc whose language is unsure gets the pipeline's language. The
    component keeps one copy of itself per language it met, each with its own data, and saves
    the data of every language.
    """

    resource_names: Sequence[str] = ()  # word lists a user may replace
    package_data: Sequence[str] = ("abbreviations", "prenominal_abbreviations")  # other shipped data it reads
    compiled: Sequence[str] = ()  # attributes setup() derives from the data

    def __init__(
        self,
        nlp: Language,
        name: str,
        *,
        spans_key: str,
        language: Optional[str],
        overrides: Mapping[str, Override],
        scorer: Optional[Callable],
    ) -> None:
        attrs.register_extensions()
        self.name = name
        self.spans_key = spans_key
        self.auto = language == AUTO
        self.lang = resolve_language(nlp.lang if self.auto or not language else language, name)
        self._per_language: Dict[str, "ChunkRefiner"] = {}  # with "auto": a copy per other language
        self.overrides = dict(overrides)
        self.scorer = scorer
        # bad names and inline lists fail at add_pipe; files named by path are read later
        check_names(self.name, "resource override(s)", self.resource_names, self.overrides)
        for list_name, value in self.overrides.items():
            if not isinstance(value, str):
                resolve_override(value, list_name)
        self._given: Dict[str, List[str]] = {}  # lists given to initialize
        self._data: Optional[Dict[str, Any]] = None

    # -- data ------------------------------------------------------------------
    @property
    def resources(self) -> Dict[str, Any]:
        """The component's data; loaded from the package on first use if nothing set it."""
        if self._data is None:
            self._set_data(self._build())
        return self._data  # type: ignore[return-value]

    def __getattr__(self, name: str) -> Any:
        """What :meth:`setup` compiles (``compiled``) exists once the data is loaded."""
        if name not in type(self).compiled or self.__dict__.get("_data", True) is not None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        self.resources  # noqa: B018  (loads the data and runs setup)
        return object.__getattribute__(self, name)

    def _build(self) -> Dict[str, Any]:
        """Shipped lists of the language, ``overrides`` applied, then the initialize lists."""
        data: Dict[str, Any] = {}
        for list_name in self.resource_names:
            if list_name in self._given:
                data[list_name] = list(self._given[list_name])
            elif list_name in self.overrides:
                data[list_name] = resolve_override(self.overrides[list_name], list_name)
            else:
                data[list_name] = load_word_list(self.lang, list_name)
        for list_name in self.package_data:
            if list_name not in data:
                data[list_name] = _shipped(self.lang, list_name)
        return data

    def _set_data(self, data: Dict[str, Any]) -> None:
        self._data = data
        self.setup()

    def _source(self) -> Dict[str, Any]:
        """The settings the data was built from; a saved copy is used only while they are unchanged."""
        return {"lang": AUTO if self.auto else self.lang, "overrides": self.overrides}

    # -- language = "auto" -------------------------------------------------
    def for_doc(self, doc: Doc) -> "ChunkRefiner":
        """The component that refines ``doc``: this one, or with ``"auto"`` its copy for the
        language ``doc`` is written in."""
        if not self.auto:
            return self
        return self.for_language(_doc_language(doc) or self.lang)

    def for_language(self, lang: str) -> "ChunkRefiner":
        """This component with the data of ``lang`` (built on first use)."""
        if lang == self.lang:
            return self
        worker = self._per_language.get(lang)
        if worker is None:
            worker = self._copy_for(lang)
            worker._set_data(worker._build())
            self._per_language[lang] = worker
        return worker

    def _copy_for(self, lang: str) -> "ChunkRefiner":
        worker = copy.copy(self)
        worker.auto, worker.lang, worker._per_language, worker._data = False, lang, {}, None
        return worker

    @property
    def abbreviation_rule(self) -> Abbreviations:
        """Abbreviations of the component's language (used when seeding from sentences)."""
        words = self.resources["abbreviations"]
        prenominal = self.resources.get("prenominal_abbreviations", ())
        key = (self.lang, id(words), id(prenominal))
        if getattr(self, "_abbreviation_key", None) != key:
            self._abbreviation_rule = Abbreviations(words, prenominal)
            self._abbreviation_key = key
        return self._abbreviation_rule

    # -- to implement -------------------------------------------------------
    def setup(self) -> None:
        """Compile whatever the component needs from ``self.resources``."""

    def refine(self, text: str, start: int, end: int) -> Iterable[Range]:
        raise NotImplementedError

    def write_refined(self, doc: Doc, text: str, ranges: Sequence[Range]) -> None:
        """Refine every range of the group and write the result back (a refiner that writes a
        second group as well, such as the ceiling's loose pieces, does both here)."""
        refined: List[Range] = []
        for start, end in ranges:
            refined.extend(self.refine(text, start, end))
        write_group(doc, self.spans_key, refined, text)

    # -- spaCy API ----------------------------------------------------------
    def initialize(
        self,
        get_examples: Optional[Callable[[], Iterable[Example]]] = None,
        *,
        nlp: Optional[Language] = None,
        resources: Optional[WordLists] = None,
    ) -> None:
        """Load the data. ``resources`` maps list names to lists (inline, or a path to a JSON
        list, or ``spacy_clinchunk.ResourceList.v1`` in config); lists it does not name are
        the shipped ones with the ``overrides`` setting applied."""
        given = dict(resources or {})
        check_names(self.name, "word list(s) for initialize", self.resource_names, given)
        self._given = {list_name: resolve_override(value, list_name) for list_name, value in given.items()}
        self._set_data(self._build())

    def __call__(self, doc: Doc) -> Doc:
        worker = self.for_doc(doc)
        if worker is not self:
            return worker(doc)
        error_handler = self.get_error_handler()
        try:
            self.resources  # noqa: B018  (load data errors before touching the doc)
            self.annotate(doc)
        except ResourceError:
            raise  # a configuration error, not a problem of this document
        except Exception as err:  # routed like spaCy's own pipes
            error_handler(self.name, self, [doc], err)
        return doc

    def annotate(self, doc: Doc) -> None:
        """Refine every chunk and write the group back; a component that writes another group
        (``clin_focus``, ``clin_concept_focus``) overrides this, keeping the error routing."""
        text = doc_text(doc)
        self.write_refined(doc, text, current_ranges(doc, self.spans_key, self.abbreviation_rule, text))

    def score(self, examples: Iterable[Example], **kwargs: Any) -> Dict[str, Any]:
        """The ``scorer`` on this component's own span group (``{}`` without a scorer)."""
        if self.scorer is None:
            return {}
        return self.scorer(examples, **{**kwargs, "spans_key": self.spans_key})

    # -- serialization: spaCy's contract (a serializers dict through spacy.util, ``exclude``
    # honoured by name: "resources"); a subclass with more data adds to the two dicts
    def _writers(self) -> Dict[str, Callable[[], Any]]:
        """File name -> the JSON value saved under it."""
        return {RESOURCES_FILE: self._state}

    def _readers(self) -> Dict[str, Callable[[Any], None]]:
        """File name -> what takes the JSON value read back."""
        return {RESOURCES_FILE: self._load_state}

    def to_bytes(self, *, exclude: Iterable[str] = tuple()) -> bytes:
        return json_to_bytes(self._writers(), exclude)

    def from_bytes(self, bytes_data: bytes, *, exclude: Iterable[str] = tuple()) -> "ChunkRefiner":
        json_from_bytes(bytes_data, self._readers(), exclude)
        return self

    def to_disk(self, path: Any, *, exclude: Iterable[str] = tuple()) -> None:
        json_to_disk(path, self._writers(), exclude)

    def from_disk(self, path: Any, *, exclude: Iterable[str] = tuple()) -> "ChunkRefiner":
        json_from_disk(path, self._readers(), exclude)
        return self

    # -- state: data only; settings stay with the config ---------------------
    def _state(self) -> Dict[str, Any]:
        state = {
            "format": DATA_FORMAT,
            "source": self._source(),
            "initialized": sorted(self._given),
            "resources": self.resources,
        }
        if self.auto:  # every language's data, so a saved pipeline never reads the package
            state["languages"] = {lang: self.for_language(lang).resources for lang in SUPPORTED_LANGUAGES
                                  if lang != self.lang}
        return state

    def _load_state(self, state: Dict[str, Any]) -> None:
        saved: Dict[str, Any] = {k: _copy(v) for k, v in state.get("resources", {}).items()}
        self._given = {n: saved[n] for n in state.get("initialized", ()) if n in self.resource_names and n in saved}
        if state.get("source") != self._source():
            # the config asks for other data (language or overrides changed): build it anew on
            # first use, keeping only the lists that initialize gave
            self._data = None
            return
        for list_name in (*self.resource_names, *self.package_data):
            if list_name not in saved:  # a list added to the package since the copy was saved
                saved[list_name] = _shipped(self.lang, list_name)
        self._set_data(saved)
        self._per_language = {}
        for lang, data in (state.get("languages") or {}).items() if self.auto else ():
            worker = self._copy_for(lang)
            worker._set_data({k: _copy(v) for k, v in data.items()})
            self._per_language[lang] = worker


def _doc_language(doc: Doc) -> Optional[str]:
    """The language ``doc`` is written in, when sure: recorded by an earlier component, else
    detected here and recorded for the later ones."""
    from ..assertion.language import detect_language, recorded_language

    known = recorded_language(doc, _LANGUAGE_NAMES)
    if known is not None:
        return known
    guess = detect_language(doc_text(doc), SUPPORTED_LANGUAGES)
    if not guess.sure:
        return None
    attrs.set_doc_values(doc, {_LANGUAGE_NAMES[0]: str(guess.language), _LANGUAGE_NAMES[1]: guess.score})
    return str(guess.language)


def json_to_bytes(writers: Mapping[str, Callable[[], Any]], exclude: Iterable[str]) -> bytes:
    """``spacy.util.to_bytes`` of JSON values (``exclude`` by name: ``"resources"`` for ``resources.json``)."""
    return util.to_bytes({name: (lambda get=get: srsly.json_dumps(get())) for name, get in writers.items()}, _names(exclude))


def json_from_bytes(data: bytes, readers: Mapping[str, Callable[[Any], None]], exclude: Iterable[str]) -> None:
    util.from_bytes(data, {name: (lambda b, put=put: put(srsly.json_loads(b))) for name, put in readers.items()}, _names(exclude))


def json_to_disk(path: Any, writers: Mapping[str, Callable[[], Any]], exclude: Iterable[str]) -> None:
    """``spacy.util.to_disk``: one JSON file per writer."""
    path = ensure_path(path)
    path.mkdir(parents=True, exist_ok=True)
    util.to_disk(path, {name: (lambda file, get=get: srsly.write_json(file, get())) for name, get in writers.items()}, exclude)


def json_from_disk(path: Any, readers: Mapping[str, Callable[[Any], None]], exclude: Iterable[str]) -> None:
    """``spacy.util.from_disk``: each JSON file that exists goes to its reader."""
    util.from_disk(path, {name: (lambda file, put=put: file.exists() and put(srsly.read_json(file))) for name, put in readers.items()}, exclude)


def _names(exclude: Iterable[str]) -> List[str]:
    """``exclude`` for byte keys: a file name (``resources.json``) is excluded by its stem too."""
    names = list(exclude)
    return names + [f"{name}.json" for name in names]


def check_names(component: str, what: str, known: Sequence[str], given: Mapping[str, Any]) -> None:
    """Names of word lists that the component does not read are an error (one line)."""
    unknown = sorted(set(given) - set(known))
    if unknown:
        raise ResourceError(f"{component}: unknown {what} {unknown}; known: {sorted(known)}")


def _shipped(lang: str, name: str) -> Any:
    data = load_json_resource(lang, name)
    return load_word_list(lang, name) if isinstance(data, list) else _copy(data)


def _copy(value: Any) -> Any:
    return list(value) if isinstance(value, list) else dict(value) if isinstance(value, dict) else value


def factory_settings(values: Dict[str, Any]) -> Dict[str, Any]:
    """A factory's settings from its ``locals()`` (taken on its first line): its signature is the
    one typed list of them, which spaCy validates; the component takes them by name."""
    return {key: value for key, value in values.items() if key not in ("nlp", "name")}


def require_extra(nlp: Language, extra: str) -> None:
    """Record in ``nlp.meta["requirements"]`` that this pipeline needs ``spacy-clinchunk[extra]``.

    ``spacy package`` copies the list into the package's install_requires, so a packaged
    pipeline with ``clin_context_assertion`` installs medspaCy too.
    """
    from .. import __version__

    requirements = nlp.meta.setdefault("requirements", [])
    extras = {extra}
    for req in list(requirements):
        name, _, rest = req.partition("[")
        if name.strip().lower() in ("spacy-clinchunk", "spacy_clinchunk"):
            extras.update(e.strip() for e in rest.split("]")[0].split(",") if rest and e.strip())
            requirements.remove(req)
    major, minor = (int(x) for x in __version__.split(".")[:2])
    requirements.append(f"spacy-clinchunk[{','.join(sorted(extras))}]>={__version__},<{major}.{minor + 1}.0")
