"""Corpus runs on the local engine: shards, manifest, resume after a kill, errors, bad input."""
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time

import pytest

from conftest import CONFIG_DIR, ROOT
from corpus_helpers import (
    GATE_DOC,
    POISON,
    build_corpus,
    corpus_documents,
    read_errors,
    read_output,
    reference_records,
    shard_bytes,
    without_source,
    write_shards,
)
from spacy_clinchunk.cli import main as cli_main
from spacy_clinchunk.corpus import CorpusError, RayOptions, plan_shards, read_shard, run_corpus
from spacy_clinchunk.corpus.inputs import read_file

STRUCTURAL = CONFIG_DIR / "punct_conj_cleaned.cfg"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """228 notes (corpus_helpers) in 10 JSONL shards, a poisoned document, a non-UTF-8 note and an empty shard."""
    good = "No acute distress. Lungs clear, heart regular."
    built = build_corpus(
        tmp_path_factory.mktemp("corpus"),
        n_shards=10,
        poison_shard=3,
        text_files={"notes/good.txt": good.encode("utf-8"), "notes/latin1.txt": "Fi\xe8vre, pas de toux.".encode("latin-1")},
    )
    built["docs"] = built["docs"] + [POISON, {"id": "notes/good", "text": good}]  # ids: paths below the input dir
    built["reference"] = reference_records(built["config"], built["code"], built["docs"])
    return built


def check_complete(out_dir, corpus):
    records = read_output(out_dir)
    assert records == corpus["reference"]  # every good document, identical to one plain process
    errors = read_errors(out_dir)
    assert set(errors) == {"poisoned", "notes/latin1"}
    assert "poisoned document" in errors["poisoned"]["error"]
    assert "UTF-8" in errors["notes/latin1"]["error"]
    return records


def test_plan_shards_one_per_jsonl_and_txt_groups(corpus):
    shards = plan_shards([corpus["inputs"]], shard_size=1)
    names = [s.name for s in shards]
    assert names[:3] == ["empty", "part-000", "part-001"]
    assert "notes-00000" in names and "notes-00001" in names  # one .txt per shard at shard_size=1
    assert len(names) == len(set(names)) == 13


def test_single_process_run_matches_plain_pipeline(corpus, tmp_path):
    out = tmp_path / "out"
    result = run_corpus(corpus["config"], [corpus["inputs"]], out, engine="local", code=str(corpus["code"]))
    check_complete(out, corpus)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest == result.manifest
    assert manifest["totals"] == {
        "shards": 12,
        "docs": len(corpus["reference"]),
        "chunks": sum(len(r["chunks"]) for r in corpus["reference"].values()),
        "records": len(corpus["reference"]),  # jsonl: one line per document
        "errors": 2,
        "refused": 0,
    }
    assert manifest["package_version"] and manifest["config_hash"]
    assert manifest["shards"]["empty"]["docs"] == 0 and (out / "shards" / "empty.jsonl").read_text() == ""
    assert manifest["shards"]["part-003"]["errors"] == 1
    assert json.loads((out / "errors" / "part-003.jsonl").read_text())["id"] == "poisoned"
    assert manifest["runs"][-1]["docs"] == result.docs == len(corpus["reference"])

    # rerun: nothing to do, nothing rewritten
    mtimes = {p.name: p.stat().st_mtime_ns for p in (out / "shards").iterdir()}
    again = run_corpus(corpus["config"], [corpus["inputs"]], out, code=str(corpus["code"]))
    assert again.processed == [] and len(again.skipped) == 12
    assert {p.name: p.stat().st_mtime_ns for p in (out / "shards").iterdir()} == mtimes
    check_complete(out, corpus)

    # another config hash: every shard is redone
    changed = run_corpus(
        corpus["config"], [corpus["inputs"]], out, code=str(corpus["code"]),
        overrides={"components.clin_conj_splitter.min_words_before": 3},
    )
    assert len(changed.processed) == 12 and changed.manifest["config_hash"] != manifest["config_hash"]


def test_two_spawned_processes_give_byte_identical_output(corpus, tmp_path):
    single, multi = tmp_path / "single", tmp_path / "multi"
    run_corpus(corpus["config"], [corpus["inputs"]], single, code=str(corpus["code"]))
    result = run_corpus(corpus["config"], [corpus["inputs"]], multi, workers=2, code=str(corpus["code"]))
    check_complete(multi, corpus)
    assert shard_bytes(multi) == shard_bytes(single)
    assert sorted(os.listdir(multi / "errors")) == sorted(os.listdir(single / "errors"))
    run = result.manifest["runs"][-1]
    assert run["workers"] == 2 and len(run["workers_stats"]) == 2  # both processes did shards
    assert all(w["max_rss_mb"] > 0 and w["docs"] > 0 for w in run["workers_stats"].values())
    assert 0 < run["startup_seconds"] < run["seconds"]
    pids = {e["worker"]["pid"] for e in result.manifest["shards"].values()}
    assert os.getpid() not in pids and len(pids) == 2  # no document was chunked in the driver
    # the shard's thread did the work: its CPU is part of the process's (a tiny shard rounds to 0)
    entries = result.manifest["shards"].values()
    assert all(0 <= e["thread_cpu_seconds"] <= e["cpu_seconds"] + 0.01 for e in entries)
    assert sum(e["thread_cpu_seconds"] for e in entries) > 0


def test_outputs_are_owner_only_unless_relaxed(corpus, tmp_path):
    out = tmp_path / "out"
    run_corpus(corpus["config"], [corpus["inputs"]], out, code=str(corpus["code"]))
    written = [*(out / "shards").iterdir(), *(out / "errors").iterdir(), out / "manifest.json", out / "errors.jsonl"]
    assert {oct(stat.S_IMODE(p.stat().st_mode)) for p in written} == {"0o600"}
    relaxed = tmp_path / "relaxed"
    run_corpus(corpus["config"], [corpus["inputs"]], relaxed, code=str(corpus["code"]), file_mode=0o644)
    assert {oct(stat.S_IMODE(p.stat().st_mode)) for p in (relaxed / "shards").iterdir()} == {"0o644"}


def test_docbin_output_holds_the_same_chunks(corpus, tmp_path):
    import spacy
    from spacy.tokens import DocBin

    from spacy_clinchunk.export.records import doc_to_record

    out = tmp_path / "out"
    run_corpus(corpus["config"], [corpus["inputs"]], out, fmt="docbin", code=str(corpus["code"]))
    vocab = spacy.blank("en").vocab
    records = {}
    for path in (out / "shards").glob("*.spacy"):
        for doc in DocBin().from_disk(path).get_docs(vocab):
            records[doc._.clin_doc_id] = without_source(doc_to_record(doc))
    assert records == corpus["reference"]


def gated_inputs(folder, docs, n_shards=10):
    """``n_shards`` corpus shards plus ``gate.jsonl``, the smallest shard (so scheduled last)."""
    write_shards(folder, docs, n_shards)
    (folder / "gate.jsonl").write_text(json.dumps(GATE_DOC) + "\n", encoding="utf-8")
    return folder


def start_cli(corpus, inputs, out, *extra):
    command = [
        sys.executable, "-m", "spacy_clinchunk", "chunk", str(inputs), "--config", str(corpus["config"]),
        "--code", str(corpus["code"]), "--output", str(out), "--engine", "local", *extra,
    ]
    return subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def wait_for_gate(corpus, process, timeout=300):
    """The pid of the process the gate holds, once it holds one."""
    deadline = time.time() + timeout
    while time.time() < deadline and process.poll() is None:
        if corpus["holder"].exists() and corpus["holder"].read_text():
            return int(corpus["holder"].read_text())
        time.sleep(0.1)
    raise AssertionError(f"the gate was never reached: {process.stderr.read().decode()[-3000:]}")


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as handle:  # a zombie is dead too
        return handle.read().split()[2] != "Z"


@pytest.fixture
def gate(corpus):
    corpus["holder"].unlink(missing_ok=True)
    corpus["gate"].write_text("hold", encoding="utf-8")
    yield corpus
    corpus["gate"].unlink(missing_ok=True)
    corpus["holder"].unlink(missing_ok=True)


@pytest.mark.slow
def test_killed_run_resumes_without_redoing_finished_shards(gate, tmp_path):
    """Kill -9 a CLI run (default batch size) while a document holds it; rerun; complete, identical output."""
    corpus, docs = gate, corpus_documents()
    inputs = gated_inputs(tmp_path / "in", docs)
    out = tmp_path / "out"
    process = start_cli(corpus, inputs, out)
    try:
        assert wait_for_gate(corpus, process) == process.pid  # one worker: the driver itself
        finished = json.loads((out / "manifest.json").read_text())["shards"]
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
        corpus["gate"].unlink(missing_ok=True)
    assert sorted(finished) == [f"part-{k:03d}" for k in range(10)]  # every shard done before the kill is kept
    written = {name: (out / entry["output"]).stat().st_mtime_ns for name, entry in finished.items()}
    assert not (out / "shards" / "gate.jsonl").exists()
    assert list((out / "shards").glob(".gate.jsonl.*.tmp"))  # the shard in flight, never renamed

    result = run_corpus(corpus["config"], [inputs], out, code=str(corpus["code"]))
    assert not list(out.rglob("*.tmp"))  # the next run removed the leftovers
    assert sorted(result.skipped) == sorted(finished) and result.processed == ["gate"]
    assert {name: (out / "shards" / f"{name}.jsonl").stat().st_mtime_ns for name in finished} == written
    expected = reference_records(corpus["config"], corpus["code"], docs + [GATE_DOC])
    assert read_output(out) == expected
    assert result.manifest["totals"]["docs"] == len(expected)


@pytest.mark.slow
def test_workers_exit_when_the_driver_is_killed(gate, tmp_path):
    corpus = gate
    inputs = gated_inputs(tmp_path / "in", corpus_documents()[:40], 2)
    process = start_cli(corpus, inputs, tmp_path / "out", "--workers", "2")
    try:
        holder = wait_for_gate(corpus, process)
        assert holder != process.pid and alive(holder)
        os.kill(process.pid, signal.SIGKILL)  # the gate still holds the worker: only the driver's death stops it
        process.wait(timeout=30)
        deadline = time.time() + 10
        while alive(holder) and time.time() < deadline:
            time.sleep(0.1)
        assert not alive(holder)
    finally:
        if process.poll() is None:
            process.kill()


@pytest.mark.slow
def test_a_worker_killed_mid_shard_is_replaced_and_only_its_shard_redone(gate, tmp_path):
    corpus, docs = gate, corpus_documents()
    inputs = gated_inputs(tmp_path / "in", docs, 6)
    out = tmp_path / "out"
    process = start_cli(corpus, inputs, out, "--workers", "2")
    try:
        holder = wait_for_gate(corpus, process)
        before = json.loads((out / "manifest.json").read_text())["shards"]
        os.kill(holder, signal.SIGKILL)
        corpus["gate"].unlink()  # the redone shard passes the gate
        _, stderr = process.communicate(timeout=300)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, stderr.decode()[-3000:]
    manifest = json.loads((out / "manifest.json").read_text())
    for name, entry in before.items():  # shards finished before the kill were not redone
        assert manifest["shards"][name] == entry
    assert manifest["shards"]["gate"]["worker"]["pid"] != holder
    assert read_output(out) == reference_records(corpus["config"], corpus["code"], docs + [GATE_DOC])


def test_a_big_jsonl_file_is_split_into_sub_shards_that_read_the_same_documents(tmp_path):
    docs = corpus_documents()[:60]
    source = tmp_path / "in" / "big.jsonl"
    source.parent.mkdir()
    lines = [json.dumps(d if k % 3 else {"text": d["text"]}) for k, d in enumerate(docs)]  # some without an id
    source.write_text("\n".join(lines) + "\n\n", encoding="utf-8")
    shards = plan_shards([source.parent], split_bytes=20_000)
    assert len(shards) >= 4 and [s.name for s in shards][:2] == ["big.p000", "big.p001"]
    pieces = [doc for shard in shards for doc in read_shard(shard)]
    assert pieces == list(read_file(str(source)))
    assert pieces[0].id == "big:1" and pieces[3].id == "big:4" and pieces[1].id == docs[1]["id"]


@pytest.mark.slow
def test_a_huge_note_does_not_hold_up_the_small_shards(tmp_path):
    """Largest shard first: one worker takes the huge note, the other does all the small shards meanwhile.

    Splitting and ordering are relative to ``split_bytes`` (8 MiB by default, for the 10 MB
    note of the issue); a 2.6 MB note against a 2 MiB split takes the same paths at a quarter
    of the time."""
    inputs = tmp_path / "in"
    write_shards(inputs, corpus_documents(), 12)
    huge = "Patient stable, no fever. Denies chest pain. " * 58_300  # 2.6 MB
    (inputs / "huge.jsonl").write_text(json.dumps({"id": "huge", "text": huge}) + "\n", encoding="utf-8")
    result = run_corpus(STRUCTURAL, [inputs], tmp_path / "out", workers=2, max_length=3_000_000, split_bytes=2 << 20)
    shards = result.manifest["shards"]
    # 2.6 MB > split_bytes: two byte ranges; the note starts in the first, the second holds no line start
    assert shards["huge.p001"]["docs"] == 0
    big = shards["huge.p000"]
    assert result.errors == 0 and big["docs"] == 1 and big["chunks"] > 100_000 // 4
    small = [e for name, e in shards.items() if not name.startswith("huge")]
    assert all(e["worker"]["pid"] != big["worker"]["pid"] for e in small)
    assert sum(e["seconds"] for e in small) < big["seconds"]


@pytest.mark.slow
def test_a_full_output_disk_is_a_clear_error_and_finished_shards_stay_intact(tmp_path):
    """A real 256 KiB tmpfs as the output directory, in a private mount namespace."""
    if shutil.which("unshare") is None or subprocess.run(
        ["unshare", "-rm", "true"], capture_output=True
    ).returncode:
        pytest.skip("needs unshare (user and mount namespaces) for a small tmpfs")
    inputs = tmp_path / "in"
    write_shards(inputs, corpus_documents(), 10)
    out, kept = tmp_path / "out", tmp_path / "kept"
    out.mkdir()
    script = (
        f"mount -t tmpfs -o size=256k tmpfs {out} && "
        f"{sys.executable} -m spacy_clinchunk chunk {inputs} --config {STRUCTURAL} --output {out} --engine local; "
        f"echo $? > {tmp_path / 'rc'}; cp -a {out} {kept}"
    )
    done = subprocess.run(["unshare", "-rm", "sh", "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert (tmp_path / "rc").read_text().strip() == "2", done.stderr
    assert "No space left on device" in done.stderr and "finished shards are intact" in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    manifest = json.loads((kept / "manifest.json").read_text())
    assert 0 < len(manifest["shards"]) < 10
    for name, entry in manifest["shards"].items():  # every recorded shard is complete
        lines = (kept / entry["output"]).read_text().splitlines()
        assert len(lines) == entry["docs"] and all(json.loads(line)["chunks"] for line in lines)
    assert not list(kept.rglob("*.tmp"))


def test_oversized_note_is_an_error_and_the_rest_completes(tmp_path):
    inputs = tmp_path / "in"
    inputs.mkdir()
    big = {"id": "huge", "text": "Patient stable. " * 655_360}  # 10 MB
    with open(inputs / "notes.jsonl", "w", encoding="utf-8") as out:
        out.write(json.dumps({"id": "small", "text": "No fever. Cough resolved."}) + "\n")
        out.write(json.dumps(big) + "\n")
    out_dir = tmp_path / "out"
    result = run_corpus(STRUCTURAL, [inputs], out_dir)
    assert result.docs == 1 and result.errors == 1
    errors = read_errors(out_dir)
    assert "10,485,760 characters, more than max_length 1,000,000" in errors["huge"]["error"]
    assert "--max-length" in errors["huge"]["error"] and "Patient" not in errors["huge"]["error"]
    assert set(read_output(out_dir)) == {"small"}


def test_bad_output_and_bad_config_fail_before_any_work(tmp_path):
    inputs = tmp_path / "in"
    inputs.mkdir()
    (inputs / "a.txt").write_text("Denies pain.", encoding="utf-8")
    blocker = tmp_path / "file"
    blocker.write_text("not a directory", encoding="utf-8")
    with pytest.raises(CorpusError, match="not writable"):
        run_corpus(STRUCTURAL, [inputs], blocker / "out")
    bad = tmp_path / "bad.cfg"
    bad.write_text('[nlp]\nlang = "en"\npipeline = ["nope"]\n[components]\n[components.nope]\nfactory = "no_such_factory"\n')
    # the pipeline is loaded here first: no Ray connection is attempted for a broken config
    with pytest.raises(CorpusError, match="could not load pipeline"):
        run_corpus(bad, [inputs], tmp_path / "out", engine="ray", ray=RayOptions(address="127.0.0.1:9"))
    assert not list((tmp_path / "out" / "shards").iterdir())
    with pytest.raises(CorpusError, match="no such file"):
        run_corpus(STRUCTURAL, [tmp_path / "missing"], tmp_path / "out")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "table.csv").write_text("a,b", encoding="utf-8")
    with pytest.raises(CorpusError, match="no input documents"):
        run_corpus(STRUCTURAL, [tmp_path / "other"], tmp_path / "out")
    with pytest.raises(CorpusError, match="unknown corpus setting"):
        run_corpus(STRUCTURAL, [inputs], tmp_path / "out", ray_address="auto")


def test_ray_address_that_does_not_answer_fails_fast(tmp_path):
    pytest.importorskip("ray")
    inputs = tmp_path / "in"
    inputs.mkdir()
    (inputs / "a.txt").write_text("Denies pain.", encoding="utf-8")
    with socket.socket() as sock:  # a free loopback port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    command = [
        sys.executable, "-m", "spacy_clinchunk", "chunk", str(inputs), "--config", str(STRUCTURAL),
        "--output", str(tmp_path / "out"), "--engine", "ray", "--ray-address", f"127.0.0.1:{port}",
        "--connect-timeout", "3",
    ]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert done.returncode == 2
    assert f"Ray address 127.0.0.1:{port} does not answer" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_cli_corpus_mode_and_single_file_mode(corpus, tmp_path, capsys):
    inputs = tmp_path / "in"
    write_shards(inputs, corpus_documents()[:6], 2)
    out = tmp_path / "out"
    assert cli_main(["chunk", str(inputs), "--config", str(STRUCTURAL), "--output", str(out), "--engine", "local"]) == 0
    assert "6 docs in 2 shards" in capsys.readouterr().err
    assert sorted(p.name for p in (out / "shards").iterdir()) == ["part-000.jsonl", "part-001.jsonl"]
    single = tmp_path / "one.jsonl"
    assert cli_main(["chunk", str(inputs), "--config", str(STRUCTURAL), "--output", str(single), "--format", "jsonl"]) == 0
    assert sorted(json.loads(l)["id"] for l in single.read_text().splitlines()) == sorted(read_output(out))
    assert cli_main(["chunk", str(inputs), "--config", str(STRUCTURAL), "--workers", "2"]) == 2
    assert "--workers needs --engine" in capsys.readouterr().err
    assert cli_main(["chunk", str(inputs), "--config", str(STRUCTURAL), "--engine", "local"]) == 2
    assert "--engine needs --output" in capsys.readouterr().err


def test_top_level_import():
    import spacy_clinchunk

    assert spacy_clinchunk.run_corpus is run_corpus


def test_workers_with_medspacy_imported_and_an_assertion_pipeline(tmp_path):
    """medspaCy registers unpicklable extension getters; spawned workers must still start."""
    import medspacy  # noqa: F401  (the condition under test: medspaCy already imported here)

    inputs = tmp_path / "in"
    write_shards(inputs, corpus_documents()[:24], 2)
    config = CONFIG_DIR / "assertion.cfg"
    single = tmp_path / "single"
    multi = tmp_path / "multi"
    run_corpus(config, [inputs], single, workers=1)
    run_corpus(config, [inputs], multi, workers=2)
    records = read_output(multi)
    assert records == read_output(single)
    statuses = {c["assertion"] for r in records.values() for c in r["chunks"]}
    assert "affirmed" in statuses and statuses <= {
        "affirmed", "negated", "normal", "uncertain", "historical", "hypothetical", "family"
    }


def test_a_rerun_with_documents_still_failed_exits_non_zero_and_says_how_many(tmp_path, capsys):
    inputs = tmp_path / "in"
    inputs.mkdir()
    (inputs / "good.txt").write_text("Denies pain.", encoding="utf-8")
    (inputs / "old.txt").write_bytes("Fi\xe8vre.".encode("latin-1"))
    out = tmp_path / "out"
    command = ["chunk", str(inputs), "--config", str(STRUCTURAL), "--output", str(out), "--engine", "local"]
    assert cli_main(command) == 1
    first = capsys.readouterr().err
    assert ", 1 errors," in first and "error: 1 document(s) failed" in first
    assert cli_main(command) == 1  # every shard is done: nothing reprocessed, the failure remains
    again = capsys.readouterr().err
    assert "(1 already done), 0 errors (1 in all shards)" in again, again
    assert again.splitlines()[-1].startswith("error: 1 document(s) failed; see ") and "errors.jsonl" in again
    assert cli_main([*command, "--encoding", "latin-1"]) == 0  # read as Latin-1: that shard is redone
    fixed = capsys.readouterr().err
    assert ", 0 errors," in fixed and "in all shards" not in fixed
    assert read_output(out)["old"]["chunks"][0]["text"] == "Fièvre"


def test_corpus_ids_stay_unique_for_suffix_twins_and_ids_repeated_in_a_file(tmp_path):
    """``a.txt`` / ``a.text`` keep their suffix in a corpus run too; an id repeated inside one
    JSONL file becomes ``<id>#1``, and a rerun gives the same ids."""
    notes = tmp_path / "in"
    notes.mkdir()
    for name in ("a.txt", "a.text"):
        (notes / name).write_text("No fever. Mild cough.\n", encoding="utf-8")
    rows = [{"id": "x", "text": "Denies chest pain."}, {"id": "x", "text": "Cough."}]
    (notes / "r.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    shards = plan_shards([str(notes)])
    assert sorted(doc.id for shard in shards for doc in read_shard(shard)) == ["a.text", "a.txt", "x", "x"]
    run_corpus("punct_conj_cleaned", [str(notes)], tmp_path / "out")
    ids = sorted(read_output(tmp_path / "out"))
    assert ids == ["a.text", "a.txt", "x", "x#1"]
    run_corpus("punct_conj_cleaned", [str(notes)], tmp_path / "again")
    assert sorted(read_output(tmp_path / "again")) == ids


@pytest.mark.parametrize("fmt", ["jsonl", "docbin", "records", "parquet", "hf"])
def test_a_corpus_run_writes_every_format_the_cli_writes(tmp_path, fmt):
    """One writer registry: the shard a corpus run writes holds what ``chunk --format F -o``
    writes for the same note (the CLI's one file), for every format of the CLI but the table."""
    note = tmp_path / "in" / "note.txt"
    note.parent.mkdir()
    note.write_text("HISTORY:\nShe denies fever or chills. Mild cough for three days.\n", encoding="utf-8")
    single = tmp_path / f"single.{fmt}"
    index = ["--index", "focus"] if fmt in ("records", "parquet", "hf") else []
    args = ["chunk", str(note), "--strategy", "retrieval", "--format", fmt, "-o", str(single), *index]
    assert cli_main(args) == 0
    out = tmp_path / "out"
    corpus_args = ["chunk", str(note.parent), "--strategy", "retrieval", "--format", fmt, "-o", str(out)]
    assert cli_main([*corpus_args, "--engine", "local", "--no-progress", *index]) == 0
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    (entry,) = manifest["shards"].values()
    shard = out / entry["output"]
    assert entry["format"] == fmt and entry["docs"] == 1 and entry["chunks"] > 0
    assert entry.get("index") == ("focus" if index else None)
    assert _format_content(shard, fmt) == _format_content(single, fmt)
    if fmt != "hf":
        assert stat.S_IMODE(shard.stat().st_mode) == 0o600  # note text: owner-only


def _format_content(path, fmt):
    if fmt in ("jsonl", "records"):
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    if fmt == "docbin":
        import spacy
        from spacy.tokens import DocBin

        docs = DocBin().from_bytes(path.read_bytes()).get_docs(spacy.blank("en").vocab)
        return [[(s.start_char, s.end_char, key) for key in doc.spans for s in doc.spans[key]] for doc in docs]
    if fmt == "parquet":
        import pyarrow.parquet as pq

        return pq.read_table(path).to_pylist()
    from datasets import load_from_disk

    return load_from_disk(str(path)).to_list()
