"""``python -m spacy_clinchunk chunk`` end to end: in-process, and one run on a real terminal in a subprocess."""
import fcntl
import json
import os
import pty
import stat
import struct
import subprocess
import sys
import termios

import pytest

from cli_helpers import run_cli
from conftest import CONFIG_DIR, EXAMPLE_NOTE, ROOT

CONFIG = str(CONFIG_DIR / "punct_conj_cleaned.cfg")
SEED = "Patient has arachnodactyly, i.e., long fingers; heart rate is 98.6 bpm."


def cli(*args, stdin=None):
    return run_cli("chunk", *args, stdin=stdin)


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
    assert [r["id"] for r in out] == ["a", "sub/b"]  # the path relative to the directory given
    assert [r["doc"]["source"] for r in out] == [str(corpus / "a.txt"), str(corpus / "sub" / "b.txt")]
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
    assert stat.S_IMODE(target.stat().st_mode) == 0o600  # it holds note text
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
    assert [r["id"] for r in records(result.stdout)] == ["a", "sub/b"]
    assert "latin1.txt is not valid UTF-8" in result.stderr
    assert "Traceback" not in result.stderr


def test_bad_jsonl_line_is_reported_and_the_rest_processed(tmp_path):
    source = tmp_path / "docs.jsonl"
    source.write_text('{"id": "ok", "text": "fever"}\nnot json\n{"id": "ok2", "text": "cough"}\n', encoding="utf-8")
    result = cli(source, "--config", CONFIG, "--format", "jsonl")
    assert result.returncode == 1
    assert [r["id"] for r in records(result.stdout)] == ["ok", "ok2"]
    assert "invalid JSON" in result.stderr and "Traceback" not in result.stderr


def test_same_file_name_in_two_folders_gets_two_ids(tmp_path):
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "note.txt").write_text(f"Fever in {folder}.", encoding="utf-8")
    result = cli(tmp_path, "--config", CONFIG, "--format", "jsonl")
    assert result.returncode == 0, result.stderr
    assert [r["id"] for r in records(result.stdout)] == ["a/note", "b/note"]


def test_nothing_to_read_is_an_error_not_a_silent_success(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    others = tmp_path / "others"
    others.mkdir()
    (others / "table.csv").write_text("a,b", encoding="utf-8")
    for folder in (empty, others):
        for extra in ([], ["--engine", "local", "--output", str(tmp_path / "out")]):
            result = cli(folder, "--config", CONFIG, *extra)
            assert result.returncode == 2, result.stderr
            assert result.stderr.startswith("error: no input documents in") and result.stderr.count("\n") == 1
    blank = tmp_path / "blank.jsonl"
    blank.write_text("\n", encoding="utf-8")
    result = cli(blank, "--config", CONFIG)
    assert result.returncode == 2 and "no input documents" in result.stderr


def test_json_files_are_read_by_content(tmp_path):
    (tmp_path / "one.json").write_text(json.dumps({"id": "j1", "text": "No fever."}), encoding="utf-8")
    (tmp_path / "list.json").write_text(json.dumps([{"id": "j2", "text": "Cough."}, {"text": "Rash."}]), encoding="utf-8")
    (tmp_path / "lines.json").write_text('{"id": "j4", "text": "Pain."}\n{"id": "j5", "text": "Itch."}\n', encoding="utf-8")
    result = cli(tmp_path, "--config", CONFIG, "--format", "jsonl")
    assert result.returncode == 0, result.stderr
    out = {r["id"]: [c["text"] for c in r["chunks"]] for r in records(result.stdout)}
    assert out == {"j4": ["Pain"], "j5": ["Itch"], "j2": ["Cough"], "list:1": ["Rash"], "j1": ["No fever"]}
    (tmp_path / "other.json").write_text(json.dumps({"doc_id": "g", "full_text": "Fever."}), encoding="utf-8")
    result = cli(tmp_path / "other.json", "--config", CONFIG, "--format", "jsonl")
    assert result.returncode == 1 and result.stdout == ""
    assert "error: other: expected an object with a string 'text'" in result.stderr


def test_max_length_works_without_an_engine(tmp_path):
    big = tmp_path / "big.txt"
    big.write_text("No fever today. " * 75_000, encoding="utf-8")  # 1.2 M characters
    refused = cli(big, "--config", CONFIG, "--format", "jsonl")
    assert refused.returncode == 1 and refused.stdout == ""
    assert "1,200,000 characters, more than max_length 1,000,000; raise it with --max-length" in refused.stderr
    assert "E088" not in refused.stderr and "No fever" not in refused.stderr
    done = cli(big, "--config", CONFIG, "--format", "jsonl", "--max-length", "1300000")
    assert done.returncode == 0, done.stderr
    assert len(records(done.stdout)[0]["chunks"]) == 75_000


def test_in_a_subprocess_a_corpus_run_shows_a_progress_bar_on_a_terminal_and_one_line_otherwise(corpus, tmp_path):
    """The command's subprocess smoke test: ``python -m``, a real terminal, nothing else on stderr."""
    for k in range(3):
        (corpus / f"part{k}.jsonl").write_text(json.dumps({"id": f"p{k}", "text": SEED}) + "\n", encoding="utf-8")
    base = ["--config", CONFIG, "--engine", "local"]
    piped = cli(corpus, *base, "--output", tmp_path / "piped")
    assert piped.returncode == 0, piped.stderr
    assert piped.stderr.count("\n") == 1 and piped.stderr.startswith("5 docs in 5 shards")
    main_end, child_end = pty.openpty()  # stderr on a terminal of 24 x 120
    fcntl.ioctl(child_end, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))
    command = [sys.executable, "-m", "spacy_clinchunk", "chunk", str(corpus), *base, "--output", str(tmp_path / "tty")]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=child_end)
    os.close(child_end)
    seen = b""
    while True:
        try:
            chunk = os.read(main_end, 4096)
        except OSError:  # the terminal closed with the process
            break
        if not chunk:
            break
        seen += chunk
    assert process.wait(timeout=120) == 0
    text = seen.decode("utf-8", "replace")
    assert "corpus: 100%" in text and "5/5" in text and "docs=5" in text and "5 docs in 5 shards" in text
    lines = [line for line in text.replace("\r", "\n").splitlines() if line.strip()]
    assert all(line.lstrip().startswith(("corpus:", "5 docs in 5 shards")) for line in lines), text  # no log noise
    tty_out = sorted((tmp_path / "tty").glob("*.jsonl"))
    assert [p.read_bytes() for p in tty_out] == [(tmp_path / "piped" / p.name).read_bytes() for p in tty_out]


# -- config overrides: our own small parser (spaCy's is private) ----------------------------
def test_override_parser_reads_both_forms_and_json_values():
    from spacy_clinchunk.cli.source import parse_overrides

    given = ["--a.b", "1", "--c.d=true", "--e.f", "--g.h", "text", '--i.j=["x"]', "--k.l", "-1", "--m.n=a=b", "--o.p", "null"]
    assert parse_overrides(given) == {
        "a.b": 1, "c.d": True, "e.f": True, "g.h": "text", "i.j": ["x"], "k.l": -1, "m.n": "a=b", "o.p": None
    }
    assert parse_overrides([]) == {}


@pytest.mark.parametrize("given, message", [(["--nodot", "1"], "'--nodot'"), (["stray"], "'stray'"), (["--a."], "'--a.'")])
def test_override_parser_refuses_what_is_no_override(given, message):
    from spacy_clinchunk.cli import CLIError
    from spacy_clinchunk.cli.source import parse_overrides

    with pytest.raises(CLIError, match=message):
        parse_overrides(given)


def test_unknown_strategy_and_option_are_one_line():
    result = cli("-", "--strategy", "retrievl", stdin="fever")
    assert result.returncode == 2 and result.stderr.startswith("error: unknown strategy 'retrievl'; known: ")
    assert result.stderr.count("\n") == 1 and "retrieval" in result.stderr
    result = cli("-", "--config", CONFIG, "--nosuchflag", stdin="fever")
    assert result.returncode == 2 and "'--nosuchflag'" in result.stderr and result.stderr.count("\n") == 1


def test_the_printed_group_is_the_one_the_loaded_pipeline_writes(tmp_path):
    import spacy

    nlp = spacy.blank("en")
    nlp.add_pipe("clin_conj_splitter", config={"spans_key": "alt"})
    nlp.config.to_disk(tmp_path / "alt.cfg")
    result = cli("-", "--config", tmp_path / "alt.cfg", "--format", "jsonl", stdin="high fever but no rash")
    assert result.returncode == 0, result.stderr
    assert [c["text"] for c in records(result.stdout)[0]["chunks"]] == ["high fever", "but no rash"]
    overridden = cli(
        "-", "--config", CONFIG, "--format", "jsonl", "--components.clin_cleaner.spans_key", "alt", stdin="the fever"
    )  # the cleaner alone now writes "alt": the last group a component writes holds the chunks
    assert overridden.returncode == 0, overridden.stderr
    assert [c["text"] for c in records(overridden.stdout)[0]["chunks"]] == ["fever"]
