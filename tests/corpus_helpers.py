"""Corpora for the corpus and Ray engine tests.

What these tests check (sharding, resumption, equal output of every engine, error files)
holds for any notes, so the corpus is built from the notes that ship in the repository:
228 documents, each a different run of sentences of the example notes, of varied length.
A user's clone has everything they need.
"""
import json
import re
import textwrap
from pathlib import Path
from typing import Dict, List

from conftest import CONFIG_DIR, EXAMPLE_NOTE, SAMPLE_JSON

CORPUS_SIZE = 228

# Custom components for corpus tests, imported in every worker through ``code=``:
# test_poison raises on a marked document; test_gate holds a marked document while
# gate.flag (next to this file) exists and writes its pid to gate.pid, so a test can kill
# the run, or the worker, half-way.
COMPONENTS_CODE = textwrap.dedent(
    '''
    import os
    import time
    from pathlib import Path

    from spacy.language import Language

    GATE = Path(__file__).with_name("gate.flag")
    HOLDER = Path(__file__).with_name("gate.pid")


    @Language.component("test_poison")
    def test_poison(doc):
        if "POISON" in doc.text:
            raise ValueError("poisoned document")
        return doc


    @Language.component("test_gate")
    def test_gate(doc):
        if "GATE" in doc.text:
            if GATE.exists():
                HOLDER.write_text(str(os.getpid()))  # which process the gate holds
            while GATE.exists():
                time.sleep(0.05)
        return doc
    '''
)

POISON = {"id": "poisoned", "text": "Patient denies chest pain. POISON in this note."}
GATE_DOC = {"id": "gate", "text": "GATE. The patient has no fever."}


def _shipped_sentences() -> List[str]:
    texts = [EXAMPLE_NOTE.read_text(encoding="utf-8")]
    texts += [json.loads(f.read_text(encoding="utf-8"))["full_text"] for f in sorted(SAMPLE_JSON.glob("*.json"))]
    sentences = []
    for text in texts:
        sentences += [s.strip() for s in re.split(r"(?<=[.!?])\s+|\n{2,}", text) if len(s.strip()) > 3]
    return sentences


def corpus_documents() -> List[Dict[str, str]]:
    """``CORPUS_SIZE`` notes of 2 to 40 sentences each (deterministic), ids ``note-000`` ..."""
    sentences = _shipped_sentences()
    docs = []
    for k in range(CORPUS_SIZE):
        length = 2 + (k * 7) % 39
        start = (k * 13) % len(sentences)
        picked = [sentences[(start + i) % len(sentences)] for i in range(length)]
        docs.append({"id": f"note-{k:03d}", "text": " ".join(picked)})
    return docs


def write_shards(folder: Path, docs: List[Dict[str, str]], n_shards: int) -> List[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for k in range(n_shards):
        path = folder / f"part-{k:03d}.jsonl"
        with open(path, "w", encoding="utf-8") as out:
            for doc in docs[k::n_shards]:
                out.write(json.dumps(doc) + "\n")
        paths.append(path)
    return paths


def build_corpus(root: Path, n_shards: int, poison_shard: int, text_files: Dict[str, bytes]) -> Dict:
    """The corpus in JSONL shards, POISON appended to one shard, an empty shard and extra files."""
    docs = corpus_documents()
    assert len(docs) >= 200
    inputs = root / "in"
    write_shards(inputs, docs, n_shards)
    with open(inputs / f"part-{poison_shard:03d}.jsonl", "a", encoding="utf-8") as out:
        out.write(json.dumps(POISON) + "\n")
    (inputs / "empty.jsonl").write_text("", encoding="utf-8")
    for name, data in text_files.items():
        (inputs / name).parent.mkdir(parents=True, exist_ok=True)
        (inputs / name).write_bytes(data)
    return {"root": root, "inputs": inputs, "docs": docs, **write_code_and_config(root / "code")}


def write_code_and_config(folder: Path) -> Dict[str, Path]:
    """A copy of punct_conj_cleaned.cfg with the test components appended."""
    folder.mkdir(parents=True, exist_ok=True)
    code = folder / "corpus_test_components.py"
    code.write_text(COMPONENTS_CODE, encoding="utf-8")
    config = (CONFIG_DIR / "punct_conj_cleaned.cfg").read_text(encoding="utf-8")
    config, appended = re.subn(r'^(pipeline = \[.*)\]$', r'\1,"test_poison","test_gate"]', config, count=1, flags=re.M)
    assert appended == 1, "punct_conj_cleaned.cfg has no pipeline line"
    config += '\n[components.test_poison]\nfactory = "test_poison"\n\n[components.test_gate]\nfactory = "test_gate"\n'
    cfg = folder / "corpus_test.cfg"
    cfg.write_text(config, encoding="utf-8")
    return {"code": code, "config": cfg, "gate": folder / "gate.flag", "holder": folder / "gate.pid"}


def reference_records(config: Path, code: Path, docs: List[Dict[str, str]]) -> Dict[str, dict]:
    """One process, no engine: ``nlp(text)`` and ``doc_to_record`` for every document."""
    from spacy_clinchunk.pipeline.spec import import_code
    from spacy_clinchunk.pipeline import load_pipeline
    from spacy_clinchunk.export.records import doc_to_record

    import_code(str(code))
    nlp = load_pipeline(config)
    return {d["id"]: doc_to_record(nlp(d["text"]), doc_id=d["id"]) for d in docs if "POISON" not in d["text"]}


def read_output(out_dir: Path) -> Dict[str, dict]:
    """Records of every shard by id; each names an existing source file, checked and dropped."""
    records = {}
    for path in sorted((out_dir / "shards").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            record = without_source(json.loads(line))
            assert record["id"] not in records, f"duplicate {record['id']}"
            records[record["id"]] = record
    return records


def without_source(record: dict) -> dict:
    """The record less ``doc.source``, after checking that it names an existing file."""
    assert Path(record["doc"].pop("source")).is_file()
    if not record["doc"]:
        del record["doc"]
    return record


def shard_bytes(out_dir: Path) -> Dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((out_dir / "shards").iterdir())}


def read_errors(out_dir: Path) -> Dict[str, dict]:
    lines = (out_dir / "errors.jsonl").read_text(encoding="utf-8").splitlines()
    return {json.loads(line)["id"]: json.loads(line) for line in lines}
