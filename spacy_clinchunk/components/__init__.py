"""Components: every spaCy factory of the package (one module each), their shared base and settings."""

# clin_size_ceiling is part of every shipped clause-chunking config; importing it here registers
# it (and its token counters) wherever another clin_ factory is loaded, also in an environment
# whose installed entry points predate it.
from . import size_ceiling  # noqa: E402,F401
