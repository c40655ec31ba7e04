"""Parameters shared by the estimators: defaults read from the compiled core, constraints,
the shared signature (:class:`FastParams`), the configuration handed to the core, and small
conversions (threads, error messages).

Every default is defined once, in Rust (``rust/bindings/config.rs`` from the core's
constants), and read here from ``_core.defaults()``; the estimators' signatures use these
names. The core's configuration keys are the Python parameter names. A parameter of the
estimators is written in this module once: its constraint, its docstring paragraph and its
place in :class:`FastParams`'s signature.
"""

from __future__ import annotations

import inspect
import os
import re
from numbers import Integral, Real
from typing import Any, Callable, Optional, Union

import numpy as np
import numpy.typing as npt
from sklearn.utils._param_validation import Interval, StrOptions

from . import _core

#: The default of every configuration key of the core (what a fit uses for a key left out).
CORE_DEFAULTS: dict[str, Any] = dict(_core.defaults())

DEFAULT_LAMBDA_RATIO: float = float(_core.DEFAULT_LAMBDA_RATIO)
"""``lambda_f / lambda_max`` that ``lambda_ratio="auto"`` falls back to without enough rows
to hold out (and on sufficient statistics without held-out ones)."""
DEFAULT_VALIDATION_FRACTION: float = float(CORE_DEFAULTS["validation_fraction"])
DEFAULT_MAX_BINS: Any = CORE_DEFAULTS["max_bins"]
DEFAULT_SELECTION: str = str(CORE_DEFAULTS["selection"])
DEFAULT_TOL: float = float(CORE_DEFAULTS["tol"])
DEFAULT_MAX_ITER: int = int(CORE_DEFAULTS["max_iter"])
DEFAULT_SUBSAMPLE_FOR_BIN: int = int(CORE_DEFAULTS["subsample_for_bin"])
DEFAULT_ENGINE: str = str(CORE_DEFAULTS["engine"])
DEFAULT_MAX_SWAPS: int = int(CORE_DEFAULTS["max_swaps"])
DEFAULT_N_LAMBDA_S: int = int(CORE_DEFAULTS["n_lambda_s"])
DEFAULT_SCALE_DOWN_FACTOR: float = float(CORE_DEFAULTS["scale_down_factor"])
DEFAULT_POWER: float = float(CORE_DEFAULTS["power"])
DEFAULT_INTERACTIONS: Any = CORE_DEFAULTS["interactions"]
DEFAULT_MAX_INTERACTION_BINS: Any = CORE_DEFAULTS["max_interaction_bins"]
SPARSE_LAMBDA_RATIO: float = float(_core.SPARSE_LAMBDA_RATIO)
SPARSE_MAX_BINS: int = int(_core.SPARSE_MAX_BINS)
DEFAULT_MAX_FEATURES: int = int(_core.SPARSE_MAX_FEATURES)

_NON_NEGATIVE = Interval(Real, 0, None, closed="left")
#: The largest count the core takes (a 64-bit size); larger ints are refused by name here
#: instead of overflowing at the boundary.
_MAX_COUNT = 2**63 - 1


def _count(low: int) -> Interval:
    return Interval(Integral, low, _MAX_COUNT, closed="both")

#: Constraints of every parameter of any estimator, by name (scikit-learn's
#: ``_parameter_constraints``); an estimator takes the entries of its own parameters.
CONSTRAINTS: dict[str, list[Any]] = {
    "lambda_f": [_NON_NEGATIVE, None],
    "lambda_ratio": [_NON_NEGATIVE, StrOptions({"auto"})],
    "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
    "outer_bags": [_count(1)],
    "max_bins": [_count(2), StrOptions({"auto"}), None],
    "selection": [StrOptions({"greedy", "cyclic", "sweep", "auto"})],
    "tol": [_NON_NEGATIVE],
    "max_iter": [_count(0)],
    "max_time": [Interval(Real, 0, None, closed="neither"), None],
    # scikit-learn's n_jobs: None or -1 all cores, -2 all but one, ...; 0 means nothing
    "n_jobs": [Interval(Integral, -_MAX_COUNT, -1, closed="both"), _count(1), None],
    "random_state": [Interval(Integral, 0, 2**64 - 1, closed="both")],
    "subsample_for_bin": [_count(2)],
    "verbose": ["verbose"],
    "progress": [StrOptions({"auto"}), "boolean"],
    "callback": [callable, None],
    "categorical_features": [StrOptions({"from_dtype"}), "array-like", None],
    "bins": [dict, list, None],
    "engine": [StrOptions({"auto", "rows", "tables"})],
    # feature-sparse fits
    "max_features": [_count(1)],
    "method": [StrOptions({"agis", "l0"})],
    "local_search": ["boolean"],
    "max_swaps": [_count(0)],
    "n_lambda_s": [_count(1)],
    "scale_down_factor": [Interval(Real, 0, 1, closed="neither")],
    # shape constraints (fastpcam._shapes)
    "monotonic_cst": ["array-like", dict, None],
    "penalty_factor": ["array-like", dict, None],
    "l2_jumps": [_NON_NEGATIVE, StrOptions({"auto"})],
    # pair terms (fastpcam._pairs)
    "interactions": [_count(0), "array-like", StrOptions({"auto"})],
    "max_interaction_bins": [_count(2), StrOptions({"auto"})],
    "interaction_penalty": [_NON_NEGATIVE, StrOptions({"auto"})],
    "interaction_smoothing": [_NON_NEGATIVE, StrOptions({"auto"})],
    # regression losses
    "loss": [StrOptions({"squared_error", "poisson", "gamma", "tweedie"})],
    "power": [Interval(Real, 1, 2, closed="neither")],
    # cross-validation
    "lambda_ratios": ["array-like", None],
    "cv": ["cv_object"],
    "one_standard_error": ["boolean"],
}


def constraints(params: Any, **override: list[Any]) -> dict[str, list[Any]]:
    """The constraints of the parameters ``params`` (names), with ``override`` replacing some."""
    return {name: override.get(name, CONSTRAINTS[name]) for name in params}


class FastParams:
    """The parameters the estimators share: the base of every estimator
    (``fastpcam._base._BaseFAST``) takes its ``__init__`` from here, where each parameter is
    written once next to its constraint (:data:`CONSTRAINTS`) and its documentation
    (:data:`DOCS`), with its default read from the core. The estimators' own signatures are
    built from this one (``fastpcam._base.fast_init``)."""

    def __init__(
        self,
        lambda_f: Optional[float] = None,
        *,
        lambda_ratio: Union[float, str] = "auto",
        validation_fraction: float = DEFAULT_VALIDATION_FRACTION,
        max_bins: Union[int, str, None] = DEFAULT_MAX_BINS,
        selection: str = DEFAULT_SELECTION,
        tol: float = DEFAULT_TOL,
        max_iter: int = DEFAULT_MAX_ITER,
        outer_bags: int = 1,
        max_time: Optional[float] = None,
        n_jobs: Optional[int] = None,
        random_state: int = 0,
        subsample_for_bin: int = DEFAULT_SUBSAMPLE_FOR_BIN,
        verbose: int = 0,
        progress: Union[bool, str] = "auto",
        callback: Optional[Callable[[int, float, float, float], Optional[bool]]] = None,
        categorical_features: Any = "from_dtype",
        bins: Any = None,
        engine: str = DEFAULT_ENGINE,
        monotonic_cst: Any = None,
        penalty_factor: Any = None,
        l2_jumps: Union[float, str] = "auto",
        interactions: Any = DEFAULT_INTERACTIONS,
        max_interaction_bins: Union[int, str] = DEFAULT_MAX_INTERACTION_BINS,
        interaction_penalty: Union[float, str] = "auto",
        interaction_smoothing: Union[float, str] = "auto",
    ) -> None:
        store_params(self, locals())


def store_params(est: Any, given: dict[str, Any]) -> None:
    """Store every argument of an ``__init__`` (``given``) on the estimator under its own name."""
    for name, value in given.items():
        if name not in ("self", "__class__"):
            setattr(est, name, value)


#: The parameters of :class:`FastParams`, in signature order.
FAST_PARAMS: tuple[str, ...] = tuple(inspect.signature(FastParams.__init__).parameters)[1:]


def n_threads(n_jobs: Optional[int]) -> Optional[int]:
    """Map scikit-learn's ``n_jobs`` to a thread count (``None``: all cores)."""
    if n_jobs is None or n_jobs == -1:
        return None
    if n_jobs > 0:
        return int(n_jobs)
    return max(1, (os.cpu_count() or 1) + 1 + int(n_jobs))


def core_config(params: dict[str, Any], loss: str, **extra: Any) -> dict[str, Any]:
    """The configuration dict of the core's fit functions: the parameters it knows, by name,
    with ``n_jobs`` as a thread count and ``extra`` (``bins``, ``progress_interval``, ...)."""
    config = {k: v for k, v in params.items() if k in CORE_DEFAULTS and k != "bins"}
    config["loss"] = loss
    if "n_jobs" in config:
        config["n_jobs"] = n_threads(config["n_jobs"])
    config.update(extra)
    return config


_COLUMN_RE = re.compile(r"column (\d+)")


def name_columns(err: ValueError, names: Optional[npt.NDArray[Any]], prefix: str = "") -> ValueError:
    """A core error with the feature name added where it names a column by index
    (``column 3`` → ``column 3 ('temp')``), and a prefix."""
    msg = str(err)
    if names is not None:
        m = _COLUMN_RE.search(msg)
        if m is not None:
            msg = msg.replace(m.group(0), f"{m.group(0)} ({np.asarray(names, dtype=object)[int(m.group(1))]!r})", 1)
    return ValueError(prefix + msg)


# ------------------------------------------------------------------------- shared docs

#: numpydoc entries shared by several docstrings, by name; a docstring line ``<<a b>>``
#: stands for the entries ``a`` and ``b`` (see :func:`document`).
DOCS: dict[str, str] = {
    # the head of a predict-style method: its samples, then its returns section
    "predict_X": "Parameters\n----------\nX : array-like of shape (n_samples, n_features)\n    Samples.\n\nReturns\n-------",
    "X_train": "X : array-like of shape (n_samples, n_features)\n    Training data (NaN marks a missing value).",
    "y": "y : array-like of shape (n_samples,)\n    Target values.",
    "sample_weight": (
        "sample_weight : array-like of shape (n_samples,), default=None\n"
        "    Non-negative sample weights; integer weights act like repeated rows."
    ),
    "verbose": (
        "verbose : int, default=0\n"
        "    ``1`` prints progress about once a second and a summary; ``2`` ten times a second."
    ),
    "progress": (
        "progress : {\"auto\", True, False}, default=\"auto\"\n"
        "    A progress bar (tqdm, if installed): ``\"auto\"`` shows one only in a terminal or a\n"
        "    notebook and only once the job has run a few seconds; ``True`` always; ``False`` never\n"
        "    (see :mod:`fastpcam._progress`). Independent of ``verbose``."
    ),
    "n_features_in_": "n_features_in_ : int\n    Number of features seen during fit.",
    "feature_names_in_": (
        "feature_names_in_ : ndarray of shape (n_features_in_,)\n"
        "    Names of the features, when ``X`` has string column names (pandas)."
    ),
    "is_categorical_": "is_categorical_ : ndarray of shape (n_features_in_,)\n    Which features were treated as categorical.",
    "categories_": (
        "categories_ : list of (ndarray or None)\n"
        "    For a categorical feature, its categories in chain order (aligned with ``values_``);\n"
        "    None for a numeric feature."
    ),
    "bin_weights_": (
        "bin_weights_ : list of ndarray of shape (n_bins_j,)\n    Total sample weight of the training rows in each bin."
    ),
    "missing_weights_": (
        "missing_weights_ : ndarray of shape (n_features_in_,)\n"
        "    Total sample weight of the training rows with a missing value, per feature."
    ),
    "cuts_": (
        "cuts_ : list of ndarray of shape (n_bins_j - 1,)\n"
        "    Increasing cut points per feature; ``x`` falls in bin\n"
        '    ``np.searchsorted(cuts_[j], x, side="right")``.'
    ),
    "n_iter_": "n_iter_ : int\n    Block updates done.",
    "converged_": "converged_ : bool\n    Whether ``kkt_residual_ <= tol``.",
    "n_validation_": "n_validation_ : int\n    Number of held-out rows (0 when no search ran; every row, held out once, when the\n    search cross-validated over folds).",
    "bags_": (
        "bags_ : list of dict\n"
        "    One entry per fit averaged by ``outer_bags`` (empty for one fit): its\n"
        "    ``random_state`` (the seed of its held-out rows), ``lambda_ratio``,\n"
        "    ``interaction_penalty`` and ``interaction_smoothing`` (0 without pairs or smooth parts),\n"
        "    ``n_interactions``, ``l2_jumps``, ``n_iter``, ``kkt_residual`` (at its own penalty) and\n"
        "    ``converged``."
    ),
    "lambda_ratio_": (
        "lambda_ratio_ : float\n"
        '    ``lambda_f_ / lambda_max_``: with ``lambda_ratio="auto"``, the ratio chosen on\n'
        "    held-out rows."
    ),
    "n_jobs": (
        "n_jobs : int or None, default=None\n"
        "    Threads. ``None`` or ``-1`` uses every core; results do not depend on it."
    ),
    "random_state": "random_state : int, default=0\n    Seed of the row sample used for quantile bins on large data.",
    "outer_bags": (
        "outer_bags : int, default=1\n"
        "    With ``lambda_ratio=\"auto\"``, the number of fits averaged into the model (as EBM's\n"
        "    ``outer_bags``): fit ``b`` holds out the rows drawn with ``random_state + b`` and is\n"
        "    refitted on all rows as usual (its own penalty, pairs and smooth parts), and the model\n"
        "    is the mean of their scores, again an additive model with pairs (each pair on the\n"
        "    union of its fits' cuts). The fits' own choices are in ``bags_``; ``lambda_ratio_``,\n"
        "    the paths and the pair penalties are the first fit's, ``kkt_residual_`` the largest\n"
        "    of the fits' (each at its own penalty), ``n_iter_`` their sum. It costs ``outer_bags``\n"
        "    fits; ``max_time`` holds for them together. On the 14 real binary tasks of\n"
        "    ``docs/classification.md``, 4 bags took the test log-loss from 1.012 to 1.003 of EBM's\n"
        "    default in geometric mean (``hotel_cancel`` 1.123 to 1.030). Not for Dask input, nor\n"
        "    with a fixed penalty (every fit would be the same)."
    ),
    "subsample_for_bin": "subsample_for_bin : int, default=200000\n    Rows sampled to compute quantile bins (as in LightGBM).",
    "max_time": (
        "max_time : float or None, default=None\n    Optional time budget in seconds; the model reached so far is kept. It holds for\n"
        "    the main effects (with their penalty search) and again for the pair stage; a fit\n"
        "    whose main effects run out of time (or are stopped by ``callback``) gets no pair terms."
    ),
    "monotonic_cst": (
        "monotonic_cst : array-like of int of shape (n_features,) or dict, default=None\n"
        "    Monotonic constraint per feature (scikit-learn's HistGradientBoosting name and meaning):\n"
        "    ``1`` nondecreasing, ``-1`` nonincreasing, ``0`` free; a dict maps feature names (or\n"
        "    indices) to a constraint, features left out are free. Numeric features only (a\n"
        "    constraint on a categorical feature is an error); the missing-value bin stays outside\n"
        "    the chain, unconstrained. The block update of a constrained feature is an exact\n"
        "    isotonic regression, so the fit stays certified (see ``docs/constraints.md``)."
    ),
    "penalty_factor": (
        "penalty_factor : array-like of float of shape (n_features,) or dict, default=None\n"
        "    Nonnegative multiplier of ``lambda_f`` per feature (glmnet's name, without its\n"
        "    rescaling): feature ``j``'s jumps cost ``lambda_f * penalty_factor[j]``; ``0`` leaves\n"
        "    it unpenalised (its bin means, or its isotonic fit under a constraint). ``lambda_max_``\n"
        "    is taken over the penalised features. A dict maps names (or indices) to factors,\n"
        "    features left out keep 1."
    ),
    "l2_jumps": (
        "l2_jumps : float or 'auto', default='auto'\n"
        "    Weight ``mu`` of a squared penalty on the main effects' jumps: the penalty becomes\n"
        "    ``lambda_f * sum |theta| + (mu / 2) * sum theta**2`` over every jump ``theta`` of every\n"
        "    shape function (times its ``penalty_factor``), an elastic net on the jumps. The\n"
        "    squared term spreads an effect over many small steps and over correlated features\n"
        "    instead of a few large steps of one, which helps on small data; ``0`` is the FAST\n"
        "    paper's penalty. ``'auto'``: "
        f"``{_core.AUTO_L2_JUMPS:g} / n_samples`` for a binary classifier on fewer than\n"
        f"    {_core.KFOLD_ROWS} rows, 0 on more rows and for a regressor (``docs/small_data.md``;\n"
        "    the value used is ``l2_jumps_``). With more than two classes every class chain\n"
        "    takes it, and ``'auto'`` chooses between 0 and "
        f"``{_core.AUTO_L2_JUMPS:g} / n_samples`` by the\n"
        "    held-out log-loss of the penalty search (``lambda_ratio='auto'``; else 0), see\n"
        "    ``docs/classification.md``. The block update stays exact and the fit certified. Pair\n"
        "    terms keep their total variation alone."
    ),
    "interactions": (
        f"interactions : int, list of pairs or 'auto', default={DEFAULT_INTERACTIONS!r}\n"
        "    Pair terms ``θ_t[a_j(x_j), a_k(x_k)]`` added to the additive model (GA2M, EBM's\n"
        "    name): an int ``K`` screens every pair of the features with the largest main effects\n"
        "    on the main effects' residual and keeps the ``K`` best; a list of ``(j, k)`` pairs\n"
        "    (indices or feature names) fits exactly those; ``0`` gives the additive model of the\n"
        f"    FAST paper. ``'auto'`` screens for {_core.AUTO_INTERACTIONS} pairs where the model has pair terms\n"
        "    (every loss and classification, fitted on rows, Dask and Parquet fits included: their\n"
        "    pairs are chosen on a sample of rows, docs/pairs.md) and fits the additive model\n"
        "    elsewhere (``SufficientStatistics.fit`` refuses an explicit count or list and warns on\n"
        "    'auto'; 'auto' is additive too where a held-out check is impossible: below 50 rows,\n"
        "    and, when the pair penalty is chosen on held-out rows, where the split would hold\n"
        "    fewer than 50 rows on a side, about 330 rows at the default validation_fraction;\n"
        "    ``lambda_path`` fits additive paths). ``lambda_max_`` is the main effects'. Each pair is a\n"
        "    2-D block penalised by its total variation, so the fit stays convex and certified\n"
        "    (see ``docs/pairs.md``, with the measurements behind the default). Screened pairs\n"
        "    (an int or 'auto') are kept only if they lower the additive model's held-out loss\n"
        "    (``interaction_path_``); listed pairs always are. Under ``'auto'``, where the\n"
        f"    screened pairs bring that loss below 0.8 of the additive model's, {_core.AUTO_INTERACTIONS} more are\n"
        "    screened on the residual of the fit with pairs and fitted with them; an int ``K`` is\n"
        "    the number of pairs (one round). Under ``'auto'`` with ``max_interaction_bins='auto'``\n"
        f"    the first round is also fitted as {_core.PAIR_COARSE_FACTOR} times the pairs on grids of\n"
        f"    1/{_core.PAIR_COARSE_FACTOR} of the cells, kept where those beat the first layout on the\n"
        "    held-out rows (by 1.5 standard errors, or where only they beat the additive model)."
    ),
    "max_interaction_bins": (
        f"max_interaction_bins : int or 'auto', default={DEFAULT_MAX_INTERACTION_BINS!r}\n"
        "    Interaction bins per feature of a pair term at most: the feature's main bins merged\n"
        "    into groups (their cuts are a subset of ``cuts_[j]``): one cut where the fitted main\n"
        "    effect jumps most, the others at weight quantiles. ``'auto'``: at most\n"
        f"    {int(_core.AUTO_INTERACTION_BINS)} bins a side (EBM's default) and\n"
        f"    {int(_core.AUTO_INTERACTION_CELLS)} cells a pair: two many-valued features get\n"
        "    16 x 16, and a feature with few values lets its partner use the cells it leaves\n"
        f"    (2 x 64 for a binary feature); where ``interaction_penalty='auto'`` is chosen on\n"
        f"    held-out rows, the {int(_core.FINE_PAIRS)} strongest pairs get {int(_core.FINE_CELLS)} cells (32 x 32),\n"
        f"    and a pair with a side of at most {int(_core.NARROW_SIDE)} values up to {int(_core.NARROW_CELLS)} cells\n"
        "    (2 x 256 for a binary feature; its partner at most two bins per piece of its fitted\n"
        "    main effect, at least 64). The binary classifier's ``'auto'`` is coarser: at most\n"
        "    16 bins a side (16 x 16, 2 x 16 for a binary feature) and no finer grids\n"
        "    (``docs/classification.md``). An int ``b``: at most ``b`` bins a side,\n"
        "    ``b x b`` cells."
    ),
    "interaction_penalty": (
        "interaction_penalty : float or 'auto', default='auto'\n"
        "    The pair terms' fusion penalty relative to the main effects', ``λ_pair / λ_f``;\n"
        "    ``'auto'`` chooses it on the held-out rows of ``lambda_ratio='auto'`` (else 0.25;\n"
        "    with more than two classes always 0.25)."
    ),
    "interaction_smoothing": (
        "interaction_smoothing : float or 'auto', default='auto'\n"
        "    A smooth part for every pair term: a second, finer grid (up to 32 x 32 cells)\n"
        "    penalised by ``(μ/2)`` times the sum of its neighbouring cells' squared differences,\n"
        "    added to the pair's total-variation grid; the term reported is their sum, on the\n"
        "    union of their cuts. ``'auto'``, for the squared loss and the classifiers: ``μ``\n"
        "    chosen on the held-out rows of ``lambda_ratio='auto'`` (0.032 down to 0.002),\n"
        "    the smooth parts kept\n"
        "    only if they beat the pairs without them there, by 1.5 standard errors and 0.5% of\n"
        "    the held-out loss (none where no rows are held out, or where ``interaction_penalty``\n"
        "    is given, but for more than two classes); for the log-link losses none. ``0``: none;\n"
        "    a float: that ``μ`` (on the fit's normalised weights), fitted without a check."
    ),
    "interaction_features_": (
        "interaction_features_ : list of tuple of int\n"
        "    The features ``(j, k)`` of each pair term (empty for an additive model)."
    ),
    "interaction_cuts_": (
        "interaction_cuts_ : list of tuple of ndarray\n"
        "    Per pair term, the interaction cuts of ``j`` and of ``k`` (subsets of ``cuts_``)."
    ),
    "interaction_values_": (
        "interaction_values_ : list of ndarray\n"
        "    Per pair term, its purified table of shape ``(len(cuts_j) + 1, len(cuts_k) + 1)``:\n"
        "    row ``searchsorted(cuts_j, x_j, 'right')``, column likewise; 0 for a row missing\n"
        "    either value. Weighted row and column means are zero (moved into ``values_``).\n"
        "    On the scale of ``values_``: the log of the mean for a log-link loss, the log-odds\n"
        "    for a classifier; a multiclass classifier's has a last axis of one table per class,\n"
        "    shape ``(len(cuts_j) + 1, len(cuts_k) + 1, n_classes)``."
    ),
    "interaction_penalty_": (
        "interaction_penalty_ : float\n    ``λ_pair / λ_f`` as fitted (0 without pairs)."
    ),
    "interaction_smoothing_": (
        "interaction_smoothing_ : float\n"
        "    ``μ`` of the pair terms' smooth parts as fitted (0: none); ``smoothing_path_`` holds\n"
        "    the ``μ`` tried on held-out rows (0 first: no smooth parts) and their held-out loss."
    ),
    "monotonic_cst_": (
        "monotonic_cst_ : ndarray of shape (n_features_in_,)\n"
        "    The constraint of each feature as fitted (int8: 1, -1 or 0)."
    ),
    "l2_jumps_": (
        "l2_jumps_ : float\n    The weight of the squared penalty on the jumps as fitted (``l2_jumps``, with\n"
        "    ``'auto'`` resolved)."
    ),
    "penalty_factor_": (
        "penalty_factor_ : ndarray of shape (n_features_in_,)\n    The penalty factor of each feature as fitted."
    ),
}

_MARK = re.compile(r"^([ \t]*)<<(.+?)>>[ \t]*$", re.MULTILINE)


def document(target: Any) -> Any:
    """Decorator: expand every ``<<name ...>>`` line of the docstring into the :data:`DOCS`
    entries, indented as the line. For a class, every parameter of its signature that has a
    :data:`DOCS` entry but no paragraph in the docstring's Parameters section gets that entry
    at the end of the section, so a parameter documented once is documented in every estimator
    that takes it."""

    def expand(m: re.Match[str]) -> str:
        lines = "\n".join(DOCS[name] for name in m.group(2).split()).split("\n")
        return "\n".join(m.group(1) + line if line else line for line in lines)

    doc = _MARK.sub(expand, target.__doc__ or "")
    if isinstance(target, type):
        doc = _document_parameters(doc, list(inspect.signature(target).parameters))
    target.__doc__ = doc
    return target


def _document_parameters(doc: str, names: list[str]) -> str:
    """``doc`` with the :data:`DOCS` entry of each of ``names`` that its Parameters section
    lacks, appended to that section."""
    head = re.search(r"^([ \t]*)Parameters\n[ \t]*-+\n", doc, re.MULTILINE)
    if head is None:
        return doc
    indent = head.group(1)
    # The section ends at the next section header (a line underlined by dashes).
    following = re.compile(rf"^{indent}\S.*\n{indent}-+\n", re.MULTILINE).search(doc, head.end())
    end = following.start() if following is not None else len(doc)
    section = doc[head.end() : end]
    documented = set(re.findall(rf"^{indent}(\w+) :", section, re.MULTILINE))
    missing = [name for name in names if name in DOCS and name not in documented]
    if not missing:
        return doc
    body = section.rstrip("\n")
    added = "\n".join(indent + line if line else line for name in missing for line in DOCS[name].split("\n"))
    return doc[: head.end()] + body + "\n" + added + section[len(body) :] + doc[end:]
