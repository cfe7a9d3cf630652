"""``python -m subextract``: the command line."""

import sys

from subextract.cli import main

sys.exit(main())
