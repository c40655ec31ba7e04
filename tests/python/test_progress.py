"""The ``progress`` parameter: tqdm bars on fits, cross-validation folds, penalty paths and
the Parquet / Dask passes; ``"auto"`` only where a person watches; none without tqdm."""

from __future__ import annotations

import sys

import numpy as np
import pytest

pytest.importorskip("tqdm", reason="tqdm is not installed")

from fastpcam import FASTClassifier, FASTRegressor, FASTRegressorCV, lambda_path, sufficient_statistics  # noqa: E402
from fastpcam import _progress  # noqa: E402
from fastpcam._datasets import load_houses  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


@pytest.fixture(scope="module")
def houses():
    X, y, names = load_houses()
    return X[:3000], y[:3000], names


def test_a_fit_shows_its_block_updates_and_kkt(houses, capsys):
    X, y, _ = houses
    model = FASTRegressor(progress=True).fit(X, y)
    err = capsys.readouterr().err
    assert "FASTRegressor fit" in err and "updates" in err and "KKT" in err
    quiet = FASTRegressor(progress=False).fit(X, y)
    assert capsys.readouterr().err == ""
    # the bar does not change the model
    assert quiet.objective_ == model.objective_ and all(np.array_equal(a, b) for a, b in zip(quiet.values_, model.values_))


def test_classifier_fit_bar(houses, capsys):
    X, y, _ = houses
    FASTClassifier(progress=True, max_iter=200).fit(X, y > np.median(y))
    assert "FASTClassifier fit" in capsys.readouterr().err


def test_auto_shows_nothing_when_nobody_watches(houses, capsys, monkeypatch):
    X, y, _ = houses
    monkeypatch.setattr(_progress, "AUTO_DELAY", 0.0)
    assert FASTRegressor().get_params()["progress"] == "auto"
    FASTRegressor(max_iter=300).fit(X, y)  # stderr is captured: not a terminal
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(_progress, "interactive", lambda: True)  # as in a terminal
    FASTRegressor(max_iter=300).fit(X, y)
    assert "FASTRegressor fit" in capsys.readouterr().err


def test_auto_waits_before_showing_a_bar(monkeypatch, capsys):
    monkeypatch.setattr(_progress, "interactive", lambda: True)
    with _progress.bar("auto", desc="short job", total=3) as shown:  # done before AUTO_DELAY
        shown.update(3)
    assert "short job" not in capsys.readouterr().err
    with _progress.bar(True, desc="shown at once", total=3) as shown:
        shown.update(3)
    assert "shown at once" in capsys.readouterr().err


def test_verbose_is_unchanged_and_the_callback_still_runs(houses, capsys):
    X, y, _ = houses
    calls = []
    FASTRegressor(progress=True, verbose=1, callback=lambda *a: calls.append(a)).fit(X, y)
    captured = capsys.readouterr()
    assert "[FAST] done" in captured.out and "[FAST]" not in captured.err
    assert "FASTRegressor fit" in captured.err and calls
    stopped = FASTRegressor(progress=True, callback=lambda *a: False).fit(X, y)
    assert not stopped.converged_  # returning False still stops the fit


def test_without_tqdm_there_is_no_bar_and_no_error(houses, capsys, monkeypatch):
    X, y, _ = houses
    monkeypatch.setitem(sys.modules, "tqdm", None)
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    model = FASTRegressor(progress=True, max_iter=300).fit(X, y)
    assert model.n_iter_ > 0 and capsys.readouterr().err == ""


def test_bad_progress_values_name_the_parameter(houses):
    X, y, _ = houses
    with pytest.raises(ValueError, match="progress"):
        FASTRegressor(progress="always").fit(X, y)
    with pytest.raises(ValueError, match="progress"):
        sufficient_statistics(X, y, cuts=[np.array([0.0])] * X.shape[1], progress=2)


def test_cross_validation_counts_its_folds(houses, capsys):
    X, y, _ = houses
    FASTRegressorCV(cv=3, lambda_ratios=[0.1, 0.01], progress=True).fit(X[:1500], y[:1500])
    err = capsys.readouterr().err
    assert "FASTRegressorCV folds" in err and "3/3" in err
    assert "FASTRegressor fit" in err  # the refit on all the data


def test_lambda_path_shows_its_elapsed_time(houses, capsys):
    X, y, _ = houses
    path = lambda_path(X[:1500], y[:1500], n_lambdas=5, progress=True)
    assert len(path) == 5
    assert "lambda_path: 5 penalties" in capsys.readouterr().err
    lambda_path(X[:500], y[:500], n_lambdas=3, progress=False)
    assert capsys.readouterr().err == ""


def test_parquet_passes_count_their_rows(houses, tmp_path, capsys):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    from fastpcam import fit_from_parquet

    X, y, names = houses
    table = pa.table({**{n: X[:, j] for j, n in enumerate(names)}, "target": y})
    pq.write_table(table.slice(0, 1500), tmp_path / "a.parquet")
    pq.write_table(table.slice(1500), tmp_path / "b.parquet")
    model = fit_from_parquet(tmp_path, "target", batch_rows=500, progress=True, lambda_ratio=0.01)
    err = capsys.readouterr().err
    assert "Parquet sample pass" in err and "Parquet statistics pass" in err and "3.00k/3.00k" in err
    fit_from_parquet(tmp_path, "target", batch_rows=500, progress=False, lambda_ratio=0.01, max_iter=50)
    assert capsys.readouterr().err == ""
    assert model.n_features_in_ == len(names)


def test_dask_statistics_count_their_tasks(houses, capsys):
    da = pytest.importorskip("dask.array")
    import dask

    X, y, _ = houses
    Xd, yd = da.from_array(X, chunks=(500, X.shape[1])), da.from_array(y, chunks=500)
    with dask.config.set(scheduler="threads"):
        model = FASTRegressor(progress=True, lambda_ratio=0.01).fit(Xd, yd)
        err = capsys.readouterr().err
        assert "Dask statistics" in err and "tasks" in err
        cuts = model.cuts_
        stats = sufficient_statistics(Xd, yd, cuts=cuts, progress=True)
        assert "Dask statistics" in capsys.readouterr().err
        sufficient_statistics(Xd, yd, cuts=cuts, progress=False)
        assert capsys.readouterr().err == ""
    assert stats.n_features == X.shape[1]
