"""The ``fastpcam`` command line: ``demo``, ``fit`` and ``predict``.

Bad input (a missing file or column, a non-numeric cell, a bad option value, an
incompatible model file) prints ``fastpcam: error: <message>`` to stderr and exits with
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
from contextlib import contextmanager
from typing import IO, Any, Iterator, Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["main"]

PROG = "fastpcam"
_DEFAULT = object()  # "not given on the command line": keep the estimator's default


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
    except (UnicodeDecodeError, csv.Error, gzip.BadGzipFile, EOFError) as exc:
        raise CLIError(f"cannot read {path} as delimited text: {exc}") from exc
    if not rows:
        raise CLIError(f"{path} has a header but no data rows")
    return header, rows


def _numeric_column(path: str, name: str, cells: list[str]) -> npt.NDArray[np.float64]:
    """Parse one column as float64, naming the column and line of the first bad cell."""
    try:
        col = np.array(cells, dtype=np.float64)  # float() on each cell
    except ValueError:
        col = None
    if col is not None and np.all(np.isfinite(col)):
        return col
    for i, cell in enumerate(cells):  # locate the first offending cell
        line = i + 2  # the header is line 1 (exact unless a quoted cell spans lines)
        text = cell.strip()
        if not text:
            raise CLIError(
                f"{path}: column {name!r}, line {line}: empty cell (missing values are not supported)"
            )
        try:
            value = float(text)
        except ValueError:
            raise CLIError(f"{path}: column {name!r}, line {line}: {cell!r} is not a number") from None
        if not math.isfinite(value):
            raise CLIError(
                f"{path}: column {name!r}, line {line}: {cell!r} is not a finite number "
                "(missing values are not supported)"
            )
    raise CLIError(f"{path}: column {name!r} could not be parsed as numbers")  # pragma: no cover


def _columns(path: str, header: list[str], rows: list[list[str]], names: Sequence[str]) -> npt.NDArray[np.float64]:
    index = {name: j for j, name in enumerate(header)}
    X = np.empty((len(rows), len(names)), dtype=np.float64)
    for k, name in enumerate(names):
        j = index[name]
        X[:, k] = _numeric_column(path, name, [row[j] for row in rows])
    return X


def read_training_csv(
    path: str, target: str, sep: str = ","
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], list[str]]:
    """``X, y, feature_names`` from a CSV: every column but ``target`` is a feature."""
    header, rows = _read_table(path, sep)
    if target not in header:
        raise CLIError(f"{path}: target column {target!r} not found; the columns are {', '.join(map(repr, header))}")
    features = [name for name in header if name != target]
    if not features:
        raise CLIError(f"{path}: no feature columns besides the target {target!r}")
    y = _columns(path, header, rows, [target])[:, 0]
    X = _columns(path, header, rows, features)
    return X, y, features


def read_feature_csv(path: str, feature_names: Sequence[str], sep: str = ",") -> npt.NDArray[np.float64]:
    """The model's feature columns from a CSV, matched by name; other columns are ignored."""
    header, rows = _read_table(path, sep)
    missing = [name for name in feature_names if name not in header]
    if missing:
        raise CLIError(
            f"{path}: missing column{'s' if len(missing) > 1 else ''} {', '.join(map(repr, missing))} "
            f"that the model needs; the file has {', '.join(map(repr, header))}"
        )
    return _columns(path, header, rows, feature_names)


# ------------------------------------------------------------------------------ helpers


def _max_bins(text: str) -> int | None:
    if text.lower() in {"none", "exact"}:
        return None
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 2 or 'exact', got {text!r}") from None
    if value < 2:
        raise argparse.ArgumentTypeError(f"must be >= 2, got {value}")
    return value


def _nonneg_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"must be finite and >= 0, got {text}")
    return value


def _pos_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _estimator(args: argparse.Namespace, **extra: Any) -> Any:
    from fastpcam import FASTRegressor

    params: dict[str, Any] = {"lambda_f": args.lambda_f, **extra}
    if args.max_bins is not _DEFAULT:
        params["max_bins"] = args.max_bins
    for name in ("tol", "max_iter"):
        if getattr(args, name, None) is not None:
            params[name] = getattr(args, name)
    return FASTRegressor(**params)


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


def _timed_fit(est: Any, X: npt.NDArray[np.float64], y: npt.NDArray[np.float64]) -> float:
    with _reported_warnings():
        t0 = time.perf_counter()
        est.fit(X, y)
        return time.perf_counter() - t0


def _mse(est: Any, X: npt.NDArray[np.float64], y: npt.NDArray[np.float64]) -> float:
    return float(np.mean((est.predict(X) - y) ** 2))


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


# ----------------------------------------------------------------------------- commands


def _cmd_demo(args: argparse.Namespace) -> int:
    from sklearn.model_selection import train_test_split

    from fastpcam._datasets import load_houses
    from fastpcam._serialize import save_model
    from fastpcam._text import format_shape_functions

    X, y, names = load_houses()
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2, random_state=args.seed)
    mean, std = float(y_train.mean()), float(y_train.std())
    y_train, y_test = (y_train - mean) / std, (y_test - mean) / std
    est = _estimator(args, random_state=args.seed)
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
    if args.out:
        save_model(est, args.out, feature_names=names)
        print(f"\nmodel saved to {args.out} (shape functions on the standardised y scale)")
    if args.plot is not None:
        _save_demo_plot(est, names, args.plot)
    return 0


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


def _cmd_fit(args: argparse.Namespace) -> int:
    from fastpcam._serialize import save_model

    X, y, names = read_training_csv(args.data, args.target, args.sep)
    est = _estimator(args)
    seconds = _timed_fit(est, X, y)
    save_model(est, args.out, feature_names=names)
    print(f"{args.data}: {X.shape[0]} rows, {X.shape[1]} features, target {args.target!r}")
    print(f"fitted in {seconds:.3f} s: {_fit_report(est)}")
    print(f"train MSE = {_mse(est, X, y):.6g}")
    print(f"model saved to {args.out}")
    return 0


def _cmd_predict(args: argparse.Namespace) -> int:
    from fastpcam._serialize import load_model

    est = load_model(args.model)
    names_in = getattr(est, "feature_names_in_", None)
    names = [f"x{j}" for j in range(est.n_features_in_)] if names_in is None else [str(n) for n in names_in]
    X = read_feature_csv(args.data, names, args.sep)
    with warnings.catch_warnings():
        # the model knows its feature names; the columns were matched by name above
        warnings.filterwarnings("ignore", message="X does not have valid feature names")
        pred = est.predict(X)
    text = "prediction\n" + "".join(f"{float(p)!r}\n" for p in pred)  # repr round-trips exactly
    if args.out:
        with open(args.out, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        print(f"{len(pred)} predictions written to {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


# ------------------------------------------------------------------------------- parser


def _version() -> str:
    from fastpcam._serialize import fastpcam_version

    return fastpcam_version()


def _add_fit_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--lambda-f", type=_nonneg_float, default=None, metavar="F",
                   help="fusion penalty lambda_f (default: 1e-3 * lambda_max)")
    p.add_argument("--max-bins", type=_max_bins, default=_DEFAULT, metavar="B",
                   help="bins per feature, an integer >= 2 or 'exact' (default: the estimator's, 256)")
    p.add_argument("--tol", type=_nonneg_float, default=None, metavar="T",
                   help="KKT stopping tolerance (default: the estimator's)")
    p.add_argument("--max-iter", type=_pos_int, default=None, metavar="N",
                   help="maximum number of block updates (default: the estimator's)")


class _Parser(argparse.ArgumentParser):
    """Usage errors, in subcommands too, end with one ``fastpcam: error: ...`` line."""

    def error(self, message: str) -> Any:  # argparse declares NoReturn
        self.print_usage(sys.stderr)
        self.exit(2, f"{PROG}: error: {message}\n")


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
    demo.add_argument("--out", metavar="MODEL.json", help="also save the fitted model as JSON")
    demo.add_argument("--plot", metavar="PATH", default="fastpcam_demo_shapes.png",
                      help="save a plot of the shape functions here (default: fastpcam_demo_shapes.png; "
                      "needs matplotlib, the `plot` extra)")
    demo.add_argument("--no-plot", dest="plot", action="store_const", const=None,
                      help="do not save the plot")
    demo.set_defaults(func=_cmd_demo)

    fit = sub.add_parser("fit", help="fit a model to a CSV file and save it as JSON",
                         description="Fit FASTRegressor to a CSV file with a header row; every column "
                         "except the target is a numeric feature.")
    fit.add_argument("data", help="CSV file (header row; .gz is read gzipped; '-' is stdin)")
    fit.add_argument("--target", required=True, metavar="COLUMN", help="name of the target column")
    _add_fit_options(fit)
    fit.add_argument("--sep", default=",", help="field separator (default: ','; '\\t' for tabs)")
    fit.add_argument("--out", required=True, metavar="MODEL.json", help="where to save the model")
    fit.set_defaults(func=_cmd_fit)

    predict = sub.add_parser("predict", help="predict a CSV file with a saved model",
                             description="Predict with a model saved by `fastpcam fit`; the CSV's "
                             "columns are matched to the model's features by name, extra columns ignored.")
    predict.add_argument("model", help="model JSON written by `fastpcam fit` or `fastpcam demo --out`")
    predict.add_argument("data", help="CSV file (header row; .gz is read gzipped; '-' is stdin)")
    predict.add_argument("--sep", default=",", help="field separator (default: ',')")
    predict.add_argument("--out", metavar="PREDICTIONS.csv",
                         help="write the predictions here (default: stdout); header 'prediction'")
    predict.set_defaults(func=_cmd_predict)
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
    except (CLIError, ValueError, OSError) as exc:
        message = str(exc)
        if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
            message = f"{exc.filename}: {exc.strerror}"
        print(f"{PROG}: error: {message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
