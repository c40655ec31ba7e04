"""``model.to_html()`` and ``fastpcam report``: one self-contained HTML file, opened in
headless Chromium (no console error, no network request, plots drawn, hover works, and a
screenshot that is not blank)."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import sys

import numpy as np
import pytest

pytest.importorskip("plotly", reason="the report extra is not installed")
pd = pytest.importorskip("pandas", reason="the test data are a DataFrame")

from sklearn.exceptions import NotFittedError  # noqa: E402

from fastpcam import FASTClassifier, FASTRegressor, FASTRegressorCV, SparseFASTRegressor  # noqa: E402
from fastpcam._cli import main  # noqa: E402

from _html import plotly_figures, report_text, strings_of  # noqa: E402
from test_onnx import _data, _set_pairs  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
CAT = {"categorical_features": ["region", "age_class"]}
#: Where the browser test leaves its screenshot (the docs' picture is made the same way).
SCREENSHOT_DIR = os.environ.get("FASTPCAM_SCREENSHOT_DIR")


@pytest.fixture(scope="module")
def data():
    return _data(n=2000)


@pytest.fixture(scope="module")
def model(data):
    X, y, _ = data
    m = FASTRegressor(**CAT, interactions=0).fit(X, y)  # _set_pairs adds the pairs
    _set_pairs(m, X)
    return m


def test_report_is_one_offline_file_with_every_part(model, tmp_path):
    path = tmp_path / "report.html"
    doc = model.to_html(path)
    assert path.read_text(encoding="utf-8") == doc
    # nothing is loaded from elsewhere: no external script, stylesheet, image or frame
    assert not re.search(r"<(script|img|iframe)[^>]*\ssrc=", doc, flags=re.I)
    assert not re.search(r"<link[^>]*href=", doc, flags=re.I)
    assert doc.count("<script") >= 2 and len(doc) > 1_000_000  # plotly.js inlined
    figures = plotly_figures(doc)
    traces = [t for data, _ in figures for t in json.loads(data)]
    # the penalty path, the importances, one figure per feature, one heatmap per pair
    assert len(figures) == 2 + model.n_features_in_ + 3
    assert sum(t.get("type") == "heatmap" for t in traces) == 3
    hover = " ".join(" ".join(map(str, t.get("hovertext") or t.get("text") or [])) for t in traces)
    assert "bin 0: [−∞," in hover and "weight" in hover and "missing bin" in hover
    assert "category north" in hover or "category south" in hover
    for value in (model.kkt_residual_, model.lambda_f_):
        assert f"{value:.6g}" in doc
    assert "median_income × housing_median_age" in report_text(doc)
    assert "Held-out path of the penalty" in doc


def test_report_of_classifiers_cv_and_a_model_file(data, tmp_path):
    X, y, _ = data
    classes = np.array(["low", "mid", "high"])[np.digitize(y, np.quantile(y, [0.33, 0.66]))]
    multi = FASTClassifier(**CAT, max_iter=300).fit(X, classes)
    doc = multi.to_html()
    traces = [t for data, _ in plotly_figures(doc) for t in json.loads(data)]
    assert {"low", "mid", "high"} <= {t.get("name") for t in traces}  # one trace per class
    cv = FASTRegressorCV(cv=3, lambda_ratios=[0.1, 0.01, 0.001], **CAT).fit(X, y)
    assert "mean validation MSE (CV)" in cv.to_html()
    binary = FASTClassifier(**CAT, max_iter=300).fit(X, y > np.median(y))
    assert "validation_log_loss" in binary.to_html() and "log-odds" in binary.to_html()
    sparse = SparseFASTRegressor(max_features=3).fit(X.drop(columns=["region"]), y)
    doc = sparse.to_html()
    assert "Flat (unused) features:" in doc and len(plotly_figures(doc)) == 1 + 3  # importances and 3 shapes (no path)
    poisson = FASTRegressor(loss="poisson", max_iter=300, **CAT).fit(X, y / 1e5)
    assert "validation_deviance" in poisson.to_html()
    # a model read back from JSON (no held-out path stored) still reports
    loaded = FASTRegressor.from_json(FASTRegressor(**CAT, max_iter=200).fit(X, y).to_json())
    doc = loaded.to_html(max_features=3)
    assert "Not drawn (" in doc and len(plotly_figures(doc)) >= 4


HOSTILE = '<a href="https://evil.example/x">click</a>'
#: The markup the report itself writes in plotly text; any other tag came from a name.
OWN_TAGS = re.compile(r"<br>|<span style='[^'<>]*'>|</span>|<extra></extra>")


def _hostile_models():
    """Models whose feature, category and class names are all the same link."""
    rng = np.random.default_rng(5)
    n = 600
    X = pd.DataFrame({
        HOSTILE: rng.uniform(size=n),
        "b & <i>c</i>": rng.uniform(size=n),
        "cat": pd.Categorical(rng.choice([HOSTILE, "<b>bold</b>", "plain"], n)),
    })
    y = X[HOSTILE] * X["b & <i>c</i>"] + (X["cat"] == HOSTILE)
    regressor = FASTRegressor(interactions=[(HOSTILE, "b & <i>c</i>"), (HOSTILE, "cat")], max_iter=2000).fit(X, y)
    labels = np.array([HOSTILE, "<b>x</b>", "z"])[np.digitize(y, np.quantile(y, [0.33, 0.66]))]
    multiclass = FASTClassifier(interactions=[(HOSTILE, "cat")], max_iter=300).fit(X, labels)
    return regressor, multiclass


@pytest.mark.parametrize("which", [0, 1], ids=["regressor", "multiclass"])
def test_names_reach_plotly_as_text_not_markup(which):
    """plotly reads <a href>, <b>, <i>, ... in titles, axis, tick, legend and hover labels:
    every name is escaped, so the only tags in the figures are the report's own."""
    model = _hostile_models()[which]
    doc = model.to_html()
    strings = []
    for data, layout in plotly_figures(doc):
        strings += list(strings_of(json.loads(data))) + list(strings_of(json.loads(layout)))
    foreign = sorted({tag for s in strings for tag in re.findall(r"<[^<>]*>", OWN_TAGS.sub("", s))})
    assert foreign == [], foreign
    escaped = HOSTILE.replace("<", "&lt;").replace(">", "&gt;")  # plotly decodes it back to the name
    assert sum(escaped in s for s in strings) >= 5  # titles, ticks, hover, legend: the name as text
    assert any("b &amp; &lt;i&gt;c&lt;/i&gt;" in s for s in strings)
    page = re.sub(r"<script.*?</script>", "", doc, flags=re.S | re.I)  # the page outside the figures
    assert "evil.example" in html.unescape(page) and not re.search(r"<a\s", page, flags=re.I)


def test_cli_report(model, tmp_path, capsys):
    path = tmp_path / "model.json"
    path.write_text(model.to_json())
    out = tmp_path / "r.html"
    assert main(["report", str(path), "--out", str(out), "--title", "Houses"]) == 0
    assert "<title>Houses</title>" in out.read_text(encoding="utf-8")
    assert main(["report", str(tmp_path / "missing.json"), "--out", str(out)]) == 2
    assert "error" in capsys.readouterr().err
    assert main(["report", str(path)]) == 2  # --out is required


def test_bad_arguments(model):
    with pytest.raises(NotFittedError):
        FASTRegressor().to_html()
    with pytest.raises(ValueError, match="max_features"):
        model.to_html(max_features=0)


def test_without_plotly_the_error_names_the_extra(model, monkeypatch):
    monkeypatch.setitem(sys.modules, "plotly", None)
    monkeypatch.setitem(sys.modules, "plotly.graph_objects", None)
    with pytest.raises(ImportError, match=r"fastpcam\[report\]"):
        model.to_html()


# --------------------------------------------------------------------------- browser


def _chromium():
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if binary is None or driver is None:
        if os.environ.get("CI"):  # .ci/run installs them: their absence there is a failure
            pytest.fail("CI needs Debian's chromium and chromium-driver for the report's browser test")
        pytest.skip("headless Chromium is not installed (Debian packages chromium and chromium-driver)")
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1300,1700",
                "--hide-scrollbars",
                # any request leaving the machine would fail (and be logged): the report must need none
                "--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>"):  # fmt: skip
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(driver), options=options)


@pytest.fixture(scope="module")
def browser():
    driver = _chromium()
    yield driver
    driver.quit()


def _errors(browser):
    return [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]


def test_the_console_check_catches_a_network_load(browser, tmp_path):
    page = tmp_path / "remote.html"
    page.write_text("<html><body><script src='http://fastpcam.invalid/x.js'></script>ok</body></html>")
    browser.get(page.as_uri())
    assert _errors(browser)  # a page that loads from the network is caught


def test_report_renders_in_headless_chromium(model, browser, tmp_path):
    import matplotlib.pyplot as plt

    path = tmp_path / "report.html"
    model.to_html(path)
    browser.get(path.as_uri())
    n_plots = browser.execute_script("return document.querySelectorAll('.js-plotly-plot .main-svg').length")
    assert n_plots >= 2 + model.n_features_in_ + 3
    assert browser.execute_script("return performance.getEntriesByType('resource').length") == 0
    # hovering a shape function shows its bin, value and weight
    text = browser.execute_script(
        """
        const plots = document.querySelectorAll('.js-plotly-plot');
        const gd = plots[2];
        Plotly.Fx.hover(gd, [{curveNumber: 0, pointNumber: 4}]);
        const label = gd.querySelector('.hoverlayer .hovertext');
        return label ? label.textContent : '';
        """
    )
    assert "value" in text and "weight" in text and "bin" in text
    assert _errors(browser) == []
    shot = tmp_path / "report.png"
    browser.save_screenshot(str(shot))
    pixels = plt.imread(shot)[..., :3]
    assert pixels.shape[0] > 1000 and pixels.shape[1] > 1000
    ink = np.mean(np.any(pixels < 0.9, axis=2))  # share of pixels that are not (near) white
    assert 0.02 < ink < 0.9, ink
    assert len(np.unique((pixels[::7, ::7] * 255).astype(np.uint8).reshape(-1, 3), axis=0)) > 20  # colour
    if SCREENSHOT_DIR:
        shutil.copy(shot, os.path.join(SCREENSHOT_DIR, "report.png"))


def test_hostile_names_render_as_text_in_chromium(browser, tmp_path):
    """In the browser, a name holding a link is text in the figures: no link element, and the
    name's characters are shown."""
    path = tmp_path / "hostile.html"
    _hostile_models()[0].to_html(path)
    browser.get(path.as_uri())
    links = browser.execute_script(
        "return Array.from(document.querySelectorAll('a')).map(a => a.getAttribute('href') || "
        "a.getAttributeNS('http://www.w3.org/1999/xlink', 'href') || '')"
    )
    assert not [href for href in links if "evil" in href], links
    shown = browser.execute_script(
        "return Array.from(document.querySelectorAll('.js-plotly-plot svg text')).map(t => t.textContent).join('\\n')"
    )
    assert HOSTILE in shown
    assert _errors(browser) == []


def test_to_html_docstring_passes_numpydoc():
    validate = pytest.importorskip("numpydoc.validate", reason="numpydoc is not installed").validate
    ignore = {"ES01", "SA01", "EX01", "RT02", "GL08"}  # as tests/python/test_docs.py
    assert [e for e in validate("fastpcam.FASTRegressor.to_html")["errors"] if e[0] not in ignore] == []
