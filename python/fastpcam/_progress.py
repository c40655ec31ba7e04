"""Progress bars for long jobs: fits, cross-validation folds, penalty paths, and the passes of
Parquet and Dask statistics.

The ``progress`` parameter of the estimators (and of :func:`fastpcam.lambda_path`,
:func:`fastpcam.fit_from_parquet`, :func:`fastpcam.sufficient_statistics`):

- ``"auto"`` (the default) shows a bar only when standard error is a terminal or the code
  runs in a Jupyter notebook, and only once the job has run for :data:`AUTO_DELAY` seconds
  (tqdm's ``delay``): short jobs print nothing;
- ``True`` shows the bar at once, wherever standard error goes;
- ``False`` never shows one.

The bars are tqdm's (``tqdm.auto``: a widget in a notebook), an optional dependency: without
tqdm there is no bar and no error. ``verbose`` is independent of them.

What a bar counts: a fit, its block updates (with the KKT residual against ``tol``; the core
reports them every :data:`FIT_INTERVAL` seconds); :class:`fastpcam.FASTRegressorCV`, its
folds; :func:`fastpcam.lambda_path`, the elapsed time (the core fits the whole path in one
call); a Parquet pass, its rows; a Dask pass on a local scheduler, its tasks (on a
``distributed`` cluster, use its dashboard or ``distributed.progress``).
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from typing import Any, Callable, Iterator, Optional

__all__ = ["AUTO_DELAY", "FIT_INTERVAL", "bar", "check", "fit_bar", "ticker", "dask_bar"]

#: Seconds a job runs before ``progress="auto"`` shows its bar.
AUTO_DELAY = 3.0
#: Seconds between the core's progress reports to a fit's bar.
FIT_INTERVAL = 0.5
#: The values of ``progress``.
CHOICES = ("auto", True, False)


class _NoBar:
    """What :func:`bar` gives when no bar is shown: every call does nothing."""

    n = 0

    def update(self, n: float = 1) -> None:
        pass

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        pass

    def refresh(self) -> None:
        pass

    def close(self) -> None:
        pass

    def __enter__(self) -> "_NoBar":
        return self

    def __exit__(self, *exc: Any) -> None:
        pass


def check(progress: Any, name: str = "progress") -> Any:
    """``progress`` if it is ``"auto"``, True or False, else a ValueError naming ``name``."""
    if not (progress == "auto" and isinstance(progress, str)) and not isinstance(progress, bool):
        raise ValueError(f"{name} must be 'auto', True or False, got {progress!r}")
    return progress


def _tqdm() -> Optional[Callable[..., Any]]:
    try:
        from tqdm.auto import tqdm
    except ImportError:  # tqdm is optional: no bar
        return None
    return tqdm  # type: ignore[no-any-return]


def _in_notebook() -> bool:
    shell = getattr(sys.modules.get("IPython"), "get_ipython", lambda: None)()
    return type(shell).__name__ == "ZMQInteractiveShell"


def interactive() -> bool:
    """Whether a person watches: standard error is a terminal, or a Jupyter notebook runs."""
    try:
        tty = bool(sys.stderr.isatty())
    except (AttributeError, ValueError):  # no stream, or a closed one
        tty = False
    return tty or _in_notebook()


def bar(progress: Any, *, desc: str, total: Optional[float] = None, unit: str = "it", **kwargs: Any) -> Any:
    """A tqdm bar as ``progress`` asks for it, or a bar that shows nothing."""
    check(progress)
    tqdm = _tqdm()
    if progress is False or tqdm is None or (progress == "auto" and not interactive()):
        return _NoBar()
    delay = AUTO_DELAY if progress == "auto" else 0.0
    return tqdm(total=total, desc=desc, unit=unit, delay=delay, leave=False, dynamic_ncols=True, **kwargs)


def _refresh(shown: Any) -> None:
    """Redraw a bar, unless its ``delay`` has not passed yet (a bar drawn before its delay
    would not be cleared when it closes)."""
    if time.time() - getattr(shown, "start_t", 0.0) >= getattr(shown, "delay", 0.0):
        shown.refresh()


@contextlib.contextmanager
def fit_bar(
    est: Any, callback: Optional[Callable[[int, float, float, float], bool]], interval: float
) -> Iterator[tuple[Optional[Callable[[int, float, float, float], bool]], float]]:
    """The core's progress function and interval for a fit of ``est``: ``callback`` (verbose
    printing and the user's callback, every ``interval`` seconds) with the fit's bar added."""
    shown = bar(getattr(est, "progress", False), desc=f"{type(est).__name__} fit", unit=" updates")
    if isinstance(shown, _NoBar):
        yield callback, interval
        return
    tol = getattr(est, "tol", None)

    def report(n_iter: int, objective: float, kkt: float, elapsed: float) -> bool:
        shown.update(max(0, int(n_iter) - shown.n))
        shown.set_postfix_str(f"KKT {kkt:.2e}" + (f" (tol {tol:g})" if tol is not None else ""), refresh=False)
        _refresh(shown)
        return True if callback is None else callback(n_iter, objective, kkt, elapsed)

    try:
        yield report, min(interval, FIT_INTERVAL)
    finally:
        shown.close()


@contextlib.contextmanager
def ticker(progress: Any, desc: str) -> Iterator[Any]:
    """A bar that shows the elapsed time of a job whose steps are not reported, refreshed by a
    thread (the core releases the GIL while it runs)."""
    shown = bar(progress, desc=desc, bar_format="{desc}: {elapsed}")
    if isinstance(shown, _NoBar):
        yield shown
        return
    done = threading.Event()

    def tick() -> None:
        while not done.wait(FIT_INTERVAL):
            _refresh(shown)

    thread = threading.Thread(target=tick, name="fastpcam-progress", daemon=True)
    thread.start()
    try:
        yield shown
    finally:
        done.set()
        thread.join()
        shown.close()


@contextlib.contextmanager
def dask_bar(progress: Any, desc: str) -> Iterator[None]:
    """A bar over the tasks that ``dask.compute`` runs on a local scheduler (threads,
    processes, synchronous) inside the block."""
    shown = bar(progress, desc=desc, unit=" tasks")
    if isinstance(shown, _NoBar):
        yield
        return
    from dask.callbacks import Callback

    class _Tasks(Callback):  # type: ignore[misc]
        def _start_state(self, dsk: Any, state: Any) -> None:
            shown.total = (shown.total or 0) + sum(len(state[k]) for k in ("ready", "waiting", "running", "finished"))
            shown.refresh()

        def _posttask(self, key: Any, result: Any, dsk: Any, state: Any, worker_id: Any) -> None:
            shown.update(1)

    try:
        with _Tasks():
            yield
    finally:
        shown.close()
