"""What the ``prepare.py`` scripts of ``binary/`` and ``multiclass/`` share: reading a source
CSV from a bare git copy of its repository, the seeded subsample of large tasks, and writing a
task as a gzipped CSV."""

from __future__ import annotations

import io
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd

#: Tasks above this many rows are subsampled without replacement (``default_rng(0)``).
MAX_ROWS = 20_000


def read_source(root: Path, repo: str, path: str, opts: dict, commit: str = "HEAD") -> pd.DataFrame:
    """The CSV at ``path`` of ``repo`` at ``commit``, from ``root/owner+name/repo``."""
    git_dir = root / repo.replace("/", "+") / "repo"
    raw = subprocess.run(["git", "--git-dir", str(git_dir), "show", f"{commit}:{path}"], check=True,
                         capture_output=True).stdout
    return pd.read_csv(io.BytesIO(raw), encoding="utf-8-sig", **opts)


def subsample(out: pd.DataFrame) -> pd.DataFrame:
    """At most :data:`MAX_ROWS` rows of ``out``, kept in source order."""
    if len(out) > MAX_ROWS:
        idx = np.sort(np.random.default_rng(0).choice(len(out), MAX_ROWS, replace=False))
        out = out.iloc[idx].reset_index(drop=True)
    return out


def write(folder: Path, name: str, out: pd.DataFrame) -> str:
    """Writes ``folder/<name>.csv.gz`` (reproducible bytes) and returns a summary line."""
    out.to_csv(folder / f"{name}.csv.gz", index=False, compression={"method": "gzip", "mtime": 0})
    kinds = out.drop(columns="target").dtypes
    n_str = int(sum(not pd.api.types.is_numeric_dtype(k) for k in kinds))
    return f"{name}: {out.shape[0]} rows, {out.shape[1] - 1} features ({n_str} text)"
