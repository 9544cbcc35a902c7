"""The error of corpus runs."""


class CorpusError(ValueError):
    """A corpus run cannot start or cannot go on (bad input, output, engine or pipeline)."""
