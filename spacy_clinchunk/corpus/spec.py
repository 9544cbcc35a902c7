"""The pipeline recipe of a corpus run: what each worker rebuilds its pipeline from.

No ``Language`` object ever crosses a process boundary; a :class:`PipelineSpec` (a config
text or a saved pipeline path, plus overrides) does, and each worker loads it once.
"""
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Optional, Tuple, Union

from .. import attrs


class CorpusError(ValueError):
    """A corpus run cannot start or cannot go on (bad input, output, engine or pipeline)."""


@dataclass
class PipelineSpec:
    """Picklable recipe of a pipeline: a resolved config text or a saved pipeline directory."""

    source: str
    config_text: Optional[str] = None
    overrides: Dict[str, Any] = field(default_factory=dict)
    lang: Optional[str] = None
    stage_settings: Dict[str, Any] = field(default_factory=dict)
    code: Optional[str] = None
    max_length: Optional[int] = None
    chunks_key: str = attrs.CHUNKS_KEY  # the group the pipeline writes its chunks to

    def load(self):
        """The pipeline, ready for :func:`~spacy_clinchunk.corpus.processing.process_items`."""
        import_code(self.code)
        if self.config_text is not None:
            from spacy.util import load_model_from_config
            from thinc.api import Config

            config = Config().from_str(self.config_text, interpolate=False)
            nlp = load_model_from_config(config, auto_fill=True, validate=True)
            nlp.initialize()
        else:
            from ..pipeline import load_pipeline

            nlp = load_pipeline(self.source, self.overrides, lang=self.lang, stage_settings=self.stage_settings)
        return prepare(nlp, self.max_length)


def prepare(nlp, max_length: Optional[int] = None):
    """Extensions registered, ``max_length`` applied and the corpus error handler set."""
    from .processing import record_component_error

    if max_length:
        nlp.max_length = int(max_length)
    attrs.register_extensions()
    nlp.set_error_handler(record_component_error)
    return nlp


def import_code(path: Optional[str]) -> None:
    """Import a Python file with custom components (spaCy's ``--code``), once per process.

    Its folder goes on ``sys.path`` so that spawned processes can import what it defines.
    """
    if not path:
        return
    import importlib
    import sys

    file = Path(path).resolve()
    if not file.is_file():
        raise CorpusError(f"code file not found: {path}")
    folder = str(file.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    importlib.import_module(file.stem)


def load_spec(
    config_or_path: Union[str, Path],
    overrides: Optional[Dict[str, Any]] = None,
    lang: Optional[str] = None,
    stage_settings: Optional[Dict[str, Any]] = None,
    code: Optional[str] = None,
    max_length: Optional[int] = None,
) -> Tuple[Any, PipelineSpec, str]:
    """Load the pipeline once here, so a bad config fails before any worker starts.

    Returns ``(nlp, spec, config_hash)``; the hash keys resume (a changed config redoes shards),
    ``spec.chunks_key`` is the group the loaded pipeline writes its chunks to.
    """
    from ..pipeline import PipelineError, resolve_pipeline

    import_code(code)
    try:
        resolved = resolve_pipeline(config_or_path, overrides, lang=lang, stage_settings=stage_settings)
    except PipelineError as err:
        raise CorpusError(str(err)) from err
    nlp, path = resolved.nlp, resolved.path
    if path is None:
        raise CorpusError("a corpus run needs a config file, a saved pipeline or a strategy name: each worker loads its own")
    spec = PipelineSpec(
        source=str(path.resolve()),
        overrides=dict(overrides or {}),
        lang=lang,
        stage_settings=dict(stage_settings or {}),
        code=str(Path(code).resolve()) if code else None,
        max_length=max_length,
        chunks_key=resolved.chunks_key,
    )
    digest = hashlib.sha256()
    if path.is_dir():
        digest.update(_directory_digest(path).encode())
        digest.update(json.dumps([spec.overrides, lang, spec.stage_settings], sort_keys=True, default=str).encode())
    else:
        spec.config_text = nlp.config.to_str()
        digest.update(spec.config_text.encode())
    if max_length:
        digest.update(f"max_length={max_length}".encode())
    return prepare(nlp, max_length), spec, digest.hexdigest()[:16]


def _directory_digest(path: Path) -> str:
    digest = hashlib.sha256()
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        digest.update(str(file.relative_to(path)).encode())
        digest.update(file.read_bytes())
    return digest.hexdigest()
