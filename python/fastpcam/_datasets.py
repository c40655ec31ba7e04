"""Data sets shipped inside the package (see ``fastpcam/data/README.md``)."""

from __future__ import annotations

import csv
import gzip
import io
from dataclasses import dataclass
from importlib import resources
from typing import Any, Iterator

import numpy as np
import numpy.typing as npt

__all__ = ["Dataset", "load_houses"]

_HOUSES_FILE = "houses.tsv.gz"
_HOUSES_TARGET = "target"


@dataclass(frozen=True)
class Dataset:
    """A small Bunch-like container that also unpacks as ``X, y, feature_names = ds``.

    Attributes
    ----------
    data : ndarray of shape (n_samples, n_features) or pandas.DataFrame
        The features (a DataFrame when loaded with ``as_frame=True``).
    target : ndarray of shape (n_samples,) or pandas.Series
        The target.
    feature_names : list of str
        The feature column names, in column order.
    frame : pandas.DataFrame or None
        Features and target in one DataFrame when loaded with ``as_frame=True``, else None.
    """

    data: Any
    target: Any
    feature_names: list[str]
    frame: Any = None

    def __iter__(self) -> Iterator[Any]:
        return iter((self.data, self.target, self.feature_names))


def _read_shipped_tsv(filename: str) -> tuple[list[str], npt.NDArray[np.float64]]:
    """Read a gzipped, tab-separated numeric table from ``fastpcam/data``."""
    raw = resources.files("fastpcam").joinpath("data").joinpath(filename).read_bytes()
    with gzip.open(io.BytesIO(raw), "rt", encoding="utf-8", newline="") as f:
        reader = csv.reader(f, delimiter="\t")
        header = next(reader)
        rows = [row for row in reader if row]
    table = np.array(rows, dtype=np.float64)  # each cell goes through float()
    return header, table


def load_houses(as_frame: bool = False) -> Dataset:
    """Load the California housing data (Pace & Barry 1997; PMLB ``537_houses``).

    20,640 rows and 8 numeric features (``median_income``, ``housing_median_age``,
    ``total_rooms``, ``total_bedrooms``, ``population``, ``households``, ``latitude``,
    ``longitude``); the target is the median house value in USD. The data ship inside the
    package, so nothing is downloaded.

    Parameters
    ----------
    as_frame : bool, default=False
        If True, return pandas objects (``data`` a DataFrame, ``target`` a Series, and
        ``frame`` both together). Needs pandas: ``pip install fastpcam[pandas]``.

    Returns
    -------
    Dataset
        ``data``, ``target``, ``feature_names`` (and ``frame`` with ``as_frame=True``);
        it unpacks as ``X, y, feature_names = load_houses()``.

    Examples
    --------
    >>> from fastpcam._datasets import load_houses
    >>> X, y, names = load_houses()
    >>> X.shape, y.shape, names[0]
    ((20640, 8), (20640,), 'median_income')
    """
    header, table = _read_shipped_tsv(_HOUSES_FILE)
    t = header.index(_HOUSES_TARGET)
    feature_names = [name for j, name in enumerate(header) if j != t]
    X = np.ascontiguousarray(np.delete(table, t, axis=1))
    y = np.ascontiguousarray(table[:, t])
    if not as_frame:
        return Dataset(data=X, target=y, feature_names=feature_names)
    try:
        import pandas as pd
    except ImportError as exc:
        raise ImportError(
            "load_houses(as_frame=True) needs pandas; install it with "
            "`pip install fastpcam[pandas]` (the `pandas` extra), or use as_frame=False"
        ) from exc
    data = pd.DataFrame(X, columns=feature_names)
    target = pd.Series(y, name=_HOUSES_TARGET)
    frame = pd.concat([data, target], axis=1)
    return Dataset(data=data, target=target, feature_names=feature_names, frame=frame)
