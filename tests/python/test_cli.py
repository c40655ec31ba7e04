"""The command line (``fastpcam demo|fit|predict``: regression and classification, categorical
and missing cells, options and their defaults, bad input), the JSON model format, the text
view and the shipped data set."""

from __future__ import annotations

import argparse
import csv
import io
import json
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

import fastpcam
from fastpcam import FASTClassifier, FASTRegressor
from fastpcam import _cli
from fastpcam._cli import build_parser, main
from fastpcam._datasets import load_houses
from fastpcam._serialize import SCHEMA_VERSION, load_model, model_to_dict, save_model
from fastpcam._text import format_shape_functions, shape_segments, sparkline

FEATURES = ["a", "b", "c"]


def _toy(n: int = 300, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2.0, 2.0, size=(n, 3))
    X[:, 1] = np.round(X[:, 1], 1)  # few distinct values
    y = np.where(X[:, 0] > 0.3, 1.0, -0.5) + np.sin(X[:, 1]) + 0.1 * rng.standard_normal(n)
    return X, y


def _write_csv(path: Path, header: list[str], rows: list[list[object]]) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def _toy_csv(path: Path, X: np.ndarray, y: np.ndarray) -> Path:
    # target in the middle, floats written with repr so they parse back exactly
    rows = [[repr(float(x[0])), repr(float(t)), repr(float(x[1])), repr(float(x[2]))] for x, t in zip(X, y)]
    return _write_csv(path, ["a", "y", "b", "c"], rows)


def _read_predictions(text: str) -> np.ndarray:
    lines = text.strip().splitlines()
    assert lines[0] == "prediction"
    return np.array([float(v) for v in lines[1:]])


# ---------------------------------------------------------------------------- CLI basics


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("fastpcam ")


def test_no_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "fastpcam: error:" in capsys.readouterr().err


def test_demo_subprocess(tmp_path: Path) -> None:
    proc = subprocess.run(  # in tmp_path: the demo saves its plot in the current directory
        [sys.executable, "-m", "fastpcam", "demo"], capture_output=True, text=True, timeout=600, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    assert "KKT" in proc.stdout
    assert "test MSE" in proc.stdout
    assert "median_income" in proc.stdout
    assert "held-out rows" in proc.stdout  # the default penalty is chosen on held-out rows
    # The same model with pair terms, and the housing data's strongest pair.
    assert "With pair terms (interactions='auto')" in proc.stdout
    assert "strongest pair: latitude & longitude" in proc.stdout
    assert "Traceback" not in proc.stderr


def test_demo_in_process_saves_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "houses.json"
    assert main(["demo", "--lambda-f", "0.01", "--max-bins", "32", "--out", str(out), "--no-plot", "--no-pairs"]) == 0
    text = capsys.readouterr().out
    assert "lambda_f_ = 0.01" in text and "test MSE" in text
    assert "pair" not in text
    assert "held-out" not in text  # a given lambda_f: no search
    est = load_model(out)
    assert list(est.feature_names_in_) == load_houses().feature_names
    assert est.lambda_f_ == 0.01
    assert all(len(c) <= 31 for c in est.cuts_)


# ------------------------------------------------------------------ fit / predict round trip


@pytest.mark.filterwarnings("ignore:X does not have valid feature names")
def test_fit_predict_round_trip(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    X, y = _toy()
    data = _toy_csv(tmp_path / "train.csv", X, y)
    model = tmp_path / "model.json"
    assert main(["fit", str(data), "--target", "y", "--max-bins", "16", "--out", str(model)]) == 0
    summary = capsys.readouterr().out
    assert "300 rows, 3 features" in summary and "KKT residual" in summary and "train MSE" in summary

    est = load_model(model)
    assert list(est.feature_names_in_) == FEATURES  # every column but the target, in file order
    expected = est.predict(X)

    pred_file = tmp_path / "pred.csv"
    assert main(["predict", str(model), str(data), "--out", str(pred_file)]) == 0
    np.testing.assert_array_equal(_read_predictions(pred_file.read_text()), expected)

    capsys.readouterr()
    assert main(["predict", str(model), str(data)]) == 0  # to stdout
    np.testing.assert_array_equal(_read_predictions(capsys.readouterr().out), expected)

    # the CLI fits what the estimator fits on the same numbers
    direct = FASTRegressor(max_bins=16).fit(X, y)
    np.testing.assert_allclose(direct.predict(X), expected, rtol=0, atol=1e-12)

    # --interactions: the pairs travel through the model file and predict alike
    y_pair = 2.0 * ((X[:, 0] > 0) == (X[:, 2] > 0)) + 0.1 * np.random.default_rng(1).standard_normal(len(y))
    data_pair = _toy_csv(tmp_path / "pair.csv", X, y_pair)
    paired = tmp_path / "paired.json"
    assert main(["fit", str(data_pair), "--target", "y", "--interactions", "2", "--out", str(paired)]) == 0
    est = load_model(paired)
    assert est.interaction_features_[0] == (0, 2)
    both = FASTRegressor(interactions=2).fit(X, y_pair)
    np.testing.assert_allclose(both.predict(X), est.predict(X), rtol=0, atol=1e-12)
    _assert_cli_error(capsys, main(["fit", str(data), "--target", "y", "--interactions", "-1"]), "--interactions")


def test_predict_matches_columns_by_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    X, y = _toy(n=120, seed=1)
    model = tmp_path / "model.json"
    est = FASTRegressor(max_bins=8).fit(X, y)
    save_model(est, model, feature_names=FEATURES)
    # columns shuffled, plus an extra non-numeric column that must be ignored
    rows = [[f"id{i}", repr(float(x[2])), repr(float(x[0])), repr(float(x[1]))] for i, x in enumerate(X)]
    data = _write_csv(tmp_path / "new.csv", ["id", "c", "a", "b"], rows)
    assert main(["predict", str(model), str(data)]) == 0
    np.testing.assert_array_equal(_read_predictions(capsys.readouterr().out), est.predict(X))


def test_fit_tab_separated(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    X, y = _toy(n=80, seed=2)
    path = tmp_path / "train.tsv"
    path.write_text("a\tb\tc\ty\n" + "".join(f"{x[0]!r}\t{x[1]!r}\t{x[2]!r}\t{t!r}\n" for x, t in zip(X.tolist(), y.tolist())))
    assert main(["fit", str(path), "--target", "y", "--sep", "\\t", "--out", str(tmp_path / "m.json")]) == 0


# ------------------------------------------------------------------------------ bad input


def _assert_cli_error(capsys: pytest.CaptureFixture[str], code: int, *needles: str) -> str:
    err = capsys.readouterr().err
    assert code == 2
    # one error line (usage errors print the usage first)
    assert err.splitlines()[-1].startswith("fastpcam: error: "), err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in err, err
    return err


def test_fit_missing_target_column(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = _write_csv(tmp_path / "d.csv", ["a", "b"], [[1, 2], [3, 4]])
    code = main(["fit", str(data), "--target", "price", "--out", str(tmp_path / "m.json")])
    _assert_cli_error(capsys, code, "'price'", "not found")
    assert not (tmp_path / "m.json").exists()


def test_fit_non_numeric_cell(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [[i, float(i) ** 0.5, i % 3] for i in range(20)]
    rows[7][1] = "seven"
    data = _write_csv(tmp_path / "d.csv", ["y", "width", "k"], rows)
    code = main(["fit", str(data), "--target", "y", "--out", str(tmp_path / "m.json")])
    _assert_cli_error(capsys, code, "'width'", "line 9", "'seven'")


@pytest.mark.filterwarnings("ignore:X does not have valid feature names")
def test_fit_reads_missing_cells_as_missing_values(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    X, y = _toy(n=200, seed=5)
    rows: list[list[object]] = [[repr(float(x[0])), repr(float(t)), repr(float(x[1])), repr(float(x[2]))]
                                for x, t in zip(X, y)]
    tokens = ["", "NA", "nan", "NULL", " N/A "]
    for i, token in enumerate(tokens):
        rows[10 * i + 3][0] = token
        X[10 * i + 3, 0] = np.nan
    data = _write_csv(tmp_path / "d.csv", ["a", "y", "b", "c"], rows)
    model = tmp_path / "m.json"
    assert main(["fit", str(data), "--target", "y", "--max-bins", "16", "-o", str(model)]) == 0
    est = load_model(model)
    direct = FASTRegressor(max_bins=16).fit(X, y)  # NaN: the missing bin
    np.testing.assert_allclose(est.predict(X), direct.predict(X), rtol=0, atol=1e-12)
    assert est.missing_weights_[0] == len(tokens)
    capsys.readouterr()
    assert main(["predict", str(model), str(data)]) == 0
    np.testing.assert_array_equal(_read_predictions(capsys.readouterr().out), est.predict(X))


@pytest.mark.parametrize(
    "column, cell, needles",
    [
        ("x", "inf", ("'x'", "line 5", "not a finite number")),
        ("y", "", ("'y'", "line 5", "empty target cell")),
        ("y", "NA", ("'y'", "line 5", "empty target cell")),
    ],
)
def test_fit_bad_cell(tmp_path: Path, capsys: pytest.CaptureFixture[str], column: str, cell: str,
                      needles: tuple[str, ...]) -> None:
    rows: list[list[object]] = [[i, i * 0.5] for i in range(10)]
    rows[3][["y", "x"].index(column)] = cell
    data = _write_csv(tmp_path / "d.csv", ["y", "x"], rows)
    code = main(["fit", str(data), "--target", "y", "--out", str(tmp_path / "m.json")])
    _assert_cli_error(capsys, code, *needles)
    assert not (tmp_path / "m.json").exists()


def test_fit_ragged_row_and_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "d.csv"
    data.write_text("y,x\n1,2\n3\n")
    _assert_cli_error(capsys, main(["fit", str(data), "--target", "y", "--out", "m.json"]), "line 3")
    missing = str(tmp_path / "nope.csv")
    _assert_cli_error(capsys, main(["fit", missing, "--target", "y", "--out", "m.json"]), "nope.csv")


def test_bad_option_value(capsys: pytest.CaptureFixture[str]) -> None:
    _assert_cli_error(capsys, main(["demo", "--max-bins", "1"]), "--max-bins")
    _assert_cli_error(capsys, main(["demo", "--lambda-f", "-1"]), "--lambda-f")


def test_predict_missing_column(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    X, y = _toy(n=60)
    model = tmp_path / "m.json"
    save_model(FASTRegressor(max_bins=8).fit(X, y), model, feature_names=FEATURES)
    data = _write_csv(tmp_path / "d.csv", ["a", "c"], [[1.0, 2.0]])
    _assert_cli_error(capsys, main(["predict", str(model), str(data)]), "'b'", "missing column")


def test_predict_with_newer_schema_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    X, y = _toy(n=60)
    model = tmp_path / "m.json"
    save_model(FASTRegressor(max_bins=8).fit(X, y), model, feature_names=FEATURES)
    d = json.loads(model.read_text())
    d["schema_version"] = SCHEMA_VERSION + 1
    model.write_text(json.dumps(d))
    data = _toy_csv(tmp_path / "d.csv", X, y)
    _assert_cli_error(capsys, main(["predict", str(model), str(data)]), "schema_version")


# ------------------------------------------------------------------ options and their defaults


def test_every_subcommand_takes_out() -> None:
    parser = build_parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert set(subparsers.choices) == {"demo", "fit", "predict", "report"}
    for name, sub in subparsers.choices.items():
        out = [a for a in sub._actions if a.dest == "out"]
        assert out and {"-o", "--out"} <= set(out[0].option_strings), name
    for argv in (["demo", "-o", "m.json"], ["fit", "d.csv", "--target", "y", "-o", "m.json"],
                 ["predict", "m.json", "d.csv", "-o", "p.csv"], ["report", "m.json", "-o", "r.html"]):
        assert parser.parse_args(argv).out == argv[-1]


@pytest.mark.filterwarnings("ignore:X does not have valid feature names")
def test_out_short_option_writes_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    X, y = _toy(n=120, seed=6)
    data = _toy_csv(tmp_path / "d.csv", X, y)
    model, pred = tmp_path / "m.json", tmp_path / "p.csv"
    assert main(["fit", str(data), "--target", "y", "--max-bins", "8", "-o", str(model)]) == 0
    assert main(["predict", str(model), str(data), "-o", str(pred)]) == 0
    np.testing.assert_array_equal(_read_predictions(pred.read_text()), load_model(model).predict(X))
    assert capsys.readouterr().out.count("prediction") == 0  # the predictions went to the file


@pytest.mark.filterwarnings("ignore:X does not have valid feature names")
def test_out_dash_is_standard_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    X, y = _toy(n=120, seed=7)
    data = _toy_csv(tmp_path / "d.csv", X, y)
    assert main(["fit", str(data), "--target", "y", "--max-bins", "8", "-o", "-"]) == 0
    captured = capsys.readouterr()
    est = FASTRegressor.from_json(captured.out)  # stdout holds the model alone
    assert "fitted FASTRegressor" in captured.err and "model saved to standard output" in captured.err
    model = tmp_path / "m.json"
    model.write_text(captured.out)
    assert main(["predict", str(model), str(data), "--out", "-"]) == 0
    np.testing.assert_array_equal(_read_predictions(capsys.readouterr().out), est.predict(X))
    if _has_plotly():
        assert main(["report", str(model), "-o", "-", "--title", "to stdout"]) == 0
        captured = capsys.readouterr()
        assert captured.out.startswith("<!DOCTYPE html>") and "<title>to stdout</title>" in captured.out
        assert "written to standard output" in captured.err
    assert not (tmp_path / "-").exists()
    _assert_cli_error(capsys, main(["demo", "-o", "-", "--no-plot"]), "demo --out -")


def _has_plotly() -> bool:
    try:
        import plotly  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.parametrize("body", [b"garbage-not-gzip", b"", b"\x00" * 40])
def test_a_corrupt_gzip_file_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], body: bytes) -> None:
    bad = tmp_path / "bad.csv.gz"
    bad.write_bytes(b"\x1f\x8b\x08\x00" + body)  # a gzip header, then no valid deflate stream
    _assert_cli_error(capsys, main(["fit", str(bad), "--target", "y", "-o", str(tmp_path / "m.json")]), "bad.csv.gz")
    model = tmp_path / "m.json"
    X, y = _toy(n=60, seed=8)
    save_model(FASTRegressor(max_bins=4, lambda_ratio=0.1).fit(X, y), model)
    _assert_cli_error(capsys, main(["predict", str(model), str(bad)]), "bad.csv.gz")


@pytest.mark.parametrize("command", ["fit", "demo"])
def test_help_states_the_estimators_defaults(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    subparsers = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    helps = {a.dest: a.help for a in subparsers.choices[command]._actions}
    defaults = FASTRegressor().get_params()
    for param in ("lambda_f", "lambda_ratio", "max_bins", "tol", "max_iter"):
        assert helps[param].endswith(f"(default: {defaults[param]!r})"), (param, helps[param])
    assert main([command, "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())  # undo argparse's line wrapping
    assert "(default: 'auto')" in text
    for stale in ("1e-3", "256", "λmax", "* lambda_max)"):
        assert stale not in text, stale


@pytest.mark.filterwarnings("ignore:X does not have valid feature names")
@pytest.mark.parametrize("value, expected", [("auto", "auto"), ("exact", None), ("12", 12)])
def test_fit_max_bins_values(tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str, expected: object) -> None:
    X, y = _toy(n=150, seed=7)
    data = _toy_csv(tmp_path / "d.csv", X, y)
    model = tmp_path / "m.json"
    assert main(["fit", str(data), "--target", "y", "--max-bins", value, "-o", str(model)]) == 0
    est = load_model(model)
    assert est.get_params()["max_bins"] == expected
    direct = FASTRegressor(max_bins=expected).fit(X, y)
    np.testing.assert_allclose(est.predict(X), direct.predict(X), rtol=0, atol=1e-12)


def test_fit_options_not_given_keep_the_estimators_defaults(tmp_path: Path) -> None:
    X, y = _toy(n=150, seed=8)
    data = _toy_csv(tmp_path / "d.csv", X, y)
    model = tmp_path / "m.json"
    assert main(["fit", str(data), "--target", "y", "-o", str(model)]) == 0
    params = load_model(model).get_params()
    for name, value in FASTRegressor().get_params().items():
        if name in ("lambda_f", "lambda_ratio", "max_bins", "tol", "max_iter"):
            assert params[name] == value, name


def test_fit_lambda_ratio(tmp_path: Path) -> None:
    X, y = _toy(n=150, seed=9)
    data = _toy_csv(tmp_path / "d.csv", X, y)
    model = tmp_path / "m.json"
    assert main(["fit", str(data), "--target", "y", "--lambda-ratio", "0.01", "-o", str(model)]) == 0
    est = load_model(model)
    assert est.get_params()["lambda_ratio"] == 0.01
    assert est.lambda_f_ == pytest.approx(0.01 * est.lambda_max_, rel=1e-12)


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["--max-bins", "1"], "--max-bins"),
        (["--max-bins", "many"], "--max-bins"),
        (["--lambda-f", "-1"], "--lambda-f"),
        (["--lambda-ratio", "-0.5"], "--lambda-ratio"),
        (["--lambda-ratio", "best"], "--lambda-ratio"),
        (["--task", "ranking"], "--task"),
        (["--tol", "nan"], "--tol"),
    ],
)
def test_bad_fit_option_value(tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], needle: str) -> None:
    data = _write_csv(tmp_path / "d.csv", ["y", "x"], [[i, i] for i in range(10)])
    code = main(["fit", str(data), "--target", "y", "-o", str(tmp_path / "m.json"), *argv])
    _assert_cli_error(capsys, code, needle)


# ---------------------------------------------------------------------- the task of a fit


def _column(cells: list[str], name: str = "y") -> Any:
    return _cli._Column.scan("d.csv", name, cells)


@pytest.mark.parametrize(
    "cells, task, labels",
    [
        (["yes", "no", "no", "yes"], "classification", ["no", "yes"]),
        (["True", "False", "False", "False"], "classification", ["False", "True"]),
        (["0", "1", "1", "0"], "classification", [0, 1]),
        (["-1.0", "1.0", "1", "-1"], "classification", [-1, 1]),
        (["0.5", "1.5", "1.5", "0.5"], "classification", [0.5, 1.5]),
        (["0", "1", "2", "1"], "regression", None),
        (["0.1", "0.2", "0.3", "0.4"], "regression", None),
    ],
)
def test_auto_task(cells: list[str], task: str, labels: list[object] | None) -> None:
    chosen = _cli.choose_task(_column(cells), "auto")
    assert chosen.task == task
    if labels is None:
        assert chosen.y.dtype == np.float64
        np.testing.assert_array_equal(chosen.y, [float(c) for c in cells])
    else:
        assert list(np.unique(chosen.y)) == labels
        assert all(type(v) is type(chosen.y[0]) for v in chosen.y)


def test_explicit_task_overrides_auto() -> None:
    two = _column(["0", "1", "1", "0"])
    assert _cli.choose_task(two, "regression").task == "regression"
    many = _column(["1", "2", "3", "4"])
    chosen = _cli.choose_task(many, "classification")
    assert chosen.task == "classification" and "4 classes (softmax)" in chosen.reason
    assert _cli.choose_task(many, "auto").task == "regression"
    with pytest.raises(_cli.CLIError, match="1 distinct value; classification needs at least two classes"):
        _cli.choose_task(_column(["1", "1"]), "classification")
    with pytest.raises(_cli.CLIError, match="line 3: 'b' is not a number"):
        _cli.choose_task(_column(["1", "b", "1", "b"]), "regression")


def test_fit_task_regression_on_a_binary_target(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [[i % 2, i * 0.1] for i in range(40)]
    data = _write_csv(tmp_path / "d.csv", ["y", "x"], rows)
    assert main(["fit", str(data), "--target", "y", "--task", "regression", "-o", str(tmp_path / "m.json")]) == 0
    captured = capsys.readouterr()
    assert "fastpcam: task: regression (target 'y': --task regression)" in captured.err
    assert "fitted FASTRegressor" in captured.out and "train MSE" in captured.out
    assert type(load_model(tmp_path / "m.json")) is FASTRegressor


def test_fit_and_predict_three_text_classes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(size=300)
    labels = np.where(x < -0.4, "low", np.where(x > 0.4, "high", "mid"))
    flip = rng.random(300) < 0.1
    labels[flip] = rng.choice(["low", "mid", "high"], size=int(flip.sum()))
    data = _write_csv(tmp_path / "d.csv", ["y", "x"], [[c, v] for c, v in zip(labels, x)])
    model = tmp_path / "m.json"
    assert main(["fit", str(data), "--target", "y", "-o", str(model)]) == 0
    captured = capsys.readouterr()
    assert "3 classes (softmax)" in captured.err and "train log-loss" in captured.out
    est = load_model(model)
    assert type(est) is FASTClassifier and list(est.classes_) == ["high", "low", "mid"]
    out = tmp_path / "p.csv"
    assert main(["predict", str(model), str(data), "--proba", "-o", str(out)]) == 0
    lines = out.read_text().splitlines()
    header = lines[0].split(",")
    assert header[-3:] == ["proba_high", "proba_low", "proba_mid"]
    rows = [line.split(",") for line in lines[1:]]
    proba = np.array([[float(v) for v in r[-3:]] for r in rows])
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-12)
    pd = pytest.importorskip("pandas")
    np.testing.assert_allclose(proba, est.predict_proba(pd.DataFrame({"x": x})), rtol=0, atol=1e-15)


@pytest.mark.parametrize(
    "labels, needles",
    [
        (["a"], ("'y'", "1 distinct value", "at least two classes")),
    ],
)
def test_fit_bad_classification_target(tmp_path: Path, capsys: pytest.CaptureFixture[str], labels: list[str],
                                       needles: tuple[str, ...]) -> None:
    rows = [[labels[i % len(labels)], i * 0.5] for i in range(30)]
    data = _write_csv(tmp_path / "d.csv", ["y", "x"], rows)
    code = main(["fit", str(data), "--target", "y", "-o", str(tmp_path / "m.json")])
    _assert_cli_error(capsys, code, *needles)
    assert not (tmp_path / "m.json").exists()


def _classification_csv(path: Path, n: int = 400, seed: int = 0, labels: tuple[str, str] = ("no", "yes")) -> tuple[Path, Any]:
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(seed)
    a = rng.normal(size=n)
    colour = rng.choice(["red", "green", "blue"], size=n)
    k = rng.integers(0, 4, size=n)
    positive = a + (colour == "red") + 0.3 * k + 0.5 * rng.standard_normal(n) > 0.8
    y = np.where(positive, labels[1], labels[0])
    df = pd.DataFrame({"a": a, "colour": pd.Series(colour, dtype=object), "k": k.astype(np.float64)})
    rows = [[repr(float(a[i])), colour[i], int(k[i]), y[i]] for i in range(n)]
    return _write_csv(path, ["a", "colour", "k", "label"], rows), (df, y)


def test_fit_reports_the_chosen_task(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data, (df, y) = _classification_csv(tmp_path / "d.csv")
    assert main(["fit", str(data), "--target", "label", "-o", str(tmp_path / "m.json")]) == 0
    captured = capsys.readouterr()
    assert "fastpcam: task: classification" in captured.err and "positive class 'yes'" in captured.err
    assert "fitted FASTClassifier" in captured.out and "train log-loss" in captured.out
    assert "accuracy" in captured.out and "(1 categorical: colour)" in captured.out


def _read_csv_columns(text: str) -> dict[str, list[str]]:
    rows = list(csv.reader(io.StringIO(text)))
    return {name: [row[j] for row in rows[1:]] for j, name in enumerate(rows[0])}


@pytest.mark.parametrize("labels", [("no", "yes"), ("0", "1")])
def test_classification_fit_predict_round_trip(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                               labels: tuple[str, str]) -> None:
    data, (df, y) = _classification_csv(tmp_path / "train.csv", labels=labels)
    model = tmp_path / "m.json"
    assert main(["fit", str(data), "--target", "label", "--max-bins", "16", "-o", str(model)]) == 0
    est = load_model(model)
    assert isinstance(est, FASTClassifier)
    expected_classes = [0, 1] if labels == ("0", "1") else ["no", "yes"]
    assert list(est.classes_) == expected_classes
    # the CLI fits what the estimator fits on the same frame
    y_fit = y.astype(np.int64) if labels == ("0", "1") else y
    direct = FASTClassifier(max_bins=16).fit(df, y_fit)
    np.testing.assert_allclose(est.predict_proba(df), direct.predict_proba(df), rtol=0, atol=1e-12)

    capsys.readouterr()
    assert main(["predict", str(model), str(data)]) == 0
    cols = _read_csv_columns(capsys.readouterr().out)
    assert list(cols) == ["prediction"]
    assert cols["prediction"] == [str(v) for v in est.predict(df)]

    out = tmp_path / "p.csv"
    assert main(["predict", str(model), str(data), "--proba", "-o", str(out)]) == 0
    cols = _read_csv_columns(out.read_text())
    assert list(cols) == ["prediction", f"proba_{labels[0]}", f"proba_{labels[1]}"]
    proba = np.array([[float(v) for v in cols[f"proba_{c}"]] for c in labels]).T
    np.testing.assert_allclose(proba, est.predict_proba(df), rtol=0, atol=1e-12)
    assert cols["prediction"] == [str(v) for v in est.predict(df)]
    assert (np.asarray(cols["prediction"]) == np.asarray(labels)[(proba[:, 1] > 0.5).astype(int)]).all()


def test_predict_proba_needs_a_classifier(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    X, y = _toy(n=60)
    model = tmp_path / "m.json"
    save_model(FASTRegressor(max_bins=8).fit(X, y), model, feature_names=FEATURES)
    data = _toy_csv(tmp_path / "d.csv", X, y)
    _assert_cli_error(capsys, main(["predict", str(model), str(data), "--proba"]), "--proba", "FASTRegressor")


# ------------------------------------------------------------------- categorical columns


def _categorical_regression_csv(path: Path, n: int = 300, seed: int = 0) -> tuple[Path, Any, Any]:
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, size=n)
    city = rng.choice(["Paris", "Lyon", "Nice", "Lille"], size=n)
    zone = rng.integers(1, 4, size=n)
    effect = {"Paris": 2.0, "Lyon": 0.5, "Nice": 0.4, "Lille": -1.0}
    y = x + np.array([effect[c] for c in city]) + 0.3 * zone + 0.1 * rng.standard_normal(n)
    rows = [[repr(float(x[i])), city[i] if i % 37 else "", int(zone[i]), repr(float(y[i]))] for i in range(n)]
    city_col = pd.Series([c if i % 37 else None for i, c in enumerate(city)], dtype=object)
    zone_col = pd.Series([str(z) for z in zone], dtype=object)
    df = pd.DataFrame({"x": x, "city": city_col, "zone": zone_col})
    return _write_csv(path, ["x", "city", "zone", "y"], rows), df, y


def test_text_columns_are_categories(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data, df, y = _categorical_regression_csv(tmp_path / "d.csv")
    model = tmp_path / "m.json"
    assert main(["fit", str(data), "--target", "y", "--categorical", "zone", "-o", str(model)]) == 0
    assert "(2 categorical: city, zone)" in capsys.readouterr().out
    est = load_model(model)
    assert list(est.is_categorical_) == [False, True, True]
    # the empty cells are the missing values' category, None
    assert set(est.categories_[1]) == {None, "Lille", "Lyon", "Nice", "Paris"}
    assert sorted(est.categories_[2]) == ["1", "2", "3"]
    assert est.missing_weights_[1] == 0
    direct = FASTRegressor().fit(df, y)  # what the estimator does with the same pandas frame
    np.testing.assert_allclose(est.predict(df), direct.predict(df), rtol=0, atol=1e-12)

    # predict encodes the columns the same way, in any column order
    rows = list(csv.reader(data.open()))
    shuffled = _write_csv(tmp_path / "new.csv", ["zone", "y", "city", "x"],
                          [[r[2], r[3], r[1], r[0]] for r in rows[1:]])
    capsys.readouterr()
    assert main(["predict", str(model), str(shuffled)]) == 0
    np.testing.assert_array_equal(_read_predictions(capsys.readouterr().out), est.predict(df))


def test_predict_unseen_category_contributes_zero(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data, df, y = _categorical_regression_csv(tmp_path / "d.csv")
    model = tmp_path / "m.json"
    assert main(["fit", str(data), "--target", "y", "-o", str(model)]) == 0
    est = load_model(model)
    new = _write_csv(tmp_path / "new.csv", ["x", "city", "zone"], [["0.25", "Paris", "2"], ["0.25", "Toulouse", "2"]])
    capsys.readouterr()
    assert main(["predict", str(model), str(new)]) == 0
    captured = capsys.readouterr()
    pred = _read_predictions(captured.out)
    assert "'city'" in captured.err and "'Toulouse'" in captured.err and "contribute 0" in captured.err
    paris = est.values_[1][list(est.categories_[1]).index("Paris")]
    assert paris != 0
    assert pred[0] - pred[1] == pytest.approx(paris, abs=1e-12)


def test_mixed_column_needs_categorical(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows: list[list[object]] = [[i, i % 3] for i in range(20)]
    rows[4][1] = "many"
    data = _write_csv(tmp_path / "d.csv", ["y", "n"], rows)
    code = main(["fit", str(data), "--target", "y", "-o", str(tmp_path / "m.json")])
    _assert_cli_error(capsys, code, "'n'", "line 6", "'many'", "--categorical n")
    pytest.importorskip("pandas")
    assert main(["fit", str(data), "--target", "y", "--categorical", "n", "-o", str(tmp_path / "m.json")]) == 0
    assert sorted(load_model(tmp_path / "m.json").categories_[0]) == ["0", "1", "2", "many"]


@pytest.mark.parametrize(
    "option, needles",
    [("nope", ("--categorical", "'nope'")), ("y", ("--categorical", "target"))],
)
def test_categorical_option_names_a_feature(tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str,
                                            needles: tuple[str, ...]) -> None:
    data = _write_csv(tmp_path / "d.csv", ["y", "x"], [[i, i] for i in range(10)])
    code = main(["fit", str(data), "--target", "y", "--categorical", option, "-o", str(tmp_path / "m.json")])
    _assert_cli_error(capsys, code, *needles)


def test_text_column_without_pandas(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)  # `import pandas` raises ImportError
    rows = [[i, ["red", "blue"][i % 2], i * 0.5] for i in range(10)]
    data = _write_csv(tmp_path / "d.csv", ["y", "colour", "x"], rows)
    code = main(["fit", str(data), "--target", "y", "-o", str(tmp_path / "m.json")])
    _assert_cli_error(capsys, code, "'colour'", "'red'", "needs pandas")
    numbers = _write_csv(tmp_path / "n.csv", ["y", "x"], [[i, i % 3] for i in range(10)])
    code = main(["fit", str(numbers), "--target", "y", "--categorical", "x", "-o", str(tmp_path / "m.json")])
    _assert_cli_error(capsys, code, "'x' is categorical", "needs pandas")
    assert not (tmp_path / "m.json").exists()


def test_predict_text_in_a_numeric_feature(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    X, y = _toy(n=60)
    model = tmp_path / "m.json"
    save_model(FASTRegressor(max_bins=8).fit(X, y), model, feature_names=FEATURES)
    data = _write_csv(tmp_path / "d.csv", ["a", "b", "c"], [[1.0, "big", 2.0]])
    _assert_cli_error(capsys, main(["predict", str(model), str(data)]), "'b'", "'big'", "numeric")


# ------------------------------------------------------------------------- JSON model format


def test_json_round_trip_is_bit_identical(tmp_path: Path) -> None:
    X, y = _toy(n=500, seed=3)
    est = FASTRegressor(lambda_f=1e-3, max_bins=64).fit(X, y)
    path = tmp_path / "m.json"
    save_model(est, path)
    loaded = load_model(path)

    assert isinstance(loaded, FASTRegressor)
    X_new = np.random.default_rng(4).uniform(-3, 3, size=(1000, 3))
    np.testing.assert_array_equal(loaded.predict(X_new), est.predict(X_new))
    np.testing.assert_array_equal(loaded.predict(X), est.predict(X))
    assert loaded.intercept_ == est.intercept_
    for a, b in zip(loaded.cuts_, est.cuts_):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(loaded.values_, est.values_):
        np.testing.assert_array_equal(a, b)
    assert loaded.n_features_in_ == 3
    assert not hasattr(loaded, "feature_names_in_")  # default names x0.. are not restored
    for attr in ("lambda_f_", "n_iter_", "converged_", "kkt_residual_", "objective_"):
        assert getattr(loaded, attr) == getattr(est, attr), attr
    assert loaded.get_params()["max_bins"] == 64
    # a second save writes the same file
    path2 = tmp_path / "m2.json"
    save_model(loaded, path2)
    assert json.loads(path2.read_text())["features"] == json.loads(path.read_text())["features"]


def test_model_dict_layout() -> None:
    X, y = _toy(n=200)
    est = FASTRegressor(max_bins=16).fit(X, y)
    d = model_to_dict(est, feature_names=FEATURES)
    assert d["format"] == "fastpcam.pcam" and d["schema_version"] == SCHEMA_VERSION and d["task"] == "regression"
    assert d["fastpcam_version"] == fastpcam.__version__
    assert [f["name"] for f in d["features"]] == FEATURES
    assert type(d["intercept"]) is float and type(d["lambda_f"]) is float
    for f in d["features"]:
        assert len(f["values"]) == len(f["cuts"]) + 1
        assert all(type(v) is float for v in f["cuts"] + f["values"])
    assert set(d["fit"]) == {"n_iter", "converged", "kkt_residual", "objective"}
    assert json.loads(json.dumps(d)) == d  # plain JSON, floats exact


def test_round_trip_keeps_dataframe_feature_names(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    X, y = _toy(n=200)
    df = pd.DataFrame(X, columns=["alpha", "beta", "gamma"])
    est = FASTRegressor(max_bins=16).fit(df, y)
    save_model(est, tmp_path / "m.json")
    loaded = load_model(tmp_path / "m.json")
    assert list(loaded.feature_names_in_) == ["alpha", "beta", "gamma"]
    np.testing.assert_array_equal(loaded.predict(df), est.predict(df))


def test_newer_schema_version_is_rejected(tmp_path: Path) -> None:
    X, y = _toy(n=60)
    path = tmp_path / "m.json"
    save_model(FASTRegressor(max_bins=8).fit(X, y), path)
    d = json.loads(path.read_text())
    d["schema_version"] = SCHEMA_VERSION + 1
    path.write_text(json.dumps(d))
    with pytest.raises(ValueError, match=f"schema_version {SCHEMA_VERSION + 1}, newer"):
        load_model(path)


@pytest.mark.parametrize(
    "edit, match",
    [
        (lambda d: d.update(format="sklearn.pickle"), "format"),
        (lambda d: d.update(schema_version="1"), "schema_version"),
        (lambda d: d["features"][1]["values"].pop(), "len\\(values\\) == len\\(cuts\\) \\+ 1"),
        (lambda d: d.update(task="ranking"), "task"),
    ],
)
def test_malformed_model_file_is_rejected(tmp_path: Path, edit, match: str) -> None:  # type: ignore[no-untyped-def]
    X, y = _toy(n=60)
    path = tmp_path / "m.json"
    save_model(FASTRegressor(max_bins=8).fit(X, y), path)
    d = json.loads(path.read_text())
    edit(d)
    path.write_text(json.dumps(d))
    with pytest.raises(ValueError, match=match):
        load_model(path)


def test_not_json_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    path.write_text("not json")
    with pytest.raises(ValueError, match="not a JSON file"):
        load_model(path)


# ------------------------------------------------------------------------------- text view


def _fake_model(cuts: list[list[float]], values: list[list[float]]) -> SimpleNamespace:
    return SimpleNamespace(
        intercept_=0.5, cuts_=[np.array(c) for c in cuts], values_=[np.array(v) for v in values]
    )


def test_shape_segments_merge_equal_bins() -> None:
    segs = shape_segments([1.0, 2.0, 3.0], [0.0, 0.0, 1.5, -1.0])
    assert segs == [(-np.inf, 2.0, 0.0), (2.0, 3.0, 1.5), (3.0, np.inf, -1.0)]


def test_format_shape_functions_fake_model() -> None:
    model = _fake_model([[1.0, 2.0, 3.0], [0.5]], [[-1.0, -1.0, 0.0, 2.0], [0.0, 0.0]])
    text = format_shape_functions(model, feature_names=["size", "colour"])
    lines = text.splitlines()
    assert "1 of 2 features used" in lines[0]
    assert "size" in text and "3 levels" in text and "[-1, +2]" in text
    assert re.search(r"\[-inf, 2\) +→ -1\n", text) and re.search(r"\[3, inf\) +→ \+2", text)
    assert any(line.startswith("colour") and "flat (not used)" in line for line in lines)
    assert any(set(line.strip()) <= set("▁▂▃▄▅▆▇█") and line.strip() for line in lines)


def test_format_shape_functions_elides_small_segments() -> None:
    values = [float(v) for v in [0, 1, 0, 5, 0, 2, 0, -7, 0, 3]]
    model = _fake_model([list(map(float, range(1, 10)))], [values])
    text = format_shape_functions(model, max_segments=3)
    assert "→ +5" in text and "→ -7" in text and "→ +3" in text and "→ +1" not in text
    assert "7 of 10 segments elided" in text


def test_sparkline() -> None:
    assert sparkline([0.0, 1.0, 2.0, 7.0]) == "▁▂▃█"
    assert len(sparkline(np.arange(1000.0), width=40)) == 40


def test_format_shape_functions_fitted_model() -> None:
    X, y = _toy(n=200)
    X[:, 2] = 1.0  # constant column: flat shape
    est = FASTRegressor(max_bins=16).fit(X, y)
    text = format_shape_functions(est)
    assert text.splitlines()[-1].startswith("x2") and "flat (not used)" in text
    assert "x0" in text and "→" in text


# ------------------------------------------------------------------------------- data set


def test_load_houses() -> None:
    X, y, names = load_houses()
    assert X.shape == (20640, 8) and y.shape == (20640,)
    assert X.dtype == np.float64 and y.dtype == np.float64
    assert names[0] == "median_income" and names[-1] == "longitude"
    assert X[0, 0] == 8.325200080871582 and y[0] == 452600.0
    assert np.all(np.isfinite(X)) and np.all(np.isfinite(y))


def test_load_houses_as_frame() -> None:
    pytest.importorskip("pandas")
    ds = load_houses(as_frame=True)
    assert list(ds.data.columns) == ds.feature_names
    assert ds.frame.shape == (20640, 9) and ds.target.name == "target"
    np.testing.assert_array_equal(ds.data.to_numpy(), load_houses().data)


@pytest.mark.parametrize("tamper", ["list_for_number", "huge_number", "deep_nesting"])
def test_tampered_model_file_gives_a_message_not_a_traceback(tmp_path: Path, tamper: str) -> None:

    rng = np.random.default_rng(0)
    X = rng.normal(size=(100, 2))
    model = tmp_path / "m.json"
    save_model(FASTRegressor(lambda_ratio=0.01).fit(X, X[:, 0]), model)
    d = json.loads(model.read_text())
    if tamper == "list_for_number":
        d["features"][0]["missing_value"] = [1]
        text = json.dumps(d)
    elif tamper == "huge_number":
        text = json.dumps(d).replace('"intercept": ', '"intercept": 1' + "0" * 400 + ', "was": ', 1)
    else:
        text = '{"a": ' * 100_000 + "1" + "}" * 100_000
    model.write_text(text)
    data = tmp_path / "x.csv"
    data.write_text("x0,x1\n" + "\n".join(f"{a},{b}" for a, b in X[:5]) + "\n")
    run = subprocess.run([sys.executable, "-m", "fastpcam", "predict", str(model), str(data)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2
    assert run.stderr.startswith("fastpcam: error: ")
    assert "Traceback" not in run.stderr
