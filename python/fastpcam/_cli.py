"""The ``fastpcam`` command line: ``demo``, ``fit``, ``predict`` and ``report``.

``fit`` reads a CSV file and fits a regressor or a classifier (binary, or softmax for three
or more classes). ``--task auto`` (the default) chooses classification when the target column
holds text (``yes``/``no``, ``low``/``mid``/``high``, ...; any number of classes) or exactly
two distinct numbers, and regression for any other numeric target (a numeric target with more
values, e.g. a count or a 0-10 score, needs ``--task classification`` to be read as classes); the choice and its reason go to stderr. Feature columns holding numbers are
numeric features, columns holding text are categorical features (as a pandas object column
is for the estimators), ``--categorical`` makes any column categorical, and an empty cell or
``NA``, ``N/A``, ``NaN``, ``nan``, ``NULL``, ``null`` is a missing value (in a categorical
column, the category ``None`` where training had missing values). ``predict`` encodes
the columns as the saved model did at fit time and writes the predictions (class labels for a
classifier; ``--proba`` adds one probability column per class). ``report`` writes a saved
model's self-contained HTML report (``model.to_html``).

``-o -`` (``--out -``) writes the model (``fit``), the predictions (``predict``) or the report
(``report``) to standard output, and the messages that would go there to stderr.

Bad input (a missing file or column, a non-numeric or corrupt (e.g. gzipped) file, a bad
option value, an incompatible model file) prints ``fastpcam: error: <message>`` to stderr and exits with
status 2; no traceback.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import io
import math
import os
import sys
import time
import warnings
import zlib
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO, Any, Callable, Iterator, Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["main"]

PROG = "fastpcam"
TASKS = ("auto", "regression", "classification")
#: Cells read as a missing value (a NaN for the estimators).
MISSING_TOKENS = frozenset({"", "NA", "N/A", "NaN", "nan", "NULL", "null"})


class CLIError(Exception):
    """Bad input from the user: reported as ``fastpcam: error: ...``, exit status 2."""


# ----------------------------------------------------------------------------- CSV input


def _open_text(path: str) -> IO[str]:
    """Open a (possibly gzipped) text file; ``-`` is standard input."""
    if path == "-":
        return io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8-sig", newline="")
    if path.endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8-sig", newline="")
    return open(path, encoding="utf-8-sig", newline="")


def _delimiter(sep: str) -> str:
    sep = {"\\t": "\t", "tab": "\t", "TAB": "\t"}.get(sep, sep)
    if len(sep) != 1:
        raise CLIError(f"--sep must be a single character (or '\\t'), got {sep!r}")
    return sep


def _read_table(path: str, sep: str) -> tuple[list[str], list[list[str]]]:
    """Header and data rows of a delimited text file, with ragged rows rejected."""
    try:
        with _open_text(path) as f:
            reader = csv.reader(f, delimiter=_delimiter(sep))
            header = next(reader, None)
            if header is None:
                raise CLIError(f"{path} is empty: expected a header row")
            header = [name.strip() for name in header]
            seen: set[str] = set()
            for name in header:
                if name in seen:
                    raise CLIError(f"{path}: column {name!r} appears more than once in the header")
                seen.add(name)
            rows: list[list[str]] = []
            for row in reader:
                if not row or (len(row) == 1 and not row[0].strip()):
                    continue  # blank line
                if len(row) != len(header):
                    raise CLIError(
                        f"{path}, line {reader.line_num}: {len(row)} fields, but the header has {len(header)} "
                        f"(is --sep {sep!r} right?)"
                    )
                rows.append(row)
    except (UnicodeDecodeError, csv.Error, gzip.BadGzipFile, EOFError, zlib.error) as exc:
        # zlib.error: a gzip header followed by a corrupt body
        raise CLIError(f"cannot read {path} as delimited text: {exc}") from None
    if not rows:
        raise CLIError(f"{path} has a header but no data rows")
    return header, rows


def _line(i: int) -> int:
    """File line of data row ``i``: the header is line 1 (exact unless a quoted cell spans lines)."""
    return i + 2


@dataclass
class _Column:
    """One CSV column, scanned once: its numbers (NaN where missing) and its first text cell."""

    path: str
    name: str
    cells: list[str]
    values: npt.NDArray[np.float64]  # NaN for missing and for text cells
    n_numbers: int  # cells holding a finite number
    first_text: int  # row of the first cell that is neither missing nor a number, or -1
    first_nonfinite: int  # row of the first "inf"-like cell, or -1

    @classmethod
    def scan(cls, path: str, name: str, cells: list[str]) -> "_Column":
        n = len(cells)
        try:  # fast path: every cell a finite number
            values = np.array(cells, dtype=np.float64)
            if np.all(np.isfinite(values)):
                return cls(path, name, cells, values, n, -1, -1)
        except ValueError:
            pass
        values = np.full(n, np.nan)
        n_numbers, first_text, first_nonfinite = 0, -1, -1
        for i, cell in enumerate(cells):
            text = cell.strip()
            if text in MISSING_TOKENS:
                continue
            try:
                value = float(text)
            except ValueError:
                if first_text < 0:
                    first_text = i
                continue
            if math.isfinite(value):
                values[i] = value
                n_numbers += 1
            elif first_nonfinite < 0:
                first_nonfinite = i
        return cls(path, name, cells, values, n_numbers, first_text, first_nonfinite)

    @property
    def is_text(self) -> bool:
        """Text cells and no numbers: a categorical column."""
        return self.first_text >= 0 and self.n_numbers == 0

    def where(self, i: int) -> str:
        return f"{self.path}: column {self.name!r}, line {_line(i)}"

    def numbers(self, *, missing_ok: bool, hint: str = "") -> npt.NDArray[np.float64]:
        """The column as float64 (NaN = missing), or a CLIError naming the first bad cell."""
        if self.first_text >= 0:
            cell = self.cells[self.first_text]
            raise CLIError(f"{self.where(self.first_text)}: {cell!r} is not a number{hint}")
        if self.first_nonfinite >= 0:
            cell = self.cells[self.first_nonfinite]
            raise CLIError(
                f"{self.where(self.first_nonfinite)}: {cell!r} is not a finite number "
                "(leave the cell empty or write NA for a missing value)"
            )
        if not missing_ok:
            missing = np.flatnonzero(np.isnan(self.values))
            if missing.size:
                raise CLIError(f"{self.where(int(missing[0]))}: empty cell (missing values are not supported here)")
        return self.values

    def labels(self) -> npt.NDArray[Any]:
        """The column as text labels (object array, None where missing)."""
        out = np.empty(len(self.cells), dtype=object)
        out[:] = [None if c.strip() in MISSING_TOKENS else c.strip() for c in self.cells]
        return out


def _pandas(column: _Column) -> Any:
    """pandas, which categorical columns need, or an error naming the column that needs it."""
    try:
        import pandas as pd
    except ImportError:
        if column.first_text >= 0:
            why = f"holds text (line {_line(column.first_text)}: {column.cells[column.first_text]!r})"
        else:
            why = "is categorical"
        raise CLIError(
            f"{column.path}: column {column.name!r} {why}; reading it as a categorical feature needs "
            "pandas (pip install pandas)"
        ) from None
    return pd


def _table_columns(path: str, header: list[str], rows: list[list[str]], names: Sequence[str]) -> list[_Column]:
    index = {name: j for j, name in enumerate(header)}
    return [_Column.scan(path, name, [row[index[name]] for row in rows]) for name in names]


def _feature_matrix(columns: Sequence[_Column], categorical: Sequence[bool]) -> Any:
    """A float matrix when every feature is numeric, else a pandas DataFrame whose categorical
    columns are object columns of labels (what the estimators read as categories)."""
    if not any(categorical):
        X = np.empty((len(columns[0].cells), len(columns)), dtype=np.float64)
        for k, col in enumerate(columns):
            X[:, k] = col.numbers(missing_ok=True)
        return X
    pd = _pandas(next(c for c, is_cat in zip(columns, categorical) if is_cat))
    data = {}
    for col, is_cat in zip(columns, categorical):
        if is_cat:
            data[col.name] = pd.Series(col.labels(), dtype=object)
        else:
            data[col.name] = col.numbers(
                missing_ok=True,
                hint=f" (the column mixes numbers and text; --categorical {col.name} reads it as categories)",
            )
    return pd.DataFrame(data, columns=[c.name for c in columns])


def read_training_csv(
    path: str, target: str, sep: str = ",", categorical: Sequence[str] = ()
) -> tuple[Any, _Column, list[str]]:
    """``X, target column, feature_names`` from a CSV: every column but ``target`` is a feature.

    ``X`` is a float matrix, or a pandas DataFrame when a column is categorical (it holds
    text, or is named in ``categorical``)."""
    header, rows = _read_table(path, sep)
    if target not in header:
        raise CLIError(f"{path}: target column {target!r} not found; the columns are {', '.join(map(repr, header))}")
    features = [name for name in header if name != target]
    if not features:
        raise CLIError(f"{path}: no feature columns besides the target {target!r}")
    for name in categorical:
        if name == target:
            raise CLIError(f"--categorical names the target column {target!r}; it must name feature columns")
        if name not in header:
            raise CLIError(
                f"--categorical names column {name!r}, which {path} does not have; "
                f"the columns are {', '.join(map(repr, header))}"
            )
    y = _Column.scan(path, target, [row[header.index(target)] for row in rows])
    columns = _table_columns(path, header, rows, features)
    is_cat = [c.name in categorical or c.is_text for c in columns]
    hint = " (the column mixes numbers and text; --categorical {} reads it as categories)"
    for col, cat in zip(columns, is_cat):
        if not cat:
            col.numbers(missing_ok=True, hint=hint.format(col.name))  # fail early, naming the cell
    return _feature_matrix(columns, is_cat), y, features


def _category_lookup(categories: Any) -> dict[str, Any]:
    """The model's categories by their text in a CSV cell."""
    lookup: dict[str, Any] = {}
    for c in categories:
        if c is None:  # the missing values' category: an empty cell, not the text "None"
            continue
        lookup.setdefault(str(c), c)
        if isinstance(c, (float, np.floating)) and float(c).is_integer():
            lookup.setdefault(str(int(c)), c)
    return lookup


def read_feature_csv(
    path: str, feature_names: Sequence[str], sep: str = ",", categories: Sequence[Any] | None = None
) -> Any:
    """The model's feature columns from a CSV, matched by name; other columns are ignored.

    ``categories[j]`` (the model's ``categories_``) is None for a numeric feature, else the
    categories of feature ``j``: its cells are matched to them as text, as ``fit`` read them.
    Categories the model has not seen are reported on stderr (they contribute 0)."""
    header, rows = _read_table(path, sep)
    missing = [name for name in feature_names if name not in header]
    if missing:
        raise CLIError(
            f"{path}: missing column{'s' if len(missing) > 1 else ''} {', '.join(map(repr, missing))} "
            f"that the model needs; the file has {', '.join(map(repr, header))}"
        )
    columns = _table_columns(path, header, rows, feature_names)
    cats = list(categories) if categories is not None else [None] * len(columns)
    is_cat = [c is not None for c in cats]
    for col, c in zip(columns, cats):
        if c is None:
            col.numbers(missing_ok=True, hint=" (the model's feature is numeric)")
    X = _feature_matrix(columns, is_cat)
    for col, c in zip(columns, cats):
        if c is None:
            continue
        lookup = _category_lookup(c)
        labels = X[col.name].to_numpy(dtype=object)
        unseen = sorted({v for v in labels if v is not None and v not in lookup})
        X[col.name] = X[col.name].map(lambda v: lookup.get(v, v) if v is not None else None).astype(object)
        if unseen:
            shown = ", ".join(map(repr, unseen[:5])) + (", ..." if len(unseen) > 5 else "")
            print(
                f"{PROG}: warning: {path}: column {col.name!r} has {len(unseen)} "
                f"categor{'y' if len(unseen) == 1 else 'ies'} the model has not seen ({shown}); "
                "they contribute 0",
                file=sys.stderr,
            )
    return X


# ------------------------------------------------------------------------------- the task


@dataclass
class _Target:
    task: str  # "regression" or "classification"
    y: npt.NDArray[Any]  # float64 for regression; class labels for classification
    reason: str


def _class_labels(y: _Column) -> npt.NDArray[Any]:
    """Class labels as written: integers for integer-valued numbers, else floats or text."""
    if y.first_text < 0 and y.first_nonfinite < 0:
        values = y.numbers(missing_ok=False)
        if np.all(values == np.round(values)) and np.all(np.abs(values) < 2**53):
            return values.astype(np.int64)
        return values
    return y.labels()


def _shown(labels: Any) -> str:
    return ", ".join(repr(v.item() if hasattr(v, "item") else v) for v in labels)


def choose_task(y: _Column, task: str) -> _Target:
    """The task for a target column: ``task`` itself, or for ``"auto"`` classification when
    the column holds text or exactly two distinct numbers, else regression."""
    if task not in TASKS:
        raise CLIError(f"--task must be one of {', '.join(TASKS)}, got {task!r}")
    empty = [i for i, cell in enumerate(y.cells) if cell.strip() in MISSING_TOKENS]
    if empty:
        raise CLIError(f"{y.where(empty[0])}: empty target cell (every row needs a target value)")
    numeric = y.first_text < 0
    if task == "regression" or (task == "auto" and numeric):
        values = y.numbers(missing_ok=False, hint=" (a regression target must be numeric)")
        distinct = np.unique(values)
        if task == "regression" or len(distinct) != 2:
            how = "--task regression" if task == "regression" else f"numeric with {len(distinct)} distinct values"
            return _Target("regression", values, f"target {y.name!r}: {how}")
    labels = _class_labels(y)
    classes = np.unique(labels.astype(str) if labels.dtype == object else labels)
    if len(classes) < 2:
        raise CLIError(
            f"{y.path}: target column {y.name!r} has {len(classes)} distinct value"
            f"{'' if len(classes) == 1 else 's'}; classification needs at least two classes"
        )
    how = "--task classification" if task == "classification" else (
        "two distinct numbers; --task regression fits a regressor instead" if numeric else "text")
    which = f"positive class {_shown(classes[1:])}" if len(classes) == 2 else f"{len(classes)} classes (softmax)"
    return _Target("classification", labels, f"target {y.name!r}: {how}; classes {_shown(classes)}, {which}")


# ------------------------------------------------------------------------------ helpers


def _estimator_classes() -> dict[str, Any]:
    from fastpcam import FASTClassifier, FASTRegressor

    return {"regression": FASTRegressor, "classification": FASTClassifier}


def _default(name: str) -> str:
    """An option's default as the estimators define it (never restated here)."""
    regressor, classifier = (cls().get_params()[name] for cls in _estimator_classes().values())
    if regressor == classifier:
        return repr(regressor)
    return f"{regressor!r} for regression, {classifier!r} for classification"


def _integer(text: str, low: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < low:
        raise argparse.ArgumentTypeError(f"must be >= {low}, got {value}")
    return value


def _pos_int(text: str) -> int:
    return _integer(text, 1)


def _max_bins(text: str) -> int | str | None:
    word = text.strip().lower()
    if word == "auto":
        return "auto"
    if word in {"none", "exact"}:
        return None
    if not word.lstrip("+-").isdigit():
        raise argparse.ArgumentTypeError(f"expected an integer >= 2, 'auto' or 'exact', got {text!r}")
    return _integer(word, 2)


def _nonneg_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"must be finite and >= 0, got {text}")
    return value


def _ratio(text: str) -> float | str:
    return "auto" if text.lower() == "auto" else _nonneg_float(text)


def _interactions(text: str) -> int | str:
    if text.lower() == "auto":
        return "auto"
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected 'auto' or a number of pairs, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return value


#: Estimator parameters the fit options set; an option not given keeps the estimator's default.
_FIT_PARAMS = ("lambda_f", "lambda_ratio", "max_bins", "tol", "max_iter", "interactions")


def _estimator(args: argparse.Namespace, task: str, **extra: Any) -> Any:
    params = {name: getattr(args, name) for name in _FIT_PARAMS if hasattr(args, name)}
    return _estimator_classes()[task](**params, **extra)


@contextmanager
def _reported_warnings() -> Iterator[None]:
    """Turn warnings raised inside the block into one ``fastpcam: warning:`` line each."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    seen: set[str] = set()
    for w in caught:
        message = str(w.message)
        if message not in seen:
            seen.add(message)
            print(f"{PROG}: warning: {message}", file=sys.stderr)


def _timed_fit(est: Any, X: Any, y: npt.NDArray[Any]) -> float:
    with _reported_warnings():
        t0 = time.perf_counter()
        est.fit(X, y)
        return time.perf_counter() - t0


def _mse(est: Any, X: Any, y: npt.NDArray[np.float64]) -> float:
    return float(np.mean((est.predict(X) - y) ** 2))


def _train_scores(est: Any, X: Any, y: npt.NDArray[Any], task: str) -> str:
    loss = getattr(est, "loss", "squared_error")
    if task == "regression" and loss != "squared_error":
        from sklearn.metrics import mean_gamma_deviance, mean_poisson_deviance, mean_tweedie_deviance

        mu = est.predict(X)
        deviance = {"poisson": mean_poisson_deviance, "gamma": mean_gamma_deviance}.get(
            loss, lambda a, b: mean_tweedie_deviance(a, b, power=est.power)
        )(y, mu)
        return f"train mean {loss} deviance = {deviance:.6g}"
    if task == "regression":
        return f"train MSE = {_mse(est, X, y):.6g}"
    proba = est.predict_proba(X)
    if proba.shape[1] == 2:
        p = np.clip(proba[:, 1], 1e-15, 1 - 1e-15)
        positive = y == est.classes_[1]
        log_loss = -float(np.mean(np.where(positive, np.log(p), np.log1p(-p))))
    else:
        own = proba[np.arange(len(y)), np.searchsorted(est.classes_, y)]
        log_loss = -float(np.mean(np.log(np.clip(own, 1e-15, 1.0))))
    accuracy = float(np.mean(est.predict(X) == y))
    return f"train log-loss = {log_loss:.6g}, accuracy = {accuracy:.4f}"


def _fit_report(est: Any) -> str:
    report = (
        f"n_iter_ = {est.n_iter_}, converged_ = {bool(est.converged_)}, "
        f"KKT residual = {float(est.kkt_residual_):.3g}, lambda_f_ = {float(est.lambda_f_):.6g}"
    )
    n_held = int(getattr(est, "n_validation_", 0))
    if n_held:
        path = est.validation_path_
        report += (
            f"\n  lambda_ratio_ = {float(est.lambda_ratio_):.3g}, chosen on {n_held} held-out rows "
            f"among {len(path['lambda_ratio'])} ratios ({int(path['n_iter'].sum())} block updates)"
        )
    return report


def _label_text(v: Any) -> str:
    """A class label or prediction as CSV text; floats with ``repr`` (exact round trip)."""
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v))
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        return repr(float(v))
    return str(v)


def _to_stdout(out: str | None) -> bool:
    """Whether ``--out`` names standard output (``-``, as ``-`` is standard input)."""
    return out == "-"


def _write_text(text: str, out: str) -> None:
    """``text`` to the file ``out``, or to standard output for ``-``."""
    if _to_stdout(out):
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        with open(out, "w", encoding="utf-8") as f:
            f.write(text)


def _write_csv(rows: Iterator[list[str]], out: str | None, what: str, n: int) -> None:
    if out and not _to_stdout(out):
        with open(out, "w", encoding="utf-8", newline="") as f:
            csv.writer(f, lineterminator="\n").writerows(rows)
        print(f"{n} {what} written to {out}", file=sys.stderr)
    else:
        csv.writer(sys.stdout, lineterminator="\n").writerows(rows)


# ----------------------------------------------------------------------------- commands


def _cmd_demo(args: argparse.Namespace) -> int:
    from sklearn.model_selection import train_test_split

    from fastpcam._datasets import load_houses
    from fastpcam._serialize import save_model
    from fastpcam._text import format_shape_functions

    if _to_stdout(args.out):
        raise CLIError("demo --out -: the demo prints its report to standard output; give --out a file name")
    X, y, names = load_houses()
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, random_state=args.seed)
    mean, std = float(y_train.mean()), float(y_train.std())
    y_train, y_test = (y_train - mean) / std, (y_test - mean) / std
    est = _estimator(args, "regression", random_state=args.seed)
    print(
        f"California housing (Pace & Barry 1997; PMLB 537_houses): {X.shape[0]} rows x {X.shape[1]} features\n"
        f"80/20 split (random_state={args.seed}): train {X_train.shape[0]}, test {X_test.shape[0]}; "
        "y standardised on the training part"
    )
    seconds = _timed_fit(est, X_train, y_train)
    print(f"{est!r} fitted in {seconds:.3f} s")
    print(f"  {_fit_report(est)}")
    print(f"  train MSE = {_mse(est, X_train, y_train):.5f}, test MSE = {_mse(est, X_test, y_test):.5f}")
    print()
    print(format_shape_functions(est, feature_names=names, max_segments=args.max_segments))
    if args.pairs:
        _demo_pairs(est, (X_train, y_train, X_test, y_test), names)
    if args.out:
        save_model(est, args.out, feature_names=names)
        print(f"\nmodel saved to {args.out} (shape functions on the standardised y scale)")
    if args.plot is not None:
        _save_demo_plot(est, names, args.plot)
    return 0


def _demo_pairs(fitted: Any, data: tuple[Any, Any, Any, Any], features: Sequence[str]) -> None:
    """Show the strongest pair of the model, against the same model without pair terms (the
    model that was not fitted yet: the additive one for ``interactions="auto"``, the model
    with ``interactions="auto"`` for an additive fit)."""
    from sklearn.base import clone

    X_train, y_train, X_test, y_test = data
    if isinstance(fitted.interactions, int) and fitted.interactions == 0:
        est, additive = clone(fitted).set_params(interactions="auto"), fitted
        seconds = _timed_fit(est, X_train, y_train)
        fitted_now = f"fitted in {seconds:.3f} s, "
    else:
        est, additive = fitted, clone(fitted).set_params(interactions=0)
        seconds = _timed_fit(additive, X_train, y_train)
        fitted_now = f"the additive model (interactions=0) fitted in {seconds:.3f} s, "
    p = est.n_features_in_
    names = list(features) + [f"{features[j]} & {features[k]}" for j, k in est.interaction_features_]
    importance = est.term_importances()
    order = [p + int(t) for t in np.argsort(-importance[p:])]
    print(
        f"\nWith pair terms (interactions={est.interactions!r}): {len(order)} pairs, {fitted_now}"
        f"test MSE = {_mse(est, X_test, y_test):.5f} (additive {_mse(additive, X_test, y_test):.5f})"
    )
    if not order:
        return
    t = order[0] - p
    values = est.interaction_values_[t]
    print(
        f"  strongest pair: {names[order[0]]} (importance {importance[order[0]]:.4f}; main effects "
        f"{', '.join(f'{names[j]} {importance[j]:.4f}' for j in est.interaction_features_[t])}), "
        f"a {values.shape[0]} x {values.shape[1]} table from {values.min():.3f} to {values.max():.3f}"
    )
    rest = ", ".join(f"{names[k]} {importance[k]:.4f}" for k in order[1:4])
    if rest:
        print(f"  next: {rest}")


def _save_demo_plot(est: Any, names: Sequence[str], path: str) -> None:
    """Save the demo's shape functions as an image, or say why not (matplotlib missing)."""
    try:
        import matplotlib
    except ImportError:
        print(
            "\nplot skipped: matplotlib is not installed (pip install 'fastpcam[plot]' for the `plot` extra)"
        )
        return
    if "matplotlib.pyplot" not in sys.modules:
        matplotlib.use("Agg")  # no window: the figure only goes to a file
    import matplotlib.pyplot as plt

    from fastpcam.plot import shape_functions

    fig = shape_functions(est, ncols=4, feature_names=names,
                          title="California housing: shape functions (y standardised)")
    try:
        fig.savefig(path, dpi=110)
    finally:
        plt.close(fig)
    print(f"\nshape functions plotted to {path}")


def _categorical_option(values: Sequence[str] | None) -> list[str]:
    """``--categorical a,b --categorical c`` as ``["a", "b", "c"]``."""
    return [name.strip() for value in values or () for name in value.split(",") if name.strip()]


def _per_column(values: Sequence[str] | None, names: Sequence[str], option: str, parse: Callable[[str], Any]) -> Any:
    """``--monotone a=+1,b=-1 --monotone c=1`` as ``{index of a: 1, ...}`` (None if not given)."""
    if not values:
        return None
    out: dict[int, Any] = {}
    for value in values:
        for item in value.split(","):
            if not item.strip():
                continue
            name, sep, text = item.strip().rpartition("=")
            if not sep or not name:
                raise CLIError(f"{option} expects COLUMN=VALUE items separated by commas, got {item.strip()!r}")
            if name not in names:
                raise CLIError(f"{option}: {name!r} is not a feature column (features: {', '.join(names)})")
            try:
                out[list(names).index(name)] = parse(text)
            except (argparse.ArgumentTypeError, ValueError) as exc:
                raise CLIError(f"{option}: {name}={text}: {exc}") from None
    return out


def _direction(text: str) -> int:
    if text.strip() not in ("1", "+1", "0", "-1"):
        raise ValueError("expected +1 (nondecreasing), -1 (nonincreasing) or 0 (free)")
    return int(text)


def _cmd_fit(args: argparse.Namespace) -> int:
    from fastpcam._serialize import dumps, model_to_dict

    X, y_column, names = read_training_csv(args.data, args.target, args.sep, _categorical_option(args.categorical))
    loss = getattr(args, "loss", "squared_error")
    if loss != "squared_error" and args.task == "classification":
        raise CLIError(f"--loss {loss} is a regression loss; it cannot be used with --task classification")
    target = choose_task(y_column, "regression" if loss != "squared_error" else args.task)
    print(f"{PROG}: task: {target.task} ({target.reason})", file=sys.stderr)
    shapes = {
        "monotonic_cst": _per_column(args.monotone, names, "--monotone", _direction),
        "penalty_factor": _per_column(args.penalty_factor, names, "--penalty-factor", _nonneg_float),
    }
    extra = {k: v for k, v in shapes.items() if v is not None}
    if target.task == "regression":
        extra.update({k: getattr(args, k) for k in ("loss", "power") if hasattr(args, k)})
    est = _estimator(args, target.task, **extra)
    seconds = _timed_fit(est, X, target.y)
    _write_text(dumps(model_to_dict(est, feature_names=names)), args.out)
    info = sys.stderr if _to_stdout(args.out) else sys.stdout  # `-o -`: stdout holds the model alone
    categorical = [str(c) for c in getattr(X, "columns", []) if X[c].dtype == object]
    print(
        f"{args.data}: {X.shape[0]} rows, {X.shape[1]} feature{'' if X.shape[1] == 1 else 's'}"
        + (f" ({len(categorical)} categorical: {', '.join(categorical)})" if categorical else "")
        + f", target {args.target!r}, {target.task}",
        file=info,
    )
    print(f"fitted {type(est).__name__} in {seconds:.3f} s: {_fit_report(est)}", file=info)
    print(_train_scores(est, X, target.y, target.task), file=info)
    print(f"model saved to {'standard output' if _to_stdout(args.out) else args.out}", file=info)
    return 0


def _cmd_predict(args: argparse.Namespace) -> int:
    from sklearn.base import is_classifier

    from fastpcam._serialize import load_model

    est = load_model(args.model)
    classifier = is_classifier(est)
    if args.proba and not classifier:
        raise CLIError(f"--proba needs a classification model, but {args.model} holds a {type(est).__name__}")
    names_in = getattr(est, "feature_names_in_", None)
    names = [f"x{j}" for j in range(est.n_features_in_)] if names_in is None else [str(n) for n in names_in]
    categories = getattr(est, "categories_", None)
    if categories is not None and all(c is None for c in categories):
        categories = None
    X = read_feature_csv(args.data, names, args.sep, categories)
    with warnings.catch_warnings():
        # the columns were matched to the model's features by name above
        warnings.filterwarnings("ignore", message="X does not have valid feature names")
        warnings.filterwarnings("ignore", message="X has feature names, but")
        pred = est.predict(X)
        proba = est.predict_proba(X) if args.proba else None
    header = ["prediction"]
    if proba is not None:
        header += [f"proba_{_label_text(c)}" for c in est.classes_]

    def rows() -> Iterator[list[str]]:
        yield header
        for i, p in enumerate(pred):
            row = [_label_text(p) if classifier else repr(float(p))]
            if proba is not None:
                row += [repr(float(q)) for q in proba[i]]
            yield row

    _write_csv(rows(), args.out, "predictions", len(pred))
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    from fastpcam._serialize import load_model

    est = load_model(args.model)
    try:
        document = est.to_html(title=args.title)
    except ImportError as exc:
        raise CLIError(str(exc)) from None
    _write_text(document, args.out)
    where = "standard output" if _to_stdout(args.out) else args.out
    print(f"report of the {type(est).__name__} in {args.model} written to {where}",
          file=sys.stderr if _to_stdout(args.out) else sys.stdout)
    return 0


# ------------------------------------------------------------------------------- parser


def _version() -> str:
    from fastpcam import __version__

    return str(__version__)


def _add_fit_options(p: argparse.ArgumentParser) -> None:
    """Estimator parameters; an option not given keeps the estimator's own default."""
    keep = argparse.SUPPRESS  # absent from the namespace unless given
    p.add_argument("--lambda-f", type=_nonneg_float, default=keep, metavar="F",
                   help="fusion penalty lambda_f >= 0; without it lambda_f = lambda_ratio * lambda_max (default: %s)"
                   % _default("lambda_f"))
    p.add_argument("--lambda-ratio", type=_ratio, default=keep, metavar="R",
                   help="lambda_f / lambda_max when --lambda-f is not given: a number >= 0, or 'auto' "
                   "to choose it by a held-out search over ratios (default: %s)" % _default("lambda_ratio"))
    p.add_argument("--max-bins", type=_max_bins, default=keep, metavar="B",
                   help="bins per feature: an integer >= 2, 'auto' (by the number of rows) or 'exact' "
                   "(one bin per distinct value) (default: %s)" % _default("max_bins"))
    p.add_argument("--tol", type=_nonneg_float, default=keep, metavar="T",
                   help="KKT stopping tolerance (default: %s)" % _default("tol"))
    p.add_argument("--max-iter", type=_pos_int, default=keep, metavar="N",
                   help="maximum number of block updates (default: %s)" % _default("max_iter"))
    p.add_argument("--interactions", type=_interactions, default=keep, metavar="K",
                   help="pair terms: a number of pairs to screen for, 'auto' (40 pairs, or 160 on "
                   "coarser grids where those do better, kept only where they beat the additive "
                   "model on held-out rows) or 0 (the additive model) "
                   "(default: %s)" % _default("interactions"))


def _add_out(p: argparse.ArgumentParser, metavar: str, help: str, required: bool = False) -> None:
    p.add_argument("-o", "--out", metavar=metavar, required=required, help=help)


class _Parser(argparse.ArgumentParser):
    """Usage errors, in subcommands too, end with one ``fastpcam: error: ...`` line."""

    def error(self, message: str) -> Any:  # argparse declares NoReturn
        self.print_usage(sys.stderr)
        self.exit(2, f"{PROG}: error: {message}\n")


_FIT_DESCRIPTION = """\
Fit a FASTRegressor or a FASTClassifier to a CSV file with a header row and save it as JSON.

Task (--task auto, the default): classification when the target column holds text (e.g.
yes/no, low/mid/high: any number of classes) or exactly two distinct numbers (e.g. 0/1),
else regression; the choice is printed to stderr. --task regression or --task
classification overrides it (a numeric target with three or more values, e.g. a 0-10
score, is a regression target unless --task classification is given). With two classes the
positive class is the larger label (sorted as scikit-learn sorts classes_); with three or
more the model is a softmax with one score per class.

Features: every column except the target. A column of numbers is a numeric feature, a
column of text is a categorical feature (categories need pandas); --categorical makes any
column categorical (e.g. integer codes), and its cells are matched as text. A column mixing
numbers and text is an error unless it is named in --categorical. An empty cell or one of
NA, N/A, NaN, nan, NULL, null is a missing value (its own bin in the model)."""


_MODEL_HELP = "model JSON written by `fastpcam fit` or `fastpcam demo --out`"
_REPORT_DESCRIPTION = """\
Write one self-contained HTML file (it loads nothing from the network) showing a model saved
by `fastpcam fit`: the fit summary, term importances, every shape function with its bins
(hover for the bin, its value and its weight), the data's histograms and the pair terms.
Needs plotly, the `report` extra."""


def build_parser() -> argparse.ArgumentParser:
    """The ``fastpcam`` argument parser."""
    parser = _Parser(
        prog=PROG,
        description="Fit transparent piecewise-constant additive models (PCAMs) with FAST.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    demo = sub.add_parser("demo", help="fit the shipped California housing data and show the model",
                          description="Fit FASTRegressor on the shipped California housing data "
                          "(80/20 split, y standardised on the training part) and print the model.")
    _add_fit_options(demo)
    demo.add_argument("--seed", type=int, default=0, metavar="S",
                      help="random_state of the train/test split and the estimator (default: 0)")
    demo.add_argument("--max-segments", type=_pos_int, default=8, metavar="K",
                      help="segments to list per shape function (default: 8)")
    _add_out(demo, "MODEL.json", "also save the fitted model as JSON")
    demo.add_argument("--no-pairs", dest="pairs", action="store_false",
                      help="do not show the strongest pair against the additive model (by default the "
                      "demo also fits the model it did not fit above: interactions=0 for a model with "
                      "pairs, interactions='auto' for an additive one)")
    demo.add_argument("--plot", metavar="PATH", default="fastpcam_demo_shapes.png",
                      help="save a plot of the shape functions here (default: fastpcam_demo_shapes.png; "
                      "needs matplotlib, the `plot` extra)")
    demo.add_argument("--no-plot", dest="plot", action="store_const", const=None,
                      help="do not save the plot")
    demo.set_defaults(func=_cmd_demo)

    fit = sub.add_parser("fit", help="fit a regressor or classifier to a CSV file and save it as JSON",
                         description=_FIT_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    fit.add_argument("data", help="CSV file (header row; .gz is read gzipped; '-' is stdin)")
    fit.add_argument("--target", required=True, metavar="COLUMN", help="name of the target column")
    fit.add_argument("--task", choices=TASKS, default="auto",
                     help="regression, classification, or auto: chosen from the target column (default: auto)")
    fit.add_argument("--categorical", action="append", metavar="COLUMNS",
                     help="comma-separated feature columns to read as categories (repeatable); "
                     "columns of text are categorical anyway")
    _add_fit_options(fit)
    fit.add_argument("--monotone", action="append", metavar="COL=D,...",
                     help="monotonic constraints: comma-separated COLUMN=+1 (nondecreasing) or COLUMN=-1 "
                     "(nonincreasing), numeric columns only (repeatable)")
    fit.add_argument("--penalty-factor", action="append", metavar="COL=F,...",
                     help="per-column multipliers >= 0 of the fusion penalty (0: unpenalised; repeatable)")
    fit.add_argument("--loss", choices=("squared_error", "poisson", "gamma", "tweedie"), default=argparse.SUPPRESS,
                     help="regression loss: squared_error, or poisson / gamma / tweedie with a log link "
                     "(implies --task regression; default: squared_error)")
    fit.add_argument("--power", type=float, default=argparse.SUPPRESS, metavar="P",
                     help="Tweedie power of --loss tweedie, in (1, 2) (default: 1.5)")
    fit.add_argument("--sep", default=",", help="field separator (default: ','; '\\t' for tabs)")
    _add_out(fit, "MODEL.json", "where to save the model (required; '-' writes it to stdout, the "
             "summary then to stderr)", required=True)
    fit.set_defaults(func=_cmd_fit)

    predict = sub.add_parser("predict", help="predict a CSV file with a saved model",
                             description="Predict with a model saved by `fastpcam fit`; the CSV's "
                             "columns are matched to the model's features by name, extra columns ignored, "
                             "and categorical columns encoded as at fit time. Writes a CSV with a header: "
                             "'prediction' (the predicted value, or the class label of a classifier), "
                             "and with --proba one column 'proba_<class>' per class.")
    predict.add_argument("model", help=_MODEL_HELP)
    predict.add_argument("data", help="CSV file (header row; .gz is read gzipped; '-' is stdin)")
    predict.add_argument("--proba", action="store_true",
                         help="classifier: also write the probability of each class (predict_proba)")
    predict.add_argument("--sep", default=",", help="field separator (default: ',')")
    _add_out(predict, "PREDICTIONS.csv", "write the predictions here (default, or '-': stdout)")
    predict.set_defaults(func=_cmd_predict)

    report = sub.add_parser("report", help="write a saved model's interactive HTML report",
                            description=_REPORT_DESCRIPTION)
    report.add_argument("model", help=_MODEL_HELP)
    _add_out(report, "REPORT.html", "where to write the report (required; '-' for stdout)", required=True)
    report.add_argument("--title", default=None, help="page title (default: the estimator's class name)")
    report.set_defaults(func=_cmd_report)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``fastpcam`` command line; returns the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a usage error (already printed)
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    try:
        return int(args.func(args))
    except BrokenPipeError:  # e.g. `fastpcam predict ... | head`
        try:  # point stdout at /dev/null so the interpreter's final flush is quiet
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):  # no real file descriptor (e.g. captured)
            pass
        return 1
    except (CLIError, ValueError, OSError, TypeError, OverflowError, RecursionError, MemoryError) as exc:
        # bad arguments, bad data and bad (or tampered) model files: a message, never a traceback
        message = str(exc) or type(exc).__name__
        if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
            message = f"{exc.filename}: {exc.strerror}"
        print(f"{PROG}: error: {message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
