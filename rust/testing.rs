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

/// A date over eight 365-day years (every row a different minute), its year, its day of the
/// year and an unrelated column on `n` rows; the target is a trend linear in the date, a sine
/// of the fourth column and a fixed uniform noise of width `noise`. The date's trend costs as
/// much total variation as the year's steps plus the day's ramp: greedy updates creep along
/// the valley between the two (the data of the extrapolation tests).
pub(crate) fn date_year_day(n: usize, noise: f64) -> (ndarray::Array2<f64>, ndarray::Array1<f64>) {
    let mut x = ndarray::Array2::zeros((n, 4));
    let mut y = ndarray::Array1::zeros(n);
    for i in 0..n {
        let minute = (i as f64 * 1_000_003.0) % (8.0 * 365.0 * 1440.0);
        let day = (minute / 1440.0).floor();
        x[[i, 0]] = 2010.0 + minute / (365.0 * 1440.0);
        x[[i, 1]] = 2010.0 + (day / 365.0).floor();
        x[[i, 2]] = day % 365.0;
        x[[i, 3]] = ((i * 7919) % 1000) as f64;
        let noise = (((i * 104_729) % 1009) as f64 / 1009.0 - 0.5) * noise;
        y[i] = 0.15 * (x[[i, 0]] - 2010.0) + (x[[i, 3]] / 500.0).sin() + noise;
    }
    (x, y)
}
