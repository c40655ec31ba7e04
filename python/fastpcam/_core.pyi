"""Type stubs of the compiled core (``rust/bindings``)."""

from typing import Callable, Optional, TypedDict

import numpy as np
import numpy.typing as npt

__version__: str
DEFAULT_TOL: float
DEFAULT_MAX_ITER: int
DEFAULT_LAMBDA_RATIO: float
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
    history_objective: npt.NDArray[np.float64]
    history_feature: npt.NDArray[np.int64]
    history_time: npt.NDArray[np.float64]

def fit(
    x: npt.NDArray[np.float64],
    y: npt.NDArray[np.float64],
    sample_weight: Optional[npt.NDArray[np.float64]] = None,
    *,
    lambda_f: Optional[float],
    lambda_ratio: float,
    max_bins: Optional[int],
    selection: str,
    tol: float,
    max_iter: int,
    max_time: Optional[float],
    n_jobs: Optional[int],
    random_state: int,
    bin_sample_size: int,
    progress: Optional[Callable[[int, float, float, float], object]] = None,
    progress_interval: float = 1.0,
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
    max_bins: Optional[int],
    selection: str,
    tol: float,
    max_iter: int,
    max_time: Optional[float],
    n_jobs: Optional[int],
    random_state: int,
    bin_sample_size: int,
) -> PathOutput: ...
def lambda_max(
    x: npt.NDArray[np.float64],
    y: npt.NDArray[np.float64],
    sample_weight: Optional[npt.NDArray[np.float64]] = None,
    *,
    max_bins: Optional[int],
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

