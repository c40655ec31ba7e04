"""Feature-sparse FAST (AGIS, group ℓ0) against other ways to build models on K features.

The paper's feature-selection comparison (FAST §5.2) scoped to this machine: one 80/20 split
(``train_test_split(test_size=0.2, random_state=0)``, ``y`` standardised with the training
part's mean and std, see ``_data.py``) of five datasets with p >= 9, for
K in {2, 4, 6, 8, 10}:

* AGIS: ``fastpcam.SparseFASTRegressor(max_features=K, method="agis", n_jobs=2)``;
* group ℓ0: ``fastpcam.SparseFASTRegressor(max_features=K, method="l0", n_jobs=2)`` (the
  estimator searches the λ_s that gives at most K features);
* EBM rank-and-select: ``ExplainableBoostingRegressor(interactions=0, n_jobs=2)`` on every
  feature, keep the K features with the largest ``term_importances()``, refit on them;
* LASSO: ``sklearn.linear_model.lasso_path`` on standardised X (200 alphas, eps 1e-4); the
  model with the largest support <= K (the smallest alpha among those);
* FastSparseGAM (``pip install fastsparsegams``, L0Learn underneath) as the paper adapts it to
  PCAMs: one indicator column ``x_j > t`` per quantile threshold (<= 32 per feature), an L0
  path (``penalty="L0"``, ``max_support_size=200``, 100 lambdas); the solution with the most
  source features <= K. Skipped with a note if the package is missing.

Every other parameter is at its default. Reported: test MSE, the percent decrease of test MSE
(the paper's definition, ``(MSE_competitor − MSE_FAST) / MSE_FAST``: positive when FAST is
better) and fit times (seconds, one fit each; the machine is shared, so they are indicative).

The correlated-features experiment (FAST §6.1): 537_houses with 3, 6 and 9 noisy copies of its
strongest feature (the one AGIS selects first; copy = feature + N(0, (0.2·sd)²), correlation
≈ 0.98), test MSE of every method at every K (K <= p).

Results are cached per dataset in ``benches/python/out/feature_selection/`` (``--fresh`` to
refit everything, ``--refit-fast`` to refit only the FAST models); tables go to stdout and ``benches/python/out/feature_selection.md``. About 15–20 min
on 2 cores, almost all EBM::

    python benches/python/feature_selection.py
    python benches/python/feature_selection.py --datasets elevators --no-correlated
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path
from typing import Any, Callable, Optional

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _data  # noqa: E402

import fastpcam  # noqa: E402

DATASETS = ["201_pol", "574_house_16H", "elevators", "ailerons", "294_satellite_image"]
KS = [2, 4, 6, 8, 10]
COPIES = [0, 3, 6, 9]
METHODS = ["l0", "agis", "ebm_rs", "lasso", "fsg"]
LABEL = {"l0": "FAST ℓ0", "agis": "FAST AGIS", "ebm_rs": "EBM-RS", "lasso": "LASSO", "fsg": "FastSparseGAM"}
CACHE = _data.OUT_DIR / "feature_selection"


def timed(f: Callable[[], Any]) -> tuple[Any, float]:
    t = time.perf_counter()
    out = f()
    return out, time.perf_counter() - t


# ---------------------------------------------------------------------------- the methods


def run_fast(s: _data.Split, ks: list[int], method: str) -> dict[str, Any]:
    res: dict[str, Any] = {}
    for k in ks:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            m, t = timed(
                lambda: fastpcam.SparseFASTRegressor(max_features=k, method=method, n_jobs=2).fit(
                    s.X_train, s.y_train
                )
            )
        res[str(k)] = {
            "mse": _data.mse(s.y_test, m.predict(s.X_test)),
            "time": t,
            "support": [int(j) for j in m.support_],
            "n_iter": int(m.n_iter_),
            "converged": bool(m.converged_),
            "warnings": len(caught),
        }
    return res


def run_ebm_rs(s: _data.Split, ks: list[int]) -> dict[str, Any]:
    from interpret.glassbox import ExplainableBoostingRegressor

    full, t_full = timed(lambda: ExplainableBoostingRegressor(interactions=0, n_jobs=2).fit(s.X_train, s.y_train))
    imp = np.asarray(full.term_importances())
    order = np.argsort(-imp, kind="stable")
    # one term per feature (interactions=0): term i is feature term_features_[i][0]
    ranked = [int(full.term_features_[i][0]) for i in order]
    res: dict[str, Any] = {"full": {"mse": _data.mse(s.y_test, full.predict(s.X_test)), "time": t_full}}
    for k in ks:
        cols = sorted(ranked[:k])
        refit, t = timed(
            lambda: ExplainableBoostingRegressor(interactions=0, n_jobs=2).fit(s.X_train[:, cols], s.y_train)
        )
        res[str(k)] = {
            "mse": _data.mse(s.y_test, refit.predict(s.X_test[:, cols])),
            "time": t_full + t,
            "refit_time": t,
            "support": cols,
        }
    return res


def run_lasso(s: _data.Split, ks: list[int]) -> dict[str, Any]:
    from sklearn.linear_model import lasso_path

    def fit() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        mu, sd = s.X_train.mean(axis=0), s.X_train.std(axis=0)
        sd[sd == 0] = 1.0
        Z = (s.X_train - mu) / sd
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _, coefs, _ = lasso_path(Z, s.y_train - s.y_train.mean(), n_alphas=200, eps=1e-4)
        return mu, sd, coefs, (coefs != 0).sum(axis=0)

    (mu, sd, coefs, sizes), t = timed(fit)
    res: dict[str, Any] = {}
    for k in ks:
        ok = np.flatnonzero(sizes <= k)  # the largest support <= k, then the smallest alpha
        i = int(max(ok, key=lambda j: (sizes[j], j)))
        pred = ((s.X_test - mu) / sd) @ coefs[:, i] + s.y_train.mean()
        res[str(k)] = {"mse": _data.mse(s.y_test, pred), "time": t, "support": np.flatnonzero(coefs[:, i]).tolist()}
    return res


def _binarize(Xtr: np.ndarray, Xte: np.ndarray, n_thr: int = 32) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    cols_tr, cols_te, owner = [], [], []
    for j in range(Xtr.shape[1]):
        u = np.unique(Xtr[:, j])
        if len(u) <= n_thr + 1:
            thr = (u[:-1] + u[1:]) / 2
        else:
            thr = np.unique(np.quantile(Xtr[:, j], np.linspace(0, 1, n_thr + 2)[1:-1]))
        for t in thr:
            a = (Xtr[:, j] > t).astype(np.float64)
            if 0 < a.mean() < 1:
                cols_tr.append(a)
                cols_te.append((Xte[:, j] > t).astype(np.float64))
                owner.append(j)
    return np.column_stack(cols_tr), np.column_stack(cols_te), np.asarray(owner)


def run_fsg(s: _data.Split, ks: list[int]) -> Optional[dict[str, Any]]:
    try:
        import fastsparsegams as fsg
    except ImportError:
        return None

    def fit() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        Btr, Bte, owner = _binarize(s.X_train, s.X_test)
        f = fsg.fit(Btr, s.y_train, loss="SquaredError", penalty="L0", algorithm="CD", max_support_size=200,
                    num_lambda=100)
        C = f.coeff(include_intercept=True).toarray()
        return np.hstack([np.ones((len(Bte), 1)), Bte]) @ C, C, owner

    (pred, C, owner), t = timed(fit)
    n_feat = np.array([len(set(owner[np.flatnonzero(C[1:, i])].tolist())) for i in range(C.shape[1])])
    res: dict[str, Any] = {}
    for k in ks:
        ok = np.flatnonzero(n_feat <= k)
        i = int(max(ok, key=lambda j: (n_feat[j], j)))
        res[str(k)] = {"mse": _data.mse(s.y_test, pred[:, i]), "time": t, "n_features": int(n_feat[i])}
    return res


def run_all(s: _data.Split, ks: list[int], log: Callable[[str], None]) -> dict[str, Any]:
    out: dict[str, Any] = {"n_train": int(s.X_train.shape[0]), "p": int(s.p), "ks": ks}
    for method in METHODS:
        t = time.perf_counter()
        if method in ("l0", "agis"):
            out[method] = run_fast(s, ks, method)
        elif method == "ebm_rs":
            out[method] = run_ebm_rs(s, ks)
        elif method == "lasso":
            out[method] = run_lasso(s, ks)
        else:
            out[method] = run_fsg(s, ks)
        log(f"  {s.name}: {method} done in {time.perf_counter() - t:.1f} s")
    return out


def cached(
    key: str, fresh: bool, refit_fast: bool, s: _data.Split, ks: list[int], log: Callable[[str], None]
) -> dict[str, Any]:
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / f"{key}.json"
    if path.exists() and not fresh:
        res = json.loads(path.read_text())
        if not refit_fast:
            return res
        for method in ("l0", "agis"):
            res[method] = run_fast(s, ks, method)
        log(f"  {s.name}: FAST refitted, competitors from the cache")
    else:
        res = run_all(s, ks, log)
    path.write_text(json.dumps(res, indent=1))
    return res


def with_copies(s: _data.Split, j: int, n_copies: int, seed: int = 0) -> _data.Split:
    rng = np.random.default_rng(seed)
    sd = float(np.std(s.X_train[:, j]))
    tr, te = [s.X_train], [s.X_test]
    for _ in range(n_copies):
        tr.append((s.X_train[:, j] + rng.normal(scale=0.2 * sd, size=len(s.X_train)))[:, None])
        te.append((s.X_test[:, j] + rng.normal(scale=0.2 * sd, size=len(s.X_test)))[:, None])
    return _data.Split(
        name=f"{s.name}+{n_copies}",
        X_train=np.ascontiguousarray(np.hstack(tr)),
        X_test=np.ascontiguousarray(np.hstack(te)),
        y_train=s.y_train,
        y_test=s.y_test,
        feature_names=s.feature_names + [f"{s.feature_names[j]}_copy{i}" for i in range(n_copies)],
    )


# ---------------------------------------------------------------------------- tables


def pct(comp: float, fast: float) -> float:
    return 100.0 * (comp - fast) / fast


def fmt(v: Optional[float], spec: str = ".4f") -> str:
    return "–" if v is None or not np.isfinite(v) else format(v, spec)


def mse_table(results: dict[str, dict[str, Any]]) -> str:
    lines = ["| dataset (n_train × p) | K | " + " | ".join(LABEL[m] for m in METHODS) + " |",
             "|---|---|" + "---|" * len(METHODS)]
    for name, r in results.items():
        for k in r["ks"]:
            cells = [fmt(r[m][str(k)]["mse"]) if r.get(m) else "–" for m in METHODS]
            lines.append(f"| {name} ({r['n_train']} × {r['p']}) | {k} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def pct_table(results: dict[str, dict[str, Any]]) -> str:
    comps = [m for m in METHODS if m not in ("l0", "agis")]
    lines = ["| competitor | " + " | ".join(f"K={k}" for k in KS) + " |", "|---|" + "---|" * len(KS)]
    for c in comps:
        cells = []
        for k in KS:
            vals = {f: [pct(r[c][str(k)]["mse"], r[f][str(k)]["mse"]) for r in results.values()
                        if r.get(c) and str(k) in r[c]] for f in ("l0", "agis")}
            cells.append(" / ".join(fmt(np.mean(vals[f]) if vals[f] else None, "+.1f") + "%" for f in ("l0", "agis")))
        lines.append(f"| {LABEL[c]} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def pct_detail_table(results: dict[str, dict[str, Any]]) -> str:
    comps = [m for m in METHODS if m not in ("l0", "agis")]
    lines = ["| dataset | K | " + " | ".join(f"vs {LABEL[c]}" for c in comps) + " |", "|---|---|" + "---|" * len(comps)]
    for name, r in results.items():
        for k in r["ks"]:
            cells = []
            for c in comps:
                if not r.get(c):
                    cells.append("–")
                    continue
                cm = r[c][str(k)]["mse"]
                cells.append(" / ".join(fmt(pct(cm, r[f][str(k)]["mse"]), "+.1f") + "%" for f in ("l0", "agis")))
            lines.append(f"| {name} | {k} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def time_table(results: dict[str, dict[str, Any]]) -> str:
    lines = ["| dataset | FAST ℓ0, per K (2/4/6/8/10) | FAST AGIS, per K | EBM full fit | EBM refit, per K | LASSO path | FastSparseGAM path |",
             "|---|---|---|---|---|---|---|"]
    for name, r in results.items():
        per_k = lambda m, key="time": "/".join(fmt(r[m][str(k)][key], ".2f") for k in r["ks"])  # noqa: E731
        fsg = fmt(r["fsg"][str(r["ks"][0])]["time"], ".1f") if r.get("fsg") else "–"
        lines.append(
            f"| {name} | {per_k('l0')} | {per_k('agis')} | {fmt(r['ebm_rs']['full']['time'], '.1f')} | "
            f"{per_k('ebm_rs', 'refit_time')} | {fmt(r['lasso'][str(r['ks'][0])]['time'], '.2f')} | {fsg} |"
        )
    return "\n".join(lines)


def correlated_table(corr: dict[str, dict[str, Any]]) -> str:
    lines = ["| copies of the strongest feature | K | " + " | ".join(LABEL[m] for m in METHODS) + " | FAST ℓ0 support |",
             "|---|---|" + "---|" * (len(METHODS) + 1)]
    for name, r in corr.items():
        for k in r["ks"]:
            cells = [fmt(r[m][str(k)]["mse"]) if r.get(m) else "–" for m in METHODS]
            lines.append(f"| {name} | {k} | " + " | ".join(cells) + f" | {r['l0'][str(k)]['support']} |")
    return "\n".join(lines)


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", default=",".join(DATASETS))
    ap.add_argument("--no-correlated", action="store_true", help="skip the 537_houses experiment")
    ap.add_argument("--fresh", action="store_true", help="refit instead of reading the cache")
    ap.add_argument("--refit-fast", action="store_true", help="refit FAST only; competitors from the cache")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()

    def log(msg: str) -> None:
        print(f"[{time.perf_counter() - t0:7.1f} s] {msg}", file=sys.stderr, flush=True)

    info = _data.machine_info()
    try:
        import interpret

        info["interpret"] = interpret.__version__
    except ImportError:
        print("interpret-core is needed for EBM-RS: pip install interpret-core", file=sys.stderr)
        return 1
    notes: list[str] = []
    try:
        import fastsparsegams  # noqa: F401
    except ImportError:
        notes.append("FastSparseGAM: not installed (`pip install fastsparsegams`); its columns are empty.")

    results: dict[str, dict[str, Any]] = {}
    for name in [d for d in args.datasets.split(",") if d]:
        log(f"{name} ...")
        s = _data.load(name)
        ks = [k for k in KS if k <= s.p]
        results[name] = cached(name, args.fresh, args.refit_fast, s, ks, log)

    corr: dict[str, dict[str, Any]] = {}
    strongest = None
    if not args.no_correlated:
        base = _data.load("537_houses")
        strongest = int(fastpcam.SparseFASTRegressor(max_features=1, n_jobs=2).fit(base.X_train, base.y_train).support_[0])
        for c in COPIES:
            s = with_copies(base, strongest, c)
            ks = [k for k in KS if k <= s.p]
            log(f"537_houses + {c} copies of feature {strongest} ({base.feature_names[strongest]}) ...")
            corr[f"{c}"] = cached(f"537_houses_copies{c}", args.fresh, args.refit_fast, s, ks, log)

    out = [
        "# Feature-sparse FAST vs competitors (one 80/20 split, y standardised)",
        "",
        _data.machine_line(info),
        "",
        "## Test MSE",
        "",
        mse_table(results),
        "",
        "## Percent decrease of test MSE, FAST ℓ0 / FAST AGIS vs each competitor (mean over datasets)",
        "",
        "`(MSE_competitor − MSE_FAST) / MSE_FAST`: positive = FAST better.",
        "",
        pct_table(results),
        "",
        "### Per dataset (ℓ0 / AGIS)",
        "",
        pct_detail_table(results),
        "",
        "## Fit times (s)",
        "",
        "EBM-RS at K costs the full fit plus the refit. LASSO and FastSparseGAM fit one path for all K.",
        "",
        time_table(results),
    ]
    if corr:
        out += [
            "",
            f"## Correlated features: 537_houses with noisy copies of feature {strongest} "
            f"({_data.load('537_houses').feature_names[strongest]}), test MSE",
            "",
            correlated_table(corr),
        ]
    if notes:
        out += ["", "Notes:", ""] + [f"- {n}" for n in notes]
    text = "\n".join(out) + "\n"
    print(text)
    _data.OUT_DIR.mkdir(parents=True, exist_ok=True)
    (_data.OUT_DIR / "feature_selection.md").write_text(text)
    log("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
