"""Corpus runs: sharded, resumable, disk-to-disk chunking of many documents.

Modules, one job each (imports only go down this list, so there is no cycle):

* ``errors``: ``CorpusError``;
* ``shards``: shard planning (sub-shards of big JSONL files) and reading;
* ``output``: shard/error files (atomic, owner-only), output formats, the manifest;
* ``worker``: the worker every engine runs: the pipeline resolved once from the run's
  :class:`~spacy_clinchunk.pipeline.PipelineSpec`, shard in, file out;
* ``local``: the driver alone, or a pool of spawned processes;
* ``ray_engine``: a pool of Ray actors;
* ``run``: :func:`run_corpus`, which plans, skips finished shards and dispatches.
"""
from .output import FORMATS, CorpusOutput, OutputSpec
from .ray_engine import RayOptions
from .run import ENGINES, CorpusOptions, CorpusRun, Progress, run_corpus
from .shards import DEFAULT_SHARD_SIZE, DEFAULT_SPLIT_BYTES, Shard, plan_shards, read_shard
from .errors import CorpusError

__all__ = [
    "CorpusError",
    "CorpusOptions",
    "CorpusOutput",
    "CorpusRun",
    "DEFAULT_SHARD_SIZE",
    "DEFAULT_SPLIT_BYTES",
    "ENGINES",
    "FORMATS",
    "OutputSpec",
    "Progress",
    "RayOptions",
    "Shard",
    "plan_shards",
    "read_shard",
    "run_corpus",
]
