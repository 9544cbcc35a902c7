"""Language resources: word lists shipped in the wheel, per-language fallback, overrides.

Resources live in ``spacy_clinchunk/resources/<lang>/<name>.json`` (the ``resources/``
folder of the source tree, mapped into the package by ``setup.cfg``) and are read
with :mod:`importlib.resources`, so they work from an installed wheel.
"""
from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources as importlib_resources
from pathlib import Path
from typing import Any, List, Optional, Union

from spacy.util import registry

from .fileio import warn_once

SUPPORTED_LANGUAGES = ("en", "de", "es", "fr", "nl")
FALLBACK_LANGUAGE = "en"
RESOURCE_PACKAGE = "spacy_clinchunk.resources"

Override = Union[List[str], str]


class ResourceError(ValueError):
    """A resource file or override is missing or malformed."""


def resolve_language(lang: Optional[str], component: str) -> str:
    """Return ``lang`` if we ship resources for it, else English with one warning."""
    code = (lang or FALLBACK_LANGUAGE).split("_")[0].split("-")[0].lower()
    if code in SUPPORTED_LANGUAGES:
        return code
    warn_once(
        f"{component}: no resources for language '{code}'; falling back to English. "
        f"Supported: {', '.join(SUPPORTED_LANGUAGES)}.",
        stacklevel=4,
    )
    return FALLBACK_LANGUAGE


def resource_root():
    return importlib_resources.files(RESOURCE_PACKAGE)


def resource_path(lang: str, name: str):
    """Traversable of ``<lang>/<name>`` inside the installed package."""
    return resource_root().joinpath(lang).joinpath(name)


@lru_cache(maxsize=None)
def load_json_resource(lang: str, name: str) -> Any:
    """Parsed JSON of a shipped resource file (cached; callers must not mutate)."""
    path = resource_path(lang, f"{name}.json")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as err:
        raise ResourceError(f"missing resource file {lang}/{name}.json") from err
    except json.JSONDecodeError as err:
        raise ResourceError(f"malformed resource file {lang}/{name}.json: {err}") from err


def load_word_list(lang: str, name: str) -> List[str]:
    data = load_json_resource(lang, name)
    return _validate_word_list(data, f"{lang}/{name}.json")


def _validate_word_list(data: Any, origin: str) -> List[str]:
    if not isinstance(data, list) or not all(isinstance(x, str) and x.strip() for x in data):
        raise ResourceError(f"{origin}: expected a JSON list of non-empty strings")
    return list(data)


def read_json_file(path: Union[str, Path], origin: str) -> Any:
    """Parsed JSON of a user's file; errors name ``origin`` and the path."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"{origin}: file not found: {path}")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ResourceError(f"{origin}: {path} is not valid JSON: {err}") from err


def resolve_override(value: Override, name: str) -> List[str]:
    """An override is an inline list or a path to a JSON list."""
    if isinstance(value, (list, tuple)):
        return _validate_word_list(list(value), f"override '{name}'")
    if isinstance(value, str):
        try:
            data = read_json_file(value, f"override '{name}'")
        except FileNotFoundError as err:
            raise ResourceError(str(err)) from err
        return _validate_word_list(data, str(value))
    raise ResourceError(f"override '{name}': expected a list of strings or a JSON path")


@registry.misc("spacy_clinchunk.ResourceList.v1")
def resource_list_v1(lang: str, name: str) -> List[str]:
    """A shipped word list, usable in config: ``@misc = "spacy_clinchunk.ResourceList.v1"``."""
    return load_word_list(resolve_language(lang, "ResourceList"), name)
