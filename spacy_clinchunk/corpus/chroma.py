"""A corpus run into a persistent Chroma collection (``fmt="chroma"``).

Workers write each shard's embedded rows (:class:`~spacy_clinchunk.export.writers.VectorRows`:
``shards/<name>.chroma/``); the driver upserts a shard's rows into the collection as soon as
the shard is done, then enters the shard in the manifest. Chroma's persistent client belongs
to one process (each keeps its own copy of the vector index), so only the driver writes it.

Resumption is that of every corpus run: a shard in the manifest was upserted, so a rerun after
an interruption skips it; a shard whose worker or upsert was cut off is redone, and since
record ids are stable (``<doc id>:<start>-<end>``) its upsert replaces what got in, never
duplicates it. Before upserting a shard, the chunks its documents had in the collection are
deleted, so a rerun with another config leaves no stale chunk of those documents behind.
"""
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from ..export.writers import VectorRows
from .errors import CorpusError

DEFAULT_COLLECTION = "clinchunk"
# collection metadata key naming the embedder its vectors come from (``kind:name``: embedder_label)
EMBEDDER_KEY = "clinchunk_embedder"
DEFAULT_EMBEDDER = "sentence-transformers"


@dataclass(frozen=True)
class ChromaTarget:
    """Where a corpus run upserts: a persistent Chroma directory, a collection, the embedder."""

    path: str
    collection: str = DEFAULT_COLLECTION
    model: Optional[str] = None  # the embedder's model; None: the bundled MiniLM (static: distilled from it)
    embedder: str = DEFAULT_EMBEDDER  # the kind: sentence-transformers | static (embed.kinds.EMBEDDER_KINDS)

    @property
    def label(self) -> str:
        """``kind:name`` of the vectors, as the collection and the manifest record it."""
        from ..embed.kinds import embedder_label

        return embedder_label(self.embedder, self.model)

    def store(self) -> List[str]:
        """What a manifest entry records, so that a shard upserted elsewhere, or embedded with
        another embedder, is not skipped."""
        return [self.path, self.collection, self.label]

    def check_embedder(self) -> None:
        """A one-line :class:`CorpusError` now, in the driver, when the embedder's extra is not
        installed, rather than a traceback from every worker later."""
        import importlib.util

        from ..embed.kinds import KIND_MODULES
        from ..extras import missing_extra_message

        module = KIND_MODULES[self.embedder]
        if importlib.util.find_spec(module) is None:
            missing = ModuleNotFoundError(f"No module named '{module}'", name=module)
            raise CorpusError(missing_extra_message(missing, f"--embedder {self.embedder}") or f"{module} is missing")

    def worker_model(self) -> Optional[str]:
        """The model the workers load. For ``static``: the directory given, checked here (one line,
        not a traceback per worker) and made absolute (a Ray worker has a cwd of its own), or the
        cached distillation of the bundled MiniLM, distilled here once if absent (never by two
        workers at once)."""
        if self.embedder != "static":
            return self.model
        from ..embed.embedders import StaticEmbedder

        if self.model is None:
            return str(StaticEmbedder().distilled_path())
        folder = Path(self.model).expanduser()
        if not folder.is_dir():
            raise CorpusError(f"--embed-model '{self.model}' is not a directory saved by model2vec")
        return str(folder.resolve())


def held_label(held: str) -> str:
    """The label of a collection's vectors as recorded; one recorded before the kind was (a bare
    model name) names a sentence-transformers model, the only kind there was."""
    from ..embed.kinds import EMBEDDER_KINDS

    if any(held.startswith(f"{kind}:") for kind in EMBEDDER_KINDS):
        return held
    return f"{DEFAULT_EMBEDDER}:{held}"


def flags_of(label: str) -> str:
    """The ``--embedder``/``--embed-model`` flags that give the vectors of ``label``."""
    kind, _, name = label.partition(":")
    if kind == "static" and name.startswith("model2vec("):
        return "--embedder static"
    return f"--embedder {kind} --embed-model {name}"


class ChromaSink:
    """The driver's handle on the collection: :meth:`upsert` one finished shard's rows."""

    def __init__(self, target: ChromaTarget) -> None:
        try:
            import chromadb
            from chromadb.config import Settings
        except ImportError as err:
            raise CorpusError("--format chroma needs `pip install chromadb`") from err
        os.makedirs(target.path, mode=0o700, exist_ok=True)  # the store holds note text: owner-only
        client = chromadb.PersistentClient(path=target.path, settings=Settings(anonymized_telemetry=False))
        # no embedding function: rows come embedded (Chroma's default one downloads a model)
        label = target.label
        self.collection = client.get_or_create_collection(
            target.collection, embedding_function=None, metadata={EMBEDDER_KEY: label}
        )
        held = (self.collection.metadata or {}).get(EMBEDDER_KEY)
        if held is not None and held_label(str(held)) != label:
            raise CorpusError(
                f"collection '{target.collection}' holds vectors of {held}, not {label}; "
                f"give --collection another name or {flags_of(held_label(str(held)))}"
            )
        self.batch = max(1, min(5000, int(client.get_max_batch_size())))

    def upsert(self, folder: Path) -> int:
        """Upsert the rows of one shard (replacing its documents' earlier chunks); the count."""
        ids, documents, metadatas, vectors = read_rows(folder)
        doc_ids = sorted({str(m["doc_id"]) for m in metadatas})
        for start in range(0, len(doc_ids), self.batch):
            self.collection.delete(where={"doc_id": {"$in": doc_ids[start : start + self.batch]}})
        for start in range(0, len(ids), self.batch):
            end = start + self.batch
            self.collection.upsert(
                ids=ids[start:end], documents=documents[start:end], metadatas=metadatas[start:end],
                embeddings=vectors[start:end],
            )
        return len(ids)


def read_rows(folder: Path) -> Tuple[List[str], List[str], List[Dict[str, Any]], Any]:
    """``(ids, documents, metadatas, embeddings)`` of a shard written by ``VectorRows``."""
    import numpy as np

    ids, documents, metadatas = [], [], []
    with open(Path(folder) / VectorRows.ROWS, encoding="utf-8") as rows:
        for line in rows:
            row = json.loads(line)
            ids.append(row["id"])
            documents.append(row["document"])
            metadatas.append(row["metadata"])
    vectors = np.load(Path(folder) / VectorRows.EMBEDDINGS)
    if len(vectors) != len(ids):
        raise CorpusError(f"{folder}: {len(ids)} rows but {len(vectors)} embeddings; rerun with --no-resume")
    return ids, documents, metadatas, vectors


def private_store(path: str, file_mode: int) -> None:
    """``file_mode`` on every file Chroma wrote (its folders are owner-only from the start)."""
    for folder, _dirs, files in os.walk(path):
        for name in files:
            os.chmod(os.path.join(folder, name), file_mode)
