"""The command line (``fastpcam demo|fit|predict``), the JSON model format, the text view
and the shipped data set."""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import fastpcam
from fastpcam import FASTRegressor
from fastpcam._cli import main
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
    assert "Traceback" not in proc.stderr


def test_demo_in_process_saves_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "houses.json"
    assert main(["demo", "--lambda-f", "0.01", "--max-bins", "32", "--out", str(out), "--no-plot"]) == 0
    text = capsys.readouterr().out
    assert "lambda_f_ = 0.01" in text and "test MSE" in text
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
