"""``python -m harnessweb``: the ``harness`` command line (``harnessweb/cli.py``)."""

import sys

from harnessweb.cli import main

sys.exit(main())
