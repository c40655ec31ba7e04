//! Datafits: the per-row losses of the Newton state ([`crate::newton`]).
//!
//! A datafit gives, per row with target `y`, weight `v` and linear predictor `η`, the loss
//! `ℓ(y, η)`, the residual `r = −∂ℓ/∂η` (the bin sums of `v·r` are minus the gradient in the
//! blocks), the weighted curvature `v·∂²ℓ/∂η²`, the change of the loss for a step `s`
//! computed without cancellation, a bound of the curvature (for the majorise–minimise
//! fallback) and the link of the constant model. [`Logistic`] is the first; every method is
//! an associated function, so the Newton state is compiled once per datafit.

/// A per-row loss for the Newton state.
pub trait Datafit: Send + Sync + 'static {
    /// An upper bound of `∂²ℓ/∂η²` over every `y` and `η`.
    const CURVATURE_BOUND: f64;

    /// `ℓ(y, η)`.
    fn loss(y: f64, eta: f64) -> f64;

    /// The residual `r = −∂ℓ/∂η` at `η` and the weighted curvature `v·∂²ℓ/∂η²`.
    fn residual(y: f64, eta: f64, v: f64) -> (f64, f64);

    /// The weighted curvature `v·∂²ℓ/∂η²` from the residual `r` at the same point.
    fn curvature(v: f64, y: f64, r: f64) -> f64;

    /// `ℓ(y, η + s) − ℓ(y, η)` from the residual `r` at `η`, with `e1 = expm1(s)` and
    /// `e1n = expm1(−s)`; exactly 0 for `s = 0`.
    fn loss_change(y: f64, r: f64, s: f64, e1: f64, e1n: f64) -> f64;

    /// The linear predictor of the constant model whose mean is `mean`.
    fn link(mean: f64) -> f64;
}

/// The log-loss of binary classification, `ℓ(y, η) = log(1 + e^η) − y·η`, with
/// `p = σ(η)`, `r = y − p` and curvature `p(1 − p) ≤ ¼`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Logistic;

impl Datafit for Logistic {
    const CURVATURE_BOUND: f64 = 0.25;

    #[inline]
    fn loss(y: f64, eta: f64) -> f64 {
        log_loss(y, eta)
    }

    #[inline(always)]
    fn residual(y: f64, eta: f64, v: f64) -> (f64, f64) {
        let (p, q) = sigmoid_pq(eta);
        (y * q - (1.0 - y) * p, v * p * q)
    }

    #[inline(always)]
    fn curvature(v: f64, y: f64, r: f64) -> f64 {
        // p = y − r and 1 − p = (1 − y) + r, both accurate.
        v * (y - r) * ((1.0 - y) + r)
    }

    /// `log1p(p·expm1(s)) − y·s`, or its mirror `(1−y)·s + log1p((1−p)·expm1(−s))` for
    /// `p > ½`.
    #[inline(always)]
    fn loss_change(y: f64, r: f64, s: f64, e1: f64, e1n: f64) -> f64 {
        if s == 0.0 {
            return 0.0;
        }
        let p = y - r;
        if p <= 0.5 {
            (p * e1).ln_1p() - y * s
        } else {
            let q = (1.0 - y) + r;
            (1.0 - y) * s + (q * e1n).ln_1p()
        }
    }

    fn link(mean: f64) -> f64 {
        (mean / (1.0 - mean)).ln()
    }
}

/// `(p, 1 − p)` with `p = σ(η)`, both accurate near 0 and 1.
#[inline(always)]
fn sigmoid_pq(eta: f64) -> (f64, f64) {
    let e = (-eta.abs()).exp();
    let inv = 1.0 / (1.0 + e);
    if eta >= 0.0 {
        (inv, e * inv)
    } else {
        (e * inv, inv)
    }
}

/// `ℓ(y, η) = log(1 + e^η) − y·η` without overflow or cancellation.
#[inline]
pub fn log_loss(y: f64, eta: f64) -> f64 {
    let lin = if eta >= 0.0 {
        (1.0 - y) * eta
    } else {
        -y * eta
    };
    lin + (-eta.abs()).exp().ln_1p()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_loss_is_stable() {
        assert!((log_loss(1.0, 0.0) - std::f64::consts::LN_2).abs() < 1e-15);
        assert_eq!(log_loss(1.0, 800.0), 0.0);
        assert!((log_loss(0.0, 800.0) - 800.0).abs() < 1e-12);
        assert!((log_loss(1.0, -800.0) - 800.0).abs() < 1e-12);
        assert!((log_loss(0.0, -40.0) - (-40.0f64).exp()).abs() < 1e-30);
    }

    #[test]
    fn loss_change_matches_the_direct_difference() {
        for &y in &[0.0, 1.0, 0.3] {
            for &eta in &[-30.0, -3.0, -0.2, 0.0, 0.7, 4.0, 25.0] {
                for &s in &[-5.0, -0.3, -1e-9, 1e-9, 0.4, 6.0] {
                    let (p, q) = sigmoid_pq(eta);
                    let r = y * q - (1.0 - y) * p;
                    let d = Logistic::loss_change(y, r, s, f64::exp_m1(s), f64::exp_m1(-s));
                    let direct = log_loss(y, eta + s) - log_loss(y, eta);
                    let tol = 1e-12 * (1.0 + log_loss(y, eta).abs()) + 1e-9 * d.abs();
                    assert!(
                        (d - direct).abs() <= tol,
                        "y {y} eta {eta} s {s}: {d} vs {direct}"
                    );
                }
            }
        }
        // Far below the loss's own rounding level the change is still resolved.
        let (p, q) = sigmoid_pq(0.3);
        let r = 1.0 * q;
        let d = Logistic::loss_change(1.0, r, 1e-20, f64::exp_m1(1e-20), f64::exp_m1(-1e-20));
        assert!((d + q * 1e-20).abs() < 1e-35, "{d}");
        let _ = p;
    }

    #[test]
    fn sigmoid_is_accurate_in_both_tails() {
        let (p, q) = sigmoid_pq(-40.0);
        assert!((p - (-40.0f64).exp()).abs() < 1e-30 && q == 1.0);
        let (p, q) = sigmoid_pq(40.0);
        assert!((q - (-40.0f64).exp()).abs() < 1e-30 && p == 1.0);
    }
}
