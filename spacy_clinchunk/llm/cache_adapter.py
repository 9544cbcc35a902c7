"""The component's side of the answer cache: keys, first-use opening, and failures contained.

The cache is whatever the ``cache`` setting built (``spacy_clinchunk.SQLiteCache.v1`` or
another registered function), or None. It needs ``get(key) -> dict | None`` and
``put(key, value, *, model, template_version)``; an ``open()`` method, if it has one, is
called before first use. A cache that fails, at opening or in the middle of a run, is
dropped with one warning and the run goes on without it: a broken cache costs the
cache, never the chunks.
"""
import threading
from typing import Any, Dict, Optional

from ..fileio import warn_once
from .cache import cache_key


class AnswerCache:
    """Answers of ``model`` for (template version, note part, chunk), in ``cache``."""

    def __init__(self, cache: Optional[Any], owner: str) -> None:
        self.cache = cache
        self.owner = owner
        self._live: Optional[Any] = None
        self._opened = False
        self._lock = threading.Lock()

    @property
    def live(self) -> Optional[Any]:
        """The cache, opened on first use; None when there is none or it failed."""
        if not self._opened:
            with self._lock:
                if not self._opened:
                    self._live = self.cache
                    if self.cache is not None and hasattr(self.cache, "open"):
                        try:
                            self.cache.open()
                        except Exception as err:  # any cache's failure: run without it
                            self._drop(err)
                    self._opened = True
        return self._live

    def key(self, model: Any, template_version: str, document: str, chunk: str) -> Optional[str]:
        """The entry's key (hashes only), or None when there is no cache to ask."""
        if self.live is None:
            return None
        return cache_key(model.identity, template_version, document, chunk)

    def get(self, key: Optional[str]) -> Optional[str]:
        """The model's raw answer stored under ``key``, if any."""
        cache = self.live
        if cache is None or not key:
            return None
        try:
            hit = cache.get(key)
        except Exception as err:
            self._drop(err)
            return None
        return hit.get("text") if isinstance(hit, dict) else None

    def put(self, key: str, completion: Any, *, model: Any, template_version: str) -> None:
        cache = self.live
        if cache is None:
            return
        value = {"text": completion.text, "prompt_tokens": completion.prompt_tokens, "completion_tokens": completion.completion_tokens}
        try:
            cache.put(key, value, model=model.identity, template_version=template_version)
        except Exception as err:
            self._drop(err)

    def _drop(self, err: Exception) -> None:
        self._live = None  # pool threads may get here together
        where = getattr(self.cache, "path", None) or type(self.cache).__name__
        warn_once(f"{self.owner}: the LLM cache at {where} failed ({type(err).__name__}: {err}); continuing without it")

    def __getstate__(self) -> Dict[str, Any]:  # picklable for nlp.pipe(n_process=...): each process opens its own
        return {"cache": self.cache, "owner": self.owner}

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__init__(state["cache"], state["owner"])
