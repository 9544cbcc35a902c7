"""``voronoi`` on the file system: killed runs, symlinks, file modes, per-file outcomes, summary counts.
Fixtures are written here; the SIGKILL is a real one, in a real child process."""
import json
import os
import signal
import stat
import subprocess
import sys
import textwrap

import pytest

from conftest import ROOT
from spacy_clinchunk.fileio import atomic_write
from spacy_clinchunk.cli import main

TEXT = "Decreased vibratory sense in the feet. No seizures. Myopia since 2010."


def document(doc_id="n1", extra=()):
    annotations = [
        {"hpo_id": "HP:0002495", "evidence_spans": [{"start_char": 10, "end_char": 25, "text_snippet": "vibratory sense "}]},
        {"hpo_id": "HP:0001250", "evidence_spans": [{"start_char": 42, "end_char": 50, "text_snippet": "seizures"}]},
        *extra,
    ]
    return {"doc_id": doc_id, "full_text": TEXT, "annotations": annotations}


def write(path, data, mode=None):
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    if mode is not None:
        os.chmod(path, mode)
    return path


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_sigkill_during_a_write_leaves_the_file_whole_and_the_next_run_clears_the_temp(tmp_path, capsys):
    path = write(tmp_path / "n1.json", document())
    before = path.read_bytes()
    killer = textwrap.dedent(
        f"""
        import os, signal, sys
        sys.path.insert(0, {str(ROOT)!r})
        os.replace = lambda src, dst: os.kill(os.getpid(), signal.SIGKILL)
        from spacy_clinchunk.cli import main
        main(["voronoi", "--input", {str(path)!r}])
        """
    )
    child = subprocess.run([sys.executable, "-c", killer], capture_output=True, timeout=120)
    assert child.returncode == -signal.SIGKILL
    leftovers = [p.name for p in tmp_path.iterdir() if p.name != "n1.json"]
    assert len(leftovers) == 1 and leftovers[0].startswith(".n1.json.") and leftovers[0].endswith(".clinchunk.tmp")
    assert path.read_bytes() == before  # the kill cost nothing
    (tmp_path / ".n1.json.abcd_123.tmp").write_text("from the earlier mkstemp writer")
    (tmp_path / ".other.json.abcd1234.clinchunk.tmp").write_text("not ours to remove")
    assert main(["voronoi", "--input", str(path)]) == 0
    assert "1 updated" in capsys.readouterr().out.split("; ")[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == [".other.json.abcd1234.clinchunk.tmp", "n1.json"]
    write(path, json.loads(path.read_text()))  # up to date now: a leftover is still cleared, and counted
    (tmp_path / ".n1.json.0123abcd.clinchunk.tmp").write_text("x")
    assert main(["voronoi", "--input", str(path)]) == 0
    assert "1 unchanged" in (out := capsys.readouterr().out) and "1 stale temp file(s) removed" in out
    assert not (tmp_path / ".n1.json.0123abcd.clinchunk.tmp").exists()


def test_symlinked_file_is_written_through_the_link(tmp_path, capsys):
    real = tmp_path / "store"
    real.mkdir()
    target = write(real / "n1.json", document(), mode=0o640)
    links = tmp_path / "links"
    links.mkdir()
    (links / "n1.json").symlink_to(target)
    assert main(["voronoi", "--input-dir", str(links), "--no-progress"]) == 0
    assert (links / "n1.json").is_symlink() and os.readlink(links / "n1.json") == str(target)
    assert "chunk_variants" in json.loads(target.read_text())
    assert mode(target) == 0o640  # rewritten in place: the mode the owner chose is kept
    assert sorted(p.name for p in real.iterdir()) == ["n1.json"] and sorted(p.name for p in links.iterdir()) == ["n1.json"]
    chained = tmp_path / "chain.json"
    chained.symlink_to(links / "n1.json")
    assert main(["voronoi", "--input", str(chained)]) == 0 and "1 unchanged" in capsys.readouterr().out


def test_new_files_are_owner_only_and_modes_are_never_widened(tmp_path):
    old_umask = os.umask(0)
    try:
        fresh = atomic_write(tmp_path / "new.json", "{}")
        assert mode(fresh) == 0o600
        shared = tmp_path / "shared.json"
        shared.write_text("{}")
        os.chmod(shared, 0o644)
        atomic_write(shared, "{}\n")
        assert mode(shared) == 0o644
    finally:
        os.umask(old_umask)


def test_unlocated_near_miss_and_mismatch_are_counted_in_the_summary(tmp_path, capsys):
    unlocated = {"hpo_id": "HP:0000545", "label": "Myopia", "evidence_spans": []}
    wrong = {"hpo_id": "HP:0000001", "evidence_spans": [{"start_char": 52, "end_char": 58, "text_snippet": "Asthma"}]}
    write(tmp_path / "a.json", document("a", [unlocated, wrong]))
    write(tmp_path / "b.json", document("b"))
    assert main(["voronoi", "--input-dir", str(tmp_path), "--no-progress"]) == 0
    captured = capsys.readouterr()
    assert captured.out.strip() == (
        "2 file(s) processed: 2 updated, 0 unchanged, 0 skipped, 0 error(s); 1 unlocated annotation(s) kept, "
        "1 snippet mismatch(es) kept, 2 whitespace/case near-miss(es) accepted"
    )
    assert "a.json: annotation 3: evidence span 0: text does not match the text at 52-58" in captured.err
    assert "Asthma" not in captured.err and "Myopia" not in captured.err  # offsets, never note text
    block = json.loads((tmp_path / "a.json").read_text())["chunk_variants"]["voronoi_v1"]
    assert block["unlocated_annotations"] == [{"hpo_id": "HP:0000545", "label": "Myopia"}]
    assert [c["hpo_id"] for c in block["chunks"]] == ["HP:0002495", "HP:0001250", "HP:0000001"]
    assert main(["voronoi", "--input-dir", str(tmp_path), "--snippet-mismatch", "skip-annotation"]) == 0
    block = json.loads((tmp_path / "a.json").read_text())["chunk_variants"]["voronoi_v1"]
    assert [c["hpo_id"] for c in block["chunks"]] == ["HP:0002495", "HP:0001250"]
    assert main(["voronoi", "--input-dir", str(tmp_path), "--unlocated", "error"]) == 1
    captured = capsys.readouterr()
    assert "1 unchanged" in captured.out and "1 error(s)" in captured.out
    assert "a.json: 1 unlocated annotation(s) (2) and --unlocated error" in captured.err


@pytest.mark.parametrize(
    "raw,message",
    [
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ('{"full_text": "a", "annotations": [], "x": ' + "1" * 6000 + "}", "invalid JSON"),
        ('{"full_text": "a", "annotations": [], "annotations": []}', "duplicate key 'annotations'"),
    ],
)
def test_pathological_json_fails_its_file_and_the_run_goes_on(tmp_path, capsys, raw, message):
    (tmp_path / "bad.json").write_text(raw, encoding="utf-8")
    write(tmp_path / "good.json", document())
    assert main(["voronoi", "--input-dir", str(tmp_path), "--no-progress"]) == 1
    captured = capsys.readouterr()
    assert "2 file(s) processed: 1 updated, 0 unchanged, 0 skipped, 1 error(s)" in captured.out
    assert "bad.json: invalid JSON" in captured.err and message in captured.err
    assert "Traceback" not in captured.err
