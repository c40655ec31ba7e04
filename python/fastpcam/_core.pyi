"""Type stubs of the compiled core (``rust/bindings``).

Every fit function takes one ``config``: a dict keyed by the Python parameter names
(:class:`FitConfig`); ``loss`` ("squared", "logistic", "poisson", "gamma" or "tweedie") is required, and a key left out takes its default from
:func:`defaults` (defined once, in ``rust/bindings/config.rs``).
"""

from typing import Callable, Optional, TypedDict, Union

import numpy as np
import numpy.typing as npt
from typing_extensions import NotRequired

__version__: str
DEFAULT_LAMBDA_RATIO: float
AUTO_INTERACTIONS: int
AUTO_L2_JUMPS: float
KFOLD_ROWS: int
AUTO_INTERACTION_BINS: int
FINE_PAIRS: int
FINE_CELLS: int
NARROW_SIDE: int
NARROW_CELLS: int
SECOND_ROUND_CUT: float
MAX_ROUNDS: int
PAIR_MIN_GAIN_SE: float
PAIR_PATH_START: float
PAIR_PATH_WOBBLE: float
PAIR_PATH_RISES: int
PAIR_COARSE_FACTOR: int
PAIR_RESCUE_GAIN_SE: float
AUTO_INTERACTION_CELLS: int
VALIDATION_MIN_ROWS: int
SPARSE_LAMBDA_RATIO: float
SPARSE_MAX_BINS: int
SPARSE_MAX_FEATURES: int

class FitConfig(TypedDict, total=False):
    loss: str
    lambda_f: Optional[float]
    lambda_ratio: Union[float, str]
    validation_fraction: float
    outer_bags: int
    max_bins: Union[int, str, None]
    selection: str
    tol: float
    max_iter: int
    max_time: Optional[float]
    n_jobs: Optional[int]
    random_state: int
    subsample_for_bin: int
    bins: Optional[list[Optional[list[float]]]]
    engine: str
    progress_interval: float
    method: str
    max_features: Optional[int]
    lambda_s: Optional[list[float]]
    n_lambda_s: int
    scale_down_factor: float
    local_search: bool
    max_swaps: int
    monotonic_cst: Optional[list[int]]
    penalty_factor: Optional[list[float]]
    l2_jumps: Union[float, str]
    power: float
    interactions: Union[int, str, list[tuple[int, int]]]
    max_interaction_bins: Union[int, str]
    interaction_penalty: Union[float, str]
    interaction_smoothing: Union[float, str]

def defaults() -> FitConfig: ...

FitData = tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], Optional[npt.NDArray[np.float64]]]
"""The data of a fit: ``(x, y, sample_weight)`` (``sample_weight`` None: unit weights)."""

class ModelOutput(TypedDict):
    """One fitted model: the intercept, per-feature values, and how the fit went."""

    intercept: float
    values: list[npt.NDArray[np.float64]]
    missing_values: npt.NDArray[np.float64]
    n_iter: int
    converged: bool
    kkt_residual: float
    objective: float

class Bins(TypedDict):
    """The bins of a fit: cut points and training weights per bin."""

    cuts: list[npt.NDArray[np.float64]]
    bin_weights: list[npt.NDArray[np.float64]]
    missing_weights: npt.NDArray[np.float64]

class History(TypedDict):
    """One entry per block update: the objective after it, the feature, the seconds so far."""

    objective: npt.NDArray[np.float64]
    feature: npt.NDArray[np.int64]
    time: npt.NDArray[np.float64]

class Search(TypedDict):
    """The held-out search of the penalty ratio (empty without one)."""

    ratios: npt.NDArray[np.float64]
    loss: npt.NDArray[np.float64]
    n_iter: npt.NDArray[np.int64]
    n_validation: int

class BagSummary(TypedDict):
    """One outer bag of :func:`fit`: the seed of its held-out rows and its own choices."""

    random_state: int
    lambda_ratio: float
    interaction_penalty: float
    interaction_smoothing: float
    n_interactions: int
    l2_jumps: float
    n_iter: int
    kkt_residual: float
    converged: bool

class FitOutput(ModelOutput, Bins):
    lambda_f: float
    lambda_max: float
    stop: str
    engine: str
    history: History
    lambda_ratio: float
    search: Search
    pairs: PairOutput
    bags: NotRequired[list[BagSummary]]  # fit only: one per outer bag (empty for one fit)

class PairOutput(TypedDict):
    """The pair terms of a fit (empty lists without pairs): per term its features, interaction
    cuts and main-bin maps per axis (-1: the missing bin), grid ``(rows, cols, missing_row,
    missing_col)``, cell values and weights (row-major, then the missing cell if any; a
    multiclass fit's values hold one such table per class, class-major)."""

    features: list[tuple[int, int]]
    cuts: list[tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]]
    maps: list[tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]]
    grids: list[tuple[int, int, bool, bool]]
    values: list[npt.NDArray[np.float64]]
    weights: list[npt.NDArray[np.float64]]
    penalty: float
    path: npt.NDArray[np.float64]
    path_loss: npt.NDArray[np.float64]
    path_n_iter: npt.NDArray[np.int64]
    gains: npt.NDArray[np.float64]

class MultinomialExtra(TypedDict):
    n_classes: int
    intercepts: npt.NDArray[np.float64]  # [class], mean 0
    missing_values: list[npt.NDArray[np.float64]]  # [feature][class]

def fit(
    data: FitData,
    *,
    config: FitConfig,
    progress: Optional[Callable[[int, float, float, float], object]] = None,
    n_classes: Optional[int] = None,
) -> FitOutput:
    """FAST for the configuration's loss. With ``n_classes``, softmax FAST (``y``: class indices
    ``0..n_classes``): the output also holds the entries of :class:`MultinomialExtra` (its
    ``missing_values`` replacing the single-score one), ``values[j]`` are bin-major
    (``n_bins × n_classes``) and ``intercept`` is 0."""
    ...

class PathFit(ModelOutput):
    lambda_f: float

class PathOutput(Bins):
    lambda_max: float
    fits: list[PathFit]

def fit_path(
    data: FitData,
    *,
    config: FitConfig,
    lambdas: list[float],
    relative: bool,
) -> PathOutput: ...
def predict(
    x: npt.NDArray[np.float64],
    intercept: float,
    cuts: list[npt.NDArray[np.float64]],
    values: list[npt.NDArray[np.float64]],
    missing_values: Optional[npt.NDArray[np.float64]] = None,
    n_jobs: Optional[int] = None,
) -> npt.NDArray[np.float64]: ...
def flsa(
    y: npt.NDArray[np.float64], lam: float, weights: Optional[npt.NDArray[np.float64]] = None
) -> npt.NDArray[np.float64]: ...

# --- feature-sparse FAST (rust/bindings/sparse.rs) ---

class SparseModelOutput(ModelOutput):
    support: npt.NDArray[np.int64]
    selected: npt.NDArray[np.int64]
    flat: npt.NDArray[np.int64]
    fast_objective: float
    loss: float
    lambda_s: float
    n_swaps: int

class SparseHistory(History):
    lambda_s: npt.NDArray[np.float64]
    segment: npt.NDArray[np.int64]

class SparseOutput(Bins):
    lambda_f: float
    lambda_max: float
    lambda_s_max: float
    stop: str
    models: list[SparseModelOutput]
    history: SparseHistory

def fit_sparse(
    data: FitData,
    *,
    config: FitConfig,
) -> SparseOutput: ...

# --- sufficient statistics (rust/bindings/dask.rs) ---

class StatsOutput(TypedDict):
    n_bins: npt.NDArray[np.int64]
    total_weight: float
    y_mean: float
    yy: float
    ysum: list[npt.NDArray[np.float64]]
    weights: list[npt.NDArray[np.float64]]
    pairs: npt.NDArray[np.float64]

def partition_stats(
    x: npt.NDArray[np.float64],
    y: npt.NDArray[np.float64],
    sample_weight: Optional[npt.NDArray[np.float64]],
    cuts: list[list[float]],
    missing: list[bool],
    *,
    n_jobs: Optional[int] = None,
) -> StatsOutput: ...
def add_stats(a: StatsOutput, b: StatsOutput) -> StatsOutput: ...
def bin_edges(
    x: npt.NDArray[np.float64],
    sample_weight: Optional[npt.NDArray[np.float64]] = None,
    *,
    config: FitConfig,
    n_rows: Optional[int] = None,
) -> list[npt.NDArray[np.float64]]: ...
def fit_stats(
    stats: StatsOutput,
    cuts: list[list[float]],
    missing: list[bool],
    *,
    config: FitConfig,
    held_out: Optional[StatsOutput] = None,
    n_validation: int = 0,
    pairs: list[tuple[tuple[int, int], tuple[list[float], list[float]]]] = ...,
    interaction_penalty: float = 0.0,
) -> FitOutput: ...
