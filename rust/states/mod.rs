//! The descent states the loop runs on: the exact squared-loss state ([`squared`], its
//! engine choice in [`engine`] and its descent in rounds with line searches in
//! [`extrapolate`]), and the proximal-Newton state ([`newton`]) over a per-row datafit
//! ([`datafit`]).

pub mod anderson;
pub mod datafit;
pub mod engine;
pub mod extrapolate;
pub mod line;
pub mod newton;
pub mod softmax;
pub mod squared;

use rayon::prelude::*;

/// Runs `f` on the fixed chunks of `0..n` (`chunk` rows each; in parallel when there is more
/// than one) and sums their results in chunk order, kept in `partials` (grown as needed): the
/// same number for any number of threads.
pub(crate) fn chunked_sum<F>(n: usize, chunk: usize, partials: &mut Vec<f64>, f: F) -> f64
where
    F: Fn(std::ops::Range<usize>) -> f64 + Sync,
{
    let n_chunks = n.div_ceil(chunk).max(1);
    if partials.len() < n_chunks {
        partials.resize(n_chunks, 0.0);
    }
    let parts = &mut partials[..n_chunks];
    if n_chunks == 1 {
        parts[0] = f(0..n);
    } else {
        parts
            .par_iter_mut()
            .enumerate()
            .for_each(|(c, o)| *o = f(c * chunk..((c + 1) * chunk).min(n)));
    }
    parts.iter().sum()
}
