"""Shared data loading and split protocol for the Python bench scripts.

Datasets live in ``/work/shared/data`` (override with the environment variable
``FASTPCAM_DATA_DIR``) and are listed in ``catalog.csv`` (``name,file,n,p,target,origin``).
Files are gzip'd tables: tab-separated ``.tsv.gz`` or comma-separated ``.csv.gz``.

Protocol (DESIGN.md §6): 80/20 split with ``train_test_split(test_size=0.2,
random_state=0)``; ``y`` is standardised with the training part's mean and standard
deviation (so a test MSE of 1 is the constant predictor's).

Missing values: FAST does not accept NaN yet (DESIGN.md §8), so :func:`load` drops every
column that is more than half missing, then every row with a missing value left. Only
``gamair_chicago`` is affected (``pm25median`` is 86% missing and is dropped; then 276 rows
with a missing ``pm10median``/``so2median`` go); :func:`load` reports what it dropped.

To measure a frozen build while the working tree is being edited, copy the built package and
point ``PYTHONPATH`` at the copy (a ``SNAPSHOT_INFO`` file next to it is recorded)::

    mkdir -p /tmp/fastpcam_site && cp -r python/fastpcam /tmp/fastpcam_site/
    (date -u; git rev-parse HEAD; git status --short) > /tmp/fastpcam_site/SNAPSHOT_INFO
    PYTHONPATH=/tmp/fastpcam_site python benches/python/compare_ebm.py  # or any other script
"""

from __future__ import annotations

import csv
import json
import os
import platform
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import numpy as np
import pandas as pd
from sklearn.model_selection import train_test_split

DATA_DIR = Path(os.environ.get("FASTPCAM_DATA_DIR", "/work/shared/data"))
OUT_DIR = Path(__file__).resolve().parent / "out"


@dataclass
class Entry:
    name: str
    file: str
    n: int
    p: int
    target: str
    origin: str


@dataclass
class Split:
    name: str
    X_train: np.ndarray
    X_test: np.ndarray
    y_train: np.ndarray
    y_test: np.ndarray
    feature_names: list[str]
    notes: list[str] = field(default_factory=list)

    @property
    def n(self) -> int:
        return self.X_train.shape[0] + self.X_test.shape[0]

    @property
    def p(self) -> int:
        return self.X_train.shape[1]


def catalog() -> dict[str, Entry]:
    """The catalog as an ordered dict name -> Entry (catalog order)."""
    with open(DATA_DIR / "catalog.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    return {
        r["name"]: Entry(r["name"], r["file"], int(r["n"]), int(r["p"]), r["target"], r["origin"])
        for r in rows
    }


def read_frame(entry: Entry) -> pd.DataFrame:
    sep = "\t" if entry.file.endswith(".tsv.gz") or entry.file.endswith(".tsv") else ","
    return pd.read_csv(DATA_DIR / entry.file, sep=sep, compression="infer")


def load(name: str, test_size: float = 0.2, random_state: int = 0) -> Split:
    """Load ``name`` and return the standardised 80/20 split (float64, C order)."""
    entry = catalog()[name]
    df = read_frame(entry)
    if entry.target not in df.columns:
        raise KeyError(f"{name}: target column {entry.target!r} not in {list(df.columns)}")
    notes: list[str] = []
    y_all = df.pop(entry.target)
    frac_missing = df.isna().mean()
    drop_cols = [c for c in df.columns if frac_missing[c] > 0.5]
    if drop_cols:
        df = df.drop(columns=drop_cols)
        notes.append(
            "dropped mostly-missing columns "
            + ", ".join(f"{c} ({100 * frac_missing[c]:.0f}% NaN)" for c in drop_cols)
        )
    keep = df.notna().all(axis=1) & y_all.notna()
    if not keep.all():
        notes.append(f"dropped {int((~keep).sum())} rows with missing values")
        df = df[keep]
        y_all = y_all[keep]
    X = np.ascontiguousarray(df.to_numpy(dtype=np.float64))
    y = y_all.to_numpy(dtype=np.float64)
    X_tr, X_te, y_tr, y_te = train_test_split(
        X, y, test_size=test_size, random_state=random_state
    )
    mu = float(np.mean(y_tr))
    sd = float(np.std(y_tr))
    if sd == 0.0:
        sd = 1.0
    return Split(
        name=name,
        X_train=np.ascontiguousarray(X_tr),
        X_test=np.ascontiguousarray(X_te),
        y_train=(y_tr - mu) / sd,
        y_test=(y_te - mu) / sd,
        feature_names=[str(c) for c in df.columns],
        notes=notes,
    )


def mse(y: np.ndarray, pred: np.ndarray) -> float:
    return float(np.mean((np.asarray(y) - np.asarray(pred)) ** 2))


def timed_fits(make, X, y, repeats: int = 1):  # type: ignore[no-untyped-def]
    """Fits ``make()`` on ``(X, y)`` ``repeats`` times (at least once), warnings silenced;
    returns the last model and every fit's wall time in seconds."""
    import time
    import warnings

    times: list[float] = []
    model = None
    for _ in range(max(1, repeats)):
        model = make()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.perf_counter()
            model.fit(X, y)
            times.append(time.perf_counter() - t0)
    return model, times


def report_header(title: str, info: dict[str, object], load_end: object) -> list[str]:
    """The opening lines of a FAST-against-EBM report: its title, the machine, the code state
    (``info`` from :func:`machine_info` at the start) and the load at its start and end."""
    md = [f"# {title}", "", machine_line(info)]
    code = info.get("code_state")
    if isinstance(code, list) and code:
        md += ["", f"Code: {' '.join(str(c) for c in code[:2])} (full state in the JSON)."]
    md += [
        "",
        f"Load average (1/5/15 min) at start {info.get('loadavg_1_5_15')}, at end {load_end}: "
        "timings include contention from other processes when these exceed the 2 cores.",
    ]
    return md


def write_report(out: Path, md: list[str], payload: dict[str, object]) -> None:
    """Prints the report ``md`` and writes it to ``out`` (a Markdown file) and ``payload`` next
    to it as JSON (``out`` with the suffix ``.json``)."""
    text = "\n".join(md) + "\n"
    print()
    print(text)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    with open(out.with_suffix(".json"), "w") as f:
        json.dump(payload, f, indent=1, default=str)
    print(f"wrote {out} and {out.with_suffix('.json')}")


def ratios(fast: dict[str, object], ebm: dict[str, object]) -> dict[str, float]:
    """EBM / FAST fit time and FAST / EBM test MSE of one table's results."""
    return {
        "speed_ratio": float(ebm["time"]) / max(float(fast["time"]), 1e-9),  # type: ignore[arg-type]
        "mse_ratio": float(fast["mse"]) / float(ebm["mse"]),  # type: ignore[arg-type]
    }


def _git_state(path: Path) -> list[str]:
    import subprocess

    def run(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=path, capture_output=True, text=True, check=False
        ).stdout.strip()

    import hashlib

    head = run("rev-parse", "HEAD")
    diff = run("diff", "HEAD")
    return [f"HEAD {head}", f"uncommitted diff sha1 {hashlib.sha1(diff.encode()).hexdigest()}"
            if diff else "clean"]


def machine_info() -> dict[str, object]:
    """Cores, CPU model and library versions, for the record."""
    model: Optional[str] = None
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count() or 0
    info: dict[str, object] = {
        "cpu_model": model,
        "logical_cores": os.cpu_count(),
        "usable_cores": usable,
        "python": platform.python_version(),
        "platform": platform.platform(),
    }
    try:
        info["loadavg_1_5_15"] = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        pass
    try:
        import fastpcam

        info["fastpcam"] = fastpcam.__version__
        pkg = Path(fastpcam.__file__).resolve().parent
        info["fastpcam_path"] = str(pkg)
        snap = pkg.parent / "SNAPSHOT_INFO"
        repo = Path(__file__).resolve().parents[2]
        if snap.exists():  # a frozen copy of the package (see the scripts' docstrings)
            info["code_state"] = snap.read_text().strip().splitlines()
        elif pkg.is_relative_to(repo):
            info["code_state"] = _git_state(pkg)
        else:
            # An installed copy: the git state of the directory it lies in says nothing
            # about it (set PYTHONPATH=python to measure this checkout's build).
            info["code_state"] = [f"installed package at {pkg}, not this checkout's python/"]
    except Exception:  # pragma: no cover - record, don't fail
        pass
    import sklearn

    info["sklearn"] = sklearn.__version__
    info["numpy"] = np.__version__
    return info


def machine_line(info: dict[str, object]) -> str:
    return (
        f"Machine: {info.get('cpu_model')}, {info.get('usable_cores')} usable cores "
        f"({info.get('logical_cores')} logical); Python {info.get('python')}, "
        f"fastpcam {info.get('fastpcam')}, scikit-learn {info.get('sklearn')}"
        + (f", interpret {info['interpret']}" if "interpret" in info else "")
        + "."
    )


# --------------------------------------------------------------------------------------
# Additive EBM reference, with a small JSON cache shared by the bench scripts.
# --------------------------------------------------------------------------------------
EBM_CACHE = OUT_DIR / "ebm_cache.json"


def _ebm_key(name: str, n_jobs: int, interactions: object = 0) -> str:
    import interpret  # imported only by bench scripts, never by the package

    return f"{name}|interactions={interactions}|n_jobs={n_jobs}|interpret={interpret.__version__}|split=0.2/0"


def load_ebm_cache() -> dict[str, dict[str, object]]:

    if EBM_CACHE.exists():
        with open(EBM_CACHE) as f:
            return dict(json.load(f))
    return {}


def save_ebm_cache(cache: dict[str, dict[str, object]]) -> None:

    OUT_DIR.mkdir(parents=True, exist_ok=True)
    tmp = EBM_CACHE.with_suffix(".json.tmp")
    with open(tmp, "w") as f:
        json.dump(cache, f, indent=1, sort_keys=True)
    os.replace(tmp, EBM_CACHE)


def fit_ebm(split: Split, n_jobs: int = 2, interactions: object = 0) -> dict[str, object]:
    """Fit an EBM (``interactions=0`` by default: additive; ``"default"``: InterpretML's own
    default, pairs included); return mse and time."""
    from interpret.glassbox import ExplainableBoostingRegressor

    extra = {} if interactions == "default" else {"interactions": interactions}
    model, (elapsed,) = timed_fits(
        lambda: ExplainableBoostingRegressor(n_jobs=n_jobs, **extra), split.X_train, split.y_train
    )
    return {"mse": mse(split.y_test, model.predict(split.X_test)), "time": elapsed}


def ebm_result(
    split: Split, n_jobs: int = 2, repeats: int = 1, use_cache: bool = True, interactions: object = 0
) -> dict[str, object]:
    """The additive EBM's test MSE and median fit time over ``repeats`` fits.

    With ``use_cache`` a cached entry holding at least ``repeats`` timings is returned
    without fitting (``cached=True``); otherwise the EBM is fitted ``repeats`` times and the
    cache entry is replaced.
    """
    cache = load_ebm_cache()
    key = _ebm_key(split.name, n_jobs, interactions)
    entry = cache.get(key)
    if use_cache and entry is not None and len(entry.get("times", [])) >= repeats:  # type: ignore[arg-type]
        return dict(entry, cached=True)
    fits = [fit_ebm(split, n_jobs=n_jobs, interactions=interactions) for _ in range(max(1, repeats))]
    times = [float(r["time"]) for r in fits]  # type: ignore[arg-type]
    entry = {
        "mse": fits[-1]["mse"],
        "time": float(np.median(times)),
        "times": times,
        "n": split.n,
        "p": split.p,
    }
    cache = load_ebm_cache()  # re-read: another script may have written meanwhile
    cache[key] = entry
    save_ebm_cache(cache)
    return dict(entry, cached=False)
