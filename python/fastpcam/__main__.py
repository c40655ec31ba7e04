"""``python -m fastpcam``: the command line (see :mod:`fastpcam._cli`)."""

import sys

from fastpcam._cli import main

if __name__ == "__main__":
    sys.exit(main())
