"""Loading pipelines from a config file, a saved pipeline directory or a strategy name."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Optional, Union

import spacy
from spacy.language import Language
from spacy.util import load_config, load_model_from_config

from .attrs import CHUNKS_KEY

CONFIG_DIR = Path(__file__).resolve().parent.parent / "configs"
# trained pipelines (saved directories) that ship inside the package: strategies by folder name
MODEL_DIR = Path(__file__).resolve().parent / "models"


class PipelineError(ValueError):
    """The pipeline could not be loaded (bad path, bad config)."""


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
    pipeline directory ``spacy_clinchunk/models/<name>/`` (``load_pipeline`` and ``spacy.load``
    take either)."""
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


def resolve_source(source: Union[str, Path]) -> Path:
    """A path as given, or the file or directory of the strategy of that name."""
    path = Path(source)
    if not path.exists() and str(source) in strategies():
        path = strategy_config(str(source))
    return path


def default_spans_key(source: Union[str, Path, None]) -> str:
    """The span group a pipeline's chunks are read from: ``clin_chunks``, or the key a saved
    pipeline declares in its ``meta.json`` (``"clinchunk": {"spans_key": ...}``; the trained
    ``span_finder`` writes ``clin_trained``). ``source`` is a path or a strategy name."""
    import json

    if source is None:
        return CHUNKS_KEY
    path = resolve_source(source)
    meta = path / "meta.json"
    if path.is_dir() and meta.is_file():
        try:
            key = json.loads(meta.read_text(encoding="utf-8")).get("clinchunk", {}).get("spans_key")
        except (OSError, ValueError, AttributeError):
            key = None
        if isinstance(key, str) and key:
            return key
    return CHUNKS_KEY


def _one_line(source: Union[str, Path], err: Exception) -> str:
    """The gist of a load error: our settings errors as they are, spaCy's dumps cut to one line."""
    from .components.settings import SettingError, describe_config_error

    if isinstance(err, SettingError):
        return str(err)
    described = describe_config_error(err)
    if described is not None:
        return described
    first = next((line.strip() for line in str(err).splitlines() if line.strip()), type(err).__name__)
    return f"could not load pipeline from {source}: {first}"


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


def load_pipeline(
    source: Union[str, Path],
    overrides: Optional[Dict[str, Any]] = None,
    lang: Optional[str] = None,
    stage_settings: Optional[Dict[str, Any]] = None,
) -> Language:
    """Build a pipeline from a ``.cfg`` file, a saved pipeline directory or a strategy name.

    ``stage_settings`` (e.g. ``{"threshold": 0.4}``) apply to every component that has the
    setting; ``overrides`` are spaCy-style dotted config overrides.
    """
    path = resolve_source(source)
    if not path.exists():
        raise PipelineError(f"config or pipeline not found: {source}")
    config_file = path / "config.cfg" if path.is_dir() else path
    try:
        overrides = {**stage_setting_overrides(config_file, stage_settings or {}), **dict(overrides or {})}
    except Exception as err:
        raise PipelineError(f"could not read config {config_file}: {err}") from err
    if lang:
        overrides["nlp.lang"] = lang
    try:
        if path.is_dir():
            return spacy.load(path, config=overrides)
        config = load_config(path, overrides=overrides, interpolate=False)
        nlp = load_model_from_config(config, auto_fill=True, validate=True)
        nlp.initialize()
        return nlp
    except PipelineError:
        raise
    except Exception as err:  # config errors from confection/spaCy are verbose; keep the gist
        raise PipelineError(_one_line(source, err)) from err
