import sys

from .cli import main

if __name__ == "__main__":  # guarded: spawned worker processes import this module again
    sys.exit(main())
