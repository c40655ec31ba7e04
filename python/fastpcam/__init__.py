"""fastpcam: transparent piecewise-constant additive models fitted with FAST.

FAST (Liu & Mazumder) fits ``f(x) = c + Σ_j β_j[bin_j(x_j)]`` by minimising a weighted
squared loss plus a fused-lasso penalty on the jumps of every shape function, with greedy
block coordinate descent whose every step is an exact dynamic programme.
"""

from ._core import __version__
from ._estimator import FASTRegressor, flsa, lambda_max

__all__ = ["FASTRegressor", "flsa", "lambda_max", "__version__"]
