"""Shared machinery of the chunk-refining components (splitters and cleaner)."""
from __future__ import annotations

from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence

import srsly
from spacy.language import Language
from spacy.pipeline import Pipe
from spacy.tokens import Doc
from spacy.util import ensure_path

from .. import attrs
from ..resources_io import Override, ResourceError, build_resources, load_json_resource, load_word_list
from ..resources_io import resolve_language, resolve_override
from ..spans import Abbreviations, Range, current_ranges, doc_text, write_group

RESOURCES_FILE = "resources.json"
DATA_FORMAT = 2  # resources.json of version 1 also held settings; they are ignored now


class ChunkRefiner(Pipe):
    """Base for components that read the chunk group, refine each chunk, write it back.

    Subclasses set ``resource_names`` and implement :meth:`refine`, which maps one
    chunk's character range to zero or more ranges. The first refiner in a pipeline
    seeds the group from sentences (when set) or paragraphs.

    Settings (constructor arguments) come from the config only. Data (the word lists,
    the rules in ``package_data``) is loaded by :meth:`initialize` (or on first use)
    from the shipped resources with ``overrides`` applied, and carried by
    ``to_disk``/``from_disk``, so a saved pipeline never reads ``resources/`` again.
    """

    resource_names: Sequence[str] = ()  # word lists a user may override
    package_data: Sequence[str] = ("abbreviations",)  # other shipped data the component reads
    compiled: Sequence[str] = ()  # attributes setup() derives from the data

    def __init__(
        self,
        nlp: Language,
        name: str,
        *,
        spans_key: str = attrs.CHUNKS_KEY,
        language: Optional[str] = None,
        overrides: Optional[Mapping[str, Override]] = None,
    ) -> None:
        attrs.register_extensions()
        self.name = name
        self.spans_key = spans_key
        self.lang = resolve_language(language or nlp.lang, name)
        self.overrides = dict(overrides or {})
        check_overrides(self.resource_names, self.overrides)  # bad names/lists fail at add_pipe
        self._data: Optional[Dict[str, Any]] = None

    # -- data ------------------------------------------------------------------
    @property
    def resources(self) -> Dict[str, Any]:
        """The component's data; loaded from the package on first use if nothing set it."""
        if self._data is None:
            self._set_data(self._package_data())
        return self._data  # type: ignore[return-value]

    def __getattr__(self, name: str) -> Any:
        """What :meth:`setup` compiles (``compiled``) exists once the data is loaded."""
        if name not in type(self).compiled or self.__dict__.get("_data", True) is not None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        self.resources  # noqa: B018  (loads the data and runs setup)
        return object.__getattribute__(self, name)

    def _package_data(self) -> Dict[str, Any]:
        data: Dict[str, Any] = build_resources(self.lang, self.resource_names, self.overrides)
        for name in self.package_data:
            if name not in data:
                data[name] = _shipped(self.lang, name)
        return data

    def _set_data(self, data: Dict[str, Any]) -> None:
        self._data = data
        self.setup()

    def _source(self) -> Dict[str, Any]:
        """What the data was built from; a saved copy is used only while this is unchanged."""
        return {"lang": self.lang, "overrides": self.overrides}

    @property
    def abbreviation_rule(self) -> Abbreviations:
        """Abbreviations of the component's language (used when seeding from sentences)."""
        words = self.resources["abbreviations"]
        key = (self.lang, id(words))
        if getattr(self, "_abbreviation_key", None) != key:
            self._abbreviation_rule = Abbreviations(words)
            self._abbreviation_key = key
        return self._abbreviation_rule

    # -- to implement -------------------------------------------------------
    def setup(self) -> None:
        """Compile whatever the component needs from ``self.resources``."""

    def refine(self, text: str, start: int, end: int) -> Iterable[Range]:
        raise NotImplementedError

    # -- spaCy API ----------------------------------------------------------
    def initialize(self, get_examples: Optional[Callable] = None, *, nlp: Optional[Language] = None) -> None:
        """Load the data: the shipped lists of the language with ``overrides`` applied."""
        self._set_data(self._package_data())

    def __call__(self, doc: Doc) -> Doc:
        error_handler = self.get_error_handler()
        try:
            self.resources  # noqa: B018  (load data errors before touching the doc)
            text = doc_text(doc)
            refined: List[Range] = []
            for start, end in current_ranges(doc, self.spans_key, self.abbreviation_rule, text):
                refined.extend(self.refine(text, start, end))
            write_group(doc, self.spans_key, refined, text)
            return doc
        except ResourceError:
            raise  # a configuration error, not a problem of this document
        except Exception as err:  # routed like spaCy's own pipes
            error_handler(self.name, self, [doc], err)
            return doc

    def to_bytes(self, *, exclude: Iterable[str] = tuple()) -> bytes:
        return srsly.json_dumps(self._state()).encode("utf-8")

    def from_bytes(self, bytes_data: bytes, *, exclude: Iterable[str] = tuple()) -> "ChunkRefiner":
        self._load_state(srsly.json_loads(bytes_data))
        return self

    def to_disk(self, path: Any, *, exclude: Iterable[str] = tuple()) -> None:
        path = ensure_path(path)
        path.mkdir(parents=True, exist_ok=True)
        srsly.write_json(path / RESOURCES_FILE, self._state())

    def from_disk(self, path: Any, *, exclude: Iterable[str] = tuple()) -> "ChunkRefiner":
        path = ensure_path(path)
        file = path / RESOURCES_FILE
        if file.exists():
            self._load_state(srsly.read_json(file))
        return self

    # -- state: data only; settings stay with the config ---------------------
    def _state(self) -> Dict[str, Any]:
        return {"format": DATA_FORMAT, "source": self._source(), "resources": self.resources}

    def _load_state(self, state: Dict[str, Any]) -> None:
        source = state.get("source") or {"lang": state.get("lang"), "overrides": self.overrides}  # format 1
        if source != self._source():
            # the config asks for other data (language or overrides changed): build it from
            # the package on first use instead of restoring the saved copy
            self._data = None
            return
        data: Dict[str, Any] = {k: _copy(v) for k, v in state.get("resources", {}).items()}
        for name in (*self.resource_names, *self.package_data):
            if name not in data:  # saved by version 1, which did not carry it
                data[name] = _shipped(self.lang, name)
        self._set_data(data)


def check_overrides(names: Sequence[str], overrides: Mapping[str, Override]) -> None:
    """Unknown override names and malformed inline lists fail early; files are read later."""
    unknown = sorted(set(overrides) - set(names))
    if unknown:
        raise ResourceError(f"unknown resource override(s) {unknown}; known: {sorted(names)}")
    for name, value in overrides.items():
        if not isinstance(value, str):
            resolve_override(value, name)


def _shipped(lang: str, name: str) -> Any:
    data = load_json_resource(lang, name)
    return load_word_list(lang, name) if isinstance(data, list) else _copy(data)


def _copy(value: Any) -> Any:
    return list(value) if isinstance(value, list) else dict(value) if isinstance(value, dict) else value


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
