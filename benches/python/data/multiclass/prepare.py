"""Builds the multiclass tasks of this folder from their source files (run once, by hand).

Each source is a CSV in a public repository (README.md names the repository, commit and path);
``SOURCE_ROOT`` holds one bare git copy per repository, named ``owner+name/repo``. Every task is
written as ``<name>.csv.gz`` with its feature columns as in the source (strings left as strings)
and a column ``target`` holding the class labels as in the source; identifier columns are
dropped. Tasks above ``MAX_ROWS`` rows are subsampled without replacement with a fixed seed.

    python benches/python/data/multiclass/prepare.py /path/to/mirrors
"""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
MAX_ROWS = 20_000

# name: (repository, commit, path, read_csv options, target column, columns to drop)
SOURCES = {
    "student_dropout3": (
        "shahriariit/opendataset", "80e0971e0058181896fbc6ada68e0fdb7632d48f", "dropout_data.csv", {"sep": ";"},
        "Target", [],
    ),
    "body_performance": (
        "bdoncer/BodyPerformanceAnalysis", "87eff09541ca50e8e2ba4ee7b8e1dea35cf29f5d", "bodyPerformance.csv", {},
        "class", [],
    ),
    "dry_bean": (
        "urfie/datasets", "50e43c3112f1cdb77161aa0ffc7d84a120ebcb55", "Dry_Bean_Dataset.csv",
        {"sep": ";", "decimal": ","}, "Class", ["Bean ID"],
    ),
}


def read_source(root: Path, repo: str, commit: str, path: str, opts: dict) -> pd.DataFrame:
    git_dir = root / repo.replace("/", "+") / "repo"
    raw = subprocess.run(["git", "--git-dir", str(git_dir), "show", f"{commit}:{path}"], check=True,
                         capture_output=True).stdout
    return pd.read_csv(io.BytesIO(raw), encoding="utf-8-sig", **opts)


def build(root: Path, name: str) -> pd.DataFrame:
    repo, commit, path, opts, target, drop = SOURCES[name]
    df = read_source(root, repo, commit, path, opts)
    df.columns = [str(c).strip() for c in df.columns]
    X = df.drop(columns=[target, *drop])
    out = X.assign(target=df[target].values)
    if len(out) > MAX_ROWS:
        idx = np.sort(np.random.default_rng(0).choice(len(out), MAX_ROWS, replace=False))
        out = out.iloc[idx].reset_index(drop=True)
    return out


def main() -> None:
    root = Path(sys.argv[1])
    for name in SOURCES:
        out = build(root, name)
        out.to_csv(HERE / f"{name}.csv.gz", index=False, compression={"method": "gzip", "mtime": 0})
        kinds = out.drop(columns="target").dtypes
        n_str = int(sum(not pd.api.types.is_numeric_dtype(k) for k in kinds))
        counts = out.target.value_counts()
        print(f"{name}: {out.shape[0]} rows, {out.shape[1] - 1} features ({n_str} text), "
              f"{len(counts)} classes, smallest {counts.min()} / largest {counts.max()}")


if __name__ == "__main__":
    main()
