"""Ray engine on a local Ray instance (loopback only): identity, errors, a killed actor, kill and resume."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import ROOT
import corpus_helpers as helpers
from corpus_helpers import GATE_DOC, POISON, build_corpus, read_errors, read_output, reference_records, write_shards
from spacy_clinchunk.corpus import run_corpus

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def ray_cluster():
    """One local Ray instance for every test here; nothing listens beyond loopback."""
    if ray.is_initialized():
        ray.shutdown()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, _node_ip_address="127.0.0.1")
    yield ray.get_runtime_context().gcs_address
    ray.shutdown()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    built = build_corpus(
        tmp_path_factory.mktemp("ray_corpus"), n_shards=8, poison_shard=2, text_files={"latin1.txt": "Fi\xe8vre.".encode("latin-1")}
    )
    built["reference"] = reference_records(built["config"], built["code"], built["docs"] + [POISON])
    return built


def test_ray_run_matches_plain_pipeline_and_records_errors(ray_cluster, corpus, tmp_path):
    out = tmp_path / "out"
    result = run_corpus(
        corpus["config"], [corpus["inputs"]], out, engine="ray", workers=2, batch_size=16, code=str(corpus["code"])
    )
    assert read_output(out) == corpus["reference"]
    errors = read_errors(out)
    assert set(errors) == {"poisoned", "latin1"}
    assert "poisoned document" in errors["poisoned"]["error"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["totals"]["docs"] == len(corpus["reference"]) == result.docs
    assert manifest["totals"]["shards"] == 10 and manifest["shards"]["empty"]["docs"] == 0
    assert manifest["runs"][-1]["engine"] == "ray" and result.startup_seconds > 0
    assert sum(w["docs"] for w in result.worker_stats.values()) == len(corpus["reference"]) + 2  # + poisoned, latin1
    assert len(result.worker_stats) == 2 and all(w["max_rss_mb"] > 0 for w in result.worker_stats.values())
    assert os.getpid() not in {e["worker"]["pid"] for e in manifest["shards"].values()}  # actors wrote every shard

    # the same shards from the local engine are byte-identical
    local = tmp_path / "local"
    run_corpus(corpus["config"], [corpus["inputs"]], local, engine="local", code=str(corpus["code"]))
    assert helpers.shard_bytes(out) == helpers.shard_bytes(local)


def test_a_killed_actor_is_replaced_and_its_shard_redone(ray_cluster, corpus, tmp_path):
    import threading

    inputs = tmp_path / "in"
    write_shards(inputs, corpus["docs"], 4)
    (inputs / "gate.jsonl").write_text(json.dumps(GATE_DOC) + "\n", encoding="utf-8")
    corpus["holder"].unlink(missing_ok=True)
    corpus["gate"].write_text("hold", encoding="utf-8")

    def kill_the_holder():
        deadline = time.time() + 300
        while time.time() < deadline and not (corpus["holder"].exists() and corpus["holder"].read_text()):
            time.sleep(0.1)
        os.kill(int(corpus["holder"].read_text()), signal.SIGKILL)
        corpus["gate"].unlink()

    killer = threading.Thread(target=kill_the_holder, daemon=True)
    killer.start()
    try:
        result = run_corpus(corpus["config"], [inputs], tmp_path / "out", engine="ray", workers=2, code=str(corpus["code"]))
    finally:
        corpus["gate"].unlink(missing_ok=True)
        killer.join(5)
    assert "gate" in result.processed and result.manifest["totals"]["shards"] == 5
    assert result.manifest["shards"]["gate"]["worker"]["pid"] != int(corpus["holder"].read_text())
    expected = dict(corpus["reference"])  # reference_records leaves the poisoned document out
    expected["gate"] = reference_records(corpus["config"], corpus["code"], [GATE_DOC])["gate"]
    assert read_output(tmp_path / "out") == expected


def test_ray_docbin_output(ray_cluster, corpus, tmp_path):
    import spacy
    from spacy.tokens import DocBin

    from spacy_clinchunk.export.records import doc_to_record

    out = tmp_path / "out"
    run_corpus(corpus["config"], [corpus["inputs"]], out, engine="ray", workers=2, fmt="docbin", code=str(corpus["code"]))
    vocab = spacy.blank("en").vocab
    records = {}
    for path in (out / "shards").glob("*.spacy"):
        records.update({d._.clin_doc_id: helpers.without_source(doc_to_record(d)) for d in DocBin().from_disk(path).get_docs(vocab)})
    assert records == corpus["reference"]


def test_killed_ray_driver_resumes_without_redoing_finished_shards(ray_cluster, corpus, tmp_path):
    """A CLI driver joins the test cluster with --ray-address; kill -9 it half-way; rerun."""
    inputs = tmp_path / "in"
    write_shards(inputs, corpus["docs"], 8)
    with open(inputs / "part-004.jsonl", "a", encoding="utf-8") as out:
        out.write(json.dumps(GATE_DOC) + "\n")
    corpus["gate"].write_text("hold", encoding="utf-8")
    out = tmp_path / "out"
    command = [
        sys.executable, "-m", "spacy_clinchunk", "chunk", str(inputs), "--config", str(corpus["config"]),
        "--code", str(corpus["code"]), "--output", str(out), "--engine", "ray", "--workers", "2",
        "--ray-address", ray_cluster, "--batch-size", "8",
    ]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        finished = {}
        deadline = time.time() + 400
        while time.time() < deadline and process.poll() is None:
            try:
                finished = json.loads((out / "manifest.json").read_text())["shards"]
            except (OSError, ValueError):
                finished = {}
            if len(finished) >= 2:
                break
            time.sleep(0.2)
        assert process.poll() is None, process.stderr.read().decode()[-3000:]
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
        finished = json.loads((out / "manifest.json").read_text())["shards"]
    finally:
        if process.poll() is None:
            process.kill()
        corpus["gate"].unlink(missing_ok=True)
    assert 2 <= len(finished) < 8 and "part-004" not in finished
    written = {name: (out / entry["output"]).stat().st_mtime_ns for name, entry in finished.items()}

    result = run_corpus(corpus["config"], [inputs], out, engine="ray", workers=2, code=str(corpus["code"]))
    assert sorted(result.skipped) == sorted(finished)
    assert "part-004" in result.processed and len(result.processed) + len(finished) == 8
    assert {name: (out / "shards" / f"{name}.jsonl").stat().st_mtime_ns for name in finished} == written
    expected = dict(corpus["reference"])  # the poisoned document is not in this corpus
    expected["gate"] = reference_records(corpus["config"], corpus["code"], [GATE_DOC])["gate"]
    assert read_output(out) == expected


@pytest.mark.parametrize("fmt", ["records", "parquet", "hf"])
def test_ray_writes_every_record_format_with_the_inputs_own_fields(ray_cluster, tmp_path, fmt):
    """Ray actors write the record formats too, each record with the input's own fields (``meta``)."""
    notes = [{"id": f"r{k}", "text": "No fever. Mild cough.", "ward": k} for k in range(4)]
    inputs = tmp_path / "in" / "notes.jsonl"
    inputs.parent.mkdir()
    inputs.write_text("".join(json.dumps(n) + "\n" for n in notes), encoding="utf-8")
    out = tmp_path / "out"
    result = run_corpus("punct_conj_cleaned", [inputs], out, engine="ray", workers=2, fmt=fmt)
    assert result.docs == 4 and len(result.processed) == 2  # one small file split for the two actors
    rows = []
    for entry in result.manifest["shards"].values():
        path = out / entry["output"]
        if fmt == "records":
            rows += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        elif fmt == "parquet":
            import pyarrow.parquet as pq

            rows += [{**r, "meta": json.loads(r["meta"])} for r in pq.read_table(path).to_pylist()]
        else:
            from datasets import load_from_disk

            rows += [{**r, "meta": json.loads(r["meta"])} for r in load_from_disk(str(path)).to_list()]
    assert {r["doc_id"] for r in rows} == {n["id"] for n in notes}
    assert all(r["meta"] == {"ward": int(r["doc_id"][1:])} for r in rows)
