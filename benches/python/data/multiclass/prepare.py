"""Builds the multiclass tasks of this folder from their source files (run once, by hand).

Each source is a CSV in a public repository (README.md names the repository, commit and path);
``SOURCE_ROOT`` holds one bare git copy per repository, named ``owner+name/repo``. Every task is
written as ``<name>.csv.gz`` with its feature columns as in the source (strings left as strings)
and a column ``target`` holding the class labels as in the source; identifier columns are
dropped. Tasks above ``MAX_ROWS`` rows are subsampled without replacement with a fixed seed.

    python benches/python/data/multiclass/prepare.py /path/to/mirrors
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from _prepare import read_source, subsample, write  # noqa: E402

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


def build(root: Path, name: str) -> pd.DataFrame:
    repo, commit, path, opts, target, drop = SOURCES[name]
    df = read_source(root, repo, path, opts, commit)
    df.columns = [str(c).strip() for c in df.columns]
    X = df.drop(columns=[target, *drop])
    return subsample(X.assign(target=df[target].values))


def main() -> None:
    root = Path(sys.argv[1])
    for name in SOURCES:
        out = build(root, name)
        counts = out.target.value_counts()
        print(f"{write(HERE, name, out)}, {len(counts)} classes, smallest {counts.min()} / largest {counts.max()}")


if __name__ == "__main__":
    main()
