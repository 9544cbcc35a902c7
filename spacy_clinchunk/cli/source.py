"""The pipeline a command runs: ``--config`` / ``--strategy`` / ``--lang`` / ``--spans-key`` and
spaCy-style ``--section.key value`` overrides, turned into a pipeline by the one resolver."""
import argparse
import json
from pathlib import Path
from typing import Any, Dict, List, Optional

from . import CLIError


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


def import_code(path: Optional[str]) -> None:
    """Import ``--code`` (spaCy's option of that name) once; any failure is one line."""
    from ..corpus.spec import CorpusError, import_code as import_file

    try:
        import_file(path)
    except CorpusError as err:
        raise CLIError(str(err)) from err
    except Exception as err:  # the user's file: a syntax error, a missing import ...
        raise CLIError(f"cannot import --code {path}: {type(err).__name__}: {err}") from err


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


def pick_source(args: argparse.Namespace, default_strategy: Optional[str]) -> Path:
    """What ``--config`` or ``--strategy`` (else ``default_strategy``) names, as a path."""
    from ..pipeline import PipelineError, strategy_config

    if args.config and args.strategy:
        raise CLIError("give --config or --strategy, not both")
    if args.config:
        return Path(args.config)
    if not (args.strategy or default_strategy):
        raise CLIError("give --config FILE (or --strategy NAME)")
    try:
        return strategy_config(args.strategy or default_strategy)
    except PipelineError as err:
        raise CLIError(str(err)) from err


def resolve(
    args: argparse.Namespace,
    extra: List[str],
    default_strategy: Optional[str],
    stage_settings: Optional[Dict[str, Any]] = None,
):
    """The :class:`~spacy_clinchunk.pipeline.ResolvedPipeline` of :func:`pick_source`;
    ``args.spans_key`` becomes the pipeline's chunks group unless it was given."""
    from ..pipeline import PipelineError, resolve_pipeline

    import_code(getattr(args, "code", None))
    source = pick_source(args, default_strategy)
    overrides = parse_overrides(extra)
    try:
        resolved = resolve_pipeline(source, overrides, lang=args.lang, stage_settings=stage_settings)
    except PipelineError as err:
        raise CLIError(str(err)) from err
    args.spans_key = args.spans_key or resolved.chunks_key
    return resolved
