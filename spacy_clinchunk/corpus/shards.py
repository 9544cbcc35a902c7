"""Shard planning and reading: which documents make one unit of work and one output shard.

Each JSON/JSONL file is a shard; ``.txt`` files are grouped per folder, ``shard_size`` a
shard. A JSONL file larger than ``split_bytes`` is split into byte ranges (sub-shards,
``<name>.p000`` ...), each holding the lines that *start* inside it, so that one big file
balances over workers. Planning depends on the inputs and these two settings only, never
on the number of workers, so every engine and worker count writes the same shards.
"""
import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence, Tuple, Union

from .inputs import (
    JSONL_SUFFIXES,
    STDIN,
    InputDoc,
    InputError,
    InputFile,
    expand_input_files,
    file_kind,
    read_file,
    read_jsonl_lines,
)
from .errors import CorpusError

DEFAULT_SHARD_SIZE = 1000
DEFAULT_SPLIT_BYTES = 8 * 1024 * 1024
_BLOCK = 1 << 20


@dataclass
class Shard:
    """One unit of work: a JSON(L) file, a byte range of one, or a group of .txt files."""

    name: str
    sources: List[str]
    root: str = ""
    start: int = 0
    end: Optional[int] = None  # byte range of a split JSONL file; None: to the end
    encoding: str = "utf-8"  # of the files' bytes (CorpusOptions.encoding)
    # sources whose document ids keep their suffix (another input differs only in it)
    suffixed: Tuple[str, ...] = ()

    def fingerprint(self) -> str:
        digest = hashlib.sha256()
        for source in self.sources:
            try:
                stat = os.stat(source)
                digest.update(f"{os.path.abspath(source)}|{stat.st_size}|{stat.st_mtime_ns}\n".encode())
            except OSError:
                digest.update(f"{os.path.abspath(source)}|missing\n".encode())
        if self.end is not None:
            digest.update(f"{self.start}-{self.end}".encode())
        if self.suffixed:  # ids that keep their suffix are other ids: a resumed run redoes the shard
            digest.update(("suffixed=" + "|".join(self.suffixed)).encode())
        if self.encoding != "utf-8":  # read otherwise, the same bytes are other documents
            digest.update(f"encoding={self.encoding}".encode())
        return digest.hexdigest()[:16]

    def size(self) -> int:
        """Input bytes, for scheduling the largest shards first."""
        if self.end is not None:
            return self.end - self.start
        return sum(os.path.getsize(s) for s in self.sources if os.path.exists(s))


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "root"


def plan_shards(
    inputs: Union[str, Path, Sequence[Union[str, Path]]],
    shard_size: int = DEFAULT_SHARD_SIZE,
    split_bytes: int = DEFAULT_SPLIT_BYTES,
) -> List[Shard]:
    """Input shards in a stable order: JSON(L) files alone (big ones split), .txt files grouped."""
    raw = [str(inputs)] if isinstance(inputs, (str, Path)) else [str(p) for p in inputs]
    if STDIN in raw:
        raise CorpusError("corpus runs read files, not stdin ('-')")
    try:
        files = expand_input_files(raw)
    except InputError as err:
        raise CorpusError(str(err)) from err
    unique: Dict[str, InputFile] = {}
    for file in files:
        absolute = InputFile(os.path.abspath(file.path), os.path.abspath(file.root), file.keep_suffix)
        unique.setdefault(absolute.path, absolute)
    if not unique:
        raise CorpusError(f"no input documents in {' '.join(raw)} (read: .txt, .text, .json, .jsonl, .ndjson)")
    common = os.path.commonpath([os.path.dirname(f) for f in unique])
    shards: List[Shard] = []
    groups: Dict[Tuple[str, str], List[str]] = {}
    for path, file in unique.items():
        if file_kind(path) == "text":
            groups.setdefault((os.path.dirname(path), file.root), []).append(path)
        else:
            name = _slug(os.path.splitext(os.path.relpath(path, common))[0])
            shards.extend(_split(Shard(name, [path], file.root, suffixed=_suffixed([file])), split_bytes))
    size = max(1, int(shard_size))
    for (folder, root), members in groups.items():
        base = _slug(os.path.relpath(folder, common)) if folder != common else "txt"
        for number, start in enumerate(range(0, len(members), size)):
            picked = members[start : start + size]
            suffixed = _suffixed([unique[member] for member in picked])
            shards.append(Shard(f"{base}-{number:05d}", picked, root, suffixed=suffixed))
    _dedupe_names(shards)
    return shards


def fit_to_workers(
    inputs: Union[str, Path, Sequence[Union[str, Path]]], shards: List[Shard], workers: int,
    shard_size: int, split_bytes: int,
) -> Tuple[List[Shard], Tuple[int, int], Optional[str]]:
    """``shards``, or when they are fewer than ``workers`` a plan with smaller shards (.txt files
    per shard, JSONL bytes per sub-shard) so that every worker gets work; the sizes used and
    one line saying so (``None`` when the plan stands)."""
    if len(shards) >= workers or workers < 2:
        return shards, (shard_size, split_bytes), None
    texts = sum(len(s.sources) for s in shards if file_kind(s.sources[0]) == "text")
    jsonl = sum(s.size() for s in shards if Path(s.sources[0]).suffix.lower() in JSONL_SUFFIXES)
    size = min(shard_size, max(1, -(-texts // workers))) if texts else shard_size
    split = min(split_bytes, max(1, -(-jsonl // workers))) if jsonl else split_bytes
    planned = plan_shards(inputs, size, split)
    if len(planned) <= len(shards):
        return shards, (shard_size, split_bytes), None
    return planned, (size, split), (
        f"{len(shards)} shard(s) for {workers} workers: split into {len(planned)} so that every worker gets work "
        f"(shard size {size}, split bytes {split})"
    )


def _suffixed(files: Sequence[InputFile]) -> Tuple[str, ...]:
    return tuple(file.path for file in files if file.keep_suffix)


def _split(shard: Shard, split_bytes: int) -> List[Shard]:
    path = shard.sources[0]
    size = os.path.getsize(path)
    if Path(path).suffix.lower() not in JSONL_SUFFIXES or not split_bytes or size <= split_bytes:
        return [shard]
    pieces = -(-size // int(split_bytes))
    step = -(-size // pieces)
    return [
        Shard(f"{shard.name}.p{k:03d}", [path], shard.root, k * step, min(size, (k + 1) * step), suffixed=shard.suffixed)
        for k in range(pieces)
    ]


def _dedupe_names(shards: List[Shard]) -> None:
    names = [s.name for s in shards]
    duplicates = {n for n in names if names.count(n) > 1}
    for shard in shards:  # e.g. a.jsonl and a.ndjson in one folder
        if shard.name in duplicates:
            shard.name = f"{shard.name}-{hashlib.sha1(shard.sources[0].encode()).hexdigest()[:6]}"


def read_shard(shard: Shard) -> Iterator[InputDoc]:
    """The shard's documents in order (a worker reads its own shard)."""
    if shard.end is not None:
        file = InputFile(shard.sources[0], shard.root, shard.sources[0] in shard.suffixed)
        lines = _lines_in_range(file.path, shard.start, shard.end)
        yield from read_jsonl_lines(lines, file.path, file.base_id, shard.encoding)
        return
    for source in shard.sources:
        yield from read_file(InputFile(source, shard.root, source in shard.suffixed), shard.encoding)


def _lines_in_range(path: str, start: int, end: int) -> Iterator[Tuple[int, bytes]]:
    """``(line number, line)`` for the lines of ``path`` that start in ``[start, end)``."""
    with open(path, "rb") as handle:
        number = 1
        if start > 0:  # the line that starts at or after ``start`` follows one more newline
            number = 2 + _count_newlines(handle, start - 1)
            handle.seek(start - 1)
            if handle.read(1) != b"\n":  # inside a line that belongs to the previous range
                handle.readline()
        while handle.tell() < end:
            line = handle.readline()
            if not line:
                return
            yield number, line
            number += 1


def _count_newlines(handle, upto: int) -> int:
    handle.seek(0)
    count, left = 0, upto
    while left > 0:
        block = handle.read(min(_BLOCK, left))
        if not block:
            break
        count += block.count(b"\n")
        left -= len(block)
    return count
