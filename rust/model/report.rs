//! The results of a fit: the fitted blocks, how the optimisation went (stop reason, KKT
//! residual, history), the progress a callback sees, and the held-out penalty search. Every
//! solver returns these types; nothing here depends on a solver.

use crate::data::binning::BinnedData;
use crate::model::AdditiveModel;
use crate::params::Engine;

/// One entry per block update.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct History {
    /// Objective after the update.
    pub objective: Vec<f64>,
    /// The block (feature) updated.
    pub feature: Vec<usize>,
    /// Seconds since the start of the optimisation.
    pub time: Vec<f64>,
}

impl History {
    /// Records an update of block `feature` leaving the objective at `objective`.
    pub(crate) fn push(&mut self, feature: usize, objective: f64, start: std::time::Instant) {
        self.objective.push(objective);
        self.feature.push(feature);
        self.time.push(start.elapsed().as_secs_f64());
    }
}

/// Why the solver stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// KKT residual ≤ tol.
    Converged,
    /// `max_iter` block updates done.
    MaxIter,
    /// Time budget used up.
    MaxTime,
    /// The callback asked to stop.
    Callback,
    /// No block can move but the KKT residual is still above `tol` (rounding level).
    Stalled,
}

/// How the optimisation went. Not converging is not an error.
#[derive(Debug, Clone, PartialEq)]
pub struct FitReport {
    /// Block updates done.
    pub n_iter: usize,
    /// Whether the KKT residual reached `tol`.
    pub converged: bool,
    /// Final KKT residual (`max d / λ_f`, or `max d` when `λ_f = 0`).
    pub kkt_residual: f64,
    /// Final objective `F`.
    pub objective: f64,
    /// Why it stopped.
    pub stop: StopReason,
    /// One entry per block update.
    pub history: History,
}

/// Progress passed to a callback before each block update.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Progress {
    /// Block updates so far.
    pub n_iter: usize,
    /// Current objective.
    pub objective: f64,
    /// Current KKT residual.
    pub kkt_residual: f64,
    /// Seconds since the start.
    pub elapsed: f64,
}

/// A callback: return `false` to stop (the model reached so far is kept).
pub type Callback<'a> = &'a mut (dyn FnMut(&Progress) -> bool + Send);

/// The result of a fit on binned data.
#[derive(Debug, Clone, PartialEq)]
pub struct BinnedFit {
    /// The intercept `c`.
    pub intercept: f64,
    /// `β_j`, one value per bin (chain bins, then the missing bin if any), centred
    /// (`Σ_b w_b β_b = 0`).
    pub values: Vec<Vec<f64>>,
    /// The `λ_f` used.
    pub lambda_f: f64,
    /// The smallest `λ_f` whose fit is constant.
    pub lambda_max: f64,
    /// How it went.
    pub report: FitReport,
}

/// The result of a fit on a feature matrix.
#[derive(Debug, Clone, PartialEq)]
pub struct Fit {
    /// The engine that ran the optimisation.
    pub engine: Engine,
    /// The fitted model (cut points and values).
    pub model: AdditiveModel,
    /// Total sample weight of the training rows in each chain bin.
    pub bin_weights: Vec<Vec<f64>>,
    /// Total sample weight of the training rows with a missing value, per feature.
    pub missing_weights: Vec<f64>,
    /// The `λ_f` used.
    pub lambda_f: f64,
    /// The smallest `λ_f` whose fit is constant.
    pub lambda_max: f64,
    /// How it went.
    pub report: FitReport,
    /// The held-out penalty search, for [`crate::params::Penalty::Validated`].
    pub search: Option<PenaltySearch>,
    /// The pair terms (none for an additive model).
    pub pairs: PairFit,
}

impl Fit {
    /// The fit of `fitted` (blocks on `data`'s bins) found by `engine`, with its search.
    pub fn new(
        data: &BinnedData,
        engine: Engine,
        fitted: BinnedFit,
        search: Option<PenaltySearch>,
    ) -> Self {
        let (bin_weights, missing_weights) = chain_weights(data);
        Self {
            engine,
            model: to_model(data, fitted.intercept, &fitted.values),
            bin_weights,
            missing_weights,
            lambda_f: fitted.lambda_f,
            lambda_max: fitted.lambda_max,
            report: fitted.report,
            search,
            pairs: PairFit::default(),
        }
    }
}

/// What the penalty search did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PenaltySearch {
    /// The ratios `λ_f / λ_max` in the order tried: down the path (or up from its first
    /// ratio), then the refinement.
    pub ratios: Vec<f64>,
    /// Held-out loss at each ratio: the weighted mean squared error, or the weighted mean
    /// log-loss for logistic fits.
    pub validation_loss: Vec<f64>,
    /// Block updates of each path fit.
    pub n_iter: Vec<usize>,
    /// The ratio chosen (the default ratio when the search did not run).
    pub ratio: f64,
    /// Number of held-out rows (0 when the search did not run).
    pub n_validation: usize,
}

impl PenaltySearch {
    /// The search that did not run: the fixed ratio `ratio` (too few rows to hold out).
    pub fn fixed(ratio: f64) -> Self {
        Self {
            ratio,
            ..Self::default()
        }
    }
}

/// The model of blocks fitted on `data` (chain values, then the missing bin's value if any).
pub fn to_model(data: &BinnedData, intercept: f64, blocks: &[Vec<f64>]) -> AdditiveModel {
    let mut model = AdditiveModel {
        intercept,
        cuts: Vec::new(),
        values: Vec::new(),
        missing_values: Vec::new(),
    };
    for (beta, f) in blocks.iter().zip(&data.features) {
        let nc = f.n_chain();
        model.cuts.push(f.cuts.clone());
        model.values.push(beta[..nc].to_vec());
        model
            .missing_values
            .push(if f.missing { beta[nc] } else { 0.0 });
    }
    model
}

/// Total weight per chain bin, and of the missing rows, of every feature.
pub fn chain_weights(data: &BinnedData) -> (Vec<Vec<f64>>, Vec<f64>) {
    data.features
        .iter()
        .map(|f| {
            let nc = f.n_chain();
            (
                f.bin_weights[..nc].to_vec(),
                if f.missing { f.bin_weights[nc] } else { 0.0 },
            )
        })
        .unzip()
}

/// One feature's interaction bins.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    /// The interaction bin of every main bin (the missing bin last, if any, mapped to
    /// [`crate::fit::pairs::layout::MISSING`]).
    pub map: Vec<usize>,
    /// Increasing cuts, a subset of the feature's main cuts.
    pub cuts: Vec<f64>,
    /// Whether the last interaction bin is the missing bin.
    pub missing: bool,
}

impl Axis {
    /// Interaction bins (the grid's rows or columns).
    pub fn len(&self) -> usize {
        self.cuts.len() + 1
    }

    /// Whether the axis has no bin (never: a chain has at least one).
    pub fn is_empty(&self) -> bool {
        false
    }
}

/// One pair term of a fit.
#[derive(Debug, Clone, PartialEq)]
pub struct PairTerm {
    /// The features `(j, k)`, `j < k`.
    pub features: (usize, usize),
    /// Their interaction bins.
    pub axes: (Axis, Axis),
    /// The grid.
    pub grid: crate::params::Grid,
    /// `θ`, one value per cell (row-major), then the missing cell's if either feature has
    /// missing values; centred. A multiclass fit holds one such table per class,
    /// class-major.
    pub values: Vec<f64>,
    /// Training weight of every cell (the missing cell's last).
    pub cell_weights: Vec<f64>,
}

/// The pair terms of a fit and how they were chosen.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PairFit {
    /// One entry per pair term, in block order.
    pub terms: Vec<PairTerm>,
    /// `ρ = λ_pair / λ_f`.
    pub penalty: f64,
    /// The `ρ` tried on held-out rows, in order (empty: `ρ` was given or fixed).
    pub path: Vec<f64>,
    /// Held-out loss at each.
    pub path_loss: Vec<f64>,
    /// Block updates of each path fit.
    pub path_n_iter: Vec<usize>,
    /// The screening gain of every pair kept (empty for a given list).
    pub gains: Vec<f64>,
    /// `μ` of the pair terms' smooth parts (0: none; [`crate::prox::smooth`]). Each term's table
    /// is then the sum of its total-variation part and its smooth part, on the union of
    /// their interaction cuts.
    pub smoothing: f64,
    /// The `μ` tried on held-out rows, in order (`0`: the pairs without smooth parts; empty:
    /// not searched).
    pub smoothing_path: Vec<f64>,
    /// Held-out loss at each.
    pub smoothing_path_loss: Vec<f64>,
    /// The engine of the fit with the pair terms on all rows (`None`: no fit with pairs ran).
    pub engine: Option<Engine>,
}
