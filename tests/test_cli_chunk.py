"""``python -m spacy_clinchunk chunk`` end to end, in a subprocess."""
import json
import os
import subprocess
import sys

import pytest

from conftest import CONFIG_DIR, EXAMPLE_NOTE, ROOT

CONFIG = str(CONFIG_DIR / "punct_conj_cleaned.cfg")
SEED = "Patient has arachnodactyly, i.e., long fingers; heart rate is 98.6 bpm."


def cli(*args, stdin=None):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONIOENCODING": "utf-8"}
    return subprocess.run(
        [sys.executable, "-m", "spacy_clinchunk", "chunk", *map(str, args)],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=300,
    )


def records(stdout):
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


@pytest.fixture
def corpus(tmp_path):
    folder = tmp_path / "notes"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.txt").write_text(SEED, encoding="utf-8")
    (folder / "sub" / "b.txt").write_text("Patient has seizures but no developmental delay", encoding="utf-8")
    (folder / "ignored.csv").write_text("x,y", encoding="utf-8")
    return folder


def test_files_and_directories_as_jsonl(corpus):
    result = cli(corpus, "--config", CONFIG, "--format", "jsonl")
    assert result.returncode == 0, result.stderr
    out = records(result.stdout)
    assert [r["id"] for r in out] == ["a", "b"]
    assert [c["text"] for c in out[0]["chunks"]] == ["Patient has arachnodactyly", "i.e., long fingers", "heart rate is 98.6 bpm"]
    for chunk in out[0]["chunks"]:
        assert SEED[chunk["start"] : chunk["end"]] == chunk["text"]


def test_table_format_on_the_example_note():
    result = cli(EXAMPLE_NOTE, "--config", CONFIG)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("# discharge_summary_en: ")
    assert "'Levetiracetam 250 mg p.o. b.i.d.'" in result.stdout


def test_jsonl_input_and_output_file(tmp_path):
    source = tmp_path / "docs.jsonl"
    lines = [{"id": "n1", "text": SEED}, {"id": "n2", "text": "No fever and/or chills"}]
    source.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    target = tmp_path / "out" / "chunks.jsonl"
    result = cli(source, "--config", CONFIG, "--format", "jsonl", "--output", target)
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    out = records(target.read_text(encoding="utf-8"))
    assert [r["id"] for r in out] == ["n1", "n2"]
    assert [c["text"] for c in out[1]["chunks"]] == ["No fever and/or chills"]


def test_stdin_text_and_jsonl():
    result = cli("-", "--config", CONFIG, "--format", "jsonl", stdin="Patient has seizures but no developmental delay")
    assert result.returncode == 0, result.stderr
    assert [c["text"] for c in records(result.stdout)[0]["chunks"]] == ["Patient has seizures", "no developmental delay"]
    result = cli("--config", CONFIG, "--format", "jsonl", stdin=json.dumps({"id": "x7", "text": SEED}) + "\n")
    assert result.returncode == 0, result.stderr
    assert records(result.stdout)[0]["id"] == "x7"


def test_spacy_style_overrides(corpus):
    text = "The and the patient"
    default = cli("-", "--config", CONFIG, "--format", "jsonl", stdin=text)
    overridden = cli(
        "-", "--config", CONFIG, "--format", "jsonl", "--components.clin_cleaner.max_cleanup_passes", "0", stdin=text
    )
    assert default.returncode == overridden.returncode == 0, overridden.stderr
    assert [c["text"] for c in records(default.stdout)[0]["chunks"]] == ["patient"]
    assert [c["text"] for c in records(overridden.stdout)[0]["chunks"]] == ["The and the patient"]


def test_lang_flag():
    text = "Fieber seit zwei Tagen aber kein Erbrechen"
    result = cli("-", "--config", CONFIG, "--lang", "de", "--format", "jsonl", stdin=text)
    assert result.returncode == 0, result.stderr
    assert [c["text"] for c in records(result.stdout)[0]["chunks"]] == ["Fieber seit zwei Tagen", "kein Erbrechen"]


def test_missing_file_is_one_line_and_a_non_zero_exit(tmp_path):
    result = cli(tmp_path / "nope.txt", "--config", CONFIG)
    assert result.returncode != 0
    assert result.stderr.strip().count("\n") == 0 and "nope.txt" in result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""


def test_bad_config_is_one_line_and_a_non_zero_exit(tmp_path):
    bad = tmp_path / "bad.cfg"
    bad.write_text("[nlp]\nlang = \"en\"\npipeline = [\"nope\"]\n", encoding="utf-8")
    result = cli("-", "--config", bad, stdin="fever")
    assert result.returncode != 0
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr


def test_non_utf8_file_in_a_batch_is_reported_and_the_rest_processed(corpus):
    (corpus / "latin1.txt").write_bytes("Fièvre et toux".encode("latin-1"))
    result = cli(corpus, "--config", CONFIG, "--format", "jsonl")
    assert result.returncode == 1
    assert [r["id"] for r in records(result.stdout)] == ["a", "b"]
    assert "latin1.txt is not valid UTF-8" in result.stderr
    assert "Traceback" not in result.stderr


def test_bad_jsonl_line_is_reported_and_the_rest_processed(tmp_path):
    source = tmp_path / "docs.jsonl"
    source.write_text('{"id": "ok", "text": "fever"}\nnot json\n{"id": "ok2", "text": "cough"}\n', encoding="utf-8")
    result = cli(source, "--config", CONFIG, "--format", "jsonl")
    assert result.returncode == 1
    assert [r["id"] for r in records(result.stdout)] == ["ok", "ok2"]
    assert "invalid JSON" in result.stderr and "Traceback" not in result.stderr
