"""``python -m spacy_clinchunk chunk`` end to end: in-process, and one run on a real terminal in a subprocess."""
import ast
import fcntl
import json
import os
import pty
import re
import stat
import struct
import subprocess
import sys
import termios

import pytest
import spacy

from cli_helpers import run_cli
from conftest import CONFIG_DIR, EXAMPLE_NOTE, ROOT, pipeline_config
from spacy_clinchunk.pipeline import load_pipeline as load_nlp
from spacy_clinchunk.pipeline import strategies

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
        "-", "--config", CONFIG, "--format", "jsonl", "--components.clin_cleaner.spans_key", "alt",
        "--components.clin_size_ceiling.spans_key", "alt", stdin="the fever",
    )  # the cleaner and the ceiling now write "alt": the last group a component writes holds the chunks
    assert overridden.returncode == 0, overridden.stderr
    assert [c["text"] for c in records(overridden.stdout)[0]["chunks"]] == ["fever"]


# -- what the table shows, one test per strategy ----------------------------------------------
SHORT = "HISTORY: The patient denies fever or chills. Her mother had breast cancer.\n"
CHUNK_LINE = re.compile(r"""^ *(\d+)-(\d+) +('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")(.*)$""")
# factories whose output the table shows, and the mark each leaves on it
MARKS = {"clin_context_assertion": "status", "clin_focus": "focus", "clin_llm_context": "context"}


def table(stdout):
    """``[(start, end, text, tail, [indented lines])]`` of a printed table; the header line apart."""
    lines = stdout.splitlines()
    assert lines[0].startswith("# stdin: "), stdout
    rows = []
    for line in lines[1:]:
        match = CHUNK_LINE.match(line)
        if match and not line.startswith(" " * 16):
            rows.append((int(match[1]), int(match[2]), ast.literal_eval(match[3]), match[4], []))
        else:
            assert line.startswith(" " * 16) and rows, line
            rows[-1][4].append(line.strip())
    return lines[0], rows


def _factories(strategy):
    from spacy_clinchunk.pipeline import strategy_config

    path = strategy_config(strategy)
    config = spacy.util.load_config(path / "config.cfg" if path.is_dir() else path)
    return {name: block.get("factory") for name, block in config["components"].items()}


def _llm_overrides(factories, server):
    return [
        arg
        for name, factory in factories.items()
        if factory == "clin_llm_context"
        for arg in (f"--components.{name}.model.base_url", server.url, f"--components.{name}.model.backoff", "0.01")
    ]


def _needs(factories):
    """The skip reason of a strategy this venv cannot run, else None."""
    import importlib.util

    if "transformer" in factories.values() and importlib.util.find_spec("spacy_transformers") is None:
        return "needs spacy-transformers (make test-transformers)"
    return None


@pytest.mark.parametrize("strategy", strategies())
def test_the_table_shows_what_each_strategy_wrote(strategy, module_server):
    factories = _factories(strategy)
    if _needs(factories):
        pytest.skip(_needs(factories))
    result = cli("-", "--strategy", strategy, *_llm_overrides(factories, module_server), stdin=SHORT)
    assert result.returncode == 0, result.stderr
    header, rows = table(result.stdout)
    assert rows and header.startswith(f"# stdin: {len(rows)} chunks")
    marks = {mark for factory, mark in MARKS.items() if factory in factories.values()}
    for start, end, text, tail, under in rows:
        assert SHORT[start:end] == text  # offsets into the note, text as written
        assert ("[" in tail) == ("status" in marks), (strategy, tail)
        assert any(x.startswith("context: ") for x in under) == ("context" in marks)
        for line in under:
            assert line.startswith(("context: ", "focus ")), line
            if line.startswith("focus "):
                fs, fe, ftext = CHUNK_LINE.match(line[len("focus ") :]).group(1, 2, 3)
                assert start <= int(fs) < int(fe) <= end and SHORT[int(fs) : int(fe)] == ast.literal_eval(ftext)
    assert ("focus spans" in header) == ("focus" in marks)
    if "focus" in marks:
        assert any(x.startswith("focus ") for *_, under in rows for x in under)
    expected = EXPECTED_TABLES.get(strategy)
    if expected is not None:
        assert [(text, tail.strip()) for _, _, text, tail, _ in rows] == expected


EXPECTED_TABLES = {
    "simple": [("HISTORY: The patient denies fever or chills.", ""), ("Her mother had breast cancer.", "")],
    "punct_conj_cleaned": [("HISTORY", ""), ("patient denies fever", ""), ("chills", ""), ("mother had breast cancer", "")],
    # "HISTORY:" heads the history of the present illness (a header, no cue: issue 40's section table)
    "assertion": [
        ("HISTORY", "[affirmed]"),
        ("patient denies fever", "[negated] cues: 'denies'  section=history_of_present_illness"),
        ("chills", "[negated] cues: 'denies'  section=history_of_present_illness"),
        ("mother had breast cancer", "[family] cues: 'Her mother'  section=history_of_present_illness"),
    ],
}


def test_the_flagship_chain_shows_status_cues_and_focus_under_each_chunk(tmp_path):
    nlp = load_nlp("assertion")
    nlp.add_pipe("clin_focus")
    nlp.config.to_disk(tmp_path / "flagship.cfg")
    result = cli("-", "--config", tmp_path / "flagship.cfg", stdin=SHORT)
    assert result.returncode == 0, result.stderr
    header, rows = table(result.stdout)
    fever = next(r for r in rows if r[2] == "patient denies fever")
    assert fever[3].strip() == "[negated] cues: 'denies'  section=history_of_present_illness"
    assert [line.split(None, 2)[-1] for line in fever[4]] == ["'fever'"]  # the finding, without its framing
    assert "focus spans" in header


def test_jsonl_chunks_carry_their_stable_ids_and_a_spans_key_not_written_is_one_line():
    result = cli("-", "--strategy", "assertion", "--format", "jsonl", stdin=SHORT)
    assert result.returncode == 0, result.stderr
    chunks = records(result.stdout)[0]["chunks"]
    assert [c["id"] for c in chunks] == [f"stdin:{c['start']}-{c['end']}" for c in chunks]
    refused = cli("-", "--strategy", "assertion", "--spans-key", "clin_focus", stdin=SHORT)
    assert refused.returncode != 0 and refused.stdout == ""
    assert refused.stderr == "error: --spans-key 'clin_focus': the pipeline writes no such group (it writes clin_chunks, clin_sections)\n"


def test_index_focus_records_carry_their_chunk_id(tmp_path):
    result = cli("-", "--strategy", "retrieval", "--format", "records", "--index", "focus", stdin=SHORT)
    assert result.returncode == 0, result.stderr
    focus = records(result.stdout)
    chunks = records(cli("-", "--strategy", "retrieval", "--format", "records", stdin=SHORT).stdout)
    by_id = {c["id"]: c for c in chunks}
    assert focus and all(r["spans_key"] == "clin_focus" for r in focus)
    for record in focus:
        parent = by_id[record["parent_id"]]
        assert {"start": record["start"], "end": record["end"], "text": record["text"]} in parent["focus"]
    wrong = cli("-", "--strategy", "punct_conj_cleaned", "--format", "records", "--index", "focus", stdin=SHORT)
    assert wrong.returncode != 0 and wrong.stderr.count("\n") == 1 and "clin_focus" in wrong.stderr
    table_too = cli("-", "--strategy", "retrieval", "--index", "focus", stdin=SHORT)
    assert table_too.returncode != 0 and table_too.stderr.startswith("error: --index goes with --format")


# -- the light install: the default runs without torch ----------------------------------------
NO_TORCH = """
import importlib.abc, sys

class NoTorch(importlib.abc.MetaPathFinder):  # as in a venv of `make run`: torch is not there
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "torch":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NoTorch())
import spacy  # thinc imports torch when it is installed; here it finds none
from spacy_clinchunk.cli import main
code = main(["chunk", sys.argv[1], *sys.argv[2:]])
assert not [m for m in sys.modules if m.split(".")[0] == "torch"], "torch imported"
sys.exit(code)
"""


@pytest.mark.parametrize("source", ["default", "flagship chain"])
def test_the_default_loads_and_runs_without_torch(source, tmp_path):
    if source == "default":
        if "clin_semantic_window" in _factories("default").values():
            pytest.skip("configs/default.cfg is still the semantic window (needs torch) until the new flagship lands")
        args = ["--strategy", "default"]
    else:  # the flagship's chain from existing factories (what the new default builds on)
        nlp = load_nlp("assertion")
        nlp.add_pipe("clin_focus")
        nlp.config.to_disk(tmp_path / "flagship.cfg")
        args = ["--config", str(tmp_path / "flagship.cfg")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run(
        [sys.executable, "-c", NO_TORCH, str(EXAMPLE_NOTE), *args], capture_output=True, text=True, env=env, cwd=ROOT
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.startswith("# discharge_summary_en: ") and "  [negated] cues: " in result.stdout


# -- issue 28: --code, --encoding, missing groups, no output on failure ------------------------
CODE = '''
from spacy.language import Language


@Language.component("test_first_chunk_only")
def test_first_chunk_only(doc):
    doc.spans["clin_chunks"] = list(doc.spans["clin_chunks"])[:1]
    return doc
'''
CODE_CONFIG = pipeline_config("clin_conj_splitter", "test_first_chunk_only")


@pytest.fixture
def custom(tmp_path):
    (tmp_path / "first_chunk_code.py").write_text(CODE, encoding="utf-8")
    (tmp_path / "custom.cfg").write_text(CODE_CONFIG, encoding="utf-8")
    return tmp_path / "first_chunk_code.py", tmp_path / "custom.cfg"


def test_code_loads_custom_components_in_a_single_run(custom, tmp_path):
    code, config = custom
    result = cli("-", "--config", config, "--code", code, "--format", "jsonl", stdin="high fever but no rash")
    assert result.returncode == 0, result.stderr
    assert [c["text"] for c in records(result.stdout)[0]["chunks"]] == ["high fever"]  # the custom component ran
    page = tmp_path / "view.html"
    shown = run_cli("view", "-", "--config", config, "--code", code, "-o", page, stdin="high fever but no rash")
    assert shown.returncode == 0, shown.stderr
    assert page.read_text(encoding="utf-8").count('class="chunk ') == 1
    missing = cli("-", "--config", config, "--code", tmp_path / "nope.py", stdin="fever")
    assert missing.returncode == 2 and missing.stderr == f"error: code file not found: {tmp_path / 'nope.py'}\n"
    scored = run_cli("evaluate", "--config", config, "--code", tmp_path / "nope.py", "--data", tmp_path)
    assert scored.returncode == 2 and "code file not found" in scored.stderr  # evaluate reads --code too
    corpus_only = cli("-", "--config", config, "--workers", "2", stdin="fever")
    assert corpus_only.stderr == "error: --workers needs --engine local|ray (a corpus run)\n"


def test_encoding_reads_latin1_and_the_error_names_the_usual_ones(tmp_path):
    note = tmp_path / "old.txt"
    note.write_bytes("Fièvre et toux.".encode("latin-1"))
    refused = cli(note, "--config", CONFIG, "--format", "jsonl")
    assert refused.returncode == 1 and refused.stdout == ""
    first = refused.stderr.splitlines()[0]
    assert "not valid UTF-8" in first and "--encoding latin-1" in first and "cp1252" in first
    for encoding in ("latin-1", "cp1252"):
        result = cli(note, "--config", CONFIG, "--format", "jsonl", "--encoding", encoding)
        assert result.returncode == 0, result.stderr
        assert records(result.stdout)[0]["chunks"][0]["text"].startswith("Fièvre")
    jsonl = tmp_path / "old.jsonl"
    jsonl.write_bytes(json.dumps({"id": "j", "text": "Fièvre"}, ensure_ascii=False).encode("cp1252") + b"\n")
    assert "cp1252" in cli(jsonl, "--config", CONFIG).stderr
    assert records(cli(jsonl, "--config", CONFIG, "--format", "jsonl", "--encoding", "cp1252").stdout)[0]["id"] == "j"
    bad = cli(note, "--config", CONFIG, "--encoding", "klingon")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "'klingon'" in bad.stderr


def test_a_spans_key_the_pipeline_never_writes_is_one_error_in_every_mode(tmp_path):
    """A host pipeline whose components declare no groups: the group is looked for on the doc."""
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.config.to_disk(tmp_path / "host.cfg")
    for extra in ([], ["--format", "jsonl"], ["--format", "records"]):
        result = cli("-", "--config", tmp_path / "host.cfg", "--spans-key", "nosuch", *extra, stdin="Fever. Cough.")
        assert result.returncode == 2 and result.stdout == "", (extra, result.stdout)
        assert result.stderr.count("\n") == 1 and "'nosuch'" in result.stderr, result.stderr
    corpus = tmp_path / "in"
    corpus.mkdir()
    (corpus / "a.txt").write_text(SHORT, encoding="utf-8")
    run = cli(corpus, "--strategy", "assertion", "--spans-key", "nosuch", "--engine", "local", "--output", tmp_path / "out")
    assert run.returncode == 2 and run.stderr == (
        "error: spans key 'nosuch': the pipeline writes no such group (it writes clin_chunks, clin_sections)\n"
    )


@pytest.mark.parametrize("fmt, name", [("jsonl", "out.jsonl"), ("table", "out.txt"), ("records", "out.jsonl"),
                                       ("parquet", "out.parquet")])
def test_a_failed_run_leaves_no_output_and_keeps_the_old_one(fmt, name, tmp_path):
    if fmt == "parquet":
        pytest.importorskip("pyarrow")
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"\xff\xfe broken")
    target = tmp_path / "new" / name
    failed = cli(bad, "--config", CONFIG, "--format", fmt, "--output", target)
    assert failed.returncode == 1 and "nothing written" in failed.stderr
    assert not target.exists() and not list(target.parent.iterdir())  # no empty file, no temp left
    target.write_text("the previous run", encoding="utf-8")
    assert cli(bad, "--config", CONFIG, "--format", fmt, "--output", target).returncode == 1
    assert target.read_text(encoding="utf-8") == "the previous run"
    good = tmp_path / "good.txt"
    good.write_text(SEED, encoding="utf-8")
    done = cli(good, bad, "--config", CONFIG, "--format", fmt, "--output", target)
    assert done.returncode == 1  # one document failed, the other is written
    assert target.stat().st_size > 0 and stat.S_IMODE(target.stat().st_mode) == 0o600
    assert sorted(p.name for p in target.parent.iterdir()) == [name]
