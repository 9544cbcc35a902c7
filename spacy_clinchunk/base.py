"""Shared machinery of the chunk-refining components (splitters and cleaner)."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence

import srsly
from spacy.language import Language
from spacy.pipeline import Pipe
from spacy.tokens import Doc
from spacy.util import ensure_path

from . import attrs
from .resources_io import Override, ResourceError, build_resources, resolve_language
from .resources_io import load_word_list
from .spans import Abbreviations, Range, current_ranges, doc_text, write_group

RESOURCES_FILE = "resources.json"


class ChunkRefiner(Pipe):
    """Base for components that read the chunk group, refine each chunk, write it back.

    Subclasses set ``resource_names`` and implement :meth:`refine`, which maps one
    chunk's character range to zero or more ranges. The first refiner in a pipeline
    seeds the group from sentences (when set) or paragraphs.
    """

    resource_names: Sequence[str] = ()

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
        self._pending_error: Optional[ResourceError] = None
        try:
            self.resources: Dict[str, List[str]] = build_resources(self.lang, self.resource_names, self.overrides)
        except ResourceError as err:
            if not _missing_override_file(self.overrides):
                raise
            # spacy.load() of a saved pipeline restores the resources from disk next,
            # so a JSON override file that is gone by then is not an error yet
            self._pending_error = err
            self.resources = build_resources(self.lang, self.resource_names, {})
        self.setup()

    @property
    def abbreviation_rule(self) -> Abbreviations:
        """Abbreviations of the component's language (used when seeding from sentences)."""
        words = self.resources.get("abbreviations")
        key = (self.lang, id(words))
        if getattr(self, "_abbreviation_key", None) != key:
            self._abbreviation_rule = Abbreviations(words if words is not None else load_word_list(self.lang, "abbreviations"))
            self._abbreviation_key = key
        return self._abbreviation_rule

    # -- to implement -------------------------------------------------------
    def setup(self) -> None:
        """Compile whatever the component needs from ``self.resources``."""

    def refine(self, text: str, start: int, end: int) -> Iterable[Range]:
        raise NotImplementedError

    # -- spaCy API ----------------------------------------------------------
    def initialize(self, get_examples: Optional[Callable] = None, *, nlp: Optional[Language] = None) -> None:
        self._raise_pending()

    def _raise_pending(self) -> None:
        if self._pending_error is not None:
            raise self._pending_error

    def __call__(self, doc: Doc) -> Doc:
        self._raise_pending()
        error_handler = self.get_error_handler()
        try:
            text = doc_text(doc)
            refined: List[Range] = []
            for start, end in current_ranges(doc, self.spans_key, self.abbreviation_rule, text):
                refined.extend(self.refine(text, start, end))
            write_group(doc, self.spans_key, refined, text)
            return doc
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

    # -- state: the saved pipeline carries its own copy of the resources ---
    def _state(self) -> Dict[str, Any]:
        return {"lang": self.lang, "resources": self.resources}

    def _load_state(self, state: Dict[str, Any]) -> None:
        self.lang = state.get("lang", self.lang)
        self.resources = {k: list(v) for k, v in state.get("resources", {}).items()}
        self._pending_error = None
        self.setup()


def _missing_override_file(overrides: Mapping[str, Override]) -> bool:
    return any(isinstance(v, str) and not Path(v).expanduser().is_file() for v in overrides.values())
