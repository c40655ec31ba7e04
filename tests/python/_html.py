"""Read an HTML report as a person sees it, whatever the bytes plotly writes.

plotly may write a non-ASCII character of a figure's JSON as itself or as a ``\\uXXXX``
escape (plotly 7 escapes ``×``), and the page may write it as an entity: tests look for
text in what these decode to, never in the raw bytes.
"""

from __future__ import annotations

import html
import json
import re


def plotly_figures(doc):
    """The figures' JSON specs embedded in the page (``Plotly.newPlot(id, data, layout, ...)``)."""
    return re.findall(r'Plotly\.newPlot\(\s*"[^"]+",\s*(\[.*?\]),\s*(\{.*?\}),\s*\{', doc, flags=re.S)


def strings_of(node):
    """Every string in a decoded JSON value (dicts, lists), depth first."""
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for value in node.values():
            yield from strings_of(value)
    elif isinstance(node, list):
        for value in node:
            yield from strings_of(value)


def report_text(doc):
    """The page's text with entities decoded, and every string of every figure, decoded."""
    parts = [html.unescape(doc)]
    for data, layout in plotly_figures(doc):
        parts.extend(strings_of(json.loads(data)))
        parts.extend(strings_of(json.loads(layout)))
    return "\n".join(parts)
