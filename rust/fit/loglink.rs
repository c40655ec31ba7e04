//! Log-link FAST: piecewise-constant additive models of counts, severities and pure
//! premiums (Poisson, Gamma and Tweedie regression).
//!
//! With targets `y_i` (a rate: counts per unit of exposure), sample weights `v_i ≥ 0` (the
//! exposures), `W = Σ v_i` and the linear predictor `η_i = c + Σ_j β_j[code_j(i)]` of the
//! mean `μ_i = e^{η_i}`, this module minimises
//!
//! ```text
//! F(c, β) = 1/W Σ_i v_i h(y_i, η_i)  +  λ_f Σ_j Σ_b |β_{j,b+1} − β_{j,b}|
//! ```
//!
//! with scikit-learn's half losses `h` ([`crate::states::datafit`]):
//!
//! ```text
//! poisson        h(y, η) = e^η − y·η                                   y ≥ 0, Σ v y > 0
//! gamma          h(y, η) = η + y·e^−η                                  y > 0
//! tweedie(p)     h(y, η) = e^{(2−p)η}/(2−p) − y·e^{(1−p)η}/(1−p)       y ≥ 0, Σ v y > 0, 1 < p < 2
//! ```
//!
//! Each is half the unit deviance up to a term of `y` alone, so `F` differs from the mean
//! half deviance plus the penalty by a constant. The model's tables are on the link scale;
//! its mean is `exp(η)`. A row of weight `v` and rate `y` is `v` rows of rate `y`: sample
//! weights are exposures, as in scikit-learn.
//!
//! **Solver.** The one descent loop ([`crate::descent`]) on the proximal-Newton state
//! ([`crate::states::newton`]): per-bin curvatures `H_b` and the working response
//! `z_b = β_b + R_{k,b}/h_b` give a weighted FLSA, solved exactly by the DP; the step is
//! backtracked (Armijo) and, since these curvatures have no global bound, damped (the
//! curvature inflated fourfold per try) when backtracking fails. A step is accepted only if
//! the objective (computed without cancellation) decreases, so it never increases, and no
//! step moves a linear predictor by more than [`crate::states::newton::MAX_STEP`], so it stays finite.
//! The KKT residual is the same certificate as for the other losses (the bin sums of
//! `v·r` with `r = −∂h/∂η`).
//!
//! **Zero groups.** With `λ_f = 0`, a bin whose rows all have `y = 0` (Poisson, Tweedie) has
//! no finite maximum-likelihood value (`η → −∞`); the fit then stops at the tolerance with
//! a large negative value (each Newton step lowers it by about 1), and the Python estimator
//! warns. Any `λ_f > 0` keeps every value finite (the jumps pay for themselves).
//!
//! **Penalty search.** `λ_max` is the smallest `λ_f` whose fit is constant (intercept
//! `log(Σ v y / Σ v)`); [`crate::params::Penalty::Validated`] runs [`crate::fit::validation`]'s path with the
//! held-out weighted mean unit deviance, a tighter path tolerance ([`LOGLINK_PATH_TOL`]) and
//! more patience ([`LOGLINK_PATIENCE`]).
//!
//! **Pair terms** ([`crate::fit::pairs`]) are added to `η` as for the logistic loss: after the main
//! effects (at their penalty), pairs are screened on the residual `v·(y − μ)` (Poisson; the
//! loss's `−∂h/∂η` in general), their pair penalty `ρ` is chosen on the held-out rows by the
//! held-out unit deviance, and every block is refitted together by the same proximal-Newton
//! state, a pair block's step being the grid's exact 2-D TV solve. The tables stay on the link
//! scale: the mean is `exp(η)` with `η` including the pairs.

use ndarray::ArrayView1;

use crate::data::binning::{BinnedData, Rows};
use crate::descent::{fit_from, DescentState};
use crate::error::{FastError, Result};
use crate::fit::pairs::HeldOutLoss;
use crate::fit::solver::fit_then_pairs;
use crate::fit::validation::{
    fixed_ratio_fit, holdout_loss, search_then_refit, stratified_validation_rows, targets_at,
    validation_of, Split,
};
use crate::model::report::{BinnedFit, Callback, Fit, PenaltySearch};
use crate::params::{Engine, FitParams, Validation, DEFAULT_LAMBDA_RATIO};
use crate::states::datafit::{Datafit, Gamma, Poisson, Tweedie};
use crate::states::newton::{Curvature, NewtonState};

/// Default Tweedie power (scikit-learn's `HalfTweedieLoss` and LightGBM's default).
pub const DEFAULT_TWEEDIE_POWER: f64 = 1.5;

/// KKT tolerance of the held-out path fits of a log-link loss (the squared loss's
/// [`crate::fit::validation::PATH_TOL`] is 0.5): the deviance of a greedy fit moves more with the
/// tolerance, and a loose path misjudged the penalty on `vietnam_pharmacy`.
pub const LOGLINK_PATH_TOL: f64 = 0.1;
/// Ratios in a row without a better held-out deviance before the path stops (the squared
/// loss's [`crate::fit::validation::PATIENCE`] is 1): the deviance of counts with a heavy tail
/// is a noisy score.
pub const LOGLINK_PATIENCE: usize = 2;

/// A log-link loss.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LogLinkLoss {
    /// [`Poisson`].
    Poisson,
    /// [`Gamma`].
    Gamma,
    /// [`Tweedie`] of the given power.
    Tweedie(f64),
}

impl LogLinkLoss {
    /// The loss of `loss` (`Poisson`, `Gamma` or `Tweedie`, the latter of `power`); `None`
    /// for the squared and logistic losses.
    pub fn of(loss: crate::params::Loss, power: f64) -> Option<Self> {
        use crate::params::Loss;
        match loss {
            Loss::Poisson => Some(Self::Poisson),
            Loss::Gamma => Some(Self::Gamma),
            Loss::Tweedie => Some(Self::Tweedie(power)),
            Loss::Squared | Loss::Logistic => None,
        }
    }

    /// Checks the Tweedie power.
    ///
    /// # Errors
    /// [`FastError::InvalidParameter`] naming `power` outside `(1, 2)`.
    pub fn check(self) -> Result<()> {
        match self {
            Self::Tweedie(p) if !(p > 1.0 && p < 2.0) => Err(FastError::InvalidParameter {
                name: "power",
                message: "must be in (1, 2) for loss='tweedie' (a compound Poisson-Gamma)",
                value: p.to_string(),
            }),
            _ => Ok(()),
        }
    }

    /// Checks the targets and returns their weighted mean: finite, `≥ 0` (Poisson, Tweedie)
    /// with a positive weighted mean, or `> 0` (Gamma).
    ///
    /// # Errors
    /// [`FastError::InvalidParameter`] naming `y` and the first bad index.
    pub fn check_target(self, y: ArrayView1<'_, f64>, data: &BinnedData) -> Result<f64> {
        self.check()?;
        crate::error::check_target(y, data.n_samples)?;
        let (bad, message) = match self {
            Self::Gamma => (
                y.iter().position(|&v| !(v > 0.0)),
                "must be > 0 for loss='gamma'",
            ),
            Self::Poisson => (
                y.iter().position(|&v| v < 0.0),
                "must be >= 0 for loss='poisson'",
            ),
            Self::Tweedie(_) => (
                y.iter().position(|&v| v < 0.0),
                "must be >= 0 for loss='tweedie'",
            ),
        };
        if let Some(index) = bad {
            return Err(FastError::InvalidParameter {
                name: "y",
                message,
                value: format!("{} at index {index}", y[index]),
            });
        }
        let mean = match &data.weights {
            Some(v) => y.iter().zip(v).map(|(a, b)| a * b).sum::<f64>(),
            None => y.iter().sum::<f64>(),
        } / data.total_weight;
        if !(mean > 0.0 && mean.is_finite()) {
            return Err(FastError::InvalidParameter {
                name: "y",
                message: "needs a positive weighted mean for a log-link loss (all targets are 0)",
                value: format!("weighted mean {mean}"),
            });
        }
        Ok(mean)
    }
}

/// Runs `$body` with `$d` bound to the datafit of the [`LogLinkLoss`] `$loss`.
macro_rules! with_datafit {
    ($loss:expr, $d:ident => $body:expr) => {
        match $loss {
            LogLinkLoss::Poisson => {
                let $d = Poisson;
                $body
            }
            LogLinkLoss::Gamma => {
                let $d = Gamma;
                $body
            }
            LogLinkLoss::Tweedie(power) => {
                let $d = Tweedie { power };
                $body
            }
        }
    };
}

/// Bins `x` and fits log-link FAST. Runs on the current rayon pool (see
/// [`crate::fit::solver::with_threads`]). With [`crate::params::Penalty::Validated`] the penalty is chosen on
/// held-out rows: the search of [`crate::fit::validation`] with the held-out weighted mean unit
/// deviance as its criterion ([`Datafit::holdout`]), rows held out within the targets above and
/// below their mean, a tighter path tolerance ([`LOGLINK_PATH_TOL`]) and more patience
/// ([`LOGLINK_PATIENCE`]). With fewer than [`crate::fit::validation::MIN_ROWS`] rows of positive
/// weight on either side, or training rows whose targets are all 0, the fixed ratio
/// [`DEFAULT_LAMBDA_RATIO`] is used and the search is empty. The final fit is on all rows at
/// the chosen ratio, warm-started from the best held-out fit, to `params.tol`.
///
/// # Errors
/// Bad parameters, a non-finite value in `x` or `y`, a target outside the loss's domain (see
/// [`LogLinkLoss::check_target`]), mismatched lengths, bad weights, fewer than two rows.
pub fn fit_loglink(
    rows: Rows<'_>,
    params: &FitParams,
    loss: LogLinkLoss,
    callback: Option<Callback<'_>>,
) -> Result<Fit> {
    params.check()?;
    loss.check()?;
    let (data, y) = (rows.bin(&params.binning)?, rows.y);
    let fit = LogLinkFit {
        y,
        loss,
        curvature: Curvature::Newton,
    };
    // Pair terms (if asked for) start from the targets' weighted mean, on the rows engine,
    // with the held-out unit deviance as the pair penalty's criterion.
    let mean = if params.pairs.any() {
        loss.check_target(y, &data)?
    } else {
        0.0
    };
    with_datafit!(loss, d => {
        let state = |data: &BinnedData, y: ArrayView1<'_, f64>, beta: Vec<Vec<f64>>| {
            NewtonState::with_datafit(d, data, y, mean, beta, Curvature::Newton)
        };
        let term = |w: f64, y: f64, eta: f64| w * d.holdout(y, eta);
        fit_then_pairs(
            (data, y, Engine::Rows),
            params,
            |data, y, cb| LogLinkFit { y, ..fit }.validated(data, params, cb),
            |data, cb| fit.fixed(data, params, cb),
            (&state, HeldOutLoss::Row(&term)),
            callback,
        )
    })
}

/// `λ_max` of the log-link problem on binned data: `max_{k,t} |g_{k,t}|` at the constant model
/// (intercept `log(Σ v y / Σ v)`).
///
/// # Errors
/// As [`fit_loglink`] for `y`.
pub fn lambda_max_loglink(
    data: &BinnedData,
    y: ArrayView1<'_, f64>,
    loss: LogLinkLoss,
) -> Result<f64> {
    let mean = loss.check_target(y, data)?;
    with_datafit!(loss, d => {
        let mut st = NewtonState::with_datafit(d, data, y, mean, data.zero_blocks(), Curvature::Newton);
        Ok(st.start_flat(data))
    })
}

/// Fits log-link FAST on binned data with a chosen block update rule ([`Curvature::Newton`]:
/// proximal Newton, the rule of [`fit_loglink`]; [`Curvature::Bound`]: damped
/// proximal-gradient steps only). Runs on the current rayon pool.
///
/// # Errors
/// Bad parameters; `y` of the wrong length, non-finite or outside the loss's domain.
pub fn fit_loglink_binned_with(
    data: &BinnedData,
    y: ArrayView1<'_, f64>,
    params: &FitParams,
    loss: LogLinkLoss,
    callback: Option<Callback<'_>>,
    curvature: Curvature,
) -> Result<BinnedFit> {
    LogLinkFit { y, loss, curvature }.fixed(data, params, callback)
}

/// A log-link fit's targets, loss and block update rule, and its two fits on binned data.
#[derive(Clone, Copy)]
struct LogLinkFit<'a> {
    y: ArrayView1<'a, f64>,
    loss: LogLinkLoss,
    curvature: Curvature,
}

impl LogLinkFit<'_> {
    /// A fit at the penalty of `params` (absolute or relative) from the constant model.
    fn fixed(
        self,
        data: &BinnedData,
        params: &FitParams,
        callback: Option<Callback<'_>>,
    ) -> Result<BinnedFit> {
        params.check()?;
        let Self { y, loss, curvature } = self;
        let mean = loss.check_target(y, data)?;
        with_datafit!(loss, d => {
            let state = |beta| NewtonState::with_datafit(d, data, y, mean, beta, curvature);
            fit_from(data, params, None, state, callback)
        })
    }

    /// The penalty chosen on held-out rows (see [`fit_loglink`]) and the final fit on all
    /// rows. `data` is borrowed mutably only to swap its sample weights; it is returned
    /// unchanged.
    fn validated(
        self,
        data: &mut BinnedData,
        params: &FitParams,
        callback: Option<Callback<'_>>,
    ) -> Result<(BinnedFit, PenaltySearch)> {
        let Validation { fraction, seed } =
            validation_of(params, "fit_loglink's search needs Penalty::Validated")?;
        let Self { y, loss, curvature } = self;
        let mean = loss.check_target(y, data)?;
        let positive: Vec<bool> = y.iter().map(|&v| v > mean).collect();
        let mut split = Split::new(data, stratified_validation_rows(&positive, fraction, seed));
        let train_mean = weighted_mean(y, &split.train);
        if !(split.enough_rows() && train_mean > 0.0) {
            return fixed_ratio_fit(params, DEFAULT_LAMBDA_RATIO, |fixed| {
                self.fixed(data, fixed, callback)
            });
        }
        let held = (&split.rows[..], &split.held_weights[..]);
        with_datafit!(loss, d => search_then_refit(
            data,
            (std::mem::take(&mut split.train), split.rows.len()),
            params,
            (
                &|data, rows, beta| {
                    let y = targets_at(y, rows);
                    NewtonState::with_datafit(d, data, y.view(), train_mean, beta, curvature)
                },
                &|data, c, b| holdout_loss(data, y, (c, b), held, |w, y, eta| w * d.holdout(y, eta)),
            ),
            (LOGLINK_PATH_TOL, LOGLINK_PATIENCE),
            |data, final_params, best, callback| {
                let state = |beta| NewtonState::with_datafit(d, data, y, mean, beta, curvature);
                fit_from(data, final_params, Some(best), state, callback)
            },
            callback,
        ))
    }
}

/// Weighted mean of `y` with weights `w` (0 for the held-out rows).
fn weighted_mean(y: ArrayView1<'_, f64>, w: &[f64]) -> f64 {
    let (num, den) = y
        .iter()
        .zip(w)
        .fold((0.0, 0.0), |(a, b), (&yi, &v)| (a + v * yi, b + v));
    num / den
}
