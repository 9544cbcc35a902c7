"""Old module paths of the flat layout (0.1), kept importable as aliases of their new homes.

``from spacy_clinchunk.records import chunk_records`` worked before the package was split
into wings; this import hook keeps it working without leaving modules on the old floor.
The alias *is* the new module (same object), so classes, registries and pickles agree, and
each old path warns once with a ``DeprecationWarning`` that names the new one.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings
from typing import Dict, Optional

# old dotted path -> new dotted path
MOVED: Dict[str, str] = {
    "spacy_clinchunk.base": "spacy_clinchunk.components.base",
    "spacy_clinchunk.punct_splitter": "spacy_clinchunk.components.punct_splitter",
    "spacy_clinchunk.conj_splitter": "spacy_clinchunk.components.conj_splitter",
    "spacy_clinchunk.cleaner": "spacy_clinchunk.components.cleaner",
    "spacy_clinchunk.semantic_window": "spacy_clinchunk.components.semantic_window",
    "spacy_clinchunk.context_assertion": "spacy_clinchunk.components.context_assertion",
    "spacy_clinchunk.llm_context": "spacy_clinchunk.components.llm_context",
    "spacy_clinchunk.focus": "spacy_clinchunk.components.focus",
    "spacy_clinchunk.coordination": "spacy_clinchunk.components.coordination",
    "spacy_clinchunk.settings": "spacy_clinchunk.components.settings",
    "spacy_clinchunk.llm_clients": "spacy_clinchunk.llm.clients",
    "spacy_clinchunk.llm_cache": "spacy_clinchunk.llm.cache",
    "spacy_clinchunk.tokens": "spacy_clinchunk.llm.tokens",
    "spacy_clinchunk.embedders": "spacy_clinchunk.embed.embedders",
    "spacy_clinchunk.transformer_listener": "spacy_clinchunk.embed.transformer_listener",
    "spacy_clinchunk.annotations": "spacy_clinchunk.groundtruth.annotations",
    "spacy_clinchunk.bioc": "spacy_clinchunk.groundtruth.bioc",
    "spacy_clinchunk.brat": "spacy_clinchunk.groundtruth.brat",
    "spacy_clinchunk.annotation_files": "spacy_clinchunk.fileio",
    "spacy_clinchunk.voronoi": "spacy_clinchunk.groundtruth.voronoi",
    "spacy_clinchunk.evaluate": "spacy_clinchunk.groundtruth.evaluate",
    "spacy_clinchunk.records": "spacy_clinchunk.export.records",
    "spacy_clinchunk.langchain": "spacy_clinchunk.export.langchain",
    "spacy_clinchunk.llama_index": "spacy_clinchunk.export.llama_index",
    "spacy_clinchunk.view": "spacy_clinchunk.export.view",
    "spacy_clinchunk.inputs": "spacy_clinchunk.corpus.inputs",
}
# (``spacy_clinchunk.export`` is now the export wing itself; its __init__ re-exports
# what the old export.py offered.)


class MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Answers an old path with the module at its new one."""

    def find_spec(self, fullname: str, path=None, target=None):  # noqa: D102
        if fullname not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):  # noqa: D102
        new = MOVED[spec.name]
        warnings.warn(f"{spec.name} moved to {new}; import it from there", DeprecationWarning, stacklevel=2)
        module = importlib.import_module(new)
        self._real_spec = module.__spec__
        return module

    def exec_module(self, module) -> None:  # noqa: D102
        # importlib stamped the alias's spec on the shared module object: give it back its own
        module.__spec__ = self._real_spec


def install() -> None:
    """Add the finder once (idempotent)."""
    if not any(isinstance(f, MovedModuleFinder) for f in sys.meta_path):
        sys.meta_path.append(MovedModuleFinder())


def new_path(old: str) -> Optional[str]:
    return MOVED.get(old)
