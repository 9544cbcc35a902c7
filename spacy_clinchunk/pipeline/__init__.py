"""The pipeline wing: one recipe in, pipeline facts out.

* ``spec``: :class:`PipelineSpec` (what to load and how, built once by the CLI or the API),
  strategy names and paths, ``--code``;
* ``resolve``: :func:`resolve_pipeline`, which parses the config once and answers what the
  pipeline writes (:class:`ResolvedPipeline`); :func:`load_pipeline` for its ``nlp``;
* ``process``: :func:`make_doc` and :func:`process_items`, the one path of a document
  through a pipeline (ids, source, ``max_length``, the error handler).
"""

from .process import ERROR_MARK, InputDoc, make_doc, process_items
from .resolve import ResolvedPipeline, load_pipeline, resolve_pipeline, span_keys_of
from .spec import PipelineError, PipelineSpec, source_path, strategies, strategy_config

__all__ = [
    "ERROR_MARK",
    "InputDoc",
    "PipelineError",
    "PipelineSpec",
    "ResolvedPipeline",
    "load_pipeline",
    "make_doc",
    "process_items",
    "resolve_pipeline",
    "source_path",
    "span_keys_of",
    "strategies",
    "strategy_config",
]
