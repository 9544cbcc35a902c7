"""Persistent SQLite cache of LLM answers (``spacy_clinchunk.SQLiteCache.v1``).

Off unless chosen: ``cache = {"@misc": "spacy_clinchunk.SQLiteCache.v1"}`` in the
component's config. The cache holds note-derived text (the context the model wrote for
each window, under a key that hashes the model, the prompt template's version, the note
and the window), so the file is created owner-only (0600, in a folder created 0700).
WAL mode and a busy timeout make it safe to share between threads and processes; every
answer is committed as soon as it arrives, so an interrupted run resumes where it
stopped. A file that is not a SQLite cache is moved aside (``<name>.corrupt-<time>``),
never deleted.
"""
import hashlib
import json
import os
import sqlite3
import threading
import time
import warnings
from pathlib import Path
from typing import Any, Dict, Iterable, Optional, Union

from spacy.util import registry

from ..fileio import PRIVATE_DIR_MODE, PRIVATE_MODE, cache_root

DEFAULT_FILE = "llm_context.sqlite"
DEFAULT = "default"  # path meaning "llm_context.sqlite in fileio.cache_root()"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS answers (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    template_version TEXT NOT NULL,
    value TEXT NOT NULL,
    created REAL NOT NULL
)
"""


def cache_key(model: str, template_version: str, document_context: str, chunk_text: str) -> str:
    payload = json.dumps([model, template_version, document_context, chunk_text], ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class SQLiteCache:
    """A key -> JSON value store in one SQLite file (thread- and process-safe)."""

    def __init__(self, path: Union[str, Path], timeout: float = 30.0) -> None:
        self.path = Path(path).expanduser()
        self.timeout = timeout
        self._lock = threading.Lock()
        self._conn: Optional[sqlite3.Connection] = None
        self._pid: Optional[int] = None

    # -- connection ---------------------------------------------------------
    def open(self) -> "SQLiteCache":
        """Connect now; a file that is not a usable SQLite cache is moved aside (never deleted)."""
        with self._lock:
            self._connect()
        return self

    def _connect(self) -> sqlite3.Connection:
        if self._conn is not None and self._pid == os.getpid():
            return self._conn
        try:
            conn = self._open_file()
        except sqlite3.DatabaseError as err:
            if isinstance(err, sqlite3.OperationalError) or not self.path.is_file():
                raise  # unwritable or missing: the caller runs without a cache
            aside = self._move_aside()
            warnings.warn(f"LLM cache {self.path} is not a usable SQLite file ({err}); moved it to {aside}", UserWarning)
            conn = self._open_file()
        self._conn, self._pid = conn, os.getpid()
        return conn

    def _open_file(self) -> sqlite3.Connection:
        if not self.path.parent.is_dir():  # a folder we create is ours alone; an existing one is left as is
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR_MODE)
            os.chmod(self.path.parent, PRIVATE_DIR_MODE)
        if not self.path.exists():  # create it private before SQLite opens it
            fd = os.open(self.path, os.O_CREAT | os.O_RDWR, PRIVATE_MODE)
            os.close(fd)
        os.chmod(self.path, PRIVATE_MODE)
        conn = sqlite3.connect(str(self.path), timeout=self.timeout, check_same_thread=False)
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(_SCHEMA)
            conn.execute("SELECT key, model, template_version, value, created FROM answers LIMIT 1").fetchall()
            conn.commit()
        except sqlite3.Error:
            conn.close()
            raise
        for suffix in ("-wal", "-shm"):
            sidecar = Path(str(self.path) + suffix)
            if sidecar.exists():
                os.chmod(sidecar, PRIVATE_MODE)
        return conn

    def _move_aside(self) -> Path:
        """Rename the unusable file (and its WAL side files) to ``<name>.corrupt-<time>``."""
        stamp = time.strftime("%Y%m%dT%H%M%S")
        aside = self.path.with_name(f"{self.path.name}.corrupt-{stamp}-{os.getpid()}")
        os.replace(self.path, aside)
        for suffix in ("-wal", "-shm"):
            sidecar = Path(str(self.path) + suffix)
            if sidecar.exists():
                os.replace(sidecar, Path(str(aside) + suffix))
        return aside

    def close(self) -> None:
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None

    # -- API ------------------------------------------------------------------
    def get(self, key: str) -> Optional[Dict[str, Any]]:
        with self._lock:
            row = self._execute("SELECT value FROM answers WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, key: str, value: Dict[str, Any], *, model: str = "", template_version: str = "") -> None:
        data = json.dumps(value, ensure_ascii=False)
        with self._lock:
            conn = self._connect()
            self._retrying(
                lambda: conn.execute(
                    "INSERT OR REPLACE INTO answers (key, model, template_version, value, created) VALUES (?, ?, ?, ?, ?)",
                    (key, model, template_version, data, time.time()),
                )
            )
            self._retrying(conn.commit)

    def __contains__(self, key: str) -> bool:
        return self.get(key) is not None

    def __len__(self) -> int:
        with self._lock:
            return int(self._execute("SELECT COUNT(*) FROM answers", ()).fetchone()[0])

    def keys(self) -> Iterable[str]:
        with self._lock:
            return [row[0] for row in self._execute("SELECT key FROM answers", ()).fetchall()]

    def clear(self) -> None:
        with self._lock:
            conn = self._connect()
            conn.execute("DELETE FROM answers")
            conn.commit()

    def _execute(self, sql: str, params: tuple) -> sqlite3.Cursor:
        conn = self._connect()
        return self._retrying(lambda: conn.execute(sql, params))

    def _retrying(self, action):
        """SQLite's busy handler covers most contention; ``database is locked`` can still escape it."""
        for attempt in range(20):
            try:
                return action()
            except sqlite3.OperationalError as err:
                if "locked" not in str(err) and "busy" not in str(err) or attempt == 19:
                    raise
                time.sleep(0.05 * (attempt + 1))

    def __getstate__(self) -> Dict[str, Any]:  # picklable for nlp.pipe(n_process=...)
        return {"path": self.path, "timeout": self.timeout}

    def __setstate__(self, state: Dict[str, Any]) -> None:
        self.__init__(state["path"], state["timeout"])

    def __repr__(self) -> str:
        return f"SQLiteCache({str(self.path)!r})"


@registry.misc("spacy_clinchunk.SQLiteCache.v1")
def sqlite_cache_v1(path: Optional[str] = DEFAULT, timeout: float = 30.0) -> Optional[SQLiteCache]:
    """The LLM answer cache: ``path = "default"`` is ``llm_context.sqlite`` in the package's
    cache folder (``fileio.cache_root()``), ``null`` means no cache."""
    if path is None or not str(path).strip():
        return None
    file = cache_root() / DEFAULT_FILE if str(path) == DEFAULT else Path(path).expanduser()
    return SQLiteCache(file, timeout=timeout)
