//! Helpers of the crate's unit tests.

/// Uniform numbers in `[0, 1)` from a fixed 64-bit linear congruential generator seeded with
/// `seed` (Knuth's MMIX constants; the top 53 bits of the state): the same stream on every
/// platform, so the tests' data, and the figures their documentation quotes, stay fixed.
pub(crate) fn lcg(seed: u64) -> impl FnMut() -> f64 {
    let mut state = seed;
    move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((state >> 11) as f64) / ((1u64 << 53) as f64)
    }
}

/// Three correlated features (each `v + 0.3·u` for a shared uniform `v`) on `n` rows and the
/// target `4·x0·x1 + 3·x1·x2 + x2` with uniform noise of width 0.5, from [`lcg`]`(seed)`: two
/// pair effects sharing feature 1, whose pair blocks and main effects trade directions slowly
/// (the data of the pair stage's descent tests).
pub(crate) fn correlated_pairs(
    n: usize,
    seed: u64,
) -> (ndarray::Array2<f64>, ndarray::Array1<f64>) {
    let mut unif = lcg(seed);
    let mut x = ndarray::Array2::zeros((n, 3));
    let mut y = ndarray::Array1::zeros(n);
    for i in 0..n {
        let v = unif();
        for j in 0..3 {
            x[[i, j]] = v + 0.3 * unif();
        }
        y[i] = 4.0 * x[[i, 0]] * x[[i, 1]]
            + 3.0 * x[[i, 1]] * x[[i, 2]]
            + x[[i, 2]]
            + 0.5 * (unif() - 0.5);
    }
    (x, y)
}

/// Asserts that a faster route to an optimum (extrapolation, blocks solved together, a
/// better curvature) took fewer block updates than the slower one: `fast < slow`; `what`
/// names the two routes in a failure.
pub(crate) fn assert_fewer_updates(fast: usize, slow: usize, what: &str) {
    assert!(fast < slow, "{what}: {fast} updates against {slow}");
}
