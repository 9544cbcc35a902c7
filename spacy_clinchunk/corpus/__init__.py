"""Corpus runs: sharded, resumable, disk-to-disk chunking of many documents.

Modules, one job each (imports only go down this list, so there is no cycle):

* ``spec``: the pipeline recipe workers rebuild (:class:`PipelineSpec`), ``CorpusError``;
* ``processing``: per-document processing and error handling (also used by the CLI);
* ``shards``: shard planning (sub-shards of big JSONL files) and reading;
* ``output``: shard/error files (atomic, owner-only), output formats, the manifest;
* ``worker``: the worker every engine runs: pipeline loaded once, shard in, file out;
* ``local``: the driver alone, or a pool of spawned processes;
* ``ray_engine``: a pool of Ray actors;
* ``run``: :func:`run_corpus`, which plans, skips finished shards and dispatches.
"""
from .output import FORMATS, CorpusOutput, OutputSpec, record_line
from .processing import ERROR_MARK, make_doc, process_items
from .ray_engine import RayOptions
from .run import ENGINES, CorpusOptions, CorpusRun, Progress, run_corpus
from .shards import DEFAULT_SHARD_SIZE, DEFAULT_SPLIT_BYTES, Shard, plan_shards, read_shard
from .spec import CorpusError, PipelineSpec, import_code, load_spec

__all__ = [
    "CorpusError",
    "CorpusOptions",
    "CorpusOutput",
    "CorpusRun",
    "DEFAULT_SHARD_SIZE",
    "DEFAULT_SPLIT_BYTES",
    "ENGINES",
    "ERROR_MARK",
    "FORMATS",
    "OutputSpec",
    "PipelineSpec",
    "Progress",
    "RayOptions",
    "Shard",
    "import_code",
    "load_spec",
    "make_doc",
    "plan_shards",
    "process_items",
    "read_shard",
    "record_line",
    "run_corpus",
]
