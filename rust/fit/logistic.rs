//! Logistic FAST: piecewise-constant additive models for binary classification.
//!
//! With labels `y_i ∈ {0, 1}` (a probability in `[0, 1]` is accepted too: the loss is then
//! the cross-entropy), sample weights `v_i ≥ 0`, `W = Σ v_i` and log-odds
//! `η_i = c + Σ_j β_j[code_j(i)]`, this module minimises
//!
//! ```text
//! F(c, β) = 1/W Σ_i v_i ℓ(y_i, η_i)  +  λ_f Σ_j Σ_b |β_{j,b+1} − β_{j,b}|,
//! ℓ(y, η) = log(1 + e^η) − y·η        (the log-loss of p = σ(η) = 1/(1 + e^−η))
//! ```
//!
//! over the same binned data as the regressor ([`crate::data::binning`]).
//!
//! **Selection and stopping** are the regressor's (DESIGN §3) with the "residual"
//! `r = y − p`: the bin sums `R_{k,b} = Σ_{code_k(i)=b} v_i r_i / W` are minus the gradient of
//! the loss in `β_{k,b}`, so [`crate::descent::selection`] gives the BGS-s scores and the KKT residual
//! `max d / λ_f` (with the intercept's stationarity `|Σ v r| / W`) unchanged.
//!
//! **Block update: proximal Newton** ([`crate::states::newton`] over the datafit
//! [`crate::states::datafit::Logistic`]). Every row sits in one bin of block `k`, so the loss
//! restricted to block `k` has a diagonal Hessian `H_b = Σ_{code_k(i)=b} v p(1−p) / W`. Its
//! quadratic model plus the fusion penalty is a weighted FLSA, solved exactly by
//! [`crate::prox::flsa`]: `β_k ← FLSA(z, h, λ_f)` with `h_b = max(H_b, τ·w_b/(4W))` and
//! `z_b = β_b + R_{k,b}/h_b`. The step is backtracked (Armijo); when that fails, the
//! majorise–minimise step with the curvature bound `h_b = w_b/(4W) ≥ H_b` is tried, which
//! cannot increase the objective. Against MM-only updates ([`Curvature::Bound`]) at
//! `λ_f = 10⁻³ λ_max`, `tol = 10⁻²`: 1,677 vs 8,197 updates on 537_houses, 5,644 vs 25,820
//! on elevators (`docs/classification.md`). The intercept takes its own 1-D Newton steps (with
//! backtracking) when its gradient is the largest violation; like the regressor's intercept
//! steps they are not block updates and are not counted in `n_iter` or the history. Blocks
//! are centred after every update, their weighted mean moving into the intercept (`η`
//! unchanged). A missing-value bin (DESIGN §8) is a free level outside the fused chain.
//! Costs per update: the bin sums of every feature (one pass over the codes, as the
//! regressor), one pass over block `k`'s codes for its Hessian, and one or two passes over the
//! rows with an `exp` or `log1p` per row whose bin moved.
//!
//! **The objective never increases.** A step is accepted only if the change of `F`, computed
//! without cancellation (`ℓ(y, η+s) − ℓ(y, η) = log1p(p·expm1(s)) − y·s`, or its mirror
//! `(1−y)·s + log1p((1−p)·expm1(−s))` for `p > ½`, summed over the rows), is negative; the
//! reported objective is the running sum of accepted changes, so the history is
//! non-increasing in floating point too, and steps far below the objective's rounding level
//! are still resolved (the KKT residual can be driven to `1e-10` and below).
//!
//! **Separable data.** With `λ_f > 0` the minimiser is finite (the jumps pay for themselves).
//! With `λ_f = 0` and perfectly separable data there is no minimiser: the log-odds grow
//! without bound while the gradient decays like `e^−margin`, so the (unscaled) KKT rule stops
//! the fit at finite log-odds of order `log(1/tol)`; with `tol = 0` it runs to `max_iter` /
//! `max_time`. No single step moves a log-odds by more than [`MAX_STEP`], so every value
//! stays finite. The Python estimator warns in that case.

use ndarray::ArrayView1;

use crate::data::binning::{BinnedData, Rows};
use crate::descent::{fit_from, DescentState};
use crate::error::{FastError, Result};
use crate::fit::pairs::HeldOutLoss;
use crate::fit::solver::fit_then_pairs;
use crate::fit::validation::{
    fixed_ratio_fit, folds_if_small, holdout_loss, kfold_then_refit, search_then_refit,
    stratified_validation_rows, targets_at, validation_of, FoldLoss, Split, RULE,
};
use crate::model::report::{BinnedFit, Callback, Fit, PenaltySearch};
use crate::params::{Engine, FitParams, Validation};
use crate::states::datafit::Logistic;
use crate::states::newton::NewtonState;

pub use crate::states::datafit::log_loss;
pub use crate::states::newton::{Curvature, MAX_STEP};

/// The logistic state.
type LogisticState = NewtonState<Logistic>;

/// The fixed `λ_f / λ_max` of [`crate::params::Penalty::Validated`] when there are too few rows (or a
/// single class) to hold out: the classifier's former default, measured in
/// `docs/classification.md`.
pub const DEFAULT_LAMBDA_RATIO_LOGISTIC: f64 = 3e-3;

/// `l2_jumps="auto"` of a binary classifier on `n` rows: `AUTO_L2_JUMPS / n` below
/// [`crate::fit::validation::KFOLD_ROWS`] rows, else 0 ([`auto_l2_jumps`]). Measured on 27 small
/// binary tasks (`docs/small_data.md`, "The elastic net on the jumps"): `c = 2, 4.5, 10`
/// gave geometric means 0.885 / 0.871 / 0.955 of the test log-loss without the squared term
/// on `benches/python/small_data.py`'s 13 tasks (worst 1.002 / 1.000 / 2.60), and 4.5 was
/// never worse there.
pub const AUTO_L2_JUMPS: f64 = 4.5;

/// The weight of the squared penalty on the jumps that `l2_jumps="auto"` gives a binary
/// classifier fitted on `n_rows` rows (see [`AUTO_L2_JUMPS`]).
pub fn auto_l2_jumps(n_rows: usize) -> f64 {
    if n_rows > 0 && n_rows < crate::fit::validation::KFOLD_ROWS {
        AUTO_L2_JUMPS / n_rows as f64
    } else {
        0.0
    }
}

/// Checks the labels: length, finite, in `[0, 1]`, both classes with positive weight.
/// Returns the weighted mean `ȳ`.
fn check_labels(y: ArrayView1<'_, f64>, data: &BinnedData) -> Result<f64> {
    crate::error::check_target(y, data.n_samples)?;
    if let Some(index) = y.iter().position(|&v| !(0.0..=1.0).contains(&v)) {
        return Err(FastError::InvalidParameter {
            name: "y",
            message: "must hold the class labels 0 and 1 (or probabilities in [0, 1])",
            value: format!("{} at index {index}", y[index]),
        });
    }
    let mean = match &data.weights {
        Some(v) => y.iter().zip(v).map(|(a, b)| a * b).sum::<f64>(),
        None => y.iter().sum::<f64>(),
    } / data.total_weight;
    if !(mean > 0.0 && mean < 1.0) {
        return Err(FastError::InvalidParameter {
            name: "y",
            message: "needs both classes (0 and 1) with positive total sample weight",
            value: format!("weighted mean {mean}"),
        });
    }
    Ok(mean)
}

/// Bins `x` and fits logistic FAST. Runs on the current rayon pool (see
/// [`crate::fit::solver::with_threads`]). With [`crate::params::Penalty::Validated`] the penalty is chosen on
/// held-out rows ([`fit_logistic_validated`]) and the search is returned in `search`.
///
/// `y` holds the labels 0 and 1 (probabilities in `[0, 1]` are accepted: cross-entropy).
/// The returned model's values are on the log-odds scale; `lambda_max` is the smallest
/// `λ_f` whose fit is constant (intercept `logit(ȳ_w)`).
///
/// # Errors
/// Bad parameters, a non-finite value in `x` or `y`, a label outside `[0, 1]`, a single
/// class, mismatched lengths, bad weights, fewer than two rows: see [`FastError`].
pub fn fit_logistic(
    rows: Rows<'_>,
    params: &FitParams,
    callback: Option<Callback<'_>>,
) -> Result<Fit> {
    let (data, y) = crate::fit::bin_checked(&rows, params)?;
    // The logistic solver runs on rows; pair terms (if asked for) start from the labels'
    // weighted mean.
    let mean = if params.pairs.any() {
        check_labels(y, &data)?
    } else {
        0.0
    };
    let state = |d: &BinnedData, y: ArrayView1<'_, f64>, b: Vec<Vec<f64>>| {
        LogisticState::with_datafit(Logistic, d, y, mean, b, Curvature::Newton)
    };
    let term = |w: f64, y: f64, eta: f64| w * log_loss(y, eta);
    fit_then_pairs(
        (data, y, Engine::Rows),
        params,
        |data, y, cb| fit_logistic_validated(data, y, params, cb),
        |data, cb| fit_logistic_binned(data, y, params, cb),
        (&state, HeldOutLoss::Row(&term)),
        callback,
    )
}

/// `λ_max` of the logistic problem on binned data: `max_{k,t} |g_{k,t}|` at the constant
/// model (the same number as the regressor's `λ_max` for 0/1 targets).
///
/// # Errors
/// As [`fit_logistic_binned`] for `y`.
pub fn lambda_max_logistic(data: &BinnedData, y: ArrayView1<'_, f64>) -> Result<f64> {
    let mean = check_labels(y, data)?;
    let mut st = LogisticState::new(data, y, mean, Curvature::Newton);
    Ok(st.start_flat(data))
}

/// Fits logistic FAST on binned data (proximal-Newton block updates). Runs on the current
/// rayon pool.
///
/// # Errors
/// Bad parameters (see [`FitParams::check`]); `y` of the wrong length, non-finite, outside
/// `[0, 1]`, with a single class, or fewer than two rows.
pub fn fit_logistic_binned(
    data: &BinnedData,
    y: ArrayView1<'_, f64>,
    params: &FitParams,
    callback: Option<Callback<'_>>,
) -> Result<BinnedFit> {
    fit_logistic_binned_with(data, y, params, callback, Curvature::Newton)
}

/// [`fit_logistic_binned`] with a chosen block update rule.
///
/// # Errors
/// As [`fit_logistic_binned`].
pub fn fit_logistic_binned_with(
    data: &BinnedData,
    y: ArrayView1<'_, f64>,
    params: &FitParams,
    callback: Option<Callback<'_>>,
    curvature: Curvature,
) -> Result<BinnedFit> {
    params.check()?;
    let mean = check_labels(y, data)?;
    let state = |beta| LogisticState::with_datafit(Logistic, data, y, mean, beta, curvature);
    fit_from(data, params, None, state, callback)
}

/// Weighted mean of `y` over the rows of positive weight `w[i]` (`rows[k]` has `w[k]`).
fn weighted_mean(y: ArrayView1<'_, f64>, rows: impl Iterator<Item = usize>, w: &[f64]) -> f64 {
    let (num, den) = rows
        .zip(w)
        .fold((0.0, 0.0), |(a, b), (i, &v)| (a + v * y[i], b + v));
    num / den
}

/// Fits logistic FAST with the penalty chosen on held-out rows: the search of
/// [`crate::fit::validation`] with the held-out weighted mean log-loss as its criterion.
/// `params.lambda` must be `Penalty::Validated`. The held-out rows are drawn within each class
/// (labels above ½ and the others, [`stratified_validation_rows`]), so both classes are on
/// both sides; with fewer than [`crate::fit::validation::MIN_ROWS`] rows of positive weight on either side, or a side
/// with a single class, the fixed ratio [`DEFAULT_LAMBDA_RATIO_LOGISTIC`] is used and the
/// search is empty. The final fit is on all rows at the chosen ratio (of the full data's
/// `λ_max`), warm-started from the blocks of the best held-out fit (re-centred on all rows,
/// the intercept refitted), to `params.tol`.
/// The callback sees the search and the final fit as one fit, as in
/// [`crate::fit::validation::fit_validated`].
///
/// `data` is borrowed mutably only to swap its sample weights; it is returned unchanged.
///
/// # Errors
/// As [`fit_logistic_binned`]; [`FastError::InvalidParameter`] if `params.lambda` is not
/// `Penalty::Validated`.
pub fn fit_logistic_validated(
    data: &mut BinnedData,
    y: ArrayView1<'_, f64>,
    params: &FitParams,
    callback: Option<Callback<'_>>,
) -> Result<(BinnedFit, PenaltySearch)> {
    let Validation { fraction, seed } =
        validation_of(params, "fit_logistic_validated needs Penalty::Validated")?;
    let mean = check_labels(y, data)?;
    let class: Vec<bool> = y.iter().map(|&v| v > 0.5).collect();
    let mut split = Split::new(data, stratified_validation_rows(&class, fraction, seed));
    let two_classes = |m: f64| m > 0.0 && m < 1.0;
    let held_mean = weighted_mean(y, split.rows.iter().copied(), &split.held_weights);
    let train_mean = weighted_mean(y, 0..data.n_samples, &split.train);
    if !(split.enough_rows() && two_classes(held_mean) && two_classes(train_mean)) {
        return fixed_ratio_fit(params, DEFAULT_LAMBDA_RATIO_LOGISTIC, |fixed| {
            fit_logistic_binned(data, y, fixed, callback)
        });
    }
    let term = |w: f64, y: f64, eta: f64| w * log_loss(y, eta);
    // Few rows: cross-validated over folds drawn within each class.
    let both_sides = |s: &Split| {
        two_classes(weighted_mean(y, s.rows.iter().copied(), &s.held_weights))
            && two_classes(weighted_mean(y, 0..data.n_samples, &s.train))
    };
    if let Some(folds) = folds_if_small(data, &class, seed, both_sides) {
        let state = |d: &BinnedData, rows: Option<&[usize]>, beta| {
            let y = targets_at(y, rows);
            let y = y.view();
            let m = d
                .weights
                .as_deref()
                .map_or(mean, |w| weighted_mean(y, 0..d.n_samples, w));
            LogisticState::with_datafit(Logistic, d, y, m, beta, Curvature::Newton)
        };
        let loss: FoldLoss<'_> = &|d, c, b, held| holdout_loss(d, y, (c, b), held, term);
        let refit = |d: &BinnedData, p: &FitParams, best, cb: Option<Callback<'_>>| {
            refit_all(d, y, mean, p, best, cb)
        };
        return kfold_then_refit(data, &folds, params, (&state, loss), RULE, refit, callback);
    }
    let held = (&split.rows[..], &split.held_weights[..]);
    search_then_refit(
        data,
        (std::mem::take(&mut split.train), split.rows.len()),
        params,
        (
            &|data, rows, beta| {
                let y = targets_at(y, rows);
                LogisticState::with_datafit(
                    Logistic,
                    data,
                    y.view(),
                    train_mean,
                    beta,
                    Curvature::Newton,
                )
            },
            &|data, c, b| holdout_loss(data, y, (c, b), held, term),
        ),
        RULE,
        |d, p, best, cb| refit_all(d, y, mean, p, best, cb),
        callback,
    )
}

/// The final fit of a held-out search: on all rows of `data` (labels' weighted mean `mean`)
/// at `params`, warm-started from `best`.
fn refit_all(
    data: &BinnedData,
    y: ArrayView1<'_, f64>,
    mean: f64,
    params: &FitParams,
    best: Vec<Vec<f64>>,
    callback: Option<Callback<'_>>,
) -> Result<BinnedFit> {
    let state =
        |beta| LogisticState::with_datafit(Logistic, data, y, mean, beta, Curvature::Newton);
    fit_from(data, params, Some(best), state, callback)
}
