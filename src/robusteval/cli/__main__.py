"""``python -m robusteval.cli``: the same as the ``robusteval`` command."""

import sys

from robusteval.cli import main

sys.exit(main())
