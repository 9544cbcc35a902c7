"""Reading documents for the CLI and corpus runs: .txt files, directories, JSON, JSONL, stdin.

Document ids are unique over the whole input set: a file's id is its path relative to the
common root of all the inputs (:func:`input_root`: the folder every directory, file and glob
given lies in), without the suffix, however the paths were written (relative, absolute,
``../``). ``ward3/discharge.txt ward5/discharge.txt`` become ``ward3/discharge`` and
``ward5/discharge``; one file alone is its name (``discharge``); a directory's files are
relative to it; two inputs that differ only in their suffix (``a.txt``, ``a.text``) keep it
(``a.txt``, ``a.text``). A file given twice is read once. JSON and JSONL records keep their own
``id`` (or ``doc_id``); records without one get ``<relative path>:<line or index>``.
"""
import glob
import json
import os
import re
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from ..pipeline.process import InputDoc

TEXT_SUFFIXES = {".txt", ".text"}
JSONL_SUFFIXES = {".jsonl", ".ndjson"}
JSON_SUFFIXES = {".json"}
READ_SUFFIXES = TEXT_SUFFIXES | JSONL_SUFFIXES | JSON_SUFFIXES
STDIN = "-"
RECORD_SHAPE = "an object with a string 'text'"
# keys of a JSON(L) record that are the document itself; every other key is the input's own
# field (specialty, encounter id, ...) and is carried to every record written (InputDoc.meta)
OWN_KEYS = ("id", "doc_id", "text")
# the start of the error of a document refused as binary (counted apart in a run's summary)
REFUSED = "refused: "
# control characters no clinical text holds (C0 and C1, less tab, newlines, form feed, vertical tab)
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f-\x9f]")
# a text with more control characters than this share (and at least MIN_CONTROL of them) is binary
MAX_CONTROL_SHARE = 0.05
MIN_CONTROL = 3


class InputError(ValueError):
    """An input path is missing or of an unsupported kind."""


@dataclass(frozen=True)
class InputFile:
    """A file to read and the root its document ids are relative to."""

    path: str
    root: str
    keep_suffix: bool = False  # another input differs from this one only in its suffix

    @property
    def base_id(self) -> str:
        """Relative path without the suffix (kept where it tells two inputs apart), with ``/``
        separators on every OS."""
        if self.path == STDIN:
            return "stdin"
        rel = Path(self.relative_path)
        return (rel if self.keep_suffix else rel.with_suffix("")).as_posix()

    @property
    def relative_path(self) -> str:
        return os.path.relpath(os.path.abspath(self.path), self.root) if self.root else os.path.basename(self.path)


def expand_input_files(paths: Iterable[str]) -> List[InputFile]:
    """Files to read, in a stable order, each once, with the common root of all the inputs
    (:func:`input_root`) as the root of its id: directories and globs expanded."""
    found: List[Tuple[str, str]] = []  # (path as given, the folder it was given in)
    for raw in paths:
        if raw == STDIN:
            found.append((STDIN, ""))
            continue
        path = Path(raw).expanduser()
        if path.is_dir():
            files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in READ_SUFFIXES)
            found.extend((str(p), str(path)) for p in files)
        elif path.is_file():
            found.append((str(path), str(path.parent)))
        elif any(ch in raw for ch in "*?["):
            matches = sorted(m for m in glob.glob(raw, recursive=True) if Path(m).is_file())
            if not matches:
                raise InputError(f"no files match {raw}")
            found.extend((m, _glob_root(raw)) for m in matches)
        else:
            raise InputError(f"no such file or directory: {raw}")
    root = input_root([folder for path, folder in found if path != STDIN])
    unique: Dict[str, InputFile] = {}
    for path, _ in found:
        key = path if path == STDIN else os.path.abspath(path)
        unique.setdefault(key, InputFile(path, "" if path == STDIN else root))
    return keep_telling_suffixes(list(unique.values()))


def keep_telling_suffixes(files: List[InputFile]) -> List[InputFile]:
    """Files whose ids would be the same without their suffix (``a.txt``, ``a.text``) keep it."""
    stems: Dict[str, int] = {}
    for file in files:
        stems[file.base_id] = stems.get(file.base_id, 0) + 1
    return [replace(file, keep_suffix=True) if stems[file.base_id] > 1 and file.path != STDIN else file for file in files]


def input_root(folders: Sequence[str]) -> str:
    """The one helper for document ids: the deepest folder all input ``folders`` lie in
    (absolute; ``""`` for none). Ids are paths relative to it (:attr:`InputFile.base_id`)."""
    if not folders:
        return ""
    absolute = [os.path.abspath(folder or ".") for folder in folders]
    try:
        return os.path.commonpath(absolute)
    except ValueError:  # Windows: folders on different drives share no root
        return ""


def _glob_root(pattern: str) -> str:
    """The folder part of a glob before its first wildcard: ``notes/*/a.txt`` -> ``notes``."""
    head = []
    for part in Path(pattern).parts:
        if any(ch in part for ch in "*?["):
            break
        head.append(part)
    return str(Path(*head)) if head else "."


def read_file(source: "str | InputFile", encoding: str = "utf-8") -> Iterator[InputDoc]:
    """Documents of one input: a .txt is one document, JSON one or a list, JSONL one per line;
    bytes are decoded with ``encoding`` (a UTF-8 byte-order mark is dropped)."""
    file = source if isinstance(source, InputFile) else InputFile(source, os.path.dirname(source))
    if file.path == STDIN:
        data = sys.stdin.buffer.read()
        kind = "jsonl" if data.lstrip()[:1] == b"{" else "text"
        yield from read_bytes(data, STDIN, kind, "stdin", encoding)
        return
    try:
        data = Path(file.path).read_bytes()
    except OSError as err:
        yield InputDoc(file.base_id, None, file.path, f"cannot read {file.path}: {err.strerror or err}")
        return
    yield from read_bytes(data, file.path, file_kind(file.path), file.base_id, encoding)


def file_kind(path: str) -> str:
    suffix = Path(path).suffix.lower()
    if suffix in JSONL_SUFFIXES:
        return "jsonl"
    return "json" if suffix in JSON_SUFFIXES else "text"


def read_bytes(data: bytes, source: str, kind: str, base_id: str, encoding: str = "utf-8") -> Iterator[InputDoc]:
    """Documents in ``data`` read as ``kind`` (``text``, ``json`` or ``jsonl``)."""
    if kind == "jsonl":
        yield from read_jsonl_lines(enumerate(data.splitlines(), start=1), source, base_id, encoding)
        return
    try:
        text = data.decode(_codec(encoding))
    except UnicodeDecodeError as err:
        yield InputDoc(base_id, None, source, f"{source} is not valid {_encoding_name(encoding)} {_decode_hint(err)}")
        return
    if kind == "text":
        yield _text_doc(base_id, text, source)
    else:
        yield from _read_json(text, source, base_id)


def _read_json(text: str, source: str, base_id: str) -> Iterator[InputDoc]:
    """One record, a list of records, or JSON Lines in a ``.json`` file; anything else is refused."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError:
        lines = text.encode("utf-8").splitlines()
        if len([line for line in lines if line.strip()]) > 1:  # JSON Lines named .json
            yield from read_jsonl_lines(enumerate(lines, start=1), source, base_id)
        else:
            yield InputDoc(base_id, None, source, f"{source} is not JSON, a JSON list or JSON Lines")
        return
    records = obj if isinstance(obj, list) else [obj]
    single = not isinstance(obj, list)
    for index, record in enumerate(records):
        where = base_id if single else f"{base_id}:{index}"
        yield _record_doc(record, source, where)


def read_jsonl_lines(
    lines: Iterable[Tuple[int, bytes]], source: str, base_id: str, encoding: str = "utf-8"
) -> Iterator[InputDoc]:
    """One document per non-blank line; a bad line is an error document, the rest go on."""
    for number, raw in lines:
        if not raw.strip():
            continue
        where = f"{base_id}:{number}"
        try:
            line = raw.decode(_codec(encoding) if number == 1 else encoding)
            obj = json.loads(line)
        except UnicodeDecodeError as err:
            yield InputDoc(where, None, source, f"line {number} is not valid {_encoding_name(encoding)} {_decode_hint(err)}")
            continue
        except json.JSONDecodeError as err:
            yield InputDoc(where, None, source, f"invalid JSON on line {number} ({err.msg})")
            continue
        yield _record_doc(obj, source, where)


def _codec(encoding: str) -> str:
    """UTF-8 drops a leading byte-order mark (as Windows editors write one)."""
    return "utf-8-sig" if encoding.lower().replace("_", "-") in ("utf-8", "utf8") else encoding


def _encoding_name(encoding: str) -> str:
    return "UTF-8" if _codec(encoding) == "utf-8-sig" else encoding


def _decode_hint(err: UnicodeDecodeError) -> str:
    """Where decoding stopped, and the encodings older clinical exports use."""
    return f"(byte {err.start}); if it is Latin-1 or Windows text, give --encoding latin-1 or --encoding cp1252"


def _record_doc(obj: object, source: str, where: str) -> InputDoc:
    """A JSON record's document; its other keys are kept as the document's ``meta``."""
    if not isinstance(obj, dict) or not isinstance(obj.get("text"), str):
        return InputDoc(where, None, source, f"expected {RECORD_SHAPE}")
    doc_id = obj.get("id", obj.get("doc_id", where))
    meta = {str(key): value for key, value in obj.items() if key not in OWN_KEYS}
    return _text_doc(str(doc_id), obj["text"], source, meta or None)


def _text_doc(doc_id: str, text: str, source: str, meta: Optional[Dict[str, Any]] = None) -> InputDoc:
    """The document, or its refusal when the text is binary (:func:`binary_reason`): chunks of
    binary data are garbage that would be indexed as findings."""
    reason = binary_reason(text)
    if reason is not None:
        return InputDoc(doc_id, None, source, REFUSED + reason, meta)
    return InputDoc(doc_id, text, source, meta=meta)


def binary_reason(text: str) -> Optional[str]:
    """Why ``text`` is not text (``None`` when it is): it holds NUL characters, or more than
    :data:`MAX_CONTROL_SHARE` of its characters are control characters. NUL never occurs in a
    note (a binary file, or UTF-16 read as UTF-8); a binary file read with ``--encoding latin-1``
    decodes without error but is full of C0/C1 control characters."""
    nuls = text.count("\x00")
    if nuls:
        return f"the text holds {nuls} NUL character(s): a binary file, or UTF-16 text (convert it to UTF-8)"
    controls = len(_CONTROL.findall(text))
    if controls >= MIN_CONTROL and controls > MAX_CONTROL_SHARE * len(text):
        share = 100 * controls / len(text)
        return f"{share:.0f}% of the text are control characters: a binary file, not a note"
    return None
