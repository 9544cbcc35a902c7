"""``convert``, and ``voronoi``/``evaluate`` on brat and BioC: same ground truth from any format,
per-file outcomes, private outputs. Fixtures are written by the tests; shared data only on tmp copies."""
import json
import os
import shutil
import stat

import pytest
import spacy
from spacy.tokens import DocBin

from conftest import CONFIG_DIR, GSC_DIR, SAMPLE_JSON, requires_shared_data
from spacy_clinchunk.cli import main
from spacy_clinchunk.groundtruth.evaluate import evaluate_corpus
from spacy_clinchunk.pipeline import load_pipeline

TEXT = "No seizures. Short fingers and short toes were seen. Myopia."


def annotated(doc_id, annotations, text=TEXT):
    return {"doc_id": doc_id, "full_text": text, "annotations": annotations}


def mention(hpo_id, *ranges, label=None, status=None, text=TEXT):
    item = {"hpo_id": hpo_id, "evidence_spans": [{"start_char": s, "end_char": e, "text_snippet": text[s:e]} for s, e in ranges]}
    if label:
        item["label"] = label
    if status:
        item["assertion_status"] = status
    return item


@pytest.fixture
def corpus(tmp_path):
    folder = tmp_path / "json"
    folder.mkdir()
    docs = {
        "a": annotated("a", [mention("HP:0001250", (3, 11), label="Seizure", status="negated"), mention("HP:0009381", (13, 26)),
                             mention("HP:0001831", (13, 18), (31, 41), label="Short toe"), mention("HP:0000545", (53, 59))]),
        "b": annotated("b", [mention("HP:0000545", (53, 59)), {"hpo_id": "HP:0001263", "label": "Delay", "evidence_spans": []}]),
    }
    for name, data in docs.items():
        (folder / f"{name}.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return folder


def mode(path):
    return stat.S_IMODE(path.stat().st_mode)


def test_convert_to_docbin_for_spacy_train(corpus, tmp_path, capsys):
    out = tmp_path / "train.spacy"
    assert main(["convert", str(corpus), "--to", "docbin", "-o", str(out), "--spans-key", "sc"]) == 0
    assert "2 file(s) read: 2 converted, 0 skipped, 0 error(s); 2 document(s) written" in capsys.readouterr().out
    assert mode(out) == 0o600
    nlp = spacy.blank("en")
    docs = list(DocBin().from_disk(out).get_docs(nlp.vocab))
    assert [d._.clin_doc_id for d in docs] == ["a", "b"]
    first = docs[0]
    assert [(s.text, s.label_) for s in first.spans["sc"]] == [
        ("seizures", "HP:0001250"), ("Short", "HP:0001831"), ("Short fingers", "HP:0009381"), ("short toes", "HP:0001831"), ("Myopia", "HP:0000545")
    ]
    assert first.spans["annotations"][0]._.clin_assertion == "negated"
    assert {"voronoi", "voronoi_0.00", "voronoi_0.50", "voronoi_1.00"} <= set(first.spans)
    assert docs[1]._.clin_unlocated_annotations[0]["hpo_id"] == "HP:0001263"


def test_convert_writes_every_format_owner_only_and_reads_back(corpus, tmp_path, capsys):
    for target, out in (("brat", "brat"), ("json", "json2"), ("bioc-json", "c.json"), ("bioc-xml", "c.xml")):
        assert main(["convert", str(corpus), "--to", target, "-o", str(tmp_path / out)]) == 0
    printed = capsys.readouterr().out
    assert "1 unlocated annotation(s) left out (brat cannot hold them)" in printed
    assert sorted(p.name for p in (tmp_path / "brat").iterdir()) == ["a.ann", "a.txt", "b.ann", "b.txt"]
    for path in [*(tmp_path / "brat").iterdir(), *(tmp_path / "json2").iterdir(), tmp_path / "c.json", tmp_path / "c.xml"]:
        assert mode(path) == 0o600, path
    original = json.loads((corpus / "a.json").read_text())
    for source in (tmp_path / "json2" / "a.json",):
        assert json.loads(source.read_text()) == original
    for source in ("c.json", "c.xml"):
        assert main(["convert", str(tmp_path / source), "--to", "json", "-o", str(tmp_path / f"back_{source}")]) == 0
        for name in ("a.json", "b.json"):
            assert (tmp_path / f"back_{source}" / name).read_bytes() == (tmp_path / "json2" / name).read_bytes()


def test_convert_goes_on_after_bad_files_and_exits_1(corpus, tmp_path, capsys):
    (corpus / "deep.json").write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    (corpus / "latin1.json").write_bytes(json.dumps(annotated("l", [], text="fièvre")).replace("\\u00e8", "\u00e8").encode("latin-1"))
    (corpus / "other.json").write_text('{"unrelated": 1}', encoding="utf-8")
    assert main(["convert", str(corpus), "--to", "json", "-o", str(tmp_path / "out")]) == 1
    captured = capsys.readouterr()
    assert "5 file(s) read: 2 converted, 1 skipped, 2 error(s); 2 document(s) written" in captured.out
    assert "deep.json: invalid JSON: nested too deeply" in captured.err
    assert "latin1.json: not valid UTF-8" in captured.err and "Traceback" not in captured.err
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["a.json", "b.json"]


def test_voronoi_on_brat_and_bioc_writes_the_same_bytes_as_on_json(corpus, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    assert main(["convert", str(corpus), "--to", "brat", "-o", str(tmp_path / "brat")]) == 0
    assert main(["convert", str(corpus), "--to", "bioc-xml", "-o", str(tmp_path / "c.xml")]) == 0
    (corpus / "b.json").unlink()  # brat cannot hold b's unlocated annotation: compare on a only
    (tmp_path / "brat" / "b.ann").unlink()
    runs = {}
    for name, source in (("json", ["--input-dir", str(corpus)]), ("brat", ["--input-dir", str(tmp_path / "brat")])):
        assert main(["voronoi", *source, "--output-dir", str(tmp_path / f"v_{name}"), "--no-progress"]) == 0
        runs[name] = (tmp_path / f"v_{name}" / "a.json").read_bytes()
    assert main(["voronoi", "--input", str(tmp_path / "c.xml"), "--output-dir", str(tmp_path / "v_xml")]) == 0
    assert runs["json"] == runs["brat"] == (tmp_path / "v_xml" / "a.json").read_bytes()
    assert json.loads(runs["json"])["chunk_variants"]["voronoi_v1"]["provenance"]["generated_at"] == "2023-11-14T22:13:20Z"
    assert mode(tmp_path / "v_brat" / "a.json") == 0o600
    assert main(["voronoi", "--input-dir", str(tmp_path / "brat"), "--output-dir", str(tmp_path / "v_brat")]) == 0
    assert "0 updated, 1 unchanged" in capsys.readouterr().out
    assert main(["voronoi", "--input-dir", str(tmp_path / "brat"), "--format", "brat"]) == 2  # brat is never rewritten in place


@pytest.mark.parametrize("folder,documents", [
    pytest.param(SAMPLE_JSON, 4, id="sample"),
    pytest.param(GSC_DIR, 40, id="shared", marks=requires_shared_data()),
])
def test_json_brat_json_gives_identical_voronoi_and_equal_scores(tmp_path, monkeypatch, folder, documents):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    sample = tmp_path / "gsc"
    sample.mkdir()
    for path in sorted(folder.glob("*.json"))[:documents]:
        shutil.copy(path, sample / path.name)
    assert main(["convert", str(sample), "--to", "brat", "-o", str(tmp_path / "brat")]) == 0
    assert main(["convert", str(tmp_path / "brat"), "--to", "json", "-o", str(tmp_path / "back")]) == 0
    assert main(["convert", str(sample), "--to", "bioc-json", "-o", str(tmp_path / "c.json")]) == 0
    for name in ("gsc", "back"):
        assert main(["voronoi", "--input-dir", str(tmp_path / name), "--no-progress"]) == 0
    for original in sorted(sample.iterdir()):
        doc_id = json.loads(original.read_text())["doc_id"]
        first = json.loads(original.read_text())["chunk_variants"]
        second = json.loads((tmp_path / "back" / f"{doc_id}.json").read_text())["chunk_variants"]
        assert json.dumps(first) == json.dumps(second), original.name
    nlp = load_pipeline(CONFIG_DIR / "punct_conj_cleaned.cfg")
    scores = [evaluate_corpus(nlp, tmp_path / "gsc"), evaluate_corpus(nlp, tmp_path / "brat", format="brat"),
              evaluate_corpus(nlp, tmp_path / "c.json")]
    assert scores[0]["chunk_docs"] == documents and scores[2]["files"] == 1  # one BioC collection
    for each in scores:
        each.pop("files")
    assert scores[0] == scores[1] == scores[2]


def test_evaluate_cli_reports_unlocated_and_goes_on_after_a_bad_file(corpus, tmp_path, capsys):
    (corpus / "c.json").write_text('{"full_text": "x", "annotations": [], "doc_id": "c", "doc_id": "d"}', encoding="utf-8")
    output = tmp_path / "m.json"
    code = main(["evaluate", "--config", str(CONFIG_DIR / "simple.cfg"), "--data", str(corpus), "-o", str(output)])
    captured = capsys.readouterr()
    assert code == 1
    assert "c.json: invalid JSON: duplicate key 'doc_id'" in captured.err
    assert "json: 3 file(s): 2 read, 0 skipped, 1 error(s); 2 document(s) scored; 1 unlocated annotation(s) kept" in captured.out
    header, row = captured.out.strip().splitlines()[-2:]
    assert header.split()[-1] == "unlocated" and row.split()[-1] == "1"
    metrics = json.loads(output.read_text())["corpora"]["json"]
    assert (metrics["unlocated_annotations"], metrics["files_error"], metrics["chunk_docs"]) == (1, 1, 2)
    strict = main(["evaluate", "--config", str(CONFIG_DIR / "simple.cfg"), "--data", str(corpus), "--unlocated", "error"])
    assert strict == 1 and "1 unlocated annotation(s) (1) and --unlocated error" in capsys.readouterr().err
    assert os.environ.get("HF_HUB_OFFLINE") == "1"


def test_convert_and_evaluate_in_a_subprocess(corpus, tmp_path):
    """The commands' subprocess smoke tests (the rest run in-process): ``python -m``, exit
    codes, and nothing on stderr but our own lines (no log noise from medspaCy or PyRuSH)."""
    import subprocess
    import sys

    from conftest import ROOT

    env = {**os.environ, "HF_HUB_OFFLINE": "1"}

    def run(*args):
        return subprocess.run([sys.executable, "-m", "spacy_clinchunk", *map(str, args)], capture_output=True,
                              text=True, cwd=ROOT, env=env, timeout=300)

    converted = run("convert", corpus, "--to", "brat", "-o", tmp_path / "brat")
    assert converted.returncode == 0 and converted.stderr == "", converted.stderr
    assert "2 converted" in converted.stdout
    scored = run("evaluate", "--config", CONFIG_DIR / "assertion.cfg", "--data", tmp_path / "brat", "-o", tmp_path / "m.json")
    assert scored.returncode == 0 and scored.stderr == "", scored.stderr
    assert json.loads((tmp_path / "m.json").read_text())["corpora"]["brat"]["chunk_docs"] == 2
