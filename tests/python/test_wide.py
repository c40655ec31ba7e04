"""Binning a wide row-major (C-ordered) matrix is linear in memory: the same data in C and
Fortran order bin within the same memory cap (a C-ordered 5 x 60,000 matrix once needed
about 3 GB, for tiles that each copied the rest of the row)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

resource = pytest.importorskip("resource", reason="needs POSIX resource limits")

CAP = 1536 << 20  # bytes of address space for the whole interpreter

SCRIPT = textwrap.dedent(
    f"""
    import resource, sys
    import numpy as np
    import fastpcam
    resource.setrlimit(resource.RLIMIT_AS, ({CAP}, {CAP}))
    rng = np.random.default_rng(0)
    X = rng.normal(size=(5, 60_000))
    X = np.ascontiguousarray(X) if sys.argv[1] == "C" else np.asfortranarray(X)
    y = rng.normal(size=5)
    print(fastpcam.lambda_max(X, y, n_jobs=2))
    """
)


@pytest.mark.parametrize("order", ["C", "F"])
def test_wide_matrix_bins_within_a_memory_cap(order):
    run = subprocess.run([sys.executable, "-c", SCRIPT, order], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert float(run.stdout.strip()) > 0
