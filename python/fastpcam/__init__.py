"""fastpcam: transparent piecewise-constant additive models fitted with FAST.

FAST (Liu & Mazumder) fits ``f(x) = c + Σ_j β_j[bin_j(x_j)]`` by minimising a weighted
squared loss plus a fused-lasso penalty on the jumps of every shape function, with greedy
block coordinate descent whose every step is an exact dynamic programme.
"""

from ._core import __version__
from ._estimator import FASTRegressor, flsa, lambda_max
from ._classifier import FASTClassifier
from ._cv import FASTRegressorCV, lambda_path
from ._sparse import SparseFASTRegressor, agis_path, l0_path
from ._stats import SufficientStatistics
from ._dask import fit_from_parquet, sufficient_statistics
from ._onnx import onnx_inputs, register_skl2onnx

__all__ = ["FASTRegressor", "FASTClassifier", "FASTRegressorCV", "lambda_path", "SparseFASTRegressor", "agis_path", "flsa", "l0_path", "lambda_max", "__version__"]
__all__ += ["SufficientStatistics", "sufficient_statistics", "fit_from_parquet"]
__all__ += ["onnx_inputs", "register_skl2onnx"]
