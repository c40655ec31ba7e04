"""What ``outer_bags`` buys on the real binary tasks of ``compare_ebm_classifier.py --real``,
and what it costs.

Accuracy (default): every task is fitted with ``FASTClassifier(n_jobs=2, random_state=s)``
for ``s`` in ``0..--seeds`` (the seed of the held-out rows), and the test scores of ``k``
consecutive seeds are averaged, which is the model ``outer_bags=k`` fits (tested in
``tests/python/test_outer_bags.py``). For each ``k`` the table gives the geometric mean over
the disjoint groups of ``k`` seeds of the test log-loss, divided by EBM's default's
(``compare_ebm_classifier.EBM_REAL``, the figures of ``results/compare_ebm_classifier_real.md``),
so ``k = 1`` is the expected single fit, not the one at ``random_state=0``.

Time (``--time``): fresh processes, ``outer_bags`` 1, 2 and 4 alternating, ``--repeats``
each; the medians and their ratios to one bag.

    python benches/python/outer_bags.py [--seeds 8] [--tasks a,b] [--time] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.metrics import log_loss

sys.path.insert(0, str(Path(__file__).parent))
import compare_ebm_classifier as c  # noqa: E402

from fastpcam import FASTClassifier  # noqa: E402


def scores(names: list[str], seeds: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per task, the test scores at every seed (seeds × rows) and the test labels."""
    out = {}
    for name, X_tr, X_te, y_tr, y_te in c.real_tasks(names):
        rows = []
        for s in range(seeds):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                m = FASTClassifier(n_jobs=2, random_state=s).fit(X_tr, y_tr)
            rows.append(m.decision_function(X_te))
        out[name] = (np.array(rows), np.asarray(y_te))
        print(name, flush=True)
    return out


def accuracy_table(res: dict[str, tuple[np.ndarray, np.ndarray]], seeds: int) -> str:
    ks = list(range(1, seeds + 1))
    lines = ["| task | " + " | ".join(f"{k} bag{'s' if k > 1 else ''}" for k in ks) + " |",
             "|---|" + "---:|" * len(ks)]
    logs: dict[int, list[float]] = {k: [] for k in ks}
    for name, (F, y) in res.items():
        ref = c.EBM_REAL[name]
        cells = []
        for k in ks:
            groups = [F[g * k:(g + 1) * k].mean(axis=0) for g in range(seeds // k)]
            r = math.exp(np.mean([math.log(log_loss(y, 1 / (1 + np.exp(-f)), labels=[0, 1]) / ref) for f in groups]))
            logs[k].append(math.log(r))
            cells.append(f"{r:.4f}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines.append("| **geometric mean** | " + " | ".join(f"**{math.exp(np.mean(logs[k])):.4f}**" for k in ks) + " |")
    return "\n".join(lines)


def one_fit(name: str, bags: int) -> float:
    for _, X_tr, _, y_tr, _ in c.real_tasks([name]):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = time.perf_counter()
            FASTClassifier(n_jobs=2, outer_bags=bags).fit(X_tr, y_tr)
            return time.perf_counter() - t
    raise ValueError(name)


def time_table(names: list[str], repeats: int) -> str:
    bags = (1, 2, 4)
    times: dict[tuple[str, int], list[float]] = {}
    for _ in range(repeats):
        for name in names:
            for b in bags:
                out = subprocess.run([sys.executable, __file__, "--one", name, str(b)], capture_output=True, text=True, check=True)
                times.setdefault((name, b), []).append(float(out.stdout.strip().splitlines()[-1]))
    lines = ["| task | 1 bag (s) | 2 bags | 4 bags |", "|---|---:|---:|---:|"]
    for name in names:
        base = statistics.median(times[(name, 1)])
        ratios = [statistics.median(times[(name, b)]) / base for b in bags[1:]]
        lines.append(f"| {name} | {base:.2f} | " + " | ".join(f"× {r:.2f}" for r in ratios) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=8)
    ap.add_argument("--tasks", default="", help="comma-separated task names (default: all)")
    ap.add_argument("--time", action="store_true", help="fit times of 1, 2 and 4 bags instead")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--one", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(one_fit(args.one[0], int(args.one[1])))
        return
    names = args.tasks.split(",") if args.tasks else list(c.EBM_REAL)
    if args.time:
        print(time_table(names, args.repeats))
    else:
        print(accuracy_table(scores(names, args.seeds), args.seeds))
        print(json.dumps({"seeds": args.seeds, "tasks": names}))


if __name__ == "__main__":
    main()
