"""``python -m robusteval``: the same as the ``robusteval`` command (where no script is on PATH:
a venv not activated, a checkout run with PYTHONPATH)."""

import sys

from robusteval.cli import main

sys.exit(main())
