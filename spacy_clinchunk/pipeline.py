"""The one resolver: a strategy name, a config file or a saved pipeline becomes a pipeline.

:func:`resolve_pipeline` loads the source and reads from the *loaded* pipeline which span
groups it writes (each component's ``spans_key`` / ``focus_key``, spaCy's own span
components' ``cfg["spans_key"]``, and ``meta.json``'s ``"clinchunk": {"spans_key": ...}``
of a trained pipeline), so no caller guesses them from a file or a name. Every command,
the corpus runs and the export adapters go through it.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple, Union

import spacy
from spacy.language import Language
from spacy.util import load_config, load_model_from_config

from .attrs import CHUNKS_KEY

CONFIG_DIR = Path(__file__).resolve().parent.parent / "configs"
# trained pipelines (saved directories) that ship inside the package: strategies by folder name
MODEL_DIR = Path(__file__).resolve().parent / "models"

Source = Union[str, Path, Language]


class PipelineError(ValueError):
    """The pipeline could not be loaded (unknown strategy, bad path, bad config): one line."""


@dataclass(frozen=True)
class ResolvedPipeline:
    """A loaded pipeline and what it writes."""

    nlp: Language
    path: Optional[Path]  # the config file or saved pipeline directory (None: a Language given as is)
    spans_keys: Tuple[str, ...]  # every span group its components write, in pipeline order
    chunks_key: str  # the group its chunks are read from


def strategies() -> List[str]:
    """The strategy names: every shipped config (``configs/*.cfg``) and every trained pipeline
    shipped in the package (``spacy_clinchunk/models/<name>/``, e.g. ``span_finder``)."""
    from importlib import resources as importlib_resources

    bundled = importlib_resources.files("spacy_clinchunk.configs")
    names = {p.name[:-4] for p in bundled.iterdir() if p.name.endswith(".cfg")}
    if CONFIG_DIR.is_dir():
        names |= {p.stem for p in CONFIG_DIR.glob("*.cfg")}
    return sorted(names | set(trained_strategies()))


def trained_strategies() -> List[str]:
    """The trained pipelines that ship in the package (saved pipeline directories)."""
    if not MODEL_DIR.is_dir():
        return []
    return sorted(p.name for p in MODEL_DIR.iterdir() if (p / "config.cfg").is_file() and (p / "meta.json").is_file())


STRATEGIES = tuple(strategies())


def strategy_config(name: str) -> Path:
    """What a named strategy loads: ``configs/<name>.cfg``, or for a trained strategy the saved
    pipeline directory ``spacy_clinchunk/models/<name>/``."""
    from importlib import resources as importlib_resources

    bundled = importlib_resources.files("spacy_clinchunk.configs").joinpath(f"{name}.cfg")
    if bundled.is_file():
        return Path(str(bundled))
    local = CONFIG_DIR / f"{name}.cfg"
    if local.is_file():
        return local
    if name in trained_strategies():
        return MODEL_DIR / name
    raise PipelineError(f"unknown strategy '{name}'; known: {', '.join(strategies())}")


def source_path(source: Union[str, Path]) -> Path:
    """The file or directory a source names: a path that exists, else the strategy of that name.

    Anything else is one line: a path not found, or (a bare name) an unknown strategy.
    """
    text = str(source)
    path = Path(text).expanduser()
    if path.exists():
        return path
    if text in strategies():
        return strategy_config(text)
    if isinstance(source, Path) or any(sep in text for sep in ("/", "\\")) or path.suffix:
        raise PipelineError(f"config or pipeline not found: {source}")
    raise PipelineError(f"unknown strategy '{text}'; known: {', '.join(strategies())}")


def resolve_pipeline(
    source: Source,
    overrides: Optional[Dict[str, Any]] = None,
    *,
    lang: Optional[str] = None,
    stage_settings: Optional[Dict[str, Any]] = None,
) -> ResolvedPipeline:
    """Load ``source`` (a strategy name, a ``.cfg`` file, a saved pipeline directory or a
    ``Language`` used as it is) and read the span groups it writes.

    ``overrides`` are dotted config overrides (``{"components.clin_cleaner.max_cleanup_passes": 0}``);
    ``stage_settings`` (e.g. ``{"threshold": 0.4}``) apply to every component that has the
    setting; ``lang`` sets ``nlp.lang``. Every error is a :class:`PipelineError` of one line.
    """
    if isinstance(source, Language):
        if overrides or lang or stage_settings:
            raise PipelineError("overrides, lang and stage settings apply to a pipeline loaded here, not to a Language")
        nlp, path = source, None
    else:
        path = source_path(source)
        nlp = _load(path, source, overrides, lang, stage_settings)
    spans_keys, chunks_key = span_keys_of(nlp)
    return ResolvedPipeline(nlp, path, spans_keys, chunks_key)


def load_pipeline(
    source: Union[str, Path],
    overrides: Optional[Dict[str, Any]] = None,
    lang: Optional[str] = None,
    stage_settings: Optional[Dict[str, Any]] = None,
) -> Language:
    """The pipeline of :func:`resolve_pipeline`."""
    return resolve_pipeline(source, overrides, lang=lang, stage_settings=stage_settings).nlp


def span_keys_of(nlp: Language) -> Tuple[Tuple[str, ...], str]:
    """``(groups written, chunks group)`` of a loaded pipeline.

    The chunks group is what ``meta.json`` declares (``"clinchunk": {"spans_key": ...}``), else
    the ``chunks_key`` or ``spans_key`` of the last component that has one (a ``chunks_key``
    names the chunks a component annotates, as ``clin_llm_context`` does in ``contextual``),
    else ``clin_chunks``.
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
        focus = _key(pipe, "focus_key")
        if focus is not None:
            written.append(focus)
    declared = nlp.meta.get("clinchunk", {}).get("spans_key") if isinstance(nlp.meta.get("clinchunk"), dict) else None
    if isinstance(declared, str) and declared:
        written.append(declared)
        last = declared
    return tuple(dict.fromkeys(written)), last or CHUNKS_KEY


def _key(pipe: Any, name: str) -> Optional[str]:
    """A pipe's span key: its attribute, or (spaCy's span_finder, spancat) its ``cfg`` entry."""
    value = getattr(pipe, name, None)
    if value is None:
        cfg = getattr(pipe, "cfg", None)
        value = cfg.get(name) if isinstance(cfg, dict) else None
    return value if isinstance(value, str) and value else None


def _load(
    path: Path,
    source: Union[str, Path],
    overrides: Optional[Dict[str, Any]],
    lang: Optional[str],
    stage_settings: Optional[Dict[str, Any]],
) -> Language:
    config_file = path / "config.cfg" if path.is_dir() else path
    try:
        overrides = {**stage_setting_overrides(config_file, stage_settings or {}), **dict(overrides or {})}
    except Exception as err:
        raise PipelineError(f"could not read config {config_file}: {_first_line(err)}") from err
    if lang:
        try:
            overrides = {**language_overrides(config_file, lang), **overrides}
        except Exception as err:
            raise PipelineError(f"could not read config {config_file}: {_first_line(err)}") from err
    try:
        import_host_factories(config_file)
        if path.is_dir():
            return spacy.load(path, config=overrides)
        config = load_config(path, overrides=overrides, interpolate=False)
        nlp = load_model_from_config(config, auto_fill=True, validate=True)
        nlp.initialize()
        return nlp
    except Exception as err:  # config errors from confection/spaCy are verbose; keep the gist
        raise PipelineError(_one_line(source, err)) from err


def language_overrides(config_path: Path, lang: str) -> Dict[str, Any]:
    """``lang`` as the CLI's ``--lang`` means it: a code sets ``nlp.lang`` and forces that
    language on every assertion component; ``"auto"`` leaves ``nlp.lang`` and makes the
    assertion components detect the language of each document."""
    from .components.context_assertion import AUTO, FACTORY as ASSERTION_FACTORY

    overrides: Dict[str, Any] = {} if lang == AUTO else {"nlp.lang": lang}
    config = load_config(config_path, interpolate=False)
    for name, section in config.get("components", {}).items():
        if isinstance(section, dict) and section.get("factory") == ASSERTION_FACTORY:
            overrides[f"components.{name}.language"] = lang
    return overrides


# factory name prefix -> the package whose import registers those factories (spaCy finds
# them no other way: medspaCy declares no entry points)
HOST_PACKAGES = {"medspacy_": "medspacy"}


def import_host_factories(config_file: Path) -> None:
    """Import the host packages whose factories the config names (``medspacy_sectionizer`` ->
    ``import medspacy``), so a saved medspaCy pipeline loads like any other. Only when named:
    importing medspaCy costs seconds."""
    import importlib

    config = load_config(config_file, interpolate=False)
    factories = {str(section.get("factory", "")) for section in config.get("components", {}).values() if isinstance(section, dict)}
    for prefix, package in HOST_PACKAGES.items():
        if any(name.startswith(prefix) for name in factories):
            if package == "medspacy":
                from .logs import quiet_medspacy_loguru

                quiet_medspacy_loguru()
            try:
                importlib.import_module(package)
            except ImportError as err:
                raise PipelineError(f"the pipeline's {prefix}* components need `pip install {package}` ({err})") from err


def stage_setting_overrides(config_path: Path, settings: Dict[str, Any]) -> Dict[str, Any]:
    """Overrides applying each setting to every component that has it (the CLI's window flags)."""
    if not settings:
        return {}
    config = load_config(config_path, interpolate=False)
    overrides: Dict[str, Any] = {}
    for name, section in config.get("components", {}).items():
        for key, value in settings.items():
            if isinstance(section, dict) and key in section:
                overrides[f"components.{name}.{key}"] = value
    return overrides


def _one_line(source: Union[str, Path], err: Exception) -> str:
    """The gist of a load error: our settings errors as they are, spaCy's dumps cut to one line."""
    from .components.settings import SettingError, describe_config_error
    from .resources_io import ResourceError

    if isinstance(err, (SettingError, ResourceError)):
        return str(err)
    described = describe_config_error(err)
    if described is not None:
        return described
    return f"could not load pipeline from {source}: {_first_line(err)}"


def _first_line(err: Exception) -> str:
    return next((line.strip() for line in str(err).splitlines() if line.strip()), type(err).__name__)
