"""Two builds of the package against each other on the correlated-feature tables: fit time
of the defaults, in the same run.

Data: the 80/20 split of ``compare_ebm.py`` (``_data.load``: ``train_test_split(test_size=0.2,
random_state=0)``, ``y`` standardised on the training part) of elevators (columns up to
0.99999 correlated), ailerons, 574_house_16H, 201_pol (the slowest tables against EBM) and
a few fast ones, so that a change that helps the slow tables is seen not to hurt the others.

Model: ``FASTRegressor(n_jobs=2, interactions=0)``, every other parameter at its default
(additive model). ``--task binary``: ``FASTClassifier(n_jobs=2, interactions=0)`` on the target
binarised at its training median (as in ``compare_pairs.py``), test log-loss instead of MSE.

Protocol: each build runs in its own process (``PYTHONPATH`` set to the directory holding
its ``fastpcam`` package); the builds alternate, ``--repeats`` rounds (default 5), and each
round fits every table once. Reported: the median fit time of each build, their ratio
(reference / candidate: above 1 the candidate is faster), the test MSE and the block updates
(search + final fit) of each, from the last round.

Run (from the repository root), with a copy of the reference build::

    mkdir -p /tmp/ref_site && cp -r /path/to/reference/python/fastpcam /tmp/ref_site/
    python benches/python/corr_speed.py --reference /tmp/ref_site --candidate python
    python benches/python/corr_speed.py --reference /tmp/ref_site --candidate python \
        --task binary --datasets 537_houses,564_fried,1201_BNG_breastTumor,elevators

Writes ``benches/python/out/corr_speed.md`` (``--out`` to change it).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import _data  # noqa: E402

TABLES = [
    "elevators",
    "ailerons",
    "574_house_16H",
    "201_pol",
    "197_cpu_act",
    "537_houses",
    "1201_BNG_breastTumor",
    "344_mv",
    "bank32NH",
    "kin8nm",
]

# One round of one build, in a fresh process: every table fitted once, JSON on stdout.
WORKER = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
sys.path.insert(0, sys.argv[2])
import numpy as np, _data, fastpcam
out = {"version": fastpcam.__file__}
binary = sys.argv[4] == "binary"
for name in sys.argv[3].split(","):
    s = _data.load(name)
    y_train, y_test = s.y_train, s.y_test
    if binary:
        median = float(np.median(y_train))
        y_train, y_test = (y_train > median).astype(int), (y_test > median).astype(int)
        m = fastpcam.FASTClassifier(n_jobs=2, interactions=0)
    else:
        m = fastpcam.FASTRegressor(n_jobs=2, interactions=0)
    t0 = time.perf_counter()
    m.fit(s.X_train, y_train)
    t = time.perf_counter() - t0
    if binary:
        p1 = np.clip(m.predict_proba(s.X_test)[:, 1], 1e-15, 1 - 1e-15)
        err = float(-np.mean(y_test * np.log(p1) + (1 - y_test) * np.log(1 - p1)))
    else:
        err = _data.mse(y_test, m.predict(s.X_test))
    out[name] = {
        "time": t,
        "mse": err,
        "search": int(m.validation_path_["n_iter"].sum()),
        "final": int(m.n_iter_),
        "ratio": float(m.lambda_ratio_),
    }
print(json.dumps(out))
"""


def run_round(site: str, names: list[str], task: str) -> dict[str, dict[str, float]]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    cmd = [sys.executable, "-c", WORKER, str(Path(site).resolve()), str(HERE), ",".join(names), task]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{site}: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reference", required=True, help="directory holding the reference fastpcam")
    ap.add_argument("--candidate", required=True, help="directory holding the candidate fastpcam")
    ap.add_argument("--datasets", default=",".join(TABLES), help="comma-separated catalog names")
    ap.add_argument("--repeats", type=int, default=5, help="alternating rounds (median time)")
    ap.add_argument("--task", choices=["regression", "binary"], default="regression",
                    help="binary: FASTClassifier on the target binarised at its training median")
    ap.add_argument("--out", default=str(_data.OUT_DIR / "corr_speed.md"))
    args = ap.parse_args(argv)
    names = [s.strip() for s in args.datasets.split(",") if s.strip()]
    builds = {"reference": args.reference, "candidate": args.candidate}
    rounds: dict[str, list[dict[str, dict[str, float]]]] = {b: [] for b in builds}
    for r in range(args.repeats):
        for b, site in builds.items():
            rounds[b].append(run_round(site, names, args.task))
        print(f"round {r + 1}/{args.repeats} done", flush=True)

    info = _data.machine_info()
    model, metric = (
        ("FASTClassifier(n_jobs=2, interactions=0)", "log-loss")
        if args.task == "binary"
        else ("FASTRegressor(n_jobs=2, interactions=0)", "MSE")
    )
    lines = [
        "# Correlated-feature tables: two builds, same run",
        "",
        _data.machine_line(info),
        "",
        f"Reference: `{rounds['reference'][-1]['version']}`; candidate: "
        f"`{rounds['candidate'][-1]['version']}`. `{model}`, defaults; "
        f"median of {args.repeats} alternating rounds; split as in `compare_ebm.py`.",
        "",
        "| dataset | reference fit (s) | candidate fit (s) | reference / candidate | "
        f"reference test {metric} | candidate test {metric} | reference updates | candidate updates |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name in names:
        t = {b: statistics.median(x[name]["time"] for x in rounds[b]) for b in builds}
        last = {b: rounds[b][-1][name] for b in builds}
        ups = {b: f"{last[b]['search']} + {last[b]['final']}" for b in builds}
        lines.append(
            f"| {name} | {t['reference']:.3f} | {t['candidate']:.3f} | "
            f"{t['reference'] / t['candidate']:.2f} | {last['reference']['mse']:.4f} | "
            f"{last['candidate']['mse']:.4f} | {ups['reference']} | {ups['candidate']} |"
        )
    text = "\n".join(lines) + "\n"
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
