//! Datafits: the per-row losses of the Newton state ([`crate::states::newton`]).
//!
//! A datafit gives, per row with target `y`, weight `v` and linear predictor `η`, the loss
//! `ℓ(y, η)`, the residual `r = −∂ℓ/∂η` (the bin sums of `v·r` are minus the gradient in the
//! blocks), the weighted curvature `v·∂²ℓ/∂η²`, the change of the loss for a step `s`
//! computed without cancellation, a bound of the curvature when one exists (for the
//! majorise–minimise fallback), the link of the constant model and the held-out criterion.
//! [`Logistic`] is the first; [`Poisson`], [`Gamma`] and [`Tweedie`] are scikit-learn's half
//! losses with a log link (`μ = e^η`):
//!
//! ```text
//! Poisson        ℓ(y, η) = e^η − y·η                                  (y ≥ 0)
//! Gamma          ℓ(y, η) = η + y·e^−η                                 (y > 0)
//! Tweedie(p)     ℓ(y, η) = e^{(2−p)η}/(2−p) − y·e^{(1−p)η}/(1−p)       (y ≥ 0, 1 < p < 2)
//! ```
//!
//! Their curvatures (`e^η`, `y·e^−η`, `(2−p)e^{(2−p)η} − (1−p)y·e^{(1−p)η}`) have no global
//! bound, so the Newton state falls back to damping instead of majorise–minimise for them.
//! A datafit is a small `Copy` value (Tweedie carries its power); the Newton state is
//! compiled once per datafit type.

/// A per-row loss for the Newton state.
pub trait Datafit: Copy + Send + Sync + 'static {
    /// An upper bound of `∂²ℓ/∂η²` over every `y` and `η`, if there is one (by default
    /// none: the log-link losses' curvature grows without bound).
    #[inline]
    fn curvature_bound(&self) -> Option<f64> {
        None
    }

    /// `ℓ(y, η)`.
    fn loss(&self, y: f64, eta: f64) -> f64;

    /// The residual `r = −∂ℓ/∂η` at `η` and the weighted curvature `v·∂²ℓ/∂η²`.
    fn residual(&self, y: f64, eta: f64, v: f64) -> (f64, f64);

    /// The weighted curvature `v·∂²ℓ/∂η²` at `η`, whose residual is `r`.
    fn curvature(&self, v: f64, y: f64, eta: f64, r: f64) -> f64;

    /// `ℓ(y, η + s) − ℓ(y, η)` from `η` and the residual `r` at `η`, with `e1 = expm1(s)`
    /// and `e1n = expm1(−s)`; exactly 0 for `s = 0`.
    fn loss_change(&self, y: f64, eta: f64, r: f64, s: f64, e1: f64, e1n: f64) -> f64;

    /// `Σ_i v ℓ(y_i, η_i + s) − v ℓ(y_i, η_i)` over the rows of one bin, from the sums over
    /// them of `v·r` (`r_sum`) and of the curvature `v·ℓ''` (`h_sum`), where the loss change
    /// of a common step `s` is a function of those two sums alone: for the log-link losses
    /// (`None`, the default: the change needs every row). Written `−r_sum·s + (terms of
    /// order s²)`, so the linear part is as accurate as the gradient itself. A block
    /// update's backtracking then costs `O(bins)` instead of a pass over the rows (two `exp`
    /// and two `expm1` a row for Tweedie).
    #[inline]
    fn bin_loss_change(&self, _r_sum: f64, _h_sum: f64, _s: f64) -> Option<f64> {
        None
    }

    /// An upper bound of the loss change [`Datafit::bin_loss_change`] describes, from the
    /// same two sums, for a datafit without that exact form, and how far above the change it
    /// can be at most (`None`, the default: no bound). A block step whose bound already
    /// passes the Armijo test is accepted without the pass over the rows that measures its
    /// change first ([`crate::params::ObjectiveTracking`]).
    #[inline]
    fn bin_loss_bound(&self, _r_sum: f64, _h_sum: f64, _s: f64) -> Option<(f64, f64)> {
        None
    }

    /// Whether a step moves a row's residual and curvature by [`Datafit::moved`] (the
    /// log-link losses, whose terms are exponentials of `η`, and the log-loss, whose odds
    /// are: scaled by a step's [`Datafit::step_factors`]), instead of recomputing them from
    /// `η` (an `exp` or two a row).
    const SCALES: bool = false;

    /// The factors by which a step `s` scales the exponential terms of the loss (where
    /// [`Datafit::SCALES`]; computed once per bin of a block's step). By default `[e^s, 1]`:
    /// a log link's mean and the log-loss's odds scale by `e^s`.
    #[inline]
    fn step_factors(&self, s: f64) -> [f64; 2] {
        [s.exp(), 1.0]
    }

    /// Whether [`Datafit::moved`] moves a row of weight `v > 0` and weighted curvature `h`
    /// to full accuracy (else its residual is recomputed from `η`); by default always.
    #[inline(always)]
    fn movable(&self, _v: f64, _h: f64) -> bool {
        true
    }

    /// `(r, v·ℓ'')` at `η + s` from `(r, h)` at `η` (`h = v·ℓ''`, `v > 0`) and `f =
    /// step_factors(s)`, where [`Datafit::SCALES`] (the residual and curvature unchanged
    /// otherwise: not called there).
    #[inline]
    fn moved(&self, _y: f64, _v: f64, r: f64, h: f64, _f: [f64; 2]) -> (f64, f64) {
        (r, h)
    }

    /// The linear predictor of the constant model whose mean is `mean`.
    fn link(&self, mean: f64) -> f64;

    /// The held-out criterion of one row (per unit weight): the log-loss for [`Logistic`],
    /// the unit deviance `2(ℓ(y, η) − ℓ(y, link(y)))` for the log-link losses.
    fn holdout(&self, y: f64, eta: f64) -> f64;
}

/// The log-loss of binary classification, `ℓ(y, η) = log(1 + e^η) − y·η`, with
/// `p = σ(η)`, `r = y − p` and curvature `p(1 − p) ≤ ¼`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Logistic;

impl Datafit for Logistic {
    #[inline]
    fn curvature_bound(&self) -> Option<f64> {
        Some(0.25)
    }

    #[inline]
    fn loss(&self, y: f64, eta: f64) -> f64 {
        log_loss(y, eta)
    }

    #[inline(always)]
    fn residual(&self, y: f64, eta: f64, v: f64) -> (f64, f64) {
        let (p, q) = sigmoid_pq(eta);
        (y * q - (1.0 - y) * p, v * p * q)
    }

    #[inline(always)]
    fn curvature(&self, v: f64, y: f64, _eta: f64, r: f64) -> f64 {
        // p = y − r and 1 − p = (1 − y) + r, both accurate.
        v * (y - r) * ((1.0 - y) + r)
    }

    /// `log1p(p·expm1(s)) − y·s`, or its mirror `(1−y)·s + log1p((1−p)·expm1(−s))` for
    /// `p > ½`.
    #[inline(always)]
    fn loss_change(&self, y: f64, _eta: f64, r: f64, s: f64, e1: f64, e1n: f64) -> f64 {
        if s == 0.0 {
            return 0.0;
        }
        let p = y - r;
        if p <= 0.5 {
            ln_1p_small(p * e1) - y * s
        } else {
            let q = (1.0 - y) + r;
            (1.0 - y) * s + ln_1p_small(q * e1n)
        }
    }

    /// `−r_sum·s + h_sum·(e^|s| − 1 − |s|)`, at most `h_sum·(2 sinh|s| − 2|s|)` above the
    /// change. The log-loss's third derivative is `ℓ''·(1 − 2p)`, at most `ℓ''` in size, so
    /// `ℓ''(η)·e^{−|t|} ≤ ℓ''(η + t) ≤ ℓ''(η)·e^|t|`, and `ℓ(η + s) − ℓ(η) + r·s =
    /// ∫₀ˢ (s − t)·ℓ''(η + t) dt` lies between `ℓ''(η)·(e^{−|s|} − 1 + |s|)` and
    /// `ℓ''(η)·(e^|s| − 1 − |s|)`, row by row; summed over a bin's rows (a common `s`) with
    /// their weights. The gap is `h_sum·|s|³/3` for small steps.
    #[inline]
    fn bin_loss_bound(&self, r_sum: f64, h_sum: f64, s: f64) -> Option<(f64, f64)> {
        let a = s.abs();
        let bound = -r_sum * s + h_sum * expm1_minus_x(a);
        // sinh a − a by its series below ½ (the difference cancels there; the terms after
        // a¹³ are below 1e-14 of the sum).
        let odd = if a < 0.5 {
            let a2 = a * a;
            let t = [156.0, 110.0, 72.0, 42.0, 20.0]
                .iter()
                .fold(1.0, |t, &k| 1.0 + a2 / k * t);
            a * a2 / 6.0 * t
        } else {
            a.sinh() - a
        };
        Some((bound, 2.0 * h_sum * odd))
    }

    /// A step scales the odds `p/q` by `e^s` (the default [`Datafit::step_factors`]).
    const SCALES: bool = true;

    /// `p' = p·e^s / D`, `q' = q / D` with `D = q + p·e^s` (a sum of two nonnegative terms,
    /// so neither side cancels), `r = y·q' − (1−y)·p'`, `h = v·p'·q'`: the residual and
    /// curvature at `η + s` without an `exp` a row. Both sides are read to full relative
    /// accuracy: the larger `m` of `p = y − r` and `q = (1 − y) + r` (at least ½, so its
    /// rounding is relative) from the residual, the smaller as `(h/v)` over it. Both
    /// fractions are taken over the one denominator `m·D`: with `pq = h/v`, `p' = pq·e^s /
    /// (pq·e^s + m²)` and `q' = m² / (…)` where `q` is the larger side, `p' = m²·e^s / (m²·e^s
    /// + pq)` and `q' = pq / (…)` where `p` is; one division a row instead of two, and no
    /// branch on the side. Rows whose smaller side is below the normal range are recomputed
    /// from `η` ([`Datafit::movable`]).
    #[inline(always)]
    fn moved(&self, y: f64, v: f64, r: f64, h: f64, f: [f64; 2]) -> (f64, f64) {
        let (p0, q0) = (y - r, (1.0 - y) + r);
        let pq = h / v;
        let m = p0.max(q0);
        let m2 = m * m;
        let q_larger = p0 <= q0;
        let pe = if q_larger { pq } else { m2 } * f[0];
        let qe = if q_larger { m2 } else { pq };
        let inv = 1.0 / (pe + qe);
        let (p1, q1) = (pe * inv, qe * inv);
        (y * q1 - (1.0 - y) * p1, v * p1 * q1)
    }

    /// `p·q = h/v` in the normal range (both sides then are: the larger is at least ½).
    #[inline(always)]
    fn movable(&self, v: f64, h: f64) -> bool {
        h / v >= f64::MIN_POSITIVE
    }

    fn link(&self, mean: f64) -> f64 {
        (mean / (1.0 - mean)).ln()
    }

    fn holdout(&self, y: f64, eta: f64) -> f64 {
        log_loss(y, eta)
    }
}

/// scikit-learn's `HalfPoissonLoss`: `ℓ(y, η) = e^η − y·η`, `r = y − μ`, curvature `μ`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Poisson;

impl Datafit for Poisson {
    #[inline]
    fn loss(&self, y: f64, eta: f64) -> f64 {
        eta.exp() - y * eta
    }

    #[inline(always)]
    fn residual(&self, y: f64, eta: f64, v: f64) -> (f64, f64) {
        let mu = eta.exp();
        (y - mu, v * mu)
    }

    /// `v·μ`, with `μ = e^η` read from the residual `r = fl(y − μ)` where `y − r` is
    /// accurate (`μ ≥ y/2`: exact up to `2y` by Sterbenz's lemma, within an ulp above), else
    /// from `η`. A block update reads `μ` twice a row (curvature, loss change); `exp` was
    /// 29% of a Poisson pair fit's time (`vietnam_pharmacy`).
    #[inline(always)]
    fn curvature(&self, v: f64, y: f64, eta: f64, r: f64) -> f64 {
        v * accurate_or(y - r, 0.5 * y, || eta.exp())
    }

    /// `μ·expm1(s) − y·s`.
    #[inline(always)]
    fn loss_change(&self, y: f64, eta: f64, r: f64, s: f64, e1: f64, _e1n: f64) -> f64 {
        if s == 0.0 {
            return 0.0;
        }
        self.curvature(1.0, y, eta, r) * e1 - y * s
    }

    /// `Σ v(μ·expm1(s) − y·s) = −R·s + H·(expm1(s) − s)` with `R = Σ v(y − μ)`, `H = Σ v·μ`.
    #[inline]
    fn bin_loss_change(&self, r_sum: f64, h_sum: f64, s: f64) -> Option<f64> {
        Some(-r_sum * s + h_sum * expm1_minus_x(s))
    }

    /// A step scales `μ` by `e^s` (the default [`Datafit::step_factors`]).
    const SCALES: bool = true;

    /// `v·μ ← v·μ·e^s`, `r = y − μ`.
    #[inline(always)]
    fn moved(&self, y: f64, v: f64, _r: f64, h: f64, f: [f64; 2]) -> (f64, f64) {
        let h = h * f[0];
        (y - if v == 1.0 { h } else { h / v }, h)
    }

    fn link(&self, mean: f64) -> f64 {
        mean.ln()
    }

    /// `2(y·log(y/μ) − y + μ)`.
    fn holdout(&self, y: f64, eta: f64) -> f64 {
        let at_y = if y > 0.0 { y - y * y.ln() } else { 0.0 };
        2.0 * (self.loss(y, eta) - at_y)
    }
}

/// scikit-learn's `HalfGammaLoss`: `ℓ(y, η) = η + y·e^−η`, `r = y·e^−η − 1`, curvature
/// `y·e^−η`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Gamma;

impl Datafit for Gamma {
    #[inline]
    fn loss(&self, y: f64, eta: f64) -> f64 {
        eta + y * (-eta).exp()
    }

    #[inline(always)]
    fn residual(&self, y: f64, eta: f64, v: f64) -> (f64, f64) {
        let q = y * (-eta).exp();
        (q - 1.0, v * q)
    }

    /// `v·q`, with `q = y·e^−η` read from the residual `r = fl(q − 1)` where `r + 1` is
    /// accurate (`q ≥ ½`), else from `η` (as [`Poisson`]'s).
    #[inline(always)]
    fn curvature(&self, v: f64, y: f64, eta: f64, r: f64) -> f64 {
        v * accurate_or(r + 1.0, 0.5, || y * (-eta).exp())
    }

    /// `s + y·e^−η·expm1(−s)`.
    #[inline(always)]
    fn loss_change(&self, y: f64, eta: f64, r: f64, s: f64, _e1: f64, e1n: f64) -> f64 {
        if s == 0.0 {
            return 0.0;
        }
        s + self.curvature(1.0, y, eta, r) * e1n
    }

    /// `Σ v(s + q·expm1(−s)) = −R·s + H·(expm1(−s) + s)` with `R = Σ v(q − 1)`, `H = Σ v·q`.
    #[inline]
    fn bin_loss_change(&self, r_sum: f64, h_sum: f64, s: f64) -> Option<f64> {
        Some(-r_sum * s + h_sum * expm1_minus_x(-s))
    }

    const SCALES: bool = true;

    #[inline]
    fn step_factors(&self, s: f64) -> [f64; 2] {
        [(-s).exp(), 1.0]
    }

    /// `v·q ← v·q·e^−s`, `r = q − 1`.
    #[inline(always)]
    fn moved(&self, _y: f64, v: f64, _r: f64, h: f64, f: [f64; 2]) -> (f64, f64) {
        let h = h * f[0];
        ((if v == 1.0 { h } else { h / v }) - 1.0, h)
    }

    fn link(&self, mean: f64) -> f64 {
        mean.ln()
    }

    /// `2(log(μ/y) + y/μ − 1)`.
    fn holdout(&self, y: f64, eta: f64) -> f64 {
        2.0 * (self.loss(y, eta) - (y.ln() + 1.0))
    }
}

/// scikit-learn's `HalfTweedieLoss(power)` for `1 < power < 2` (compound Poisson–Gamma):
/// `ℓ(y, η) = e^{(2−p)η}/(2−p) − y·e^{(1−p)η}/(1−p)`, `r = y·μ^{1−p} − μ^{2−p}`, curvature
/// `(2−p)μ^{2−p} − (1−p)y·μ^{1−p}`.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Tweedie {
    /// The variance power `p`, in `(1, 2)`.
    pub power: f64,
}

impl Tweedie {
    /// `(μ^{2−p}, y·μ^{1−p})` at `η`.
    #[inline(always)]
    fn terms(&self, y: f64, eta: f64) -> (f64, f64) {
        let p = self.power;
        (((2.0 - p) * eta).exp(), y * ((1.0 - p) * eta).exp())
    }
}

impl Datafit for Tweedie {
    #[inline]
    fn loss(&self, y: f64, eta: f64) -> f64 {
        let p = self.power;
        let (a, b) = self.terms(y, eta);
        a / (2.0 - p) - b / (1.0 - p)
    }

    #[inline(always)]
    fn residual(&self, y: f64, eta: f64, v: f64) -> (f64, f64) {
        let p = self.power;
        let (a, b) = self.terms(y, eta);
        (b - a, v * ((2.0 - p) * a - (1.0 - p) * b))
    }

    #[inline(always)]
    fn curvature(&self, v: f64, y: f64, eta: f64, _r: f64) -> f64 {
        self.residual(y, eta, v).1
    }

    /// `μ^{2−p}·expm1((2−p)s)/(2−p) − y·μ^{1−p}·expm1((1−p)s)/(1−p)`.
    #[inline(always)]
    fn loss_change(&self, y: f64, eta: f64, _r: f64, s: f64, _e1: f64, _e1n: f64) -> f64 {
        if s == 0.0 {
            return 0.0;
        }
        let p = self.power;
        let (a, b) = self.terms(y, eta);
        a * ((2.0 - p) * s).exp_m1() / (2.0 - p) - b * ((1.0 - p) * s).exp_m1() / (1.0 - p)
    }

    /// With `A = Σ v·μ^{2−p}` and `B = Σ v·y·μ^{1−p}`: `R = B − A` and
    /// `H = (2−p)A − (1−p)B`, so `A = H + (1−p)R`, `B = H + (2−p)R`, and the change
    /// `A·expm1((2−p)s)/(2−p) − B·expm1((1−p)s)/(1−p)` is `−R·s` plus the terms of order
    /// `s²`, `A·φ((2−p)s)/(2−p) − B·φ((1−p)s)/(1−p)` with `φ(x) = expm1(x) − x`.
    #[inline]
    fn bin_loss_change(&self, r_sum: f64, h_sum: f64, s: f64) -> Option<f64> {
        let p = self.power;
        let a = h_sum + (1.0 - p) * r_sum;
        let b = h_sum + (2.0 - p) * r_sum;
        Some(
            -r_sum * s + a * expm1_minus_x((2.0 - p) * s) / (2.0 - p)
                - b * expm1_minus_x((1.0 - p) * s) / (1.0 - p),
        )
    }

    const SCALES: bool = true;

    #[inline]
    fn step_factors(&self, s: f64) -> [f64; 2] {
        let p = self.power;
        [((2.0 - p) * s).exp(), ((1.0 - p) * s).exp()]
    }

    /// `μ^{2−p} ← μ^{2−p}·e^{(2−p)s}` and `y·μ^{1−p} ← y·μ^{1−p}·e^{(1−p)s}`, the two read
    /// from `r = B − A` and `h/v = (2−p)A − (1−p)B` (as in [`Tweedie::bin_loss_change`]).
    #[inline(always)]
    fn moved(&self, _y: f64, v: f64, r: f64, h: f64, f: [f64; 2]) -> (f64, f64) {
        let p = self.power;
        let hv = if v == 1.0 { h } else { h / v };
        let a = (hv + (1.0 - p) * r) * f[0];
        let b = (hv + (2.0 - p) * r) * f[1];
        (b - a, v * ((2.0 - p) * a - (1.0 - p) * b))
    }

    fn link(&self, mean: f64) -> f64 {
        mean.ln()
    }

    /// `2(y^{2−p}/((1−p)(2−p)) − y·μ^{1−p}/(1−p) + μ^{2−p}/(2−p))`.
    fn holdout(&self, y: f64, eta: f64) -> f64 {
        let p = self.power;
        let at_y = if y > 0.0 {
            y.powf(2.0 - p) / ((1.0 - p) * (2.0 - p))
        } else {
            0.0
        };
        2.0 * (at_y + self.loss(y, eta))
    }
}

/// `1/k` for `k = 2..=16`: the coefficients of the series of [`expm1_minus_x`] and
/// [`ln_1p_small`].
const RECIPROCALS: [f64; 15] = [
    1.0 / 2.0,
    1.0 / 3.0,
    1.0 / 4.0,
    1.0 / 5.0,
    1.0 / 6.0,
    1.0 / 7.0,
    1.0 / 8.0,
    1.0 / 9.0,
    1.0 / 10.0,
    1.0 / 11.0,
    1.0 / 12.0,
    1.0 / 13.0,
    1.0 / 14.0,
    1.0 / 15.0,
    1.0 / 16.0,
];

/// `expm1(x) − x` without the cancellation of that difference near 0: the series
/// `x²/2! + x³/3! + …` (Horner, to the term in `x¹⁶`) below `|x| = ¼`, where it is exact to
/// rounding, the difference itself above (at most two bits lost there).
#[inline]
pub fn expm1_minus_x(x: f64) -> f64 {
    if x.abs() < 0.25 {
        // 1/k for k = 3..=16.
        let t = RECIPROCALS[1..]
            .iter()
            .rev()
            .fold(1.0, |t, &inv| 1.0 + x * inv * t);
        0.5 * x * x * t
    } else {
        x.exp_m1() - x
    }
}

/// `log1p(x)`: the series `x − x²/2 + x³/3 − …` (Horner, to the term in `x¹⁰`) below
/// `|x| = 1/64`, where it is exact to rounding (the first term left out is below `2⁻⁵⁴·|x|`),
/// else [`f64::ln_1p`]. A block update's loss change takes one a row, and near the optimum
/// its steps are small: the series costs a few multiply-adds where `ln_1p` cost 9% of a binary
/// pair fit's time.
#[inline(always)]
pub fn ln_1p_small(x: f64) -> f64 {
    if x.abs() < 1.0 / 64.0 {
        // 1/k for k = 2..=10.
        let t = RECIPROCALS[..9]
            .iter()
            .rev()
            .fold(0.0, |t, &inv| inv - x * t);
        x - x * x * t
    } else {
        x.ln_1p()
    }
}

/// `estimate` where it is at least `floor` (where it is accurate), else `exact()`.
#[inline(always)]
fn accurate_or(estimate: f64, floor: f64, exact: impl FnOnce() -> f64) -> f64 {
    if estimate >= floor {
        estimate
    } else {
        exact()
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
                    let d = Logistic.loss_change(y, eta, r, s, f64::exp_m1(s), f64::exp_m1(-s));
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
        let d = Logistic.loss_change(1.0, 0.3, r, 1e-20, f64::exp_m1(1e-20), f64::exp_m1(-1e-20));
        assert!((d + q * 1e-20).abs() < 1e-35, "{d}");
        let _ = p;
    }

    /// Residual, curvature and loss change of a log-link datafit against finite differences
    /// and the direct difference of the loss.
    fn check_log_link<D: Datafit + std::fmt::Debug>(d: D, ys: &[f64]) {
        assert!(d.curvature_bound().is_none());
        check_bin_change(d, ys);
        check_moved(d, ys);
        for &y in ys {
            for &eta in &[-20.0, -3.0, -0.2, 0.0, 0.7, 4.0, 12.0] {
                let (r, h) = d.residual(y, eta, 2.0);
                let e = 1e-6;
                let grad = (d.loss(y, eta + e) - d.loss(y, eta - e)) / (2.0 * e);
                let scale = d.loss(y, eta).abs().max(1.0);
                assert!(
                    (r + grad).abs() <= 1e-6 * scale,
                    "{d:?} y {y} eta {eta}: r {r} vs {grad}"
                );
                let (r_hi, _) = d.residual(y, eta + e, 1.0);
                let (r_lo, _) = d.residual(y, eta - e, 1.0);
                let curv = -(r_hi - r_lo) / (2.0 * e);
                assert!(
                    (h / 2.0 - curv).abs() <= 1e-6 * scale,
                    "{d:?} y {y} eta {eta}"
                );
                assert_eq!(d.curvature(2.0, y, eta, r), h);
                assert!(h >= 0.0);
                for &s in &[-5.0, -0.3, -1e-9, 1e-9, 0.4, 6.0] {
                    let change = d.loss_change(y, eta, r, s, s.exp_m1(), (-s).exp_m1());
                    let direct = d.loss(y, eta + s) - d.loss(y, eta);
                    let tol = 1e-12 * (d.loss(y, eta).abs() + d.loss(y, eta + s).abs() + 1.0);
                    assert!(
                        (change - direct).abs() <= tol,
                        "{d:?} y {y} eta {eta} s {s}"
                    );
                }
                assert_eq!(d.loss_change(y, eta, r, 0.0, 0.0, 0.0), 0.0);
            }
            // The unit deviance is 0 at μ = y and positive elsewhere.
            if y > 0.0 {
                assert!(d.holdout(y, y.ln()).abs() <= 1e-12 * y.max(1.0));
                assert!(d.holdout(y, y.ln() + 0.5) > 0.0 && d.holdout(y, y.ln() - 0.5) > 0.0);
            }
            assert!(d.link(y.max(1e-3)).exp() - y.max(1e-3) <= 1e-15 * y.max(1.0));
        }
    }

    /// Residual, curvature, loss change, unit deviance and link of every log-link datafit;
    /// their bin form ([`check_bin_change`]) and scaled rows ([`check_moved`]).
    #[test]
    fn log_link_datafits_are_consistent() {
        check_log_link(Poisson, &[0.0, 1.0, 3.0, 0.25]);
        check_log_link(Gamma, &[1e-3, 1.0, 3.0, 0.25]);
        for power in [1.01, 1.5, 1.99] {
            check_log_link(Tweedie { power }, &[0.0, 1.0, 3.0, 0.25]);
        }
        // scikit-learn's unit deviances at a few points.
        assert!((Poisson.holdout(0.0, 0.5f64.ln()) - 1.0).abs() < 1e-15);
        assert!(
            (Poisson.holdout(2.0, 1.0f64.ln()) - 2.0 * (2.0 * 2.0f64.ln() - 1.0)).abs() < 1e-14
        );
        assert!((Gamma.holdout(2.0, 1.0f64.ln()) - 2.0 * (-(2.0f64.ln()) + 1.0)).abs() < 1e-14);
        let t = Tweedie { power: 1.5 };
        // 2(y^{0.5}/(−0.5·0.5) − y·μ^{−0.5}/(−0.5) + μ^{0.5}/0.5) at y = 4, μ = 1: 2(−8 + 8 + 2)
        assert!((t.holdout(4.0, 0.0) - 4.0).abs() < 1e-13);
    }

    /// A bin's loss change from its two sums equals the sum of its rows' own changes (a
    /// direct difference of the loss, in 128-bit-free double precision: the bins are small
    /// and the steps large enough for the direct difference to be accurate), for rows of
    /// mixed targets, linear predictors and weights, and every step size.
    fn check_bin_change<D: Datafit + std::fmt::Debug>(d: D, ys: &[f64]) {
        let rows: Vec<(f64, f64, f64)> = (0..24)
            .map(|i| {
                let y = ys[i % ys.len()];
                let eta = -2.0 + 0.17 * i as f64;
                let v = 0.5 + (i % 3) as f64;
                (y, eta, v)
            })
            .collect();
        let (mut r_sum, mut h_sum) = (0.0, 0.0);
        for &(y, eta, v) in &rows {
            let (r, h) = d.residual(y, eta, v);
            r_sum += v * r;
            h_sum += h;
        }
        for &s in &[-3.0, -0.4, -0.01, 1e-3, 0.2, 2.5] {
            let direct: f64 = rows
                .iter()
                .map(|&(y, eta, v)| v * (d.loss(y, eta + s) - d.loss(y, eta)))
                .sum();
            let scale: f64 = rows
                .iter()
                .map(|&(y, eta, v)| v * d.loss(y, eta).abs())
                .sum();
            let change = d.bin_loss_change(r_sum, h_sum, s).expect("a sums form");
            assert!(
                (change - direct).abs() <= 1e-11 * (scale + 1.0),
                "{d:?} s {s}: {change} vs {direct}"
            );
        }
        // A tiny step: the linear term, exactly as the gradient gives it.
        let s = 1e-12;
        let change = d.bin_loss_change(r_sum, h_sum, s).unwrap();
        assert!((change + r_sum * s).abs() <= 1e-20 * (h_sum + r_sum.abs()));
    }

    /// A step's residual and curvature by [`Datafit::moved`] equal those recomputed at the
    /// moved linear predictor, for weights of one and others.
    fn check_moved<D: Datafit + std::fmt::Debug>(d: D, ys: &[f64]) {
        assert!(D::SCALES);
        for &y in ys {
            for &eta in &[-6.0, -0.7, 0.0, 0.3, 2.5] {
                for &v in &[1.0, 0.25, 3.0] {
                    let (r, h) = d.residual(y, eta, v);
                    for &s in &[-4.0, -0.05, 1e-7, 0.6, 3.0] {
                        let (r1, h1) = d.moved(y, v, r, h, d.step_factors(s));
                        let (r2, h2) = d.residual(y, eta + s, v);
                        let scale = h2.abs() / v + y.abs() + 1.0;
                        assert!(
                            (r1 - r2).abs() <= 1e-13 * scale
                                && (h1 - h2).abs() <= 1e-13 * v * scale,
                            "{d:?} y {y} eta {eta} v {v} s {s}: ({r1}, {h1}) vs ({r2}, {h2})"
                        );
                    }
                }
            }
        }
    }

    /// The log-loss's change needs every row; a step moves its rows by the odds' factor.
    #[test]
    fn the_log_loss_has_no_bin_form_and_moves_its_rows() {
        assert!(Logistic.bin_loss_change(0.1, 0.2, 0.3).is_none());
        check_moved(Logistic, &[0.0, 1.0, 0.3]);
        // In the tails both sides keep their relative accuracy, step after step: 2,000 random
        // steps of a row moved, against the row recomputed from its final `η`.
        let mut uniform = crate::testing::lcg(11);
        for &y in &[0.0, 1.0, 0.3] {
            for &eta0 in &[-36.0, -12.0, 0.5, 12.0, 36.0] {
                for &v in &[1.0, 0.3] {
                    let (mut eta, (mut r, mut h)) = (eta0, Logistic.residual(y, eta0, v));
                    for _ in 0..2000 {
                        let s = 0.2 * (uniform() - 0.5);
                        assert!(Logistic.movable(v, h));
                        (r, h) = Logistic.moved(y, v, r, h, Logistic.step_factors(s));
                        eta += s;
                    }
                    let (r2, h2) = Logistic.residual(y, eta, v);
                    let rel = |a: f64, b: f64| (a - b).abs() / b.abs();
                    // `η` itself carries the sum's rounding: 2,000 additions of ~ulp(36).
                    let tol = 1e-12 * (1.0 + eta0.abs());
                    assert!(
                        rel(h, h2) <= tol && (y == 0.3 || rel(r, r2) <= tol),
                        "y {y} eta0 {eta0} v {v}: ({r}, {h}) vs ({r2}, {h2})"
                    );
                }
            }
        }
        // A row whose smaller side left the normal range is recomputed from `η`.
        let (_, h) = Logistic.residual(1.0, -750.0, 1.0);
        assert!(!Logistic.movable(1.0, h));
    }

    /// The log-loss's bound of a bin's loss change holds for every step and row, and is
    /// tight to third order: `change ≤ bound ≤ change + h·(2 sinh|s| − 2|s|)`, the gap
    /// between the bounds `ℓ''·e^{±|t|}` of the curvature along the step.
    #[test]
    fn the_log_loss_bound_of_a_bin_holds_and_is_tight_to_third_order() {
        let mut uniform = crate::testing::lcg(21);
        let d = Logistic;
        let steps = [
            1e-9, -1e-9, 1e-4, -1e-4, 0.01, -0.01, 0.3, -0.3, 2.0, -2.0, 12.0, -12.0, 50.0, -50.0,
        ];
        for trial in 0..400 {
            let rows = 1 + (uniform() * 30.0) as usize;
            let spread = [0.5, 4.0, 40.0][trial % 3];
            let bin: Vec<(f64, f64, f64)> = (0..rows)
                .map(|_| {
                    let y = match (uniform() * 3.0) as usize {
                        0 => 0.0,
                        1 => 1.0,
                        _ => uniform(),
                    };
                    (y, spread * (2.0 * uniform() - 1.0), 0.1 + uniform())
                })
                .collect();
            let (mut r_sum, mut h_sum) = (0.0, 0.0);
            for &(y, eta, v) in &bin {
                let (r, h) = d.residual(y, eta, v);
                r_sum += v * r;
                h_sum += h;
            }
            for &s in &steps {
                let change: f64 = bin
                    .iter()
                    .map(|&(y, eta, v)| {
                        let r = d.residual(y, eta, 1.0).0;
                        v * d.loss_change(y, eta, r, s, s.exp_m1(), (-s).exp_m1())
                    })
                    .sum();
                let (bound, most) = d.bin_loss_bound(r_sum, h_sum, s).unwrap();
                let slack = 1e-12 * (change.abs() + (r_sum * s).abs()) + 1e-300;
                assert!(
                    bound >= change - slack,
                    "s {s}: bound {bound} < change {change}"
                );
                // 2(sinh a − a) = 2 Σ_{odd k ≥ 3} a^k / k!, by its series below 1 (the
                // difference cancels for small a).
                let a = s.abs();
                let odd = if a < 1.0 {
                    let (mut term, mut sum) = (a * a * a / 6.0, 0.0);
                    for k in (5..40).step_by(2) {
                        sum += term;
                        term *= a * a / ((k - 1) * k) as f64;
                    }
                    sum
                } else {
                    a.sinh() - a
                };
                let gap = h_sum * 2.0 * odd;
                assert!(
                    (most - gap).abs() <= 1e-12 * gap + 1e-300,
                    "s {s}: {most} vs {gap}"
                );
                assert!(
                    bound - change <= gap * (1.0 + 1e-9) + slack,
                    "s {s}: bound {bound} change {change} gap {gap}"
                );
            }
        }
    }

    #[test]
    fn ln_1p_small_is_accurate_on_both_sides_of_its_switch() {
        let mut uniform = crate::testing::lcg(12);
        let edge = 1.0 / 64.0;
        let mut xs = vec![
            0.0, 1e-300, -1e-300, 1e-17, -1e-9, edge, -edge, 0.5, -0.4, 3.0,
        ];
        xs.extend([edge * (1.0 - f64::EPSILON), -edge * (1.0 - f64::EPSILON)]);
        for _ in 0..20_000 {
            // Magnitudes from 1e-12 to the switch, both signs.
            let x =
                edge * (10f64).powf(-10.0 * uniform()) * if uniform() < 0.5 { -1.0 } else { 1.0 };
            xs.push(x);
        }
        for x in xs {
            // The reference: `ln_1p` itself, correctly rounded to within half an ulp.
            let (got, want) = (ln_1p_small(x), x.ln_1p());
            assert!(
                (got - want).abs() <= 2.0 * f64::EPSILON * want.abs(),
                "x {x}: {got} vs {want}"
            );
        }
        assert_eq!(ln_1p_small(0.0), 0.0);
    }

    #[test]
    fn expm1_minus_x_is_accurate_on_both_sides_of_its_switch() {
        for &x in &[
            1e-300, -1e-8, 1e-5, -0.01, 0.1, -0.2499, 0.2499, 0.25, -0.26, 1.0, -7.0,
        ] {
            // The series summed to 40 terms in increasing order (the reference).
            let (mut term, mut sum) = (x * x / 2.0, 0.0);
            let mut terms = Vec::new();
            for k in 3..=42 {
                terms.push(term);
                term *= x / k as f64;
            }
            for t in terms.iter().rev() {
                sum += t;
            }
            let reference = if x.abs() < 1.5 { sum } else { x.exp_m1() - x };
            let got = expm1_minus_x(x);
            assert!(
                (got - reference).abs() <= 4.0 * f64::EPSILON * reference.abs(),
                "x {x}: {got} vs {reference}"
            );
        }
    }

    #[test]
    fn sigmoid_is_accurate_in_both_tails() {
        let (p, q) = sigmoid_pq(-40.0);
        assert!((p - (-40.0f64).exp()).abs() < 1e-30 && q == 1.0);
        let (p, q) = sigmoid_pq(40.0);
        assert!((q - (-40.0f64).exp()).abs() < 1e-30 && p == 1.0);
    }
}
