"""The ``voronoi`` augment CLI, always on copies in a tmp dir of the shipped sample (and of the
shared corpus, when present)."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import GSC_DIR, ROOT, SAMPLE_JSON, requires_shared_data
from spacy_clinchunk.cli import main
from spacy_clinchunk.cli import voronoi as voronoi_cli

# the genetics letter has overlapping annotations (2 and 3: "generalized hypotonia", "hypotonia")
FILES = ["case_report_cholestasis.json", "discharge_cardiology.json", "genetics_clinic_letter.json"]


@pytest.fixture
def corpus(tmp_path):
    folder = tmp_path / "corpus"
    folder.mkdir()
    for name in FILES:
        shutil.copy(SAMPLE_JSON / name, folder / name)
    return folder


def snapshot(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("source,files", [
    pytest.param(SAMPLE_JSON, 4, id="sample"),
    pytest.param(GSC_DIR, 228, id="shared", marks=requires_shared_data()),
])
def test_augments_every_file_and_reruns_byte_identical(tmp_path, capsys, source, files):
    folder = tmp_path / "all"
    shutil.copytree(source, folder)
    originals = snapshot(folder)
    assert main(["voronoi", "--input-dir", str(folder), "--pattern", "*.json", "--no-progress"]) == 0
    summary = capsys.readouterr().out.strip().splitlines()[-1]
    assert summary.startswith(f"{files} file(s) processed: {files} updated, 0 unchanged, 0 skipped, 0 error(s)")
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
    assert f"0 updated, {files} unchanged" in capsys.readouterr().out
    assert snapshot(folder) == first  # generated_at kept when nothing changed


def test_single_file_output_format_and_parameter_change(corpus, capsys):
    path = corpus / FILES[0]
    assert main(["voronoi", "--input", str(path)]) == 0
    data = json.loads(path.read_text(encoding="utf-8"))
    block = data["chunk_variants"]["voronoi_v1"]
    provenance = block["provenance"]
    assert provenance["parameters"]["expansion_ratios"] == [0.0, 0.5, 1.0]
    assert provenance["generated_at"].endswith("Z") and provenance["script_version"]
    assert block["chunks"][0]["variants"]["0.00"] == {"text": "pruritus", "span": [76, 84]}
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
    assert "2 updated, 0 unchanged, 1 skipped (overlap: 1), 0 error(s)" in captured.out
    assert "Overlapping annotations detected: annotation 2 overlaps with annotation 3" in captured.err
    fresh = corpus.parent / "fresh"
    shutil.copytree(SAMPLE_JSON, fresh, ignore=lambda d, names: [n for n in names if n not in FILES])
    assert main(["voronoi", "--input-dir", str(fresh), "--on-overlap", "error"]) == 1
    assert "1 error(s)" in capsys.readouterr().out
    (corpus / "broken.json").write_text('{"full_text": "x", "annotations": [', encoding="utf-8")
    (corpus / "other.json").write_text('{"unrelated": 1}', encoding="utf-8")
    assert main(["voronoi", "--input-dir", str(corpus)]) == 1
    captured = capsys.readouterr()
    assert "broken.json: invalid JSON" in captured.err
    assert "1 skipped (not an annotated document: 1)" in captured.out and "1 error(s)" in captured.out
    assert main(["voronoi", "--input-dir", str(corpus), "--expansion-ratios", "1.5"]) == 2
    assert main(["voronoi", "--input-dir", str(corpus), "--pattern", "*.nothing"]) == 2


def test_interrupted_write_leaves_the_file_intact(corpus, monkeypatch):
    path = corpus / FILES[1]
    before = path.read_bytes()

    def interrupted(src, dst):
        raise KeyboardInterrupt

    monkeypatch.setattr(voronoi_cli.os, "replace", interrupted)
    assert main(["voronoi", "--input", str(path)]) == 130
    assert path.read_bytes() == before
    assert sorted(p.name for p in corpus.iterdir()) == sorted(FILES)  # no temp file left behind


def test_module_entry_point_in_a_subprocess(corpus):
    path = corpus / FILES[1]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    command = [sys.executable, "-m", "spacy_clinchunk", "voronoi", "--input", str(path)]
    first = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    assert first.returncode == 0 and first.stderr == "", first.stderr  # nothing but our own lines
    written = path.read_bytes()
    assert "1 updated" in first.stdout
    assert main(["voronoi", "--input", str(path)]) == 0  # same parameters in-process: unchanged
    assert path.read_bytes() == written
