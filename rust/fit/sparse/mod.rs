//! Feature-sparse FAST (DESIGN §5, the paper's §4): models with at most `K` non-flat shape
//! functions.
//!
//! * **Restricted sweeps**: cyclic block coordinate descent over a support set `S` until the
//!   KKT residual of the convex problem restricted to `S` is at most `tol`.
//! * **BGS local search**: `j*` = the best block outside `S` by BGS-s; for every `j ∈ S` try
//!   `β_j ← 0` then an exact update of `j*`, and keep the swap that lowers the objective most,
//!   only if it does; sweep `S` again; repeat while it improves (at most `max_swaps` times).
//! * **AGIS** (the paper's Algorithm 1): add the BGS-s best block outside `S`, sweep `S`,
//!   local search; one model for every support size `1 … K`.
//! * **Group ℓ0-FAST**: `F + λ_s · #{j : β_j ≠ 0}` by cyclic BCD whose block update keeps the
//!   FLSA solution `β*` only if it pays for its `λ_s`,
//!   `L(r⁽ᵏ⁾, 0) − [L(r⁽ᵏ⁾, β*) + λ_f ‖Dβ*‖₁] > λ_s`, interlaced with the local search until the
//!   objective stops improving; a warm-started path over decreasing `λ_s`, and a search for
//!   the `λ_s` that gives at most `K` features. CBCD runs with an active set (sweeps over the
//!   support to convergence, then a full sweep); a full sweep visits the support, then the
//!   blocks that could pay for `λ_s` by decreasing gain, then the rest, so that of several
//!   blocks that could enter, the best does first whatever the column order (a plain
//!   index-order sweep let the first column that pays enter, and the rest of the path
//!   inherited it).
//!
//! Everything runs on [`BlockState`] (residual, bin sums, exact block update); the results are
//! the same for any number of threads. These problems are not convex: `converged` and
//! `kkt_residual` certify the convex problem *restricted to the selected blocks* (the fused
//! lasso over `S` with every other block at 0), and for group ℓ0 also that a full sweep
//! changed no block's membership in the support.

use ndarray::ArrayView1;

use crate::data::binning::{BinnedData, BinningParams, Rows};
use crate::descent::DescentState;
use crate::error::{FastError, Result};
use crate::model::report;
use crate::model::AdditiveModel;
use crate::params::{
    FitParams, Penalty, Selection, Shapes, SparseMethod, DEFAULT_LAMBDA_RATIO, DEFAULT_MAX_ITER,
    DEFAULT_TOL,
};
use crate::states::engine;
use crate::states::squared::BlockState;

mod solver;
pub use solver::SparseSolver;

/// Default bound on the number of local-search swaps per model.
pub const DEFAULT_MAX_SWAPS: usize = 20;
/// Default factor between successive automatic `λ_s` values (as L0Learn's `ScaleDownFactor`).
pub const DEFAULT_SCALE_DOWN: f64 = 0.8;
/// Default maximum number of automatic `λ_s` values.
pub const DEFAULT_N_LAMBDA_S: usize = 100;
/// Bisection steps spent looking for exactly `K` features when the path jumps over `K`.
const N_BISECT: usize = 8;

/// Parameters shared by AGIS and group ℓ0-FAST.
#[derive(Debug, Clone, PartialEq)]
pub struct SparseParams {
    /// The fusion penalty `λ_f`, absolute or relative to `λ_max`.
    pub lambda: Penalty,
    /// KKT tolerance of the sweeps over the support (`max d / λ_f`, unscaled when `λ_f = 0`).
    pub tol: f64,
    /// Maximum number of block updates (exact dynamic programmes) spent on each model.
    pub max_iter: usize,
    /// Whether to run the BGS local search.
    pub local_search: bool,
    /// Maximum number of swaps of the local search per model.
    pub max_swaps: usize,
    /// How the data are binned.
    pub binning: BinningParams,
    /// Per-block monotonicity and penalty factors (see [`crate::params::Shapes`]).
    pub shapes: Shapes,
}

impl Default for SparseParams {
    fn default() -> Self {
        Self {
            lambda: Penalty::Relative(DEFAULT_LAMBDA_RATIO),
            tol: DEFAULT_TOL,
            max_iter: DEFAULT_MAX_ITER,
            local_search: true,
            max_swaps: DEFAULT_MAX_SWAPS,
            binning: BinningParams::default(),
            shapes: Shapes::default(),
        }
    }
}

impl SparseParams {
    /// Validates every parameter.
    ///
    /// # Errors
    /// [`FastError::InvalidPenalty`] or [`FastError::InvalidParameter`] naming the parameter.
    pub fn check(&self) -> Result<()> {
        self.as_fit_params().check()
    }

    fn as_fit_params(&self) -> FitParams {
        FitParams {
            lambda: self.lambda,
            selection: Selection::Cyclic,
            tol: self.tol,
            max_iter: self.max_iter,
            max_time: None,
            binning: self.binning.clone(),
            shapes: self.shapes.clone(),
            pairs: crate::params::PairParams::default(),
            sweep_share: 0.0,
            grid_splits: crate::params::GridSplits::Solve,
            objective: crate::params::ObjectiveTracking::Exact,
        }
    }
}

/// The `λ_s` values of a group ℓ0-FAST path.
#[derive(Debug, Clone, PartialEq)]
pub enum LambdaS {
    /// These values, in this order, each fit warm-started from the previous one; one model
    /// per value.
    Values(Vec<f64>),
    /// An automatic decreasing grid: `λ_s⁰ = max_j gain_j` at the constant model (the
    /// smallest `λ_s` whose fit is empty), then `λ_s ← scale_down · min(λ_s, max_{j∉S} gain_j)`
    /// so that a new block can enter at every step, until the support reaches
    /// `max_features` (bisecting on `λ_s` when a step jumps over it), no block outside the
    /// support can pay for itself, or `n_lambda` values were fitted. One model per support
    /// size reached (the lowest `F` among the fits of that size).
    Auto {
        /// Stop once the support has this many features.
        max_features: usize,
        /// Maximum number of grid values (bisection steps not counted).
        n_lambda: usize,
        /// Factor in `(0, 1)` between successive values.
        scale_down: f64,
    },
}

impl LambdaS {
    /// The automatic grid up to `max_features`, with the default settings.
    pub fn auto(max_features: usize) -> Self {
        Self::Auto {
            max_features,
            n_lambda: DEFAULT_N_LAMBDA_S,
            scale_down: DEFAULT_SCALE_DOWN,
        }
    }
}

/// One sparse model.
#[derive(Debug, Clone, PartialEq)]
pub struct SparseModel {
    /// The intercept `c`.
    pub intercept: f64,
    /// `β_j` over the chain of non-missing bins for every feature (zeros outside the
    /// support); shapes are centred (with the missing bin) over the training rows.
    pub values: Vec<Vec<f64>>,
    /// The missing bin's value per feature (0 for a feature without missing values, DESIGN §8).
    pub missing_values: Vec<f64>,
    /// Features whose shape function is not flat, increasing.
    pub support: Vec<usize>,
    /// The working set `S` (AGIS: in order of entry, a swap taking its place; ℓ0: the support).
    pub selected: Vec<usize>,
    /// Selected features whose shape function is flat at this `λ_f` (AGIS only; reported,
    /// not an error).
    pub flat: Vec<usize>,
    /// The objective of the problem solved: `F` for AGIS, `F + λ_s·|support|` for ℓ0.
    pub objective: f64,
    /// `F = loss + λ_f Σ_j TV(β_j)` (DESIGN §1), comparable across methods.
    pub fast_objective: f64,
    /// `1/(2W) Σ v_i (y_i − f(x_i))²`.
    pub loss: f64,
    /// `λ_s` (0 for AGIS).
    pub lambda_s: f64,
    /// Block updates done in the whole run when this model was recorded (its history is the
    /// first `n_iter` entries of the path's history).
    pub n_iter: usize,
    /// Local-search swaps taken for this model.
    pub n_swaps: usize,
    /// Whether `kkt_residual ≤ tol` (and, for ℓ0, a full sweep left the support unchanged).
    pub converged: bool,
    /// KKT residual of the convex problem restricted to `selected` (`max d / λ_f`, unscaled
    /// when `λ_f = 0`, with the intercept's stationarity).
    pub kkt_residual: f64,
}

/// Why a path ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathStop {
    /// Every size up to `K` reached (AGIS), the support reached `K` or every given `λ_s`
    /// was fitted (ℓ0).
    Complete,
    /// No block outside the support can move (AGIS) or pay for itself (ℓ0) at this `λ_f`.
    NoCandidate,
    /// The automatic `λ_s` grid ran out (`n_lambda` values) before the support reached `K`.
    GridExhausted,
}

/// One entry per block update (exact dynamic programme) of the run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SparseHistory {
    /// The objective after the update (with `λ_s·|support|` for ℓ0).
    pub objective: Vec<f64>,
    /// The block updated.
    pub feature: Vec<usize>,
    /// Seconds since the start.
    pub time: Vec<f64>,
    /// `λ_s` in force (0 for AGIS).
    pub lambda_s: Vec<f64>,
    /// The fit the update belongs to: AGIS counts support sizes (the objective never rises
    /// along the whole run); ℓ0 counts solves at one `λ_s` from one warm start (the penalised
    /// objective never rises within one).
    pub segment: Vec<usize>,
}

/// A sequence of sparse models on binned data.
#[derive(Debug, Clone, PartialEq)]
pub struct SparsePath {
    /// The models, by increasing support size (AGIS, automatic ℓ0 grid) or in the order of the
    /// given `λ_s` values.
    pub models: Vec<SparseModel>,
    /// The `λ_f` used.
    pub lambda_f: f64,
    /// The smallest `λ_f` whose (dense) fit is constant.
    pub lambda_max: f64,
    /// ℓ0: the smallest `λ_s` whose fit is empty (0 for AGIS).
    pub lambda_s_max: f64,
    /// Why the path ended.
    pub stop: PathStop,
    /// One entry per block update.
    pub history: SparseHistory,
}

/// A sparse path fitted on a feature matrix: the path plus the binning.
#[derive(Debug, Clone, PartialEq)]
pub struct SparseFit {
    /// Cut points per feature.
    pub cuts: Vec<Vec<f64>>,
    /// Total sample weight of the training rows in each chain bin.
    pub bin_weights: Vec<Vec<f64>>,
    /// Total sample weight of the training rows with a missing value, per feature.
    pub missing_weights: Vec<f64>,
    /// The models.
    pub path: SparsePath,
}

impl SparseFit {
    /// Model `i` of the path as an [`AdditiveModel`] (for prediction).
    pub fn model(&self, i: usize) -> AdditiveModel {
        let m = &self.path.models[i];
        AdditiveModel {
            intercept: m.intercept,
            cuts: self.cuts.clone(),
            values: m.values.clone(),
            missing_values: m.missing_values.clone(),
        }
    }
}

fn check_max_features(k: usize, p: usize) -> Result<()> {
    if k < 1 {
        return Err(FastError::InvalidParameter {
            name: "max_features",
            message: "must be an integer >= 1",
            value: k.to_string(),
        });
    }
    if k > p {
        return Err(FastError::InvalidParameter {
            name: "max_features",
            message: "must be <= the number of features",
            value: format!("{k} (X has {p} features)"),
        });
    }
    Ok(())
}

fn check_lambda_s(grid: &LambdaS, p: usize) -> Result<()> {
    match grid {
        LambdaS::Values(v) => {
            if v.is_empty() {
                return Err(FastError::InvalidParameter {
                    name: "lambda_s",
                    message: "must hold at least one value",
                    value: "[]".into(),
                });
            }
            if let Some(&bad) = v.iter().find(|x| !(x.is_finite() && **x >= 0.0)) {
                return Err(FastError::InvalidPenalty {
                    name: "lambda_s",
                    value: bad,
                });
            }
            Ok(())
        }
        LambdaS::Auto {
            max_features,
            n_lambda,
            scale_down,
        } => {
            check_max_features(*max_features, p)?;
            if *n_lambda < 1 {
                return Err(FastError::InvalidParameter {
                    name: "n_lambda_s",
                    message: "must be an integer >= 1",
                    value: n_lambda.to_string(),
                });
            }
            if !(*scale_down > 0.0 && *scale_down < 1.0) {
                return Err(FastError::InvalidParameter {
                    name: "scale_down_factor",
                    message: "must be in (0, 1)",
                    value: scale_down.to_string(),
                });
            }
            Ok(())
        }
    }
}

/// Checks the parameters and `y`; returns `(λ_f, λ_max)`.
fn prepare(data: &BinnedData, y: ArrayView1<'_, f64>, params: &SparseParams) -> Result<(f64, f64)> {
    params.check()?;
    params.shapes.check_len(data.n_features())?;
    if params.shapes.l2 > 0.0 {
        return Err(FastError::InvalidParameter {
            name: "l2_jumps",
            message: "is not supported by the sparse algorithms yet; use 0",
            value: format!("{}", params.shapes.l2),
        });
    }
    // Validates y (length, finiteness, at least two rows) and gives λ_max.
    let lambda_max = if params.shapes == Shapes::default() {
        engine::lambda_max(data, y)?
    } else {
        crate::error::check_target(y, data.n_samples)?;
        let mut st = BlockState::new(data, y);
        st.set_shapes(&params.shapes.resolve(data.n_features()));
        st.start_flat(data)
    };
    let lambda = params.lambda.resolve(lambda_max)?;
    Ok((lambda, lambda_max))
}

/// AGIS on binned data: one model for every support size `1 … max_features` (fewer if no
/// block outside the support can move). Runs on the current rayon pool.
///
/// # Errors
/// Bad parameters, `max_features` outside `1 ..= p`, `y` of the wrong length or non-finite.
pub fn agis_binned(
    data: &BinnedData,
    y: ArrayView1<'_, f64>,
    params: &SparseParams,
    max_features: usize,
) -> Result<SparsePath> {
    let (lambda, lambda_max) = prepare(data, y, params)?;
    check_max_features(max_features, data.n_features())?;
    let mut sv = SparseSolver::new(data, y, lambda, params.tol).with_shapes(&params.shapes);
    let mut s: Vec<usize> = Vec::new();
    let mut models = Vec::new();
    let stop = loop {
        if s.len() >= max_features {
            break PathStop::Complete;
        }
        let Some(k) = sv.best_outside(&s) else {
            break PathStop::NoCandidate;
        };
        let budget_end = sv.n_iter.saturating_add(params.max_iter);
        sv.segment = models.len();
        sv.step(k, None);
        s.push(k);
        let mut converged = sv.converge(&mut s, None, budget_end);
        let mut swaps = 0;
        while params.local_search && swaps < params.max_swaps && !sv.spent(budget_end) {
            if sv.local_search_step(&mut s, None).is_none() {
                break;
            }
            swaps += 1;
            converged = sv.converge(&mut s, None, budget_end);
        }
        models.push(sv.record(&s, 0.0, swaps, converged, false));
    };
    Ok(SparsePath {
        models,
        lambda_f: lambda,
        lambda_max,
        lambda_s_max: 0.0,
        stop,
        history: sv.history,
    })
}

/// Group ℓ0-FAST on binned data over a `λ_s` path (see [`LambdaS`]). Runs on the current
/// rayon pool.
///
/// # Errors
/// Bad parameters, a negative or non-finite `λ_s`, `max_features` outside `1 ..= p`, `y` of
/// the wrong length or non-finite.
pub fn l0_binned(
    data: &BinnedData,
    y: ArrayView1<'_, f64>,
    params: &SparseParams,
    grid: &LambdaS,
) -> Result<SparsePath> {
    let (lambda, lambda_max) = prepare(data, y, params)?;
    check_lambda_s(grid, data.n_features())?;
    let mut sv = SparseSolver::new(data, y, lambda, params.tol).with_shapes(&params.shapes);
    let mut s: Vec<usize> = Vec::new();
    let lambda_s_max = sv.max_gain_outside(&[]);
    let (models, stop) = match grid {
        LambdaS::Values(values) => {
            let mut models = Vec::with_capacity(values.len());
            for &ls in values {
                let (converged, swaps) = sv.solve_l0(&mut s, ls, params);
                models.push(sv.record(&s, ls, swaps, converged, true));
            }
            (models, PathStop::Complete)
        }
        &LambdaS::Auto {
            max_features,
            n_lambda,
            scale_down,
        } => l0_auto(
            &mut sv,
            &mut s,
            params,
            lambda_s_max,
            max_features,
            n_lambda,
            scale_down,
        ),
    };
    Ok(SparsePath {
        models,
        lambda_f: lambda,
        lambda_max,
        lambda_s_max,
        stop,
        history: sv.history,
    })
}

fn l0_auto(
    sv: &mut SparseSolver<'_>,
    s: &mut Vec<usize>,
    params: &SparseParams,
    lambda_s_max: f64,
    max_features: usize,
    n_lambda: usize,
    scale_down: f64,
) -> (Vec<SparseModel>, PathStop) {
    let mut fitted: Vec<SparseModel> = Vec::new();
    if !(lambda_s_max > 0.0) {
        return (fitted, PathStop::NoCandidate);
    }
    // The last fit within the budget (initially the empty model at λ_s_max) and its λ_s.
    let mut lo = (lambda_s_max, sv.snapshot(s));
    let mut ls = scale_down * lambda_s_max;
    let mut stop = PathStop::GridExhausted;
    for _ in 0..n_lambda {
        let (converged, swaps) = sv.solve_l0(s, ls, params);
        let size = s.len();
        if size <= max_features {
            fitted.push(sv.record(s, ls, swaps, converged, true));
            if size == max_features {
                stop = PathStop::Complete;
                break;
            }
            lo = (ls, sv.snapshot(s));
            let g = sv.max_gain_outside(s);
            if !(g > 0.0) {
                stop = PathStop::NoCandidate;
                break;
            }
            ls = scale_down * ls.min(g);
        } else {
            // Jumped over max_features: bisect (geometrically) between the last fit within the
            // budget (`lo`) and this one (`hi`). The problem is not convex and the fit depends
            // on the warm start: at each midpoint, start from the sparser side; unless that hits
            // max_features exactly, also start from the denser side (raising λ_s can drop
            // features one by one where lowering it added a group at once).
            let mut hi = (ls, sv.snapshot(s));
            'bisect: for _ in 0..N_BISECT {
                let mid = (lo.0 * hi.0).sqrt();
                // The fit from each side: its support size and, from the sparser side, its
                // snapshot.
                let mut sizes = [0; 2];
                let mut from_lo = None;
                for (side, start) in [&lo.1, &hi.1].into_iter().enumerate() {
                    sv.restore(start, s);
                    let (converged, swaps) = sv.solve_l0(s, mid, params);
                    sizes[side] = s.len();
                    if sizes[side] <= max_features {
                        fitted.push(sv.record(s, mid, swaps, converged, true));
                        if sizes[side] == max_features {
                            break 'bisect;
                        }
                    }
                    if side == 0 {
                        from_lo = Some(sv.snapshot(s));
                    }
                }
                let [size_lo, size_hi] = sizes;
                if let (true, Some(from_lo)) = (size_lo <= max_features, from_lo) {
                    lo = (mid, from_lo);
                } else if size_hi <= max_features {
                    lo = (mid, sv.snapshot(s));
                } else {
                    hi = (mid, sv.snapshot(s));
                }
            }
            stop = PathStop::Complete;
            break;
        }
    }
    // One model per support size: the lowest F among that size's fits; the empty model only
    // if nothing else was reached.
    let mut by_size: Vec<SparseModel> = Vec::new();
    for m in fitted {
        match by_size
            .iter_mut()
            .find(|b| b.support.len() == m.support.len())
        {
            Some(b) => {
                if m.fast_objective < b.fast_objective {
                    *b = m;
                }
            }
            None => by_size.push(m),
        }
    }
    if by_size.iter().any(|m| !m.support.is_empty()) {
        by_size.retain(|m| !m.support.is_empty());
    }
    by_size.sort_by_key(|m| m.support.len());
    (by_size, stop)
}

/// Bins the rows, runs `run(binned data, targets)` on them and reports its path with the bins.
fn bin_and<F>(rows: Rows<'_>, params: &SparseParams, run: F) -> Result<SparseFit>
where
    F: FnOnce(&BinnedData, ArrayView1<'_, f64>) -> Result<SparsePath>,
{
    params.check()?;
    let data = rows.bin(&params.binning)?;
    let path = run(&data, rows.y)?;
    let (bin_weights, missing_weights) = report::chain_weights(&data);
    Ok(SparseFit {
        cuts: data.features.into_iter().map(|f| f.cuts).collect(),
        bin_weights,
        missing_weights,
        path,
    })
}

/// Bins `x` and runs AGIS (see [`agis_binned`]).
///
/// # Errors
/// As [`agis_binned`], plus bad `x` or weights.
pub fn agis(rows: Rows<'_>, params: &SparseParams, max_features: usize) -> Result<SparseFit> {
    check_max_features(max_features, rows.x.ncols())?;
    bin_and(rows, params, |d, y| agis_binned(d, y, params, max_features))
}

/// Bins `x` and runs group ℓ0-FAST (see [`l0_binned`]).
///
/// # Errors
/// As [`l0_binned`], plus bad `x` or weights.
pub fn l0(rows: Rows<'_>, params: &SparseParams, grid: &LambdaS) -> Result<SparseFit> {
    check_lambda_s(grid, rows.x.ncols())?;
    bin_and(rows, params, |d, y| l0_binned(d, y, params, grid))
}

/// The one entry point of the feature-sparse fits: AGIS up to `max_features` features
/// (`None`: every feature) for [`SparseMethod::Agis`], group ℓ0-FAST over `grid` for
/// [`SparseMethod::L0`] (`max_features` is then read from `grid`).
///
/// # Errors
/// As [`agis`] or [`l0`].
pub fn fit(
    rows: Rows<'_>,
    params: &SparseParams,
    method: SparseMethod,
    max_features: Option<usize>,
    grid: &LambdaS,
) -> Result<SparseFit> {
    match method {
        SparseMethod::Agis => agis(rows, params, max_features.unwrap_or(rows.x.ncols())),
        SparseMethod::L0 => l0(rows, params, grid),
    }
}
