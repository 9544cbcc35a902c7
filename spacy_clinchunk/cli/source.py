"""The pipeline a command runs: ``--config`` / ``--strategy`` / ``--lang`` / ``--spans-key`` /
``--code`` and spaCy-style ``--section.key value`` overrides, built once into a
:class:`~spacy_clinchunk.pipeline.PipelineSpec` and turned into a pipeline by the one resolver."""
import argparse
import json
from typing import Any, Dict, List, Optional

from . import CLIError

# the strategy every command runs when given neither --config nor --strategy
DEFAULT_STRATEGY = "default"


def add_source_arguments(parser: argparse.ArgumentParser, strategy_help: str, spans_key_help: str) -> None:
    parser.add_argument("--config", "-c", default=None, help="config file or saved pipeline directory")
    parser.add_argument("--strategy", default=None, help=strategy_help)
    parser.add_argument(
        "--lang",
        default=None,
        help="en, de, es, fr, nl or auto: a code sets the pipeline language and forces it on assertion; "
        "auto detects each document's language for assertion (what the shipped configs do); default: the config's",
    )
    parser.add_argument("--spans-key", default=None, help=spans_key_help)
    parser.add_argument(
        "--code", default=None, help="Python file with custom components, imported before the pipeline loads "
        "(and in every worker of a corpus run)"
    )


def add_encoding_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--encoding", default="utf-8",
        help="text encoding of the input notes (default utf-8; older exports are often latin-1 or cp1252)",
    )


def encoding_of(args: argparse.Namespace) -> str:
    """``--encoding`` checked against Python's codecs: an unknown name is one line."""
    import codecs

    try:
        return codecs.lookup(args.encoding).name
    except LookupError as err:
        raise CLIError(f"--encoding {args.encoding!r} is no known text encoding (e.g. utf-8, latin-1, cp1252)") from err


def parse_overrides(extra: List[str]) -> Dict[str, Any]:
    """``--a.b value`` / ``--a.b=value`` / ``--a.b`` (true) into ``{"a.b": value}``.

    A value is read as JSON when it parses (``0``, ``true``, ``["x"]``, ``null``), else kept
    as a string, as spaCy's own CLI does.
    """
    overrides: Dict[str, Any] = {}
    rest = list(extra)
    while rest:
        token = rest.pop(0)
        if not token.startswith("--"):
            raise CLIError(f"unexpected argument '{token}' (config overrides look like --section.key value)")
        name, has_value, value = token[2:].partition("=")
        if "." not in name or name.startswith(".") or name.endswith(".") or " " in name:
            raise CLIError(f"unknown option or bad config override '{token}' (overrides look like --section.key value)")
        if not has_value:
            value = rest.pop(0) if rest and not rest[0].startswith("--") else "true"
        overrides[name] = _value(value)
    return overrides


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def pipeline_spec(
    args: argparse.Namespace,
    extra: List[str],
    default_strategy: Optional[str] = DEFAULT_STRATEGY,
    stage_settings: Optional[Dict[str, Any]] = None,
):
    """The :class:`~spacy_clinchunk.pipeline.PipelineSpec` of a command, built once from its
    options: ``--config`` or ``--strategy`` (else ``default_strategy``), the ``--section.key``
    overrides, ``--lang``, ``--code``, ``--max-length`` and ``--spans-key``."""
    from ..pipeline import PipelineSpec

    if args.config and args.strategy:
        raise CLIError("give --config or --strategy, not both")
    source = args.config or args.strategy or default_strategy
    if not source:
        raise CLIError("give --config FILE (or --strategy NAME)")
    return PipelineSpec.of(
        source,
        overrides=parse_overrides(extra),
        lang=args.lang,
        stage_settings=stage_settings or None,
        code=getattr(args, "code", None),
        max_length=getattr(args, "max_length", None),
        spans_key=args.spans_key,
    )


def resolve(spec):
    """The :class:`~spacy_clinchunk.pipeline.ResolvedPipeline` of ``spec``; errors are one line."""
    from ..pipeline import PipelineError, resolve_pipeline

    try:
        return resolve_pipeline(spec)
    except PipelineError as err:
        message = str(err)
        if spec.spans_key and message.startswith("spans key '"):
            message = "--" + message.replace(" ", "-", 1)  # name the flag the user gave
        raise CLIError(message) from err
