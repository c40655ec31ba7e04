"""Type stubs of the compiled core (``rust/bindings``)."""

from typing import Callable, Optional, TypedDict, Union

import numpy as np
import numpy.typing as npt

__version__: str
DEFAULT_TOL: float
DEFAULT_MAX_ITER: int
DEFAULT_LAMBDA_RATIO: float
VALIDATION_MIN_ROWS: int
DEFAULT_BIN_SAMPLE_SIZE: int

class FitOutput(TypedDict):
    intercept: float
    cuts: list[npt.NDArray[np.float64]]
    values: list[npt.NDArray[np.float64]]
    bin_weights: list[npt.NDArray[np.float64]]
    missing_values: npt.NDArray[np.float64]
    missing_weights: npt.NDArray[np.float64]
    lambda_f: float
    lambda_max: float
    n_iter: int
    converged: bool
    kkt_residual: float
    objective: float
    stop: str
    engine: str
    history_objective: npt.NDArray[np.float64]
    history_feature: npt.NDArray[np.int64]
    history_time: npt.NDArray[np.float64]
    lambda_ratio: float
    search_ratios: npt.NDArray[np.float64]
    search_loss: npt.NDArray[np.float64]
    search_n_iter: npt.NDArray[np.int64]
    search_n_validation: int

def fit(
    x: npt.NDArray[np.float64],
    y: npt.NDArray[np.float64],
    sample_weight: Optional[npt.NDArray[np.float64]] = None,
    *,
    lambda_f: Optional[float],
    lambda_ratio: float,
    max_bins: Union[int, str, None],
    selection: str,
    tol: float,
    max_iter: int,
    max_time: Optional[float],
    n_jobs: Optional[int],
    random_state: int,
    bin_sample_size: int,
    progress: Optional[Callable[[int, float, float, float], object]] = None,
    progress_interval: float = 1.0,
    bins: Optional[list[Optional[list[float]]]] = None,
    engine: str = "auto",
    validation_fraction: Optional[float] = None,
) -> FitOutput: ...
def fit_logistic(
    x: npt.NDArray[np.float64],
    y: npt.NDArray[np.float64],
    sample_weight: Optional[npt.NDArray[np.float64]] = None,
    *,
    lambda_f: Optional[float],
    lambda_ratio: float,
    max_bins: Union[int, str, None],
    selection: str,
    tol: float,
    max_iter: int,
    max_time: Optional[float],
    n_jobs: Optional[int],
    random_state: int,
    bin_sample_size: int,
    progress: Optional[Callable[[int, float, float, float], object]] = None,
    progress_interval: float = 1.0,
    bins: Optional[list[Optional[list[float]]]] = None,
    engine: str = "auto",
    validation_fraction: Optional[float] = None,
) -> FitOutput: ...
class PathFit(TypedDict):
    lambda_f: float
    intercept: float
    values: list[npt.NDArray[np.float64]]
    missing_values: npt.NDArray[np.float64]
    n_iter: int
    converged: bool
    kkt_residual: float
    objective: float

class PathOutput(TypedDict):
    cuts: list[npt.NDArray[np.float64]]
    bin_weights: list[npt.NDArray[np.float64]]
    missing_weights: npt.NDArray[np.float64]
    lambda_max: float
    fits: list[PathFit]

def fit_path(
    x: npt.NDArray[np.float64],
    y: npt.NDArray[np.float64],
    sample_weight: Optional[npt.NDArray[np.float64]] = None,
    *,
    lambdas: list[float],
    relative: bool,
    max_bins: Union[int, str, None],
    selection: str,
    tol: float,
    max_iter: int,
    max_time: Optional[float],
    n_jobs: Optional[int],
    random_state: int,
    bin_sample_size: int,
    bins: Optional[list[Optional[list[float]]]] = None,
) -> PathOutput: ...
def lambda_max(
    x: npt.NDArray[np.float64],
    y: npt.NDArray[np.float64],
    sample_weight: Optional[npt.NDArray[np.float64]] = None,
    *,
    max_bins: Union[int, str, None],
    random_state: int,
    bin_sample_size: int,
    n_jobs: Optional[int] = None,
) -> float: ...
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

DEFAULT_MAX_SWAPS: int
DEFAULT_SCALE_DOWN: float
DEFAULT_N_LAMBDA_S: int

class SparseModelOutput(TypedDict):
    intercept: float
    values: list[npt.NDArray[np.float64]]
    missing_values: npt.NDArray[np.float64]
    support: npt.NDArray[np.int64]
    selected: npt.NDArray[np.int64]
    flat: npt.NDArray[np.int64]
    objective: float
    fast_objective: float
    loss: float
    lambda_s: float
    n_iter: int
    n_swaps: int
    converged: bool
    kkt_residual: float

class SparseOutput(TypedDict):
    cuts: list[npt.NDArray[np.float64]]
    bin_weights: list[npt.NDArray[np.float64]]
    missing_weights: npt.NDArray[np.float64]
    lambda_f: float
    lambda_max: float
    lambda_s_max: float
    stop: str
    models: list[SparseModelOutput]
    history_objective: npt.NDArray[np.float64]
    history_feature: npt.NDArray[np.int64]
    history_time: npt.NDArray[np.float64]
    history_lambda_s: npt.NDArray[np.float64]
    history_segment: npt.NDArray[np.int64]

def fit_agis(
    x: npt.NDArray[np.float64],
    y: npt.NDArray[np.float64],
    sample_weight: Optional[npt.NDArray[np.float64]] = None,
    *,
    max_features: int,
    lambda_f: Optional[float],
    lambda_ratio: float,
    max_bins: Union[int, str, None],
    tol: float,
    max_iter: int,
    local_search: bool,
    max_swaps: int,
    n_jobs: Optional[int],
    random_state: int,
    bin_sample_size: int,
) -> SparseOutput: ...
def fit_l0(
    x: npt.NDArray[np.float64],
    y: npt.NDArray[np.float64],
    sample_weight: Optional[npt.NDArray[np.float64]] = None,
    *,
    max_features: int,
    lambda_s: Optional[list[float]],
    n_lambda_s: int,
    scale_down_factor: float,
    lambda_f: Optional[float],
    lambda_ratio: float,
    max_bins: Union[int, str, None],
    tol: float,
    max_iter: int,
    local_search: bool,
    max_swaps: int,
    n_jobs: Optional[int],
    random_state: int,
    bin_sample_size: int,
) -> SparseOutput: ...

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
    max_bins: Union[int, str, None],
    random_state: int,
    bin_sample_size: int,
    bins: Optional[list[Optional[list[float]]]] = None,
    n_rows: Optional[int] = None,
    n_jobs: Optional[int] = None,
) -> list[npt.NDArray[np.float64]]: ...
def fit_stats(
    stats: StatsOutput,
    cuts: list[list[float]],
    missing: list[bool],
    *,
    lambda_f: Optional[float],
    lambda_ratio: float,
    selection: str,
    tol: float,
    max_iter: int,
    max_time: Optional[float],
    n_jobs: Optional[int],
    held_out: Optional[StatsOutput] = None,
    n_validation: int = 0,
) -> FitOutput: ...
