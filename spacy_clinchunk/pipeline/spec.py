"""The recipe of a pipeline: :class:`PipelineSpec`, built once (by the CLI or the API).

A spec names what to load (a strategy name, a ``.cfg`` file or a saved pipeline directory)
and how (config overrides, language, stage settings, a ``--code`` file, ``max_length``, the
chunks group asked for). It is plain data, so it crosses process boundaries: a corpus worker
resolves the same spec the driver resolved (:meth:`PipelineSpec.pinned`), never a ``Language``.
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Dict, List, Optional, Union

CONFIG_DIR = Path(__file__).resolve().parent.parent.parent / "configs"
# trained pipelines (saved directories) that ship inside the package: strategies by folder name
MODEL_DIR = Path(__file__).resolve().parent.parent / "models"


class PipelineError(ValueError):
    """The pipeline could not be loaded (unknown strategy, bad path, bad config): one line."""


@dataclass(frozen=True)
class PipelineSpec:
    """What to load and how; the only input of :func:`~spacy_clinchunk.pipeline.resolve_pipeline`.

    ``source``: a strategy name, a config file or a saved pipeline directory. ``overrides``:
    dotted config overrides (``{"components.clin_cleaner.max_cleanup_passes": 0}``).
    ``lang``: a language code (sets ``nlp.lang`` and forces it on assertion) or ``"auto"``.
    ``stage_settings``: settings applied to every component that has them
    (``{"threshold": 0.4}``). ``code``: a Python file with custom components, imported first.
    ``max_length``: ``nlp.max_length``. ``spans_key``: the chunks group to read (default: the
    one the pipeline writes its chunks to). ``config_text``: the config file's text as the
    driver read it (:meth:`pinned`), so workers load exactly what the driver loaded.
    """

    source: str
    overrides: Dict[str, Any] = field(default_factory=dict)
    lang: Optional[str] = None
    stage_settings: Dict[str, Any] = field(default_factory=dict)
    code: Optional[str] = None
    max_length: Optional[int] = None
    spans_key: Optional[str] = None
    config_text: Optional[str] = None

    @classmethod
    def of(cls, source: Union[str, Path, "PipelineSpec"], **settings: Any) -> "PipelineSpec":
        """A spec from a source and keyword settings (``None`` settings left at their defaults)."""
        if isinstance(source, PipelineSpec):
            return replace(source, **{k: v for k, v in settings.items() if v is not None}) if settings else source
        given = {k: v for k, v in settings.items() if v is not None}
        for name in ("overrides", "stage_settings"):
            if name in given:
                given[name] = dict(given[name])
        return cls(source=str(source), **given)

    def path(self) -> Path:
        """The config file or saved pipeline directory the source names (:func:`source_path`)."""
        return source_path(self.source)

    def config_file(self) -> Path:
        path = self.path()
        return path / "config.cfg" if path.is_dir() else path

    def pinned(self) -> "PipelineSpec":
        """The same recipe with absolute paths and the config file's text read now: what a
        corpus run hands its workers (a config edited mid-run cannot split the run)."""
        path = self.path().resolve()
        text = self.config_text
        if text is None and not path.is_dir():
            text = path.read_text(encoding="utf-8")
        code = str(Path(self.code).resolve()) if self.code else None
        return replace(self, source=str(path), code=code, config_text=text)


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


def import_code(path: Optional[str]) -> None:
    """Import a Python file with custom components (spaCy's ``--code``), once per process.

    Its folder goes on ``sys.path`` so that spawned processes can import what it defines;
    any failure is one :class:`PipelineError` line.
    """
    if not path:
        return
    file = Path(path).resolve()
    if not file.is_file():
        raise PipelineError(f"code file not found: {path}")
    folder = str(file.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    try:
        importlib.import_module(file.stem)
    except Exception as err:  # the user's file: a syntax error, a missing import ...
        raise PipelineError(f"cannot import --code {path}: {type(err).__name__}: {err}") from err
