"""Test double for clin_semantic_window (also loaded by `spacy assemble --code`)."""
import re

import numpy as np
from spacy.util import registry

from spacy_clinchunk.embed.embedders import Embedder

_WORD = re.compile(r"\S+")


class TopicEmbedder(Embedder):
    """Test double: a word's vector is the one-hot of its first letter; a text is the sum.

    Adjacent windows are similar when their words share first letters, so a test can
    place a meaning shift exactly. Counts calls, to check batching and deduplication.
    """

    name = "topic"

    def __init__(self):
        self.calls = []

    @staticmethod
    def _word_vector(word):
        vector = np.zeros(27, dtype=np.float32)
        first = word.lower()[:1]
        vector["abcdefghijklmnopqrstuvwxyz".find(first) + 1 if first.isascii() and first.isalpha() else 0] = 1
        return vector

    def encode(self, texts):
        self.calls.append(list(texts))
        out = np.stack([sum(self._word_vector(w) for w in t.split()) for t in texts]).astype(np.float32)
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    def token_vectors(self, texts):
        self.calls.append(list(texts))
        result = []
        for text in texts:
            words = list(_WORD.finditer(text))
            offsets = np.asarray([(m.start(), m.end()) for m in words], dtype=np.int64).reshape(-1, 2)
            vectors = np.stack([self._word_vector(m.group()) for m in words]) if words else np.zeros((0, 27))
            result.append((offsets, vectors.astype(np.float32)))
        return result


@registry.misc("test.TopicEmbedder.v1")
def topic_embedder_v1(model: str = "", device: str = "", batch_size: int = 0, normalize: bool = True) -> TopicEmbedder:
    return TopicEmbedder()
