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

/// Asserts that a faster route to an optimum (extrapolation, blocks solved together, a
/// better curvature) took fewer block updates than the slower one: `fast < slow`; `what`
/// names the two routes in a failure.
pub(crate) fn assert_fewer_updates(fast: usize, slow: usize, what: &str) {
    assert!(fast < slow, "{what}: {fast} updates against {slow}");
}
