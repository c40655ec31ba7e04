"""``fastpcam.plot.shape_functions`` (matplotlib, Agg backend) and the demo's plot."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from fastpcam import FASTRegressor
from fastpcam._cli import main

from _data import make_additive

matplotlib = pytest.importorskip("matplotlib", reason="matplotlib is the optional `plot` extra")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import StepPatch  # noqa: E402

from fastpcam import plot  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def model():
    X, y = make_additive(n=500, p=3, seed=0)
    X = np.column_stack([X, np.full(len(y), 2.0)])  # a flat (constant) 4th feature
    miss = np.random.default_rng(0).uniform(size=len(y)) < 0.2
    X[miss, 1] = np.nan
    y = y + 1.5 * miss
    return FASTRegressor(max_bins=32, lambda_ratio=3e-3).fit(X, y), X


def _shape_patch(ax):
    (patch,) = [p for p in ax.patches if isinstance(p, StepPatch) and p.get_label() == "shape"]
    return patch


def test_one_axes_per_feature_and_the_steps_are_the_values(model):
    m, _ = model
    fig = plot.shape_functions(m, ncols=3)
    assert len(fig.axes) == 4  # 2 rows x 3 columns, the 2 spare axes removed
    for j, ax in enumerate(fig.axes):
        data = _shape_patch(ax).get_data()
        np.testing.assert_array_equal(data.values, m.values_[j])
        np.testing.assert_array_equal(data.edges[1:-1], m.cuts_[j])
        assert ax.get_title().startswith(f"x{j}")


def test_density_rug_follows_the_bin_weights(model):
    m, _ = model
    ax = plot.shape_functions(m, features=[0]).axes[0]
    (rug,) = [p for p in ax.patches if p.get_label() == "density"]
    data = rug.get_data()
    density = m.bin_weights_[0] / np.diff(data.edges)
    np.testing.assert_allclose(data.values / data.values.max(), density / density.max(), rtol=1e-12)
    assert plot.shape_functions(m, features=[0], rug=False).axes[0].patches[-1].get_label() != "density"


def test_missing_bin_is_drawn_apart(model):
    m, _ = model
    fig = plot.shape_functions(m, features=["x1", "x0"])
    ax1, ax0 = fig.axes
    (miss,) = [line for line in ax1.get_lines() if line.get_label() == "missing"]
    assert miss.get_ydata()[0] == m.missing_values_[1]
    assert miss.get_xdata()[0] > _shape_patch(ax1).get_data().edges[-1]  # right of the steps
    assert not [line for line in ax0.get_lines() if line.get_label() == "missing"]  # x0 has none


def test_feature_selection_names_and_errors(model):
    m, _ = model
    fig = plot.shape_functions(m, features=[2, "a"], feature_names=["a", "b", "c", "d"], importances=False)
    assert [ax.get_title() for ax in fig.axes] == ["c", "a"]
    fig = plot.shape_functions(m, features="b", feature_names=["a", "b", "c", "d"])
    assert len(fig.axes) == 1
    with pytest.raises(ValueError, match="unknown feature 'nope'"):
        plot.shape_functions(m, features=["nope"])
    with pytest.raises(ValueError, match="out of range"):
        plot.shape_functions(m, features=[9])
    with pytest.raises(ValueError, match="ncols"):
        plot.shape_functions(m, ncols=0)
    with pytest.raises(ValueError, match="feature_names has 2 names"):
        plot.shape_functions(m, feature_names=["a", "b"])


def test_categorical_feature_is_drawn_as_bars():
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(1)
    df = pd.DataFrame({"a": rng.uniform(size=400), "c": pd.Categorical(rng.choice(["u", "v", "w"], size=400))})
    y = df["a"].to_numpy() + (df["c"] == "u").to_numpy() + 0.1 * rng.normal(size=400)
    m = FASTRegressor(max_bins=16).fit(df, y)
    if getattr(m, "categories_", [None, None])[1] is None:
        pytest.skip("this build has no categorical features")
    ax = plot.shape_functions(m, features=["c"]).axes[0]
    (bars,) = [c for c in ax.containers if c.get_label() == "shape"]
    np.testing.assert_array_equal([p.get_height() for p in bars], m.values_[1])
    assert [t.get_text() for t in ax.get_xticklabels()] == [str(c) for c in m.categories_[1]]


def test_missing_matplotlib_names_the_plot_extra(model, monkeypatch):
    m, _ = model
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)  # import fails
    with pytest.raises(ImportError, match=r"fastpcam\[plot\]"):
        plot.shape_functions(m)


# ----------------------------------------------------------------------------- the demo's plot


def test_demo_saves_its_plot(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["demo", "--max-bins", "32", "--lambda-f", "0.01"]) == 0  # default file name
    assert "shape functions plotted to fastpcam_demo_shapes.png" in capsys.readouterr().out
    assert (tmp_path / "fastpcam_demo_shapes.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    out = tmp_path / "sub.png"
    assert main(["demo", "--max-bins", "32", "--lambda-f", "0.01", "--plot", str(out)]) == 0
    assert out.stat().st_size > 10_000


def test_demo_no_plot_and_without_matplotlib(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["demo", "--max-bins", "32", "--lambda-f", "0.01", "--no-plot"]) == 0
    assert "plotted" not in capsys.readouterr().out
    assert not list(tmp_path.iterdir())
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert main(["demo", "--max-bins", "32", "--lambda-f", "0.01"]) == 0
    assert "plot skipped: matplotlib is not installed" in capsys.readouterr().out
    assert not list(tmp_path.iterdir())
