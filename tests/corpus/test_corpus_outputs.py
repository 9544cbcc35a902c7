"""Corpus runs to any output (issue 42): every record format with the input's own fields, a
persistent Chroma collection (resumable), and the rough edges: Ctrl-C, idle workers, the lock
file, binary input."""
import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from conftest import ROOT
from corpus_helpers import GATE_DOC, corpus_documents, write_code_and_config
from spacy_clinchunk.cli import main as cli_main

try:
    import ray  # noqa: F401  (only whether the Ray engine can run here)

    HAS_RAY = True
except ImportError:
    HAS_RAY = False
RAY_NOTICE = re.compile(r"^\S+ \S+\t(?:INFO|WARNING) \w+\.py:\d+ -- ")  # Ray's log line format
needs_ray = pytest.mark.skipif(not HAS_RAY, reason="the Ray engine needs spacy-clinchunk[ray]")
from spacy_clinchunk.corpus import CorpusError, run_corpus
from spacy_clinchunk.corpus.inputs import binary_reason

# a JSONL export as users have them: the note plus fields of their own
FIELDS = {"specialty": "Cardiology", "name": "Chest pain consult", "encounter": 1042}
NOTES = [
    {"id": "n1", "text": "HISTORY:\nShe denies fever or chills. Mild cough for three days.", **FIELDS},
    {"id": "n2", "text": "No chest pain. Father had a stroke at 60.", "specialty": "Neurology", "tags": ["a", "b"]},
    {"id": "n3", "text": "Shortness of breath on exertion, possible asthma."},
]


def write_jsonl(path, docs):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    return path


def shard_rows(out, fmt):
    """Every record of every shard of a run, whatever the format."""
    rows = []
    for entry in json.loads((out / "manifest.json").read_text(encoding="utf-8"))["shards"].values():
        path = out / entry["output"]
        if fmt in ("jsonl", "records"):
            rows += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        elif fmt == "parquet":
            import pyarrow.parquet as pq

            rows += pq.read_table(path).to_pylist()
        else:
            from datasets import load_from_disk

            rows += load_from_disk(str(path)).to_list()
    return rows


def expected_meta(doc_id):
    note = next(n for n in NOTES if n["id"] == doc_id)
    return {k: v for k, v in note.items() if k not in ("id", "text")} or None


@pytest.mark.parametrize("fmt", ["jsonl", "records", "parquet", "hf"])
def test_two_workers_write_every_record_format_with_the_inputs_own_fields(tmp_path, fmt):
    """2 workers, one small JSONL file (split so both work); each record keeps specialty, name, ..."""
    inputs = write_jsonl(tmp_path / "in" / "notes.jsonl", NOTES)
    out = tmp_path / "out"
    result = run_corpus("retrieval", [inputs], out, workers=2, fmt=fmt)
    assert result.errors == 0 and result.docs == 3
    assert len(result.worker_stats) == 2 and all(w.get("docs", 0) > 0 for w in result.worker_stats.values())
    rows = shard_rows(out, fmt)
    if fmt == "jsonl":
        assert {r["id"]: r["doc"].get("meta") for r in rows} == {n["id"]: expected_meta(n["id"]) for n in NOTES}
        chunks = [c for r in rows for c in r["chunks"]]
        assert all("focus_ids" not in c and isinstance(c["focus"], list) for c in chunks)  # shards: focus lists
        assert any(c["focus"] and set(c["focus"][0]) == {"start", "end", "text"} for c in chunks)
        return
    assert rows and {r["doc_id"] for r in rows} == {"n1", "n2", "n3"}
    for row in rows:
        meta = json.loads(row["meta"]) if fmt in ("parquet", "hf") and row["meta"] else row["meta"]
        assert meta == expected_meta(row["doc_id"])


def test_shards_give_focus_lists_like_every_other_output(tmp_path):
    """The jsonl document record: each chunk's ``focus`` as {start, end, text}, the focus spans' chunk by id."""
    inputs = write_jsonl(tmp_path / "in" / "notes.jsonl", NOTES[:2])
    out = tmp_path / "out"
    run_corpus("retrieval", [inputs], out)
    (record, _) = shard_rows(out, "jsonl")
    text = NOTES[0]["text"]
    chunk_ids = {c["id"] for c in record["chunks"]}
    for chunk in record["chunks"]:
        assert "focus_ids" not in chunk
        for span in chunk["focus"]:
            assert text[span["start"] : span["end"]] == span["text"]
            assert chunk["start"] <= span["start"] and span["end"] <= chunk["end"]
    focus_group = record["groups"]["clin_focus"]
    assert focus_group and all(s["parent_id"] in chunk_ids and "focus_of" not in s for s in focus_group)


def _collection(path, name="clinchunk"):
    import chromadb
    from chromadb.config import Settings

    client = chromadb.PersistentClient(path=str(path), settings=Settings(anonymized_telemetry=False))
    return client.get_collection(name, embedding_function=None)


@pytest.mark.slow
def test_a_chroma_run_upserts_resumes_and_never_duplicates(tmp_path):
    """Real Chroma, the bundled MiniLM: a run, a rerun with one more shard (the first skipped),
    an interruption after an upsert but before the manifest entry (the shard redone), a full
    rerun: one row per chunk throughout, the input's fields as filterable metadata."""
    first = write_jsonl(tmp_path / "in" / "a.jsonl", NOTES[:2])
    store = tmp_path / "store"
    out = tmp_path / "out"
    settings = dict(fmt="chroma", chroma_path=str(store), collection="notes")
    run = run_corpus("retrieval", [first], out, **settings)
    collection = _collection(store, "notes")
    assert run.manifest["totals"]["records"] == collection.count() > 0  # headers left out of the index
    hits = collection.get(where={"specialty": "Cardiology"}, include=["metadatas", "documents"])
    assert hits["ids"] and {m["doc_id"] for m in hits["metadatas"]} == {"n1"}
    assert all(m["encounter"] == 1042 and m["name"] == FIELDS["name"] for m in hits["metadatas"])
    assert all(NOTES[0]["text"][m["start"] : m["end"]] == d for m, d in zip(hits["metadatas"], hits["documents"]))

    second = write_jsonl(tmp_path / "in" / "b.jsonl", NOTES[2:])
    again = run_corpus("retrieval", [first, second], out, **settings)
    assert again.skipped == ["a"] and again.processed == ["b"]
    total = again.manifest["totals"]["records"]
    assert _collection(store, "notes").count() == total

    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    del manifest["shards"]["b"]  # the driver died after b's upsert, before recording it
    (out / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    resumed = run_corpus("retrieval", [first, second], out, **settings)
    assert resumed.processed == ["b"] and _collection(store, "notes").count() == total
    redone = run_corpus("retrieval", [first, second], out, resume=False, **settings)
    assert sorted(redone.processed) == ["a", "b"] and _collection(store, "notes").count() == total
    assert not (out / ".lock").exists()
    assert all(oct(os.stat(os.path.join(d, f)).st_mode & 0o777) == "0o600" for d, _, fs in os.walk(store) for f in fs)

    with pytest.raises(CorpusError, match="holds vectors of sentence-transformers:all-MiniLM-L6-v2"):
        run_corpus("retrieval", [first], tmp_path / "other", embed_model="some/other-model", **settings)


@pytest.mark.slow
def test_the_cli_upserts_a_corpus_into_chroma_with_two_workers(tmp_path, capsys):
    inputs = write_jsonl(tmp_path / "in" / "notes.jsonl", NOTES)
    out, store = tmp_path / "out", tmp_path / "store"
    args = ["chunk", str(inputs), "--strategy", "retrieval", "--engine", "local", "--workers", "2", "--no-progress",
            "--format", "chroma", "--chroma-path", str(store), "--collection", "notes", "-o", str(out)]
    assert cli_main(args) == 0
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert sum(e["upserted"] for e in manifest["shards"].values()) == _collection(store, "notes").count() > 0
    assert cli_main(["chunk", str(inputs), "--format", "chroma"]) == 2  # one document at a time: refused
    assert "--format chroma is a corpus run" in capsys.readouterr().err


@pytest.mark.slow
def test_a_static_run_upserts_static_vectors_and_refuses_minilm_after_them(tmp_path, capsys, static_embedder):
    """``--embedder static``, two workers, real Chroma and the cached model2vec distillation of
    MiniLM: every row holds the static model's vector of its document (its width, its values), a
    query with the same embedder finds the right note, the collection and the manifest name the
    embedder, and a rerun into the collection with MiniLM is refused in one line."""
    import numpy as np

    from spacy_clinchunk.export.vectorstores import query_chroma

    inputs = write_jsonl(tmp_path / "in" / "notes.jsonl", NOTES)
    store = tmp_path / "store"
    common = ["chunk", str(inputs), "--strategy", "retrieval", "--engine", "local", "--no-progress", "--format", "chroma",
              "--chroma-path", str(store), "--collection", "notes"]
    assert cli_main([*common, "--workers", "2", "--embedder", "static", "-o", str(tmp_path / "out")]) == 0
    collection = _collection(store, "notes")
    rows = collection.get(include=["embeddings", "documents"])
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text(encoding="utf-8"))
    assert len(manifest["shards"]) == 2 and sum(e["upserted"] for e in manifest["shards"].values()) == len(rows["ids"]) > 0
    vectors = np.asarray(rows["embeddings"])
    assert vectors.shape == (len(rows["ids"]), static_embedder.model.dim)
    assert np.allclose(vectors, static_embedder.encode(rows["documents"]), atol=1e-5)
    label = "static:model2vec(all-MiniLM-L6-v2, pca=256)"
    assert collection.metadata["clinchunk_embedder"] == label
    assert all(e["store"][-1] == label for e in manifest["shards"].values())
    hits = query_chroma(collection, "his father had a stroke", "static", n_results=1)
    assert hits["metadatas"][0][0]["doc_id"] == "n2"

    capsys.readouterr()
    assert cli_main([*common, "-o", str(tmp_path / "again")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"holds vectors of {label}, not sentence-transformers:all-MiniLM-L6-v2" in err
    assert "--embedder static" in err and _collection(store, "notes").count() == len(rows["ids"])


def test_a_collection_labelled_before_kinds_holds_sentence_transformer_vectors(tmp_path):
    """A collection whose ``clinchunk_embedder`` is a bare model name (written before the kind
    was recorded) takes the same MiniLM again and refuses static vectors, naming the flags."""
    import chromadb
    from chromadb.config import Settings

    from spacy_clinchunk.corpus.chroma import EMBEDDER_KEY, ChromaSink, ChromaTarget

    store = str(tmp_path / "store")
    client = chromadb.PersistentClient(path=store, settings=Settings(anonymized_telemetry=False))
    client.create_collection("notes", embedding_function=None, metadata={EMBEDDER_KEY: "all-MiniLM-L6-v2"})
    assert ChromaSink(ChromaTarget(store, "notes")).collection.name == "notes"
    refused = "holds vectors of all-MiniLM-L6-v2, not static:.*or --embedder sentence-transformers --embed-model all-MiniLM-L6-v2$"
    with pytest.raises(CorpusError, match=refused):
        ChromaSink(ChromaTarget(store, "notes", embedder="static"))


def test_an_unknown_embedder_or_one_without_chroma_is_one_line(tmp_path, capsys):
    inputs = write_jsonl(tmp_path / "in" / "notes.jsonl", NOTES[:1])
    with pytest.raises(CorpusError, match="^unknown embedder 'glove'; choose sentence-transformers or static$"):
        run_corpus("simple", [inputs], tmp_path / "out", fmt="chroma", embedder="glove")
    with pytest.raises(CorpusError, match="^--embed-model '/no/m2v' is not a directory saved by model2vec$"):
        run_corpus("simple", [inputs], tmp_path / "out", fmt="chroma", embedder="static", embed_model="/no/m2v")
    args = ["chunk", str(inputs), "--strategy", "simple", "--engine", "local", "--embedder", "static", "-o", str(tmp_path / "o")]
    assert cli_main(args) == 2
    assert capsys.readouterr().err == "error: --embedder needs --format chroma, not jsonl\n"
    assert not (tmp_path / "o").exists()


def test_binary_and_nul_laden_input_is_refused_with_its_reason(tmp_path, capsys):
    folder = tmp_path / "in"
    write_jsonl(folder / "notes.jsonl", [NOTES[2], {"id": "nul", "text": "Fever\x00\x00 and cough"}])
    binary = bytes(range(1, 256)) * 20  # no NUL: read as Latin-1 it decodes, to control characters
    (folder / "scan.txt").write_bytes(binary)
    (folder / "zeros.txt").write_bytes(b"PK\x03\x04" + bytes(200))
    out = tmp_path / "out"
    args = ["chunk", str(folder), "--strategy", "punct_conj_cleaned", "--engine", "local", "--no-progress",
            "--encoding", "latin-1", "-o", str(out)]
    assert cli_main(args) == 1
    err = capsys.readouterr().err
    assert "3 document(s) failed (3 refused as binary" in err
    errors = {json.loads(line)["id"]: json.loads(line)["error"] for line in (out / "errors.jsonl").read_text().splitlines()}
    assert set(errors) == {"nul", "scan", "zeros"}
    assert "NUL" in errors["nul"] and "NUL" in errors["zeros"] and "control characters" in errors["scan"]
    assert json.loads((out / "manifest.json").read_text())["totals"]["refused"] == 3
    records = [json.loads(line) for p in (out / "shards").glob("*.jsonl") for line in p.read_text().splitlines()]
    assert [r["id"] for r in records] == ["n3"]  # no garbage chunks
    # the same in the single-document mode
    assert cli_main(["chunk", str(folder / "zeros.txt"), "--strategy", "punct_conj_cleaned"]) == 1
    assert "1 document(s) failed (1 refused as binary" in capsys.readouterr().err


def test_real_text_with_stray_control_characters_is_not_refused():
    note = "HISTORY:\tstable.\r\n\x0cPage 2\x0b " + "Patient well. " * 20 + "\x1a"
    assert binary_reason(note) is None
    assert binary_reason("ok\x00") and binary_reason("\x01\x02\x03\x04 abc")


def test_few_shards_are_split_so_every_worker_works_and_a_rerun_keeps_the_plan(tmp_path, capsys):
    folder = tmp_path / "in"
    folder.mkdir()
    for k, doc in enumerate(corpus_documents()[:6]):
        (folder / f"note{k}.txt").write_text(doc["text"], encoding="utf-8")
    out = tmp_path / "out"
    args = ["chunk", str(folder), "--strategy", "punct_conj_cleaned", "--engine", "local", "--no-progress",
            "--shard-size", "1000", "-o", str(out)]
    assert cli_main([*args, "--workers", "2"]) == 0
    err = capsys.readouterr().err
    assert "1 shard(s) for 2 workers: split into 2 so that every worker gets work (shard size 3" in err
    manifest = json.loads((out / "manifest.json").read_text())
    assert sorted(manifest["shards"]) == ["txt-00000", "txt-00001"]
    assert all(w["docs"] == 3 for w in manifest["runs"][-1]["workers_stats"].values())
    assert not (out / ".lock").exists()  # a successful run leaves no lock file
    assert cli_main([*args, "--workers", "3"]) == 0  # resumed: the plan it resumes, nothing redone
    assert "0 docs in 0 shards (2 already done)" in capsys.readouterr().err


def _sigint_as_in_a_terminal():
    """The run gets SIGINT's default disposition, as a terminal's foreground job has: a test
    runner started in the background (``nohup make test &``) passes SIGINT on *ignored*, and a
    Python started so never raises KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["local", pytest.param("ray", marks=needs_ray)])
def test_ctrl_c_prints_one_line_and_no_worker_traceback(tmp_path, engine):
    """A real run in a process group of its own (as a terminal's), SIGINT to the group while a
    worker is mid-shard: one line, exit 130, no traceback, no worker left; with either engine."""
    built = write_code_and_config(tmp_path / "code")
    folder = tmp_path / "in"
    write_jsonl(folder / "a.jsonl", corpus_documents()[:20])
    write_jsonl(folder / "gate.jsonl", [GATE_DOC])
    built["gate"].write_text("hold", encoding="utf-8")
    command = [sys.executable, "-m", "spacy_clinchunk", "chunk", str(folder), "--config", str(built["config"]),
               "--code", str(built["code"]), "--engine", engine, "--workers", "2", "-o", str(tmp_path / "out")]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               start_new_session=True, preexec_fn=_sigint_as_in_a_terminal)
    try:
        deadline = time.time() + 300
        while not (built["holder"].exists() and built["holder"].read_text()) and time.time() < deadline:
            assert process.poll() is None, process.stderr.read().decode()[-3000:]
            time.sleep(0.1)
        holder = int(built["holder"].read_text())
        os.killpg(process.pid, signal.SIGINT)  # what Ctrl-C does: the whole foreground group
        _, stderr = process.communicate(timeout=240)  # generous: a loaded CI machine
    finally:
        built["gate"].unlink(missing_ok=True)
        if process.poll() is None:
            process.kill()
    text = stderr.decode()
    assert process.returncode == 130, text[-3000:]
    assert "Traceback" not in text and "KeyboardInterrupt" not in text
    lines = [line for line in text.splitlines() if line.strip()]
    if engine == "ray":  # Ray's own start-up notices (its logger, at WARNING) come with any Ray run
        lines = [line for line in lines if not RAY_NOTICE.search(line)]
    assert lines == [f"interrupted: finished shards in {tmp_path / 'out'} are kept; rerun the same command to resume"]
    time.sleep(1)
    assert not os.path.exists(f"/proc/{holder}") or open(f"/proc/{holder}/stat").read().split()[2] == "Z"


def test_the_lock_refuses_a_second_run_and_leaves_no_file(tmp_path):
    from spacy_clinchunk.corpus.output import LOCK_FILE, OutputLock

    with OutputLock(tmp_path):
        assert (tmp_path / LOCK_FILE).exists()
        with pytest.raises(CorpusError, match="another corpus run is writing"):
            with OutputLock(tmp_path):
                pass
    assert not (tmp_path / LOCK_FILE).exists()
    with OutputLock(tmp_path):  # and the next run takes it again
        pass
    assert not (tmp_path / LOCK_FILE).exists()
