"""The one resolver: a :class:`PipelineSpec` becomes a :class:`ResolvedPipeline`.

:func:`resolve_pipeline` reads the config once, loads the pipeline and reads from the
*loaded* components what it writes: the span groups (each component's ``spans_key`` /
``focus_key``, spaCy's span components' ``cfg["spans_key"]``, ``meta.json``'s
``"clinchunk": {"spans_key": ...}`` of a trained pipeline), the chunks group, the focus group
paired with those chunks and the record fields the components set. No caller guesses them
from a file or a name: the CLI, the view, the adapters, the exporters and every corpus worker
ask the resolved pipeline.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import Any, Dict, FrozenSet, List, Optional, Tuple, Union

from spacy.language import Language

from ..attrs import CHUNKS_KEY, PREFIX, register_extensions
from ..components.token_counters import DEFAULT_BLOCK_TOKENS
from .spec import PipelineError, PipelineSpec, import_code

Source = Union[str, Path, Language, PipelineSpec]
Fields = Optional[FrozenSet[str]]


@dataclass
class ResolvedPipeline:
    """A loaded pipeline and what it writes, answered once."""

    nlp: Language
    spec: Optional[PipelineSpec]  # None: a Language given as it is
    path: Optional[Path]  # the config file or saved pipeline directory
    spans_keys: Tuple[str, ...]  # every span group its components write, in pipeline order
    chunks_key: str  # the group its chunks are read from
    focus_key: Optional[str]  # the focus group a component writes for those chunks (clin_focus)
    fields: Fields  # record fields the components set on spans (None: undeclared, read all)
    # record plan settings (export.records.RecordPlan): a section block's budget and its token counter
    block_tokens: int = DEFAULT_BLOCK_TOKENS
    token_counter: Any = None  # words -> counts; None: export.blocks' wordpiece estimate

    @cached_property
    def config_hash(self) -> str:
        """A digest of what was loaded (the filled config, or a saved pipeline's files plus the
        overrides), and ``max_length``: a corpus run redoes shards when it changes."""
        digest = hashlib.sha256()
        spec = self.spec or PipelineSpec("<Language>")
        if self.path is not None and self.path.is_dir():
            digest.update(_directory_digest(self.path).encode())
            settings = [spec.overrides, spec.lang, spec.stage_settings]
            digest.update(json.dumps(settings, sort_keys=True, default=str).encode())
        else:
            digest.update(self.nlp.config.to_str().encode())
        if spec.max_length:
            digest.update(f"max_length={spec.max_length}".encode())
        return digest.hexdigest()[:16]

    def with_chunks(self, spans_key: Optional[str]) -> "ResolvedPipeline":
        """The same pipeline read as writing its chunks to ``spans_key`` (a group it writes)."""
        if spans_key in (None, self.chunks_key):
            return self
        if self.spans_keys and spans_key not in self.spans_keys:
            raise PipelineError(
                f"spans key '{spans_key}': the pipeline writes no such group (it writes {', '.join(self.spans_keys)})"
            )
        return replace(self, chunks_key=spans_key, focus_key=focus_key_of(self.nlp, spans_key))


def resolve_pipeline(
    source: Source,
    overrides: Optional[Dict[str, Any]] = None,
    *,
    lang: Optional[str] = None,
    stage_settings: Optional[Dict[str, Any]] = None,
    code: Optional[str] = None,
    max_length: Optional[int] = None,
    spans_key: Optional[str] = None,
) -> ResolvedPipeline:
    """Load a :class:`PipelineSpec` (or build one from ``source`` and the keyword settings:
    a strategy name, a ``.cfg`` file or a saved pipeline directory) and read what it writes.

    A ``Language`` is used as it is (no settings apply to it). Every error is a
    :class:`PipelineError` of one line.
    """
    if isinstance(source, Language):
        if overrides or lang or stage_settings or code or max_length:
            raise PipelineError("overrides, lang and stage settings apply to a pipeline loaded here, not to a Language")
        return _resolved(source, None, None).with_chunks(spans_key)
    spec = PipelineSpec.of(
        source,
        overrides=overrides,
        lang=lang,
        stage_settings=stage_settings,
        code=code,
        max_length=max_length,
        spans_key=spans_key,
    )
    import_code(spec.code)
    path = Path(spec.source) if spec.config_text is not None else spec.path()  # pinned: the driver's file
    nlp = _load(spec, path)
    if spec.max_length:
        nlp.max_length = int(spec.max_length)
    return _resolved(nlp, spec, path).with_chunks(spec.spans_key)


def load_pipeline(
    source: Union[str, Path, PipelineSpec], overrides: Optional[Dict[str, Any]] = None, **settings: Any
) -> Language:
    """The ``nlp`` of :func:`resolve_pipeline`."""
    return resolve_pipeline(source, overrides, **settings).nlp


def _resolved(nlp: Language, spec: Optional[PipelineSpec], path: Optional[Path]) -> ResolvedPipeline:
    register_extensions()
    spans_keys, chunks_key = span_keys_of(nlp)
    return ResolvedPipeline(nlp, spec, path, spans_keys, chunks_key, focus_key_of(nlp, chunks_key), record_fields(nlp))


def span_keys_of(nlp: Language) -> Tuple[Tuple[str, ...], str]:
    """``(groups written, chunks group)`` of a loaded pipeline.

    The chunks group is what ``meta.json`` declares (``"clinchunk": {"spans_key": ...}``), else
    the ``chunks_key`` or ``spans_key`` of the last component that has one (a ``chunks_key``
    names the chunks a component annotates, as ``clin_llm_context`` does in ``contextual``),
    else ``clin_chunks``. Focus spans and sections are groups written, never the chunks group.
    """
    written: List[str] = []
    last: Optional[str] = None
    for _, pipe in nlp.pipeline:
        own = _key(pipe, "spans_key")
        if own is not None:
            written.append(own)
            last = own
        annotated = _key(pipe, "chunks_key")  # a group it annotates, not writes (clin_llm_context)
        if annotated is not None:
            last = annotated
        for also in ("focus_key", "sections_key"):  # clin_focus's spans, clin_context_assertion's sections
            other = _key(pipe, also)
            if other is not None:
                written.append(other)
    declared = nlp.meta.get("clinchunk", {}).get("spans_key") if isinstance(nlp.meta.get("clinchunk"), dict) else None
    if isinstance(declared, str) and declared:
        written.append(declared)
        last = declared
    return tuple(dict.fromkeys(written)), last or CHUNKS_KEY


def focus_key_of(nlp: Language, chunks_key: str) -> Optional[str]:
    """The group of focus spans a component of ``nlp`` writes for the chunks of ``chunks_key``."""
    for _, pipe in nlp.pipeline:
        key = _key(pipe, "focus_key")
        if key is not None and _key(pipe, "spans_key") == chunks_key:
            return key
    return None


def record_fields(nlp: Language) -> Fields:
    """The record fields the components of ``nlp`` declare they set on spans (``span._.clin_<field>``
    in the ``assigns`` of their factory), or ``None`` when a component declares nothing at all
    (then every field is read): reading an extension costs as much as the rest of a record."""
    fields = set()
    prefix = "span._." + PREFIX
    for name in nlp.pipe_names:
        assigns = nlp.get_pipe_meta(name).assigns
        if not assigns:
            return None
        fields.update(item[len(prefix) :] for item in assigns if item.startswith(prefix))
    return frozenset(fields)


def _key(pipe: Any, name: str) -> Optional[str]:
    """A pipe's span key: its attribute, or (spaCy's span_finder, spancat) its ``cfg`` entry."""
    value = getattr(pipe, name, None)
    if value is None:
        cfg = getattr(pipe, "cfg", None)
        value = cfg.get(name) if isinstance(cfg, dict) else None
    return value if isinstance(value, str) and value else None


# Loading ---------------------------------------------------------------------------------


def _load(spec: PipelineSpec, path: Path) -> Language:
    """Parse the config once, fill each component's section with its factory's defaults (a
    shipped config holds only what differs), apply the user's overrides and those derived from
    the language and stage settings, import the host packages it names, then build (or load)
    the pipeline."""
    import spacy
    from spacy.util import load_model_from_config, set_dot_to_object

    config_file = path / "config.cfg" if path.is_dir() else path
    try:
        text = spec.config_text if spec.config_text is not None else config_file.read_text(encoding="utf-8")
        config = _parse(text, {})
        import_host_factories(config)
        if not path.is_dir():
            config = with_factory_defaults(config)
        derived = {**language_overrides(config, spec.lang), **stage_setting_overrides(config, spec.stage_settings)}
    except PipelineError:
        raise
    except Exception as err:
        raise PipelineError(_one_line(spec.source, err, f"could not read config {config_file}")) from err
    overrides = {**{k: v for k, v in derived.items() if k not in spec.overrides}, **spec.overrides}  # the user's own win
    try:
        if path.is_dir():
            return spacy.load(path, config=overrides)
        for key, value in overrides.items():
            set_dot_to_object(config, key, value)
        nlp = load_model_from_config(config, auto_fill=True, validate=True)
        nlp.initialize()
        return nlp
    except PipelineError:
        raise
    except Exception as err:  # config errors from confection/spaCy are verbose; keep the gist
        raise PipelineError(_one_line(spec.source, err)) from err


def with_factory_defaults(config: Any) -> Any:
    """``config`` with each component's section filled from its factory's ``default_config``
    (what spaCy fills on load anyway), so an override or a stage setting may name any setting,
    not only those the shipped config writes."""
    from spacy.util import get_lang_class
    from thinc.api import Config

    lang_cls = get_lang_class(config["nlp"]["lang"])
    filled = Config(config)
    for name, section in config.get("components", {}).items():
        factory = section.get("factory") if isinstance(section, dict) else None
        if factory and lang_cls.has_factory(factory):
            filled["components"][name] = Config(lang_cls.get_factory_meta(factory).default_config).merge(section)
    return filled


def _parse(text: str, overrides: Dict[str, Any]):
    from thinc.api import Config

    return Config().from_str(text, overrides=overrides, interpolate=False)


def language_overrides(config: Any, lang: Optional[str]) -> Dict[str, Any]:
    """``lang`` as the CLI's ``--lang`` means it: a code sets ``nlp.lang`` and forces that
    language on every assertion component; ``"auto"`` leaves ``nlp.lang`` and makes the
    assertion components detect the language of each document."""
    if not lang:
        return {}
    from ..components.context_assertion import AUTO, FACTORY as ASSERTION_FACTORY

    overrides: Dict[str, Any] = {} if lang == AUTO else {"nlp.lang": lang}
    for name, section in config.get("components", {}).items():
        if isinstance(section, dict) and section.get("factory") == ASSERTION_FACTORY:
            overrides[f"components.{name}.language"] = lang
    return overrides


def stage_setting_overrides(config: Any, settings: Dict[str, Any]) -> Dict[str, Any]:
    """Overrides applying each setting to every component that has it."""
    overrides: Dict[str, Any] = {}
    for name, section in config.get("components", {}).items():
        for key, value in (settings or {}).items():
            if isinstance(section, dict) and key in section:
                overrides[f"components.{name}.{key}"] = value
    return overrides


# factory name prefix -> the package whose import registers those factories (spaCy finds
# them no other way: medspaCy declares no entry points)
HOST_PACKAGES = {"medspacy_": "medspacy"}


def import_host_factories(config: Any) -> None:
    """Import the host packages whose factories the config names (``medspacy_sectionizer`` ->
    ``import medspacy``), so a saved medspaCy pipeline loads like any other. Only when named:
    importing medspaCy costs seconds."""
    import importlib

    factories = {
        str(section.get("factory", "")) for section in config.get("components", {}).values() if isinstance(section, dict)
    }
    for prefix, package in HOST_PACKAGES.items():
        if any(name.startswith(prefix) for name in factories):
            if package == "medspacy":
                from ..logs import quiet_medspacy_loguru

                quiet_medspacy_loguru()
            try:
                importlib.import_module(package)
            except ImportError as err:
                raise PipelineError(f"the pipeline's {prefix}* components need `pip install {package}` ({err})") from err


def _directory_digest(path: Path) -> str:
    digest = hashlib.sha256()
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        digest.update(str(file.relative_to(path)).encode())
        digest.update(file.read_bytes())
    return digest.hexdigest()


def _one_line(source: Union[str, Path], err: Exception, prefix: Optional[str] = None) -> str:
    """The gist of a load error: our settings errors as they are, spaCy's dumps cut to one line."""
    from ..components.settings import SettingError, describe_config_error
    from ..extras import missing_extra_message
    from ..resources_io import ResourceError

    if isinstance(err, (SettingError, ResourceError, PipelineError)):
        return str(err)
    missing = missing_extra_message(err, f"the pipeline {source}")
    if missing is not None:
        return missing
    described = describe_config_error(err)
    if described is not None:
        return described
    return f"{prefix or f'could not load pipeline from {source}'}: {_first_line(err)}"


def _first_line(err: Exception) -> str:
    return next((line.strip() for line in str(err).splitlines() if line.strip()), type(err).__name__)
