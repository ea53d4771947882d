"""The consoles robusteval prints to: user, model and dataset text comes out exactly as given.

rich reads ``[...]`` as markup and ``:name:`` as an emoji code by default, so an error naming
``robusteval[hub]`` lost its ``[hub]``, a model called ``x[/b]`` crashed the summary, and
``openai:smile`` became an emoji. Every console here has markup, emoji codes and highlighting off;
styling is given explicitly (``rich.text.Text`` with a style, ``style=`` on print), never as markup
inside a string that may carry someone else's text.
"""

from __future__ import annotations

from rich.console import Console
from rich.text import Text


def literal_console(*, stderr: bool = False, width: int | None = None) -> Console:
    """A console that prints strings literally (tables, titles and cells included)."""
    return Console(stderr=stderr, markup=False, emoji=False, highlight=False, soft_wrap=True, width=width)


def styled(label: str, style: str, rest: str = "") -> Text:
    """``label`` in ``style`` followed by ``rest``, both literal: ``styled("error:", "red", " " + message)``."""
    return Text.assemble((label, style), rest)
