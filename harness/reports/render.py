"""Rendering titled tables as text, markdown or HTML: shared by the report and the gate."""

from __future__ import annotations

import pandas as pd


def markdown_table(table: pd.DataFrame) -> str:
    header = ["", *map(str, table.columns)]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for index, row in table.iterrows():
        cells = [str(index), *(str(v) for v in row)]
        lines.append("| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in cells) + " |")
    return "\n".join(lines)


def html_table(table: pd.DataFrame) -> str:
    return table.to_html(escape=True, border=0, classes="t")  # escape: cells may hold model text
