"""Reading documents for the CLI and corpus runs: .txt files, directories, JSONL, stdin."""
import glob
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, List, Optional

TEXT_SUFFIXES = {".txt", ".text"}
JSONL_SUFFIXES = {".jsonl", ".ndjson"}
STDIN = "-"


class InputError(ValueError):
    """An input path is missing or of an unsupported kind."""


@dataclass
class InputDoc:
    """One document to process, or the reason it could not be read (``error``)."""

    id: str
    text: Optional[str]
    source: str
    error: Optional[str] = None


def expand_inputs(paths: Iterable[str]) -> List[str]:
    """Files to read, in a stable order: files as given, directories and globs expanded."""
    found: List[str] = []
    for raw in paths:
        if raw == STDIN:
            found.append(STDIN)
            continue
        path = Path(raw).expanduser()
        if path.is_dir():
            files = sorted(
                p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in TEXT_SUFFIXES | JSONL_SUFFIXES
            )
            found.extend(str(p) for p in files)
        elif path.is_file():
            found.append(str(path))
        elif any(ch in raw for ch in "*?["):
            matches = sorted(glob.glob(raw, recursive=True))
            if not matches:
                raise InputError(f"no files match {raw}")
            found.extend(m for m in matches if Path(m).is_file())
        else:
            raise InputError(f"no such file or directory: {raw}")
    return found


def read_file(source: str) -> Iterator[InputDoc]:
    """Documents of one input file (a .txt is one document, a .jsonl one per line)."""
    if source == STDIN:
        data = sys.stdin.buffer.read()
        yield from _read_bytes(data, "stdin", jsonl=_looks_like_jsonl(data))
        return
    path = Path(source)
    try:
        data = path.read_bytes()
    except OSError as err:
        yield InputDoc(id=path.stem, text=None, source=source, error=f"cannot read {source}: {err.strerror or err}")
        return
    yield from _read_bytes(data, source, jsonl=path.suffix.lower() in JSONL_SUFFIXES, default_id=path.stem)


def _looks_like_jsonl(data: bytes) -> bool:
    head = data.lstrip()[:1]
    return head == b"{"


def _read_bytes(data: bytes, source: str, *, jsonl: bool, default_id: str = "stdin") -> Iterator[InputDoc]:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        yield InputDoc(id=default_id, text=None, source=source, error=f"{source} is not valid UTF-8 (byte {err.start})")
        return
    if not jsonl:
        yield InputDoc(id=default_id, text=text, source=source)
        return
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{source}:{number}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as err:
            yield InputDoc(id=where, text=None, source=source, error=f"invalid JSON ({err.msg})")
            continue
        if not isinstance(obj, dict) or not isinstance(obj.get("text"), str):
            yield InputDoc(id=where, text=None, source=source, error="expected an object with a string 'text'")
            continue
        doc_id = obj.get("id", obj.get("doc_id", f"{default_id}_{number}"))
        yield InputDoc(id=str(doc_id), text=obj["text"], source=source)
