"""The consoles robusteval prints to: user, model and dataset text comes out exactly as given.

rich reads ``[...]`` as markup and ``:name:`` as an emoji code by default, so an error naming
``robusteval[hub]`` lost its ``[hub]``, a model called ``x[/b]`` crashed the summary, and
``openai:smile`` became an emoji. Every console here has markup, emoji codes and highlighting off;
styling is given explicitly (``rich.text.Text`` with a style, ``style=`` on print), never as markup
inside a string that may carry someone else's text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.console import Console, ConsoleOptions, RenderResult
from rich.table import Table as RichTable
from rich.text import Text

if TYPE_CHECKING:  # report.model imports report.table, which imports this module
    from robusteval.report.model import TableData


def literal_console(*, stderr: bool = False, width: int | None = None) -> Console:
    """A console that prints strings literally (tables, titles and cells included)."""
    return Console(stderr=stderr, markup=False, emoji=False, highlight=False, soft_wrap=True, width=width)


def styled(label: str, style: str, rest: str = "") -> Text:
    """``label`` in ``style`` followed by ``rest``, both literal: ``styled("error:", "red", " " + message)``."""
    return Text.assemble((label, style), rest)


class Table(RichTable):
    """A rich table that fits the terminal without cutting a number short.

    rich squeezes a table wider than the terminal by cutting cells with an ellipsis, so on an
    80-column terminal "accuracy" became "accura…" and "0.250" "0.2…". This table, when it is
    drawn, gives every column at least the width of its longest number, lets words wrap or fold
    instead of being cut, and, when even the numbers do not fit side by side, draws itself
    transposed: one block per row, a line per column (`transposed`)."""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = options.max_width
        if not self.columns or self.__rich_measure__(console, options).maximum <= width:
            yield from super().__rich_console__(console, options)
            return
        if _min_width(self) > width:
            yield transposed(self)
            return
        for column, w in zip(self.columns, _fitted_widths(self, width)):
            column.overflow, column.width = "fold", w
        yield from super().__rich_console__(console, options)


def _cell_text(cell: Any) -> str:
    return cell.plain if isinstance(cell, Text) else str(cell)


def _number_widths(table: RichTable) -> list[int]:
    """Per column, the length of its longest token that holds a digit (a number, "[0.566,")."""
    return [max((len(token) for cell in column.cells for token in _cell_text(cell).split()
                 if any(ch.isdigit() for ch in token)), default=0) for column in table.columns]


def _min_width(table: RichTable) -> int:
    """The narrowest the table can be drawn with every number whole (a column without numbers
    can fold down to 4 characters): the widths, plus padding and borders."""
    return sum(max(n, 4) for n in _number_widths(table)) + 3 * len(table.columns) + 1


def _fitted_widths(table: RichTable, width: int) -> list[int]:
    """Column widths that add up to ``width`` (with padding and borders): each column first gets
    its longest number (4 at least), then what its longest word needs (the cheapest first, so that
    as many words as possible stay whole), then the room left goes, a character at a time, to the
    column whose text is cut most (a header or label that then wraps on fewer lines)."""
    widths = [max(n, 4) for n in _number_widths(table)]
    natural = [max((len(line) for cell in (column.header, *column.cells) for line in _cell_text(cell).splitlines()),
                   default=0) for column in table.columns]
    words = [max((len(word) for cell in (column.header, *column.cells) for word in _cell_text(cell).split()),
                 default=0) for column in table.columns]
    spare = width - 3 * len(widths) - 1 - sum(widths)
    for i in sorted(range(len(widths)), key=lambda i: words[i] - widths[i]):  # whole words first, cheapest first
        grow = min(max(0, words[i] - widths[i]), spare)
        widths[i] += grow
        spare -= grow
    while spare > 0:
        short = max(range(len(widths)), key=lambda i: natural[i] - widths[i])
        if natural[short] <= widths[short]:
            break
        widths[short] += 1
        spare -= 1
    return widths


def transposed(table: RichTable) -> RichTable:
    """``table`` as blocks: for each row, a line per column ("header  value"), rows divided by a line."""
    out = RichTable(title=table.title, title_justify=table.title_justify, show_header=False, box=table.box)
    out.add_column(overflow="fold")
    out.add_column(overflow="fold")
    headers = [_cell_text(c.header) for c in table.columns]
    rows = list(zip(*(c.cells for c in table.columns))) if table.columns else []
    for i, row in enumerate(rows):
        for j, (header, cell) in enumerate(zip(headers, row)):
            out.add_row(Text(header or ("row" if j == 0 else ""), style="bold"), cell,
                        end_section=j == len(headers) - 1 and i < len(rows) - 1)
    return out


def print_table_data(console: Console, data: TableData) -> None:
    """A report table (`report.model.TableData`: title, columns, rows of text) in the terminal, as
    the report shows it; every cell literal."""
    table = Table(title=Text(data.title), title_justify="left")
    for column in data.columns:
        table.add_column(column)
    for row in data.rows:
        table.add_row(*(Text(cell) for cell in row))
    console.print(table)
