//! Black-Smoke-like synthetic features shared by the `fit` benchmark and the `profile_fit`
//! example (each includes this file with `#[path]`).

use ndarray::Array2;
use rand::Rng;

/// Fills `x` (any memory layout) row by row from `rng` with Black-Smoke-like columns, by
/// feature index modulo 4: uniform on `[0, 1)`, twelve levels, zero-inflated (60% zeros, the
/// rest uniform on `[0, 10)`), and the column three to the left plus a little noise.
pub fn fill_black_smoke<R: Rng>(x: &mut Array2<f64>, rng: &mut R) {
    let (n, p) = x.dim();
    for i in 0..n {
        for j in 0..p {
            x[[i, j]] = match j % 4 {
                0 => rng.random::<f64>(),
                1 => (rng.random_range(0..12)) as f64,
                2 => {
                    if rng.random::<f64>() < 0.6 {
                        0.0
                    } else {
                        rng.random::<f64>() * 10.0
                    }
                }
                _ => x[[i, j - 3]] + 0.05 * rng.random::<f64>(),
            };
        }
    }
}
