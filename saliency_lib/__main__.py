"""Run the command line as ``python -m saliency_lib``, the same as ``saliency-study``."""

import sys

from .cli import main

sys.exit(main())
