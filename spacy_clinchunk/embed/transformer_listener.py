"""Reuse an upstream spacy-transformers ``transformer`` in clin_semantic_window.

* ``spacy_clinchunk.TransformerListener.v1`` (misc): an embedder that reads the token
  vectors the ``transformer`` component already wrote to ``doc._.trf_data`` and pools
  them per window. No second model, no second forward pass.
* ``spacy_clinchunk.TransformerModel.v1`` (architectures): spacy-transformers'
  ``TransformerModel.v3`` whose ``name`` may be one of our bundled-model names
  ("all-MiniLM-L6-v2"), resolved to the local copy so the config holds no absolute
  path and nothing is downloaded.

spacy-transformers is an optional extra (``spacy-clinchunk[transformers]``); nothing
here imports it before it is used.
"""
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np
from spacy.language import Language
from spacy.tokens import Doc
from spacy.util import registry

from .embedders import DEFAULT_MODEL, Embedder, EmbedderError, TokenVectors, resolve_model

TRF_DATA = "trf_data"  # spacy-transformers' Doc extension
TRANSFORMER_FACTORY = "transformer"


class TransformerListenerEmbedder(Embedder):
    """Token vectors of an upstream spacy-transformers component, one per spaCy token.

    A spaCy token's vector is the mean of the last hidden states of the wordpieces it
    aligns to (several when strided spans overlap, or a wordpiece spans tokens); tokens
    aligned to no wordpiece (whitespace) have none and are left out of every window.
    """

    reads_docs = True

    def __init__(self, upstream: str = "*") -> None:
        self.upstream = upstream or "*"

    @property
    def name(self) -> str:  # type: ignore[override]
        return f"transformer-listener({self.upstream})"

    def check_pipeline(self, nlp: Optional[Language], component: str) -> None:
        """Fail clearly unless an enabled ``transformer`` runs before ``component``."""
        if nlp is None:
            return
        names = list(nlp.pipe_names)
        before = names[: names.index(component)] if component in names else names
        found = [n for n in before if _is_transformer(nlp, n, self.upstream)]
        if found:
            return
        disabled = [n for n in nlp.disabled if _is_transformer(nlp, n, self.upstream)]
        if disabled:
            raise EmbedderError(
                f"{component}: the transformer component '{disabled[0]}' is disabled; "
                "TransformerListener.v1 reads its output, so enable it"
            )
        wanted = "a 'transformer' component" if self.upstream == "*" else f"the transformer '{self.upstream}'"
        raise EmbedderError(
            f"{component}: spacy_clinchunk.TransformerListener.v1 needs {wanted} (spacy-transformers) "
            f"earlier in the pipeline; the pipeline is {names}"
        )

    def doc_token_vectors(self, doc: Doc) -> TokenVectors:
        """Character offsets ``(n, 2)`` and vectors ``(n, dim)`` of the doc's aligned tokens."""
        data = doc._.get(TRF_DATA) if Doc.has_extension(TRF_DATA) else None
        if data is None:
            raise EmbedderError(
                "doc._.trf_data is not set: the upstream transformer did not run on this document "
                "(is it disabled, or was the doc created outside the pipeline?)"
            )
        offsets = np.asarray([(t.idx, t.idx + len(t)) for t in doc], dtype=np.int64).reshape(-1, 2)
        if len(doc) == 0 or "last_hidden_state" not in data.model_output:
            return offsets[:0], np.zeros((0, 0), dtype=np.float32)
        hidden = _to_numpy(data.model_output.last_hidden_state)
        flat = hidden.reshape(-1, hidden.shape[-1]).astype(np.float32, copy=False)
        lengths = _to_numpy(data.align.lengths).astype(np.int64)
        if len(lengths) != len(doc):
            raise EmbedderError(
                f"doc._.trf_data is aligned to {len(lengths)} tokens but the doc has {len(doc)}: "
                "was the doc retokenized after the transformer ran?"
            )
        index = _to_numpy(data.align.dataXd).astype(np.int64).reshape(-1)
        aligned = lengths > 0
        if not aligned.any():
            return offsets[:0], np.zeros((0, flat.shape[1]), dtype=np.float32)
        starts = (np.cumsum(lengths) - lengths)[aligned]
        sums = np.add.reduceat(flat[index], starts, axis=0)
        vectors = sums / lengths[aligned, None].astype(np.float32)
        return offsets[aligned], vectors.astype(np.float32, copy=False)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        raise EmbedderError("TransformerListener.v1 embeds tokens of whole docs; it cannot encode free text")

    def token_vectors(self, texts: Sequence[str]) -> List[TokenVectors]:
        raise EmbedderError("TransformerListener.v1 reads doc._.trf_data; it cannot encode free text")

    def describe(self) -> Dict[str, Any]:
        return {"name": self.name}

    def save(self, path: Path) -> None:
        """Nothing to save: the upstream transformer saves its own weights."""

    def use_saved(self, path: Path) -> None:
        """Nothing to load (see :meth:`save`)."""


def _is_transformer(nlp: Language, name: str, upstream: str) -> bool:
    if upstream != "*" and name != upstream:
        return False
    meta = nlp.get_pipe_meta(name)
    return meta.factory == TRANSFORMER_FACTORY or meta.factory.endswith("." + TRANSFORMER_FACTORY)


def _to_numpy(array: Any) -> np.ndarray:
    """thinc arrays may live on a GPU (cupy): bring them to the host."""
    get = getattr(array, "get", None)
    return np.asarray(get() if callable(get) and not isinstance(array, np.ndarray) else array)


@registry.misc("spacy_clinchunk.TransformerListener.v1")
def transformer_listener_v1(upstream: str = "*") -> TransformerListenerEmbedder:
    return TransformerListenerEmbedder(upstream=upstream)


@registry.architectures("spacy_clinchunk.TransformerModel.v1")
def transformer_model_v1(
    get_spans: Callable[[List[Doc]], List[List[Any]]],
    name: str = DEFAULT_MODEL,
    tokenizer_config: Optional[Dict[str, Any]] = None,
    transformer_config: Optional[Dict[str, Any]] = None,
    mixed_precision: bool = False,
    grad_scaler_config: Optional[Dict[str, Any]] = None,
) -> Any:
    """spacy-transformers' TransformerModel.v3 on a bundled or local model, offline."""
    try:
        from spacy_transformers.architectures import create_TransformerModel_v3
    except ImportError as err:
        raise EmbedderError(
            "spacy_clinchunk.TransformerModel.v1 needs spacy-transformers: pip install 'spacy-clinchunk[transformers]'"
        ) from err
    return create_TransformerModel_v3(
        name=resolve_model(name),
        get_spans=get_spans,
        tokenizer_config=tokenizer_config or {"use_fast": True},
        transformer_config=transformer_config or {},
        mixed_precision=mixed_precision,
        grad_scaler_config=grad_scaler_config or {},
    )



@registry.architectures("spacy_clinchunk.TransformerTok2Vec.v1")
def transformer_tok2vec_v1(pooling: Any, grad_factor: float = 1.0, upstream: str = "*") -> Any:
    """spacy-transformers' ``TransformerListener.v1`` that also takes a batch of empty docs.

    The upstream listener fails on a batch whose docs are all empty (it concatenates no
    arrays), as ``nlp("")`` sends; here such a batch gets one ``(0, width)`` array per doc
    without calling it. Any other batch, and all of training, goes through unchanged, and the
    weights are the listener's own (``grad_factor`` 1.0 fine-tunes the transformer).
    """
    try:
        from spacy_transformers.architectures import transformer_listener_tok2vec_v1
    except ImportError as err:
        raise EmbedderError(
            "spacy_clinchunk.TransformerTok2Vec.v1 needs spacy-transformers: pip install 'spacy-clinchunk[transformers]'"
        ) from err
    from thinc.api import Model

    inner = transformer_listener_tok2vec_v1(pooling, grad_factor, upstream)
    model = Model("clin_transformer_tok2vec", _empty_safe_forward, layers=[inner], refs={"listener": inner.get_ref("listener")})
    return model


def _empty_safe_forward(model: Any, docs: List[Doc], is_train: bool) -> Any:
    inner = model.layers[0]
    if is_train or any(len(doc) for doc in docs):
        return inner(docs, is_train)
    width = model.get_ref("listener").get_dim("nO")
    return [model.ops.alloc2f(0, width) for _ in docs], lambda d_outputs: []
