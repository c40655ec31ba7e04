//! The solve of the checked entry points: the length and penalty checks, and on long
//! signals the direct algorithm's scan validating each block of the data just before it first
//! reads it ([`Validator`]), so that the data is read once.

use super::direct::{direct, Frontier, Scaled};
use super::totals::{Lanes, Weights};
use super::{solve, starts_direct, FlsaMethod, FlsaWorkspace, DIRECT_STEP_BUDGET};
use crate::error::{check_len, FastError, Result};

/// The solve of the checked entry points, once lengths and `λ` are known to be valid; a bad
/// weight is reported under `w_name`. Gives the result of [`solve`] after
/// [`checked_totals`], bit for bit.
///
/// A long signal ([`FlsaMethod::Auto`] would start with the direct algorithm) is first
/// handed to [`validated_direct`], which checks the data as its scan first reads it instead
/// of in a pass of its own. Only when that does not settle the problem (a non-finite value,
/// a zero or extreme weight, an offset or scale that needs the scaled form, or too many
/// rescans) does the usual validating pass run.
pub(super) fn checked_solve<W: Weights>(
    y: &[f64],
    w: W,
    w_name: &'static str,
    lambda: f64,
    ws: &mut FlsaWorkspace,
    out: &mut [f64],
) -> Result<()> {
    let long = starts_direct(FlsaMethod::Auto, y.len()) && lambda > 0.0;
    let outcome = if long {
        validated_direct(y, w, lambda, out)
    } else {
        Speculation::Declined
    };
    if outcome == Speculation::Solved {
        return Ok(());
    }
    let totals = w.checked_totals(y, w_name)?;
    // The scan gave up on its budget: where the plain direct algorithm would have run, the
    // DP takes over as in `recursion` (the λ_max pass included), without a second attempt.
    let plain = Scaled::new(
        totals.swy / totals.sw,
        y.len(),
        totals.sw,
        totals.y_max,
        totals.w_min,
    )
    .is_some_and(|s| s.plain);
    let method = if outcome == Speculation::OverBudget && totals.w_min > 0.0 && plain {
        FlsaMethod::Dp
    } else {
        FlsaMethod::Auto
    };
    solve(y, w, totals, lambda, method, ws, out);
    Ok(())
}

/// How [`validated_direct`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Speculation {
    /// `out` holds the solution.
    Solved,
    /// The data validated so far is fine, but the direct algorithm ran out of budget.
    OverBudget,
    /// Not solved: the problem needs the validating pass and the general path.
    Declined,
}

/// The unscaled direct algorithm on a long signal (`n ≥ DIRECT_MIN_LONG`, `λ > 0`) with its
/// budget, validating each block of the data just before the scan first reads it and
/// accumulating the [`Totals`] on the way. When the scan completes, the totals (the same as
/// [`weighted_totals`], bit for bit) confirm that the problem is valid and that [`solve`]
/// would have solved it the same way (no zero weight, no scaling); then `out` is its
/// solution, and the problem has been read once.
fn validated_direct<W: Weights>(y: &[f64], w: W, lambda: f64, out: &mut [f64]) -> Speculation {
    let n = y.len();
    let mut check = Validator {
        y,
        w,
        lanes: Lanes::new(),
        reached: 0,
        stopped: false,
    };
    let budget = DIRECT_STEP_BUDGET.saturating_mul(n).saturating_add(64);
    // Only the scaling's `plain` flag matters to the unscaled scan.
    let sc = Scaled {
        c: 0.0,
        sy: 1.0,
        sw: 1.0,
        plain: true,
    };
    if !direct::<W, false, _>(y, w, sc, lambda, budget, &mut check, out) {
        return if !check.stopped {
            Speculation::OverBudget
        } else {
            Speculation::Declined
        };
    }
    let t = W::finish(&check.lanes, n);
    let (low, high) = crate::error::WEIGHT_TOTAL_RANGE;
    let valid = t.swy.is_finite()
        && t.w_min > 0.0
        && t.sw >= low * (1.0 + 1e-9)
        && t.sw <= high * (1.0 - 1e-9);
    let ybar = t.swy / t.sw;
    if !(valid && Scaled::new(ybar, n, t.sw, t.y_max, t.w_min).is_some_and(|s| s.plain)) {
        return Speculation::Declined;
    }
    if out[0] == out[n - 1] && out.iter().all(|&v| v == out[0]) {
        // One segment: λ ≥ λ_max, and the solution is the weighted mean.
        out.fill(ybar);
    }
    Speculation::Solved
}

/// The length and penalty checks shared by the checked entry points.
pub(super) fn check_problem(
    y: &[f64],
    weights: Option<&[f64]>,
    w_name: &'static str,
    lambda: f64,
    out: &[f64],
) -> Result<()> {
    if y.is_empty() {
        return Err(FastError::TooFewSamples(
            "y is empty; the fused lasso needs at least one point".to_string(),
        ));
    }
    if let Some(w) = weights {
        check_len(w_name, y.len(), w.len(), "one weight per point of y")?;
    }
    check_len("out", y.len(), out.len(), "one output per point of y")?;
    if !(lambda.is_finite() && lambda >= 0.0) {
        return Err(FastError::InvalidPenalty {
            name: "lambda",
            value: lambda,
        });
    }
    Ok(())
}

/// Points the validated direct scan checks at a time, just before it first reads them (a
/// multiple of 4; both arrays of a block stay in the first-level cache).
const CHECK_BLOCK: usize = 1024;

/// Checks a long signal block by block as the direct algorithm first reaches it, adding
/// each block to the accumulators of [`Totals`]: the checked entry points read the data
/// once instead of a validating pass and then the scan. It stops the scan at the first
/// block that holds a value the unscaled direct algorithm cannot take as it is (non-finite,
/// a weight outside `[1e-30, 1e30]` such as a zero, a value beyond `±1e30`), or when the
/// first block suggests that the problem needs scaling or centring.
struct Validator<'a, W> {
    y: &'a [f64],
    w: W,
    lanes: Lanes,
    reached: usize,
    /// Whether this check stopped the scan.
    stopped: bool,
}

impl<W: Weights> Frontier for Validator<'_, W> {
    const ACTIVE: bool = true;

    #[inline(always)]
    fn reached(&self) -> usize {
        self.reached
    }

    #[cold]
    #[inline(never)]
    fn advance(&mut self) -> bool {
        let (from, n) = (self.reached, self.y.len());
        let to = n.min(from.saturating_add(CHECK_BLOCK));
        self.w.accumulate(self.y, from, to, &mut self.lanes);
        self.reached = to;
        let go = W::lanes_plain(&self.lanes)
            && (from > 0 || {
                // The first block: a common offset or a scale far from 1 send the whole
                // problem to the scaled form (the totals then decide), so stop early.
                let t = W::finish(&self.lanes, to);
                Scaled::new(t.swy / t.sw, to, t.sw, t.y_max, t.w_min).is_some_and(|s| s.plain)
            });
        self.stopped = !go;
        go
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prox::flsa::*;

    /// A long noisy piecewise-constant signal (the direct algorithm's case) and weights in
    /// `[0.5, 2]`.
    fn long_signal(n: usize) -> (Vec<f64>, Vec<f64>) {
        let y = (0..n)
            .map(|i| ((i / 700) % 5) as f64 * 3.0 + ((i * 7919) % 113) as f64 / 40.0)
            .collect();
        let w = (0..n)
            .map(|i| 0.5 + ((i * 31) % 16) as f64 / 10.0)
            .collect();
        (y, w)
    }

    /// The checked entry points, through the validated scan, against the unchecked one.
    fn checked_matches_unchecked(y: &[f64], w: &[f64], lambda: f64) {
        let n = y.len();
        let mut want = vec![0.0; n];
        flsa_weighted_unchecked(y, w, lambda, &mut FlsaWorkspace::new(), &mut want);
        let mut got = vec![f64::NAN; n];
        flsa_weighted(y, w, lambda, &mut FlsaWorkspace::new(), &mut got).unwrap();
        assert_eq!(got, want);
        if w.iter().all(|&v| v == 1.0) {
            got.fill(f64::NAN);
            flsa_into(y, None, lambda, &mut FlsaWorkspace::new(), &mut got).unwrap();
            assert_eq!(got, want);
        }
    }

    #[test]
    fn validated_scan_gives_the_unchecked_result() {
        let n = 3 * CHECK_BLOCK + 7;
        let (y, w) = long_signal(n);
        let ones = vec![1.0; n];
        for lambda in [0.5, 10.0, 1e6] {
            checked_matches_unchecked(&y, &w, lambda);
            checked_matches_unchecked(&y, &ones, lambda);
        }
        // Declined: a zero weight, an offset or a huge weight after the first block (the
        // general path), and a smooth trend on which the scan runs out of budget (the DP).
        let mut wz = w.clone();
        wz[2 * CHECK_BLOCK + 3] = 0.0;
        checked_matches_unchecked(&y, &wz, 10.0);
        let shifted: Vec<f64> = (0..n)
            .map(|i| if i < CHECK_BLOCK { y[i] } else { y[i] + 1e4 })
            .collect();
        checked_matches_unchecked(&shifted, &w, 10.0);
        let mut wh = w.clone();
        wh[n - 1] = 1e40;
        checked_matches_unchecked(&y, &wh, 10.0);
        let offset: Vec<f64> = y.iter().map(|v| v + 1e4).collect();
        checked_matches_unchecked(&offset, &ones, 10.0);
        let trend: Vec<f64> = (0..n).map(|t| (t as f64).sqrt()).collect();
        checked_matches_unchecked(&trend, &ones, 2e3);
        checked_matches_unchecked(&trend, &w, 2e3);
    }

    #[test]
    fn validated_scan_names_the_first_bad_entry() {
        let n = 4 * CHECK_BLOCK;
        let (y, w) = long_signal(n);
        let mut ws = FlsaWorkspace::new();
        let mut out = vec![0.0; n];
        let late = 3 * CHECK_BLOCK + 5;
        let mut y_bad = y.clone();
        y_bad[late] = f64::NAN;
        for weights in [None, Some(&w[..])] {
            let err = flsa_into(&y_bad, weights, 1.0, &mut ws, &mut out).unwrap_err();
            assert!(
                matches!(err, FastError::NonFiniteValue { what: "y", index, .. } if index == late),
                "{err:?}"
            );
        }
        y_bad[late] = f64::INFINITY;
        assert!(flsa_into(&y_bad, None, 1.0, &mut ws, &mut out).is_err());
        for bad in [-0.5, f64::NAN, f64::INFINITY] {
            let mut w_bad = w.clone();
            w_bad[late] = bad;
            let err = flsa_into(&y, Some(&w_bad), 1.0, &mut ws, &mut out).unwrap_err();
            assert!(
                matches!(err, FastError::BadWeight { what: "weights", index, .. } if index == late),
                "{err:?}"
            );
        }
    }
}
