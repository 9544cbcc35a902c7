"""Corpus runs on the local engine: shards, manifest, resume after a kill, errors, bad input."""
import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from conftest import CONFIG_DIR, ROOT, requires_shared_data
from corpus_helpers import (
    GATE_DOC,
    POISON,
    build_corpus,
    gsc_documents,
    read_errors,
    read_output,
    reference_records,
    write_shards,
)
from spacy_clinchunk.cli import main as cli_main
from spacy_clinchunk.corpus import CorpusError, plan_shards, run_corpus

pytestmark = requires_shared_data()
STRUCTURAL = CONFIG_DIR / "punct_conj_cleaned.cfg"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """228 GSC+ documents in 10 JSONL shards, a poisoned document, a non-UTF-8 note and an empty shard."""
    good = "No acute distress. Lungs clear, heart regular."
    built = build_corpus(
        tmp_path_factory.mktemp("corpus"),
        n_shards=10,
        poison_shard=3,
        text_files={"notes/good.txt": good.encode("utf-8"), "notes/latin1.txt": "Fi\xe8vre, pas de toux.".encode("latin-1")},
    )
    built["docs"] = built["docs"] + [POISON, {"id": "good", "text": good}]
    built["reference"] = reference_records(built["config"], built["code"], built["docs"])
    return built


def check_complete(out_dir, corpus):
    records = read_output(out_dir)
    assert records == corpus["reference"]  # every good document, identical to one plain process
    errors = read_errors(out_dir)
    assert set(errors) == {"poisoned", "latin1"}
    assert "poisoned document" in errors["poisoned"]["error"]
    assert "UTF-8" in errors["latin1"]["error"]
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
        "errors": 2,
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


def test_two_spawned_processes_give_identical_output(corpus, tmp_path):
    out = tmp_path / "out"
    result = run_corpus(corpus["config"], [corpus["inputs"]], out, workers=2, code=str(corpus["code"]))
    check_complete(out, corpus)
    assert result.manifest["runs"][-1]["workers"] == 2


def test_docbin_output_holds_the_same_chunks(corpus, tmp_path):
    import spacy
    from spacy.tokens import DocBin

    from spacy_clinchunk.records import doc_to_record

    out = tmp_path / "out"
    run_corpus(corpus["config"], [corpus["inputs"]], out, fmt="docbin", code=str(corpus["code"]))
    vocab = spacy.blank("en").vocab
    records = {}
    for path in (out / "shards").glob("*.spacy"):
        for doc in DocBin().from_disk(path).get_docs(vocab):
            records[doc._.doc_id] = doc_to_record(doc)
    assert records == corpus["reference"]


def test_killed_run_resumes_without_redoing_finished_shards(corpus, tmp_path):
    """Kill -9 a CLI run while a document holds it, rerun, get the complete identical output."""
    inputs = tmp_path / "in"
    docs = gsc_documents()
    write_shards(inputs, docs, 10)
    with open(inputs / "part-005.jsonl", "a", encoding="utf-8") as out:
        out.write(json.dumps(GATE_DOC) + "\n")
    corpus["gate"].write_text("hold", encoding="utf-8")
    out = tmp_path / "out"
    command = [
        sys.executable, "-m", "spacy_clinchunk", "chunk", str(inputs), "--config", str(corpus["config"]),
        "--code", str(corpus["code"]), "--output", str(out), "--engine", "local", "--batch-size", "4",
    ]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        finished = {}
        deadline = time.time() + 300
        while time.time() < deadline and process.poll() is None:
            try:
                finished = json.loads((out / "manifest.json").read_text())["shards"]
            except (OSError, ValueError):
                finished = {}
            if len(finished) >= 5:  # part-000 .. part-004; part-005 is held by the gate
                break
            time.sleep(0.1)
        assert process.poll() is None, process.stderr.read().decode()
        assert sorted(finished) == [f"part-{k:03d}" for k in range(5)]
        time.sleep(0.3)
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
        corpus["gate"].unlink(missing_ok=True)
    written = {name: (out / entry["output"]).stat().st_mtime_ns for name, entry in finished.items()}
    assert not (out / "shards" / "part-005.jsonl").exists()

    result = run_corpus(corpus["config"], [inputs], out, code=str(corpus["code"]))
    assert sorted(result.skipped) == sorted(finished)
    assert sorted(result.processed) == [f"part-{k:03d}" for k in range(5, 10)]
    assert {name: (out / "shards" / f"{name}.jsonl").stat().st_mtime_ns for name in finished} == written
    expected = reference_records(corpus["config"], corpus["code"], docs + [GATE_DOC])
    assert read_output(out) == expected
    assert result.manifest["totals"]["docs"] == len(expected)


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
    assert "E088" in errors["huge"]["error"]  # spaCy's max_length message, which names the fix
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
        run_corpus(bad, [inputs], tmp_path / "out", engine="ray", ray_address="127.0.0.1:9")
    assert not list((tmp_path / "out" / "shards").iterdir())
    with pytest.raises(CorpusError, match="no such file"):
        run_corpus(STRUCTURAL, [tmp_path / "missing"], tmp_path / "out")


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
    write_shards(inputs, gsc_documents()[:6], 2)
    out = tmp_path / "out"
    assert cli_main(["chunk", str(inputs), "--config", str(STRUCTURAL), "--output", str(out), "--engine", "local"]) == 0
    assert "6 docs in 2 shards" in capsys.readouterr().err
    assert sorted(p.name for p in (out / "shards").iterdir()) == ["part-000.jsonl", "part-001.jsonl"]
    single = tmp_path / "one.jsonl"
    assert cli_main(["chunk", str(inputs), "--config", str(STRUCTURAL), "--output", str(single), "--format", "jsonl"]) == 0
    assert sorted(json.loads(l)["id"] for l in single.read_text().splitlines()) == sorted(read_output(out))
    assert cli_main(["chunk", str(inputs), "--config", str(STRUCTURAL), "--workers", "2"]) == 2
    assert "--workers need --engine" in capsys.readouterr().err
    assert cli_main(["chunk", str(inputs), "--config", str(STRUCTURAL), "--engine", "local"]) == 2
    assert "--engine needs --output" in capsys.readouterr().err


def test_top_level_import():
    import spacy_clinchunk

    assert spacy_clinchunk.run_corpus is run_corpus


def test_workers_with_medspacy_imported_and_an_assertion_pipeline(tmp_path):
    """medspaCy registers unpicklable extension getters; spawned workers must still start."""
    import medspacy  # noqa: F401  (the condition under test: medspaCy already imported here)

    inputs = tmp_path / "in"
    write_shards(inputs, gsc_documents()[:24], 2)
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
