//! Fitting parameters.
//!
//! | Name | Default | Range |
//! |---|---|---|
//! | `lambda` | `Relative(DEFAULT_LAMBDA_RATIO)` | absolute `λ_f ≥ 0`, a ratio `≥ 0` of `λ_max`, or a ratio chosen on held-out rows |
//! | `selection` | `Auto` | `Auto`, `Greedy` (BGS-s), `Sweep` (scored sweeps) or `Cyclic` |
//! | `tol` | [`DEFAULT_TOL`] | `≥ 0`: stop when `max d / λ_f ≤ tol` |
//! | `max_iter` | [`DEFAULT_MAX_ITER`] | block updates, `≥ 0` |
//! | `max_time` | `None` | seconds, `> 0` |
//! | `binning` | [`BinningParams::default`] | see [`crate::data::binning`] |
//! | `shapes` | every block free, factor 1 | see [`Shapes`] |
//! | `sweep_share` | 0 | `[0, 1)`: see [`FitParams::sweep_share`] |
//! | `grid_splits` | `Solve` | `Solve` or `Best`: see [`GridSplits`] |
//! | `objective` | `Exact` | `Exact` or `Bounded`: see [`ObjectiveTracking`] |

use std::time::Instant;

use crate::data::binning::BinningParams;
use crate::error::{FastError, Result};

/// Default `λ_f / λ_max` (DESIGN §7 and the measurements in the README).
pub const DEFAULT_LAMBDA_RATIO: f64 = 3e-3;
/// Default KKT tolerance.
pub const DEFAULT_TOL: f64 = 1e-2;
/// Default maximum number of block updates.
pub const DEFAULT_MAX_ITER: usize = 100_000;

/// Declares a parameter's enum together with its parsing from the variants' names
/// (`FromStr`); any other name is an [`FastError::InvalidParameter`] naming the parameter.
macro_rules! named_choices {
    (
        $(#[$meta:meta])*
        pub enum $t:ident for $param:literal, $message:literal {
            $($(#[$vmeta:meta])* $v:ident = $name:literal,)*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum $t {
            $($(#[$vmeta])* $v,)*
        }

        impl std::str::FromStr for $t {
            type Err = FastError;
            fn from_str(s: &str) -> Result<Self> {
                match s {
                    $($name => Ok(Self::$v),)*
                    _ => Err(FastError::InvalidParameter {
                        name: $param,
                        message: $message,
                        value: format!("{s:?}"),
                    }),
                }
            }
        }
    };
}

named_choices! {
    /// Block selection rule.
    pub enum Selection for "selection", "must be 'greedy', 'cyclic', 'sweep' or 'auto'" {
        /// BGS-s: update the block with the largest squared steepest-descent norm.
        Greedy = "greedy",
        /// Update every block in turn.
        Cyclic = "cyclic",
        /// Scored sweeps: score every block once (BGS-s), then update every block that can
        /// move and violates its KKT condition by more than half the tolerance, steepest
        /// first, each on its own fresh sums (on large data two at a time, the second kept
        /// only if it still lowers the objective); repeat. Greedy ordering at cyclic cost.
        Sweep = "sweep",
        /// `Greedy` where its per-update cost is small (the tables engine, few features, or
        /// a loss other than the squared one), `Sweep` otherwise.
        Auto = "auto",
    }
}

named_choices! {
    /// Where the residual information lives during a fit (see [`crate::states::squared`]).
    pub enum Engine for "engine", "must be 'auto', 'rows' or 'tables'" {
        /// Choose from a cost model (see [`crate::states::engine::choose_engine`]).
        Auto = "auto",
        /// A residual per row: each iteration makes passes over the rows.
        Rows = "rows",
        /// Sufficient statistics: each iteration works on co-occurrence tables only.
        Tables = "tables",
    }
}

named_choices! {
    /// The feature-sparse algorithm (see [`crate::fit::sparse`]).
    pub enum SparseMethod for "method", "must be 'agis' or 'l0'" {
        /// Approximate greedy iterative selection: one model per support size.
        Agis = "agis",
        /// Group ℓ0-FAST along a path of `λ_s`.
        L0 = "l0",
    }
}

/// The fusion penalty, absolute or relative to `λ_max` (the smallest `λ_f` whose fit is constant).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Penalty {
    /// `λ_f` itself.
    Absolute(f64),
    /// `λ_f = ratio · λ_max`.
    Relative(f64),
    /// The ratio chosen on held-out rows (see [`crate::fit::validation`]).
    Validated(Validation),
}

impl Penalty {
    /// `λ_f` on data whose `λ_max` is given.
    ///
    /// # Errors
    /// [`FastError::InvalidParameter`] for [`Penalty::Validated`], which needs held-out rows
    /// (see [`crate::fit::validation::fit_validated`]).
    pub fn resolve(self, lambda_max: f64) -> Result<f64> {
        match self {
            Self::Absolute(v) => Ok(v),
            Self::Relative(r) => Ok(r * lambda_max),
            Self::Validated(_) => Err(FastError::InvalidParameter {
                name: "lambda",
                message:
                    "a penalty chosen on held-out rows is available for fits from rows only \
                     (solver::fit, logistic::fit_logistic); give an absolute penalty or a ratio here",
                value: format!("{self:?}"),
            }),
        }
    }
}

/// How [`Penalty::Validated`] holds rows out.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Validation {
    /// Share of the rows held out, in `(0, 1)`.
    pub fraction: f64,
    /// Seed of the draw of the held-out rows.
    pub seed: u64,
}

/// Default share of held-out rows of [`Penalty::Validated`] (as EBM's `validation_size`).
pub const DEFAULT_VALIDATION_FRACTION: f64 = 0.15;

/// Everything a fit needs besides the data.
#[derive(Debug, Clone, PartialEq)]
pub struct FitParams {
    /// The fusion penalty.
    pub lambda: Penalty,
    /// Block selection rule.
    pub selection: Selection,
    /// KKT tolerance.
    pub tol: f64,
    /// Maximum number of block updates.
    pub max_iter: usize,
    /// Optional time budget in seconds.
    pub max_time: Option<f64>,
    /// How the data are binned.
    pub binning: BinningParams,
    /// Per-block monotonicity and penalty factors (empty: every block free, factor 1).
    pub shapes: Shapes,
    /// Pair terms (none by default: the additive model).
    pub pairs: PairParams,
    /// Scored sweeps also skip the blocks whose largest KKT violation is below this share of
    /// the largest one at the sweep's start (a working set; 0: they skip only the blocks
    /// within [`crate::descent::SWEEP_SKIP`] of the tolerance). The stopping rule is
    /// unchanged. The fit on all rows of a pair stage uses
    /// [`crate::fit::pairs::FINISH_SWEEP_SHARE`].
    pub sweep_share: f64,
    /// How pair blocks are certified between their updates ([`GridSplits`]; the fit on all
    /// rows of a pair stage takes [`GridSplits::Best`]).
    pub grid_splits: GridSplits,
    /// How the objective follows the accepted steps ([`ObjectiveTracking`]; the held-out
    /// fits take [`ObjectiveTracking::Bounded`]).
    pub objective: ObjectiveTracking,
}

/// How a state's objective follows its accepted block steps, where its datafit bounds a
/// step's loss change from its bins' sums (the log-loss,
/// [`crate::states::datafit::Datafit::bin_loss_bound`]). A step whose bound passes the
/// Armijo test is taken without the pass over the rows that measures its change (the true
/// change is at most the bound); either way the same steps are taken, so the fitted blocks
/// are the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ObjectiveTracking {
    /// The change of such a step is measured as the step is applied (one pass over the rows
    /// instead of two): the objective is exact after every step, as the history and the
    /// report show it.
    #[default]
    Exact,
    /// The objective moves by the bound where that is within 1% of the change (a step whose
    /// bound is further above it is measured as it is applied, as under `Exact`): an upper
    /// bound of the objective, above it by the third-order terms of the steps taken this way
    /// (each `Σ ℓ''·(e^|s| − 1 − |s| − s²/2)` at most). For the held-out fits, whose objective no one reads but their own stopping
    /// rule: a block update's loss is then one pass over the rows cheaper, 15–30% of a
    /// binary classifier's fit.
    Bounded,
}

/// The splits of a pair block's gradient `R = G_r + G_c` its KKT score tries
/// ([`crate::descent::kinds::grid_score`]; every split is a valid certificate).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GridSplits {
    /// Its last solve's: `G_c = Q`, the column part of the solve's flows.
    #[default]
    Solve,
    /// The best of three: the solve's, `G_c = R − P` (`P` the solve's row part) and their
    /// mean. Tighter once other blocks have moved; it changes the descent's course, so the
    /// held-out fits (whose update budgets end them, and whose choices were measured with
    /// the solve's split) keep [`GridSplits::Solve`].
    Best,
}

/// Interaction bins per feature of `max_interaction_bins="auto"` (EBM's default), under the
/// cell budget [`AUTO_INTERACTION_CELLS`].
pub const AUTO_INTERACTION_BINS: usize = 64;

/// Cells per pair grid at most under `max_interaction_bins="auto"`: two many-valued features
/// get 16 × 16, a two-valued feature's partner up to 64 bins (measured on the 20 benchmark
/// tables: `docs/pairs.md`).
pub const AUTO_INTERACTION_CELLS: usize = 256;

/// Which pair terms a fit gets (DESIGN §11, [`crate::fit::pairs`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Interactions {
    /// The `K` pairs with the largest screening gain on the main effects' residual (0: the
    /// additive model).
    Count(usize),
    /// The estimators' `interactions="auto"`: the `K` pairs with the largest screening gain,
    /// then, where they cut the additive model's held-out loss below
    /// [`crate::fit::pairs::rounds::SECOND_ROUND_CUT`] of it, `K` more screened on the residual of the fit
    /// with pairs, and below its square `K` more again (so up to `3K` pairs; see
    /// [`crate::fit::pairs::rounds::screening_rounds`]). On fewer than
    /// [`crate::fit::validation::MIN_ROWS`] rows: the additive model.
    Auto(usize),
    /// These pairs of feature indices.
    List(Vec<(usize, usize)>),
}

/// The pair terms of a fit.
#[derive(Debug, Clone, PartialEq)]
pub struct PairParams {
    /// Which pairs.
    pub interactions: Interactions,
    /// Interaction bins per feature at most (`>= 2`).
    pub max_bins: usize,
    /// Cells per pair grid at most (`None`: `max_bins²`); see [`crate::fit::pairs::layout::pair_bins`].
    pub max_cells: Option<usize>,
    /// `λ_pair / λ_f`, the pair terms' penalty relative to the main effects'; `None`: chosen
    /// on held-out rows.
    pub penalty: Option<f64>,
    /// The pair terms' smooth parts ([`crate::prox::smooth`]).
    pub smoothing: Smoothing,
    /// Rows up to which the pair stage chooses on every row, and the size of its sample
    /// above ([`PAIR_SEARCH_ROWS`] by default).
    pub search_rows: usize,
    /// The engine of the pair stage's held-out paths (on the split's training rows, of a
    /// sample above [`PairParams::search_rows`]) and of the fit with pairs on all rows
    /// (`fit::pairs::finish`): [`Engine::Auto`] the co-occurrence tables of every block where
    /// the cost model of [`crate::states::engine::choose_engine`] picks them for the data with
    /// the pair blocks (for a path, only where they take at most four times the codes' bytes:
    /// `fit::pairs::search::path_state`) and the loss has a tables engine (the squared
    /// loss), [`Engine::Rows`] always the rows, [`Engine::Tables`] the tables wherever the
    /// loss has them.
    pub engine: Engine,
    /// Whether, where `ρ` is chosen on held-out rows under a cell budget, the strongest pairs
    /// get [`crate::fit::pairs::layout::FINE_CELLS`] and a narrow side's partner more bins than
    /// `max_bins` ([`crate::fit::pairs::layout::narrow_pair_bins`]). The binary classifier's
    /// `max_interaction_bins="auto"` turns them off ([`LOGISTIC_INTERACTION_BINS`]).
    pub finer_grids: bool,
    /// Whether a further round of screening (`crate::fit::pairs::rounds`) keeps its pairs
    /// only where they lower the held-out loss of the model before them. Set by
    /// `crate::fit::entry::resolve` for the binary classifier (`docs/classification.md`);
    /// the other losses keep every round that ran.
    pub checked_rounds: bool,
    /// Block updates per block at most in each held-out path fit (the pair penalty's, the
    /// further rounds', pruning's and the smooth parts'): [`PATH_BUDGET`], and
    /// [`LOGISTIC_PATH_BUDGET`] for the binary classifier (set by `crate::fit::entry::resolve`).
    pub path_budget: usize,
    /// The fraction of the best point's held-out loss by which a smaller `ρ` on the pair path
    /// must lower it to take its place (`crate::fit::pairs::search::PATH_MARGIN` for the
    /// binary classifier, set by `crate::fit::entry::resolve`; 0, any fall, for the other
    /// losses).
    pub path_margin: f64,
    /// Whether the pair path's additive point (the main effects on the held-out split's
    /// training rows) is fitted on the main effects alone, the pair blocks left out of its
    /// rows and state, rather than beside them held at zero: the same model in fewer updates.
    /// The binary classifier's (set by `crate::fit::entry::resolve`).
    pub additive_alone: bool,
    /// Whether the pair stage's held-out rows are drawn within each class of the targets
    /// (class indices `0..K`; the softmax, as its main effects' search), so that every class
    /// is on both sides of the split.
    pub stratified: bool,
    /// Whether the pair stage holds rows out at a fixed `penalty` too (where the main effects'
    /// penalty is chosen on held-out rows): the smooth parts' `μ` is then chosen there, at
    /// that `ρ` (the plain layout kept: finer grids and the coarse layout need a chosen `ρ`),
    /// and the pairs are kept without a check against the additive model. The softmax's (`crate::fit::multinomial`).
    pub held_out_at_fixed: bool,
    /// Whether the smooth parts' `μ` path runs whole, the best `μ` kept: not stopped after its
    /// first `μ` where that gains little (`crate::fit::pairs::smooth::SMOOTH_GATE`), nor at
    /// the first `μ` that does not lower the held-out loss. The softmax's: on its real tasks
    /// the held-out loss fell most at the path's last `μ`, after a small first gain or a rise.
    pub smooth_whole_path: bool,
}

/// Block updates per block at most in each held-out path fit (the path compares held-out
/// losses; it need not converge): the default of [`PairParams::path_budget`]. Each fit starts
/// from the one before, so the comparisons hold at a small budget: 15 against 50 before, on
/// the 20 benchmark tables (one fit each, same hour), kept the same pairs on 19 and one fewer
/// on `344_mv`, test MSE × 0.9994 in geometric mean (worst × 1.0029, `574_house_16H`), fit
/// time × 0.73 in geometric mean (113 s → 74 s in all); on the 14 binary tasks the same pairs
/// and log-losses within 5e-4 (none worse by more than 3e-5), fit time 52 s → 38 s; on
/// `537_houses` (Gamma) 6.9 s → 4.9 s, the same deviance to 3e-5 (`docs/pairs.md`). 25 and 10
/// gave as good a model; 10 made some fits on all rows longer (`201_pol` 21 s → 30 s).
pub const PATH_BUDGET: usize = 15;

/// The binary classifier's held-out path budget ([`PairParams::path_budget`]; the other
/// losses [`PATH_BUDGET`] = 15). Measured on the 14 real binary tasks and 13 tables
/// binarised at their median (`docs/classification.md`): 10 against 15
/// changed no test log-loss by more than 0.04% for the worse; `online_shoppers` chose `ρ`
/// 0.25 instead of 0.125 (0.23195 → 0.22407; the two held-out losses within 0.03% either way),
/// `537_houses` kept its smooth parts (0.24905 → 0.24691) and `credit_default_tw` its pairs
/// (0.42991 → 0.42649); geometric means 0.9968 and 0.9994.
pub const LOGISTIC_PATH_BUDGET: usize = 10;

/// Interaction bins per feature of the binary classifier's `max_interaction_bins="auto"`
/// (with [`AUTO_INTERACTION_CELLS`] cells a pair at most, and no finer grids for the strongest
/// pairs or a narrow side's partner: [`PairParams::finer_grids`] off), set by
/// `crate::fit::entry::resolve`. A row of a binary outcome carries at most a quarter of a
/// unit of information (`p(1 − p)`, less on imbalanced data), so a grid holds far less per
/// cell than under the squared loss: the finer grids of the regressor's layout (32 × 32 for
/// the five strongest pairs, 2 × 256 for a switch's partner) mixed into one `ρ` path lost on
/// held-out rows, and their pairs were dropped where 16 × 16 grids beat the additive model
/// (measured on 14 real binary tasks: `docs/classification.md`).
pub const LOGISTIC_INTERACTION_BINS: usize = 16;

/// Rows up to which the pair stage makes its choices (the pairs, the layout, `ρ`, the further
/// rounds, the smooth parts and `μ`) on every row; on more, where `ρ` is chosen on held-out
/// rows, it makes them on a sample of this many rows (`fit::pairs::sample`), and only the fit on all
/// rows (`fit::pairs::finish`) reads every row. The held-out decisions rest on the sample's held-out
/// rows (15% of it by default), enough to tell a pair's surface from its noise, and each
/// costs about what it costs on a table of this size; the fit on all rows starts from the
/// sample's fit, the same bins and cells, and runs to `tol` on every row, so the model
/// stays the certified optimum at the chosen penalties.
pub const PAIR_SEARCH_ROWS: usize = 100_000;

/// Whether each pair term gets a smooth part: a second grid, finer, penalised by `(μ/2) Σ`
/// of its cells' squared differences ([`crate::prox::smooth`]); the term is the sum of its two
/// tables (`interaction_smoothing`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Smoothing {
    /// No smooth parts: the pair terms of the total variation alone.
    Off,
    /// `μ` chosen on held-out rows along [`crate::fit::pairs::smooth::SMOOTH_PATH`], kept only if the
    /// smooth parts beat the pairs without them there (where `ρ` is chosen on held-out
    /// rows; otherwise off).
    Auto,
    /// This `μ` (`> 0`, finite), fitted without a held-out check.
    Fixed(f64),
}

/// The core's default is the additive model of the FAST paper (`Count(0)`); the estimators
/// default to `interactions="auto"` (`Auto(AUTO_INTERACTIONS)`, set in the bindings).
impl Default for PairParams {
    fn default() -> Self {
        Self {
            interactions: Interactions::Count(0),
            max_bins: AUTO_INTERACTION_BINS,
            max_cells: Some(AUTO_INTERACTION_CELLS),
            penalty: None,
            smoothing: Smoothing::Off,
            search_rows: PAIR_SEARCH_ROWS,
            engine: Engine::Auto,
            finer_grids: true,
            checked_rounds: false,
            path_budget: PATH_BUDGET,
            path_margin: 0.0,
            additive_alone: false,
            stratified: false,
            held_out_at_fixed: false,
            smooth_whole_path: false,
        }
    }
}

impl PairParams {
    /// Whether the fit has pair terms.
    pub fn any(&self) -> bool {
        match &self.interactions {
            Interactions::Count(k) | Interactions::Auto(k) => *k > 0,
            Interactions::List(l) => !l.is_empty(),
        }
    }

    /// Checks the values (the pairs' indices are checked against the data later).
    ///
    /// # Errors
    /// [`FastError::InvalidParameter`] naming `max_interaction_bins` or
    /// `interaction_penalty`.
    pub fn check(&self) -> Result<()> {
        if self.max_bins < 2 {
            return Err(FastError::InvalidParameter {
                name: "max_interaction_bins",
                message: "must be >= 2",
                value: self.max_bins.to_string(),
            });
        }
        if let Some(v) = self.penalty {
            if !(v.is_finite() && v >= 0.0) {
                return Err(FastError::InvalidParameter {
                    name: "interaction_penalty",
                    message: "must be finite and >= 0 (or 'auto')",
                    value: v.to_string(),
                });
            }
        }
        if let Smoothing::Fixed(v) = self.smoothing {
            if !(v.is_finite() && v > 0.0) {
                return Err(FastError::InvalidParameter {
                    name: "interaction_smoothing",
                    message: "must be finite and >= 0 (or 'auto')",
                    value: v.to_string(),
                });
            }
        }
        Ok(())
    }
}

impl Default for FitParams {
    fn default() -> Self {
        Self {
            lambda: Penalty::Relative(DEFAULT_LAMBDA_RATIO),
            selection: Selection::Auto,
            tol: DEFAULT_TOL,
            max_iter: DEFAULT_MAX_ITER,
            max_time: None,
            binning: BinningParams::default(),
            shapes: Shapes::default(),
            pairs: PairParams::default(),
            sweep_share: 0.0,
            grid_splits: GridSplits::Solve,
            objective: ObjectiveTracking::Exact,
        }
    }
}

impl FitParams {
    /// Whether the time budget `max_time`, counted from `since`, has run out.
    #[must_use]
    pub fn out_of_time(&self, since: Instant) -> bool {
        self.max_time
            .is_some_and(|t| since.elapsed().as_secs_f64() >= t)
    }

    /// These parameters at the fixed ratio `λ_f / λ_max = ratio`.
    #[must_use]
    pub fn at_ratio(&self, ratio: f64) -> Self {
        Self {
            lambda: Penalty::Relative(ratio),
            ..self.clone()
        }
    }

    /// Validates every parameter.
    ///
    /// # Errors
    /// [`FastError::InvalidPenalty`] or [`FastError::InvalidParameter`] naming the parameter.
    pub fn check(&self) -> Result<()> {
        match self.lambda {
            Penalty::Absolute(v) if !(v.is_finite() && v >= 0.0) => {
                return Err(FastError::InvalidPenalty {
                    name: "lambda_f",
                    value: v,
                })
            }
            Penalty::Relative(v) if !(v.is_finite() && v >= 0.0) => {
                return Err(FastError::InvalidPenalty {
                    name: "lambda_ratio",
                    value: v,
                })
            }
            Penalty::Validated(Validation { fraction, .. })
                if !(fraction > 0.0 && fraction < 1.0) =>
            {
                return Err(FastError::InvalidParameter {
                    name: "validation_fraction",
                    message: "must be in (0, 1)",
                    value: fraction.to_string(),
                })
            }
            _ => {}
        }
        if !(self.tol.is_finite() && self.tol >= 0.0) {
            return Err(FastError::InvalidParameter {
                name: "tol",
                message: "must be finite and >= 0",
                value: self.tol.to_string(),
            });
        }
        if !(0.0..1.0).contains(&self.sweep_share) {
            return Err(FastError::InvalidParameter {
                name: "sweep_share",
                message: "must be in [0, 1)",
                value: self.sweep_share.to_string(),
            });
        }
        if let Some(t) = self.max_time {
            if !(t > 0.0) {
                return Err(FastError::InvalidParameter {
                    name: "max_time",
                    message: "must be > 0 seconds (or None)",
                    value: t.to_string(),
                });
            }
        }
        self.shapes.check()?;
        self.pairs.check()?;
        self.binning.check()
    }
}

/// The shape of one block (DESIGN §10): its direction and penalty factor, and for a pair
/// term its 2-D grid (DESIGN §11).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChainShape {
    /// `1` nondecreasing, `-1` nonincreasing, `0` free.
    pub monotone: i8,
    /// The block's jumps are penalised by `λ_f · factor` (`≥ 0`; 0: unpenalised).
    pub factor: f64,
    /// `None`: a 1-D chain (a main effect). `Some`: a pair term, whose bins are the cells of
    /// a 2-D grid penalised by the anisotropic total variation (see [`crate::prox::grid`]).
    pub grid: Option<Grid>,
    /// The weight `μ ≥ 0` of the squared term `(μ/2) Σ θ²` on the chain's jumps (0: none):
    /// with it the block's penalty is an elastic net on its jumps, solved exactly by
    /// [`crate::prox::enet`]. On a grid, the squared differences over its edges: a pair's smooth
    /// part, whose penalty factor is 0 (no total variation; solved by [`crate::prox::smooth`]).
    pub l2: f64,
}

/// A block's kind, read from its shape ([`ChainShape::kind`]): what its exact update, its
/// score and KKT contribution and its penalty term are (the one dispatch over kinds is
/// [`crate::descent::kinds`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockKind {
    /// A feature's 1-D chain of bins (with its missing bin; monotone or not; with or without
    /// the squared jump term `l2`).
    Chain,
    /// A pair term's 2-D grid under the anisotropic total variation.
    Grid(Grid),
    /// A pair term's smooth part: its grid under squared differences (`l2 > 0`).
    Smooth(Grid),
}

impl BlockKind {
    /// The length of the block's stored dual: a grid's or a smooth part's
    /// ([`Grid::dual_len`]; a smooth part keeps it at 0), none for a chain.
    pub fn dual_len(self) -> usize {
        match self {
            BlockKind::Chain => 0,
            BlockKind::Grid(g) | BlockKind::Smooth(g) => g.dual_len(),
        }
    }

    /// The grid's cells (0 for a chain).
    pub fn cells(self) -> usize {
        match self {
            BlockKind::Chain => 0,
            BlockKind::Grid(g) | BlockKind::Smooth(g) => g.cells(),
        }
    }
}

impl ChainShape {
    /// The block's kind: a chain (`grid: None`), a pair's grid, or a grid's smooth part
    /// (`l2 > 0` on a grid).
    pub fn kind(self) -> BlockKind {
        match self.grid {
            None => BlockKind::Chain,
            Some(g) if self.l2 > 0.0 => BlockKind::Smooth(g),
            Some(g) => BlockKind::Grid(g),
        }
    }
}

impl Default for ChainShape {
    fn default() -> Self {
        Self {
            monotone: 0,
            factor: 1.0,
            grid: None,
            l2: 0.0,
        }
    }
}

/// The grid of a pair term `(j, k)`: `rows × cols` cells in row-major order, row `a` for
/// feature `j`'s interaction bin `a` and column `b` for feature `k`'s. When a feature has a
/// missing bin, the last row (column) holds the rows where it is missing: a line of its own,
/// fused along its length but joined to no other line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grid {
    /// Rows, the missing row included.
    pub rows: usize,
    /// Columns, the missing column included.
    pub cols: usize,
    /// Whether the last row is the missing row.
    pub missing_row: bool,
    /// Whether the last column is the missing column.
    pub missing_col: bool,
}

impl Grid {
    /// A `rows × cols` grid without missing lines.
    pub fn new(rows: usize, cols: usize) -> Self {
        Self {
            rows,
            cols,
            missing_row: false,
            missing_col: false,
        }
    }

    /// Number of cells.
    pub fn cells(self) -> usize {
        self.rows * self.cols
    }

    /// The chain length of a column (rows joined vertically) and of a row.
    pub fn chain_lengths(self) -> (usize, usize) {
        (
            self.rows - usize::from(self.missing_row),
            self.cols - usize::from(self.missing_col),
        )
    }

    /// Calls `f(edge, a, b, vertical)` for every edge `a — b` of the grid (`a < b`), numbered
    /// from 0: every row's chain (across), then every column's chain (down).
    pub fn for_each_edge(self, mut f: impl FnMut(usize, usize, usize, bool)) {
        let cols = self.cols;
        let (chain_r, chain_c) = self.chain_lengths();
        let mut e = 0;
        for r in 0..self.rows {
            for c in 0..chain_c.saturating_sub(1) {
                f(e, r * cols + c, r * cols + c + 1, false);
                e += 1;
            }
        }
        for r in 0..chain_r.saturating_sub(1) {
            for c in 0..cols {
                f(e, r * cols + c, (r + 1) * cols + c, true);
                e += 1;
            }
        }
    }

    /// The number of edges of the grid (those [`Grid::for_each_edge`] visits).
    pub fn n_edges(self) -> usize {
        let (chain_r, chain_c) = self.chain_lengths();
        self.rows * chain_c.saturating_sub(1) + chain_r.saturating_sub(1) * self.cols
    }

    /// The length of a pair block's stored dual: its column part (one entry per cell) and
    /// then its edge flows (one per edge), which warm-start the block's next solve
    /// ([`crate::prox::grid::solve_grid`]).
    pub fn dual_len(self) -> usize {
        self.cells() + self.n_edges()
    }

    /// Calls `f(a, b)` for every edge `a — b` of the grid (`a < b`), in the order of
    /// [`Grid::for_each_edge`].
    pub fn edges(self, mut f: impl FnMut(usize, usize)) {
        self.for_each_edge(|_, a, b, _| f(a, b));
    }

    /// The weight floor of a pair block's cells in its solves: [`EMPTY_FLOOR`] times their
    /// mean weight `h`.
    pub fn weight_floor(h: &[f64]) -> f64 {
        EMPTY_FLOOR * h.iter().sum::<f64>() / h.len().max(1) as f64
    }
}

/// Weight of an empty cell in a pair block's solves, relative to the mean cell weight.
pub const EMPTY_FLOOR: f64 = 1e-6;

impl ChainShape {
    /// The block's penalty at `λ_f = lambda` (`∞` stays `∞`: a flat chain).
    #[inline]
    pub fn penalty(self, lambda: f64) -> f64 {
        if lambda == f64::INFINITY {
            lambda
        } else {
            lambda * self.factor
        }
    }
}

/// Per-feature shapes of the blocks: `monotonic_cst` and `penalty_factor`, one entry per
/// feature each, or empty (every block free, or every factor 1).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Shapes {
    /// `1` nondecreasing, `-1` nonincreasing, `0` free (empty: all free).
    pub monotone: Vec<i8>,
    /// Nonnegative multipliers of `λ_f` (empty: all 1).
    pub penalty_factor: Vec<f64>,
    /// The grid of every pair block (`None` for a main effect; empty: no pair blocks). Pair
    /// blocks come after the main effects ([`crate::fit::pairs`]).
    pub grids: Vec<Option<Grid>>,
    /// Every pair block's features and axes ([`crate::descent::transfer`]; empty: no pair blocks).
    pub links: Vec<PairLink>,
    /// `l2_jumps`: the weight `μ` of the squared penalty `(μ/2) Σ θ²` on the jumps `θ` of
    /// every main effect's chain (times its penalty factor; 0: the paper's penalty). Pair
    /// blocks keep the total variation alone.
    pub l2: f64,
    /// Per block, the weight `μ` of a grid block's squared differences `(μ/2) Σ (θ_a − θ_b)²`
    /// over its edges (a pair's smooth part, [`crate::prox::smooth`]; its penalty factor is then 0).
    /// Empty, or 0 for a block: none.
    pub grid_l2: Vec<f64>,
}

/// A pair block's features and interaction bins, for the transfers of [`crate::descent::transfer`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PairLink {
    /// The pair's block.
    pub block: usize,
    /// Its features: along its rows, along its columns.
    pub features: (usize, usize),
    /// Each feature's main bins' interaction bins (its missing bin, if any, last).
    pub maps: (Vec<usize>, Vec<usize>),
    /// Whether each feature has a missing bin.
    pub missing: (bool, bool),
}

impl Shapes {
    /// The shape of block `k`.
    #[inline]
    pub fn get(&self, k: usize) -> ChainShape {
        let (factor, grid) = (
            self.penalty_factor.get(k).copied().unwrap_or(1.0),
            self.grids.get(k).copied().flatten(),
        );
        ChainShape {
            monotone: self.monotone.get(k).copied().unwrap_or(0),
            factor,
            grid,
            l2: if grid.is_some() {
                self.grid_l2.get(k).copied().unwrap_or(0.0)
            } else {
                self.l2 * factor
            },
        }
    }

    /// Keeps the shapes of the first `n_blocks` blocks only (the blocks after them dropped).
    pub fn truncate(&mut self, n_blocks: usize) {
        self.monotone.truncate(n_blocks);
        self.penalty_factor.truncate(n_blocks);
        self.grids.truncate(n_blocks);
        self.grid_l2.truncate(n_blocks);
        self.links.retain(|l| l.block < n_blocks);
    }

    /// Every block's shape, for `n_blocks` blocks.
    pub fn resolve(&self, n_blocks: usize) -> Vec<ChainShape> {
        (0..n_blocks).map(|k| self.get(k)).collect()
    }

    /// Checks the values: directions in {-1, 0, 1}, factors finite and `≥ 0`.
    ///
    /// # Errors
    /// [`FastError::InvalidParameter`] naming `monotonic_cst` or `penalty_factor` and the
    /// feature.
    pub fn check(&self) -> Result<()> {
        if let Some((j, v)) = self.monotone.iter().enumerate().find(|(_, v)| v.abs() > 1) {
            return Err(FastError::InvalidParameter {
                name: "monotonic_cst",
                message: "must hold -1, 0 or 1 per feature",
                value: format!("feature {j}: {v}"),
            });
        }
        let bad = |v: &f64| !(v.is_finite() && *v >= 0.0);
        if let Some((j, v)) = self.penalty_factor.iter().enumerate().find(|(_, v)| bad(v)) {
            return Err(FastError::InvalidParameter {
                name: "penalty_factor",
                message: "must hold finite values >= 0 per feature",
                value: format!("feature {j}: {v}"),
            });
        }
        if !(self.l2.is_finite() && self.l2 >= 0.0) {
            return Err(FastError::InvalidParameter {
                name: "l2_jumps",
                message: "must be a finite value >= 0",
                value: format!("{}", self.l2),
            });
        }
        Ok(())
    }

    /// Checks the lengths against `n_features` (each empty or one entry per feature).
    ///
    /// # Errors
    /// [`FastError::LengthMismatch`] naming the parameter.
    pub fn check_len(&self, n_features: usize) -> Result<()> {
        for (what, len) in [
            ("monotonic_cst", self.monotone.len()),
            ("penalty_factor", self.penalty_factor.len()),
        ] {
            if len != 0 && len != n_features {
                return Err(FastError::LengthMismatch {
                    what,
                    expected: n_features,
                    got: len,
                    reason: "one entry per feature",
                });
            }
        }
        Ok(())
    }
}

/// The loss a fit minimises (the `loss` of the Python configuration).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loss {
    /// Weighted squared error ([`crate::fit::solver`]).
    Squared,
    /// Weighted log-loss of 0/1 labels ([`crate::fit::logistic`]).
    Logistic,
    /// Half Poisson deviance, log link ([`crate::fit::loglink`]).
    Poisson,
    /// Half Gamma deviance, log link ([`crate::fit::loglink`]).
    Gamma,
    /// Half Tweedie deviance of a power in `(1, 2)`, log link ([`crate::fit::loglink`]).
    Tweedie,
}

impl std::str::FromStr for Loss {
    type Err = FastError;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "squared" => Ok(Self::Squared),
            "logistic" => Ok(Self::Logistic),
            "poisson" => Ok(Self::Poisson),
            "gamma" => Ok(Self::Gamma),
            "tweedie" => Ok(Self::Tweedie),
            _ => Err(FastError::InvalidParameter {
                name: "loss",
                message: "must be 'squared', 'logistic', 'poisson', 'gamma' or 'tweedie'",
                value: format!("{s:?}"),
            }),
        }
    }
}

impl Loss {
    /// Checks that `engine` can fit this loss: the sufficient-statistics engine needs the
    /// squared loss.
    ///
    /// # Errors
    /// [`FastError::InvalidParameter`] naming `engine`.
    pub fn check_engine(self, engine: Engine) -> Result<()> {
        if self != Self::Squared && engine == Engine::Tables {
            return Err(FastError::InvalidParameter {
                name: "engine",
                message: "must be 'auto' or 'rows' for the logistic, poisson, gamma and tweedie losses (the co-occurrence tables need the squared loss)",
                value: "\"tables\"".to_string(),
            });
        }
        Ok(())
    }
}

/// `l2_jumps` as the estimators give it: a weight, or `Auto`, which the one entry point
/// ([`crate::fit::entry::fit`]) resolves for the loss and the rows (a binary classifier's
/// `crate::fit::logistic::auto_l2_jumps`, 0 for every other fit).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum L2Jumps {
    /// Chosen for the loss and the number of rows.
    Auto,
    /// This weight (written into [`Shapes::l2`]).
    Value(f64),
}

/// What the one entry point ([`crate::fit::entry::fit`]) fits: the loss (with its parameter),
/// the number of classes, the engine, and the parameters whose `"auto"` depends on the loss.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Task {
    /// The loss (with `n_classes`, the softmax log-loss whatever this is).
    pub loss: Loss,
    /// The Tweedie power of [`Loss::Tweedie`], in `(1, 2)` (read by that loss only).
    pub power: f64,
    /// `Some(K)`: the softmax fit of `K` classes (`y` holds class indices); `None`: the loss's
    /// own fit (a binary classifier for [`Loss::Logistic`]).
    pub n_classes: Option<usize>,
    /// The engine (the squared loss alone may use [`Engine::Tables`]).
    pub engine: Engine,
    /// `l2_jumps`: [`L2Jumps::Auto`] is resolved by the entry point, a value replaces
    /// [`Shapes::l2`].
    pub l2_jumps: L2Jumps,
    /// `outer_bags`: with the penalty chosen on held-out rows, the fits on this many held-out
    /// splits averaged into one model ([`crate::fit::bags`]); 1 (or a fixed penalty): one fit.
    pub outer_bags: usize,
}

/// Default `λ_f / λ_max` of the feature-sparse fits (the value the feature-selection
/// benchmark was run with; the dense default is tuned separately).
pub const SPARSE_LAMBDA_RATIO: f64 = 1e-3;
/// Default `max_bins` of the feature-sparse fits (likewise).
pub const SPARSE_MAX_BINS: usize = 256;
/// Default number of features of a feature-sparse model.
pub const SPARSE_MAX_FEATURES: usize = 10;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_working_set_share_outside_zero_to_one_is_refused() {
        for share in [-0.1, 1.0, f64::NAN] {
            let e = FitParams {
                sweep_share: share,
                ..FitParams::default()
            }
            .check()
            .unwrap_err();
            assert!(e.to_string().contains("sweep_share"), "{share}: {e}");
        }
        let ok = FitParams {
            sweep_share: 0.3,
            ..FitParams::default()
        };
        assert!(ok.check().is_ok());
    }
}
