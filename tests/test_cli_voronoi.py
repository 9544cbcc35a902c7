"""The ``voronoi`` augment CLI, always on copies of the shared files in a tmp dir."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import GSC_DIR, ROOT, requires_shared_data
from spacy_clinchunk.cli import main
from spacy_clinchunk.cli import voronoi as voronoi_cli

pytestmark = requires_shared_data()
SAMPLE = ["GSC_plus_1003450.json", "GSC_plus_10051003.json", "GSC_plus_3740720.json"]


@pytest.fixture
def corpus(tmp_path):
    folder = tmp_path / "corpus"
    folder.mkdir()
    for name in SAMPLE:
        shutil.copy(GSC_DIR / name, folder / name)
    return folder


def snapshot(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_augments_all_228_shared_files_and_reruns_byte_identical(tmp_path, capsys):
    folder = tmp_path / "all"
    shutil.copytree(GSC_DIR, folder)
    originals = snapshot(folder)
    assert main(["voronoi", "--input-dir", str(folder), "--pattern", "*.json", "--no-progress"]) == 0
    summary = capsys.readouterr().out.strip().splitlines()[-1]
    assert summary.startswith("228 file(s) processed: 228 updated, 0 unchanged, 0 skipped, 0 error(s)")
    first = snapshot(folder)
    for name, raw in originals.items():
        before, after = json.loads(raw), json.loads(first[name])
        assert list(after) == [*before, "chunk_variants"]  # key order kept, field appended
        assert {k: v for k, v in after.items() if k != "chunk_variants"} == before
        block = after["chunk_variants"]["voronoi_v1"]
        assert len(block["chunks"]) >= len(before["annotations"])
        text = before["full_text"]
        for chunk in block["chunks"]:
            for variant in chunk["variants"].values():
                assert variant["text"] == text[slice(*variant["span"])]
        assert first[name].endswith(b"\n") and first[name].startswith(raw[:40])
    assert main(["voronoi", "--input-dir", str(folder), "--pattern", "*.json"]) == 0
    assert "0 updated, 228 unchanged" in capsys.readouterr().out
    assert snapshot(folder) == first  # generated_at kept when nothing changed


def test_single_file_output_format_and_parameter_change(corpus, capsys):
    path = corpus / SAMPLE[0]
    assert main(["voronoi", "--input", str(path)]) == 0
    data = json.loads(path.read_text(encoding="utf-8"))
    block = data["chunk_variants"]["voronoi_v1"]
    provenance = block["provenance"]
    assert provenance["parameters"]["expansion_ratios"] == [0.0, 0.5, 1.0]
    assert provenance["generated_at"].endswith("Z") and provenance["script_version"]
    assert block["chunks"][0]["variants"]["0.00"] == {"text": "brachydactyly", "span": [14, 27]}
    # new ratios replace the block in place (same key position), others stay untouched
    data["chunk_variants"]["other_strategy"] = {"keep": True}
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    assert main(["voronoi", "--input", str(path), "--expansion-ratios", "0", "0.25", "0.5", "0.75", "1"]) == 0
    after = json.loads(path.read_text(encoding="utf-8"))
    assert list(after["chunk_variants"]) == ["voronoi_v1", "other_strategy"]
    assert list(after["chunk_variants"]["voronoi_v1"]["chunks"][0]["variants"]) == ["0.00", "0.25", "0.50", "0.75", "1.00"]
    assert "1 updated" in capsys.readouterr().out


def test_dry_run_writes_nothing_and_says_what_would_change(corpus, capsys):
    before = snapshot(corpus)
    assert main(["voronoi", "--input-dir", str(corpus), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert snapshot(corpus) == before
    assert out.count("would add chunk_variants.voronoi_v1") == 3
    assert "3 would update" in out


def test_overlap_policies_and_failures_give_summary_and_exit_code(corpus, capsys):
    assert main(["voronoi", "--input-dir", str(corpus), "--on-overlap", "skip"]) == 0
    captured = capsys.readouterr()
    assert "1 updated, 0 unchanged, 2 skipped (overlap: 2), 0 error(s)" in captured.out
    assert "Overlapping annotations detected: annotation 2 overlaps with annotation 3" in captured.err
    fresh = corpus.parent / "fresh"
    shutil.copytree(GSC_DIR, fresh, ignore=lambda d, names: [n for n in names if n not in SAMPLE])
    assert main(["voronoi", "--input-dir", str(fresh), "--on-overlap", "error"]) == 1
    assert "2 error(s)" in capsys.readouterr().out
    (corpus / "broken.json").write_text('{"full_text": "x", "annotations": [', encoding="utf-8")
    (corpus / "other.json").write_text('{"unrelated": 1}', encoding="utf-8")
    assert main(["voronoi", "--input-dir", str(corpus)]) == 1
    captured = capsys.readouterr()
    assert "broken.json: invalid JSON" in captured.err
    assert "1 skipped (not an annotated document: 1)" in captured.out and "1 error(s)" in captured.out
    assert main(["voronoi", "--input-dir", str(corpus), "--expansion-ratios", "1.5"]) == 2
    assert main(["voronoi", "--input-dir", str(corpus), "--pattern", "*.nothing"]) == 2


def test_interrupted_write_leaves_the_file_intact(corpus, monkeypatch):
    path = corpus / SAMPLE[1]
    before = path.read_bytes()

    def interrupted(src, dst):
        raise KeyboardInterrupt

    monkeypatch.setattr(voronoi_cli.os, "replace", interrupted)
    assert main(["voronoi", "--input", str(path)]) == 130
    assert path.read_bytes() == before
    assert sorted(p.name for p in corpus.iterdir()) == sorted(SAMPLE)  # no temp file left behind


def test_module_entry_point_in_a_subprocess(corpus):
    path = corpus / SAMPLE[1]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    command = [sys.executable, "-m", "spacy_clinchunk", "voronoi", "--input", str(path)]
    first = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    assert first.returncode == 0 and first.stderr == "", first.stderr  # nothing but our own lines
    written = path.read_bytes()
    assert "1 updated" in first.stdout
    assert main(["voronoi", "--input", str(path)]) == 0  # same parameters in-process: unchanged
    assert path.read_bytes() == written
