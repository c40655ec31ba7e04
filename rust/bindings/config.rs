//! The fit configuration: one typed object, read once from the dict that the Python facade
//! builds from an estimator's parameters (`fastpcam._params.core_config`). Its keys are the
//! Python parameter names; a key left out takes its default, written beside the key in the one
//! list that declares the struct (`fit_config!`, which also makes [`FitConfig::default`]): the
//! single place the defaults are defined (from the core's constants), which `_core.defaults()`
//! shows to Python.
//! Turning it into core parameters checks nothing itself: the core's `check` methods do, and
//! their messages name the Python argument.

use pyo3::conversion::FromPyObjectOwned;
use pyo3::prelude::*;
use pyo3::IntoPyObjectExt;

use crate::data::binning::{auto_limits, BinningParams, DEFAULT_BIN_SAMPLE_SIZE};
use crate::fit::loglink::DEFAULT_TWEEDIE_POWER;
use crate::fit::pairs::screen::AUTO_INTERACTIONS;
use crate::fit::sparse::{
    LambdaS, SparseParams, DEFAULT_MAX_SWAPS, DEFAULT_N_LAMBDA_S, DEFAULT_SCALE_DOWN,
};
use crate::params::{
    Engine, FitParams, Interactions, L2Jumps, Loss, PairParams, Penalty, Selection, Shapes,
    Smoothing, Task, Validation, AUTO_INTERACTION_BINS, AUTO_INTERACTION_CELLS,
    DEFAULT_LAMBDA_RATIO, DEFAULT_MAX_ITER, DEFAULT_TOL, DEFAULT_VALIDATION_FRACTION,
};

/// A parameter that Python gives as a value or as the string "auto": `max_bins` (an int,
/// or None for exact bins) and `lambda_ratio` (a ratio of `λ_max`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum AutoOr<T> {
    Auto,
    Value(T),
}

/// `max_bins`: "auto" (by the numbers of rows and features), an int, or None (exact bins).
pub(crate) type MaxBins = AutoOr<Option<usize>>;
/// `lambda_ratio`: "auto" (chosen on held-out rows) or a ratio of `λ_max`.
pub(crate) type LambdaRatio = AutoOr<f64>;

/// `interactions`: a number of pairs to screen for, or a list of feature-index pairs (the
/// facade resolves names).
#[derive(Debug, Clone, PartialEq, FromPyObject, IntoPyObject)]
pub(crate) enum InteractionsConfig {
    Count(usize),
    List(Vec<(usize, usize)>),
}

impl<'a, 'py, T: FromPyObjectOwned<'py>> FromPyObject<'a, 'py> for AutoOr<T> {
    type Error = PyErr;
    fn extract(ob: pyo3::Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        match ob.extract::<String>() {
            Ok(s) if s == "auto" => Ok(Self::Auto),
            Ok(s) => Err(pyo3::exceptions::PyValueError::new_err(format!(
                "expected a number or 'auto', got {s:?}"
            ))),
            Err(_) => Ok(Self::Value(ob.extract().map_err(Into::into)?)),
        }
    }
}

impl<'py, T: IntoPyObject<'py>> IntoPyObject<'py> for AutoOr<T> {
    type Target = PyAny;
    type Output = Bound<'py, PyAny>;
    type Error = PyErr;
    fn into_pyobject(self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        match self {
            Self::Auto => Ok("auto".into_pyobject(py)?.into_any()),
            Self::Value(v) => v.into_bound_py_any(py),
        }
    }
}

/// Declares [`FitConfig`] and its [`Default`] from one list: each key's doc, type and default
/// on one entry. A key left out of the dict takes its default; `loss`, the first entry, is
/// the one key every fit gives (its default serves `FitConfig::default` only).
macro_rules! fit_config {
    (
        $(#[$loss_doc:meta])*
        loss: $loss_ty:ty = $loss_default:expr,
        $(
            $(#[$doc:meta])*
            $key:ident: $ty:ty = $default:expr,
        )*
    ) => {
        /// Everything a fit needs besides the data, keyed by the Python parameter names.
        #[derive(Debug, Clone, FromPyObject, IntoPyObject)]
        #[pyo3(from_item_all)]
        pub(crate) struct FitConfig {
            $(#[$loss_doc])*
            pub loss: $loss_ty,
            $(
                $(#[$doc])*
                #[pyo3(default = FitConfig::default().$key)]
                pub $key: $ty,
            )*
        }

        impl Default for FitConfig {
            fn default() -> Self {
                Self {
                    loss: $loss_default,
                    $($key: $default,)*
                }
            }
        }
    };
}

fit_config! {
    /// "squared", "logistic", "poisson", "gamma" or "tweedie" (the one key every fit gives).
    loss: String = "squared".into(),
    lambda_f: Option<f64> = None,
    lambda_ratio: LambdaRatio = AutoOr::Auto,
    validation_fraction: f64 = DEFAULT_VALIDATION_FRACTION,
    max_bins: MaxBins = AutoOr::Auto,
    selection: String = "auto".into(),
    tol: f64 = DEFAULT_TOL,
    max_iter: usize = DEFAULT_MAX_ITER,
    max_time: Option<f64> = None,
    /// Threads (`None`: every core).
    n_jobs: Option<usize> = None,
    random_state: u64 = 0,
    /// Fits on this many held-out splits, averaged (`lambda_ratio="auto"` only).
    outer_bags: usize = 1,
    subsample_for_bin: usize = DEFAULT_BIN_SAMPLE_SIZE,
    /// User cut points, one entry (or None) per feature.
    bins: Option<Vec<Option<Vec<f64>>>> = None,
    engine: String = "auto".into(),
    /// Seconds between calls of the progress function.
    progress_interval: f64 = 1.0,
    /// Feature-sparse fits: "agis" or "l0".
    method: String = "agis".into(),
    /// Feature-sparse fits: the most non-flat shape functions (`None`: every feature).
    max_features: Option<usize> = None,
    /// `"l0"`: the `λ_s` values (`None`: an automatic grid).
    lambda_s: Option<Vec<f64>> = None,
    n_lambda_s: usize = DEFAULT_N_LAMBDA_S,
    scale_down_factor: f64 = DEFAULT_SCALE_DOWN,
    local_search: bool = true,
    max_swaps: usize = DEFAULT_MAX_SWAPS,
    /// Per feature: 1 nondecreasing, -1 nonincreasing, 0 free (`None`: all free).
    monotonic_cst: Option<Vec<i8>> = None,
    /// Per feature: the multiplier of `λ_f` (`None`: all 1).
    penalty_factor: Option<Vec<f64>> = None,
    /// The weight of the squared penalty on the main effects' jumps (0: none).
    l2_jumps: AutoOr<f64> = AutoOr::Auto,
    /// The Tweedie power of `loss="tweedie"`, in (1, 2).
    power: f64 = DEFAULT_TWEEDIE_POWER,
    /// Pair terms: "auto" (screened in up to three rounds), how many, or which.
    interactions: AutoOr<InteractionsConfig> = AutoOr::Auto,
    /// Interaction bins per feature at most, or "auto" (64, with at most 256 cells a pair).
    max_interaction_bins: AutoOr<usize> = AutoOr::Auto,
    /// `λ_pair / λ_f`, or "auto" (chosen on held-out rows).
    interaction_penalty: AutoOr<f64> = AutoOr::Auto,
    /// The weight `μ` of the pair terms' smooth parts, or "auto" (chosen on held-out rows);
    /// 0: none.
    interaction_smoothing: AutoOr<f64> = AutoOr::Auto,
}

impl FitConfig {
    /// How to bin data of `shape` = (rows, features) for a softmax of `n_classes` classes or
    /// a fit of one score (`None`): `max_bins="auto"` resolves for them.
    pub fn binning(
        &self,
        (n_rows, n_features): (usize, usize),
        n_classes: Option<usize>,
    ) -> BinningParams {
        let (auto_bins, auto_exact) = auto_limits(n_rows, n_features, n_classes);
        BinningParams {
            max_bins: match self.max_bins {
                AutoOr::Value(b) => b,
                AutoOr::Auto => Some(auto_bins),
            },
            // "auto" keeps the levels of a feature with few enough of them at any size.
            exact_bins: match self.max_bins {
                AutoOr::Value(_) => 0,
                AutoOr::Auto => auto_exact,
            },
            sample_size: self.subsample_for_bin,
            random_state: self.random_state,
            user_cuts: self.bins.clone().unwrap_or_default(),
        }
    }

    /// The pair terms: `interactions`, `max_interaction_bins`, `interaction_penalty`.
    pub fn pairs(&self) -> PairParams {
        PairParams {
            interactions: match &self.interactions {
                AutoOr::Auto => Interactions::Auto(AUTO_INTERACTIONS),
                AutoOr::Value(InteractionsConfig::Count(k)) => Interactions::Count(*k),
                AutoOr::Value(InteractionsConfig::List(l)) => Interactions::List(l.clone()),
            },
            max_bins: match self.max_interaction_bins {
                AutoOr::Auto => AUTO_INTERACTION_BINS,
                AutoOr::Value(b) => b,
            },
            max_cells: match self.max_interaction_bins {
                AutoOr::Auto => Some(AUTO_INTERACTION_CELLS),
                AutoOr::Value(_) => None,
            },
            penalty: match self.interaction_penalty {
                AutoOr::Auto => None,
                AutoOr::Value(v) => Some(v),
            },
            smoothing: match self.interaction_smoothing {
                AutoOr::Auto => Smoothing::Auto,
                AutoOr::Value(0.0) => Smoothing::Off,
                AutoOr::Value(v) => Smoothing::Fixed(v),
            },
            ..PairParams::default()
        }
    }

    /// The blocks' shapes: `monotonic_cst`, `penalty_factor` and `l2_jumps`.
    pub fn shapes(&self) -> Shapes {
        Shapes {
            monotone: self.monotonic_cst.clone().unwrap_or_default(),
            penalty_factor: self.penalty_factor.clone().unwrap_or_default(),
            grids: Vec::new(),
            links: Vec::new(),
            grid_l2: Vec::new(),
            // "auto" is resolved by the entry point that knows the loss and the rows
            // (`crate::fit::entry::fit`, from `Task::l2_jumps`); elsewhere it is 0.
            l2: match self.l2_jumps {
                AutoOr::Auto => 0.0,
                AutoOr::Value(v) => v,
            },
        }
    }

    /// The penalty: `lambda_f`, else the ratio, else (`"auto"`) chosen on held-out rows when
    /// `held_out` rows exist and the fixed default ratio when they do not.
    pub fn penalty(&self, held_out: bool) -> Penalty {
        match (self.lambda_f, self.lambda_ratio) {
            (Some(l), _) => Penalty::Absolute(l),
            (None, AutoOr::Value(r)) => Penalty::Relative(r),
            (None, AutoOr::Auto) if held_out => Penalty::Validated(Validation {
                fraction: self.validation_fraction,
                seed: self.random_state,
            }),
            (None, AutoOr::Auto) => Penalty::Relative(DEFAULT_LAMBDA_RATIO),
        }
    }

    /// Checked parameters of a fit on data of `shape` = (rows, features) (`held_out`: see
    /// [`Self::penalty`]; `n_classes`: a softmax's classes, see [`Self::binning`]).
    pub fn fit_params(
        &self,
        shape: (usize, usize),
        held_out: bool,
        n_classes: Option<usize>,
    ) -> PyResult<FitParams> {
        let params = FitParams {
            lambda: self.penalty(held_out),
            selection: self.selection.parse::<Selection>()?,
            tol: self.tol,
            max_iter: self.max_iter,
            max_time: self.max_time,
            binning: self.binning(shape, n_classes),
            shapes: self.shapes(),
            pairs: self.pairs(),
            sweep_share: 0.0,
            grid_splits: crate::params::GridSplits::Solve,
            objective: crate::params::ObjectiveTracking::Exact,
        };
        params.check()?;
        Ok(params)
    }

    /// The loss and the engine, checked together.
    pub fn loss_engine(&self) -> PyResult<(Loss, Engine)> {
        let (loss, engine) = (self.loss.parse::<Loss>()?, self.engine.parse::<Engine>()?);
        loss.check_engine(engine)?;
        Ok((loss, engine))
    }

    /// What [`crate::fit::entry::fit`] fits: the loss and the engine (checked together), the
    /// Tweedie power, `n_classes` (a softmax fit) and `l2_jumps` (`"auto"` is resolved there).
    pub fn task(&self, n_classes: Option<usize>) -> PyResult<Task> {
        let (loss, engine) = self.loss_engine()?;
        Ok(Task {
            loss,
            power: self.power,
            n_classes,
            engine,
            l2_jumps: match self.l2_jumps {
                AutoOr::Auto => L2Jumps::Auto,
                AutoOr::Value(v) => L2Jumps::Value(v),
            },
            outer_bags: self.outer_bags,
        })
    }

    /// Checked parameters of a feature-sparse fit on data of `shape` = (rows, features).
    pub fn sparse_params(&self, shape: (usize, usize)) -> PyResult<SparseParams> {
        let params = SparseParams {
            lambda: self.penalty(false),
            tol: self.tol,
            max_iter: self.max_iter,
            local_search: self.local_search,
            max_swaps: self.max_swaps,
            binning: self.binning(shape, None),
            shapes: self.shapes(),
        };
        params.check()?;
        Ok(params)
    }

    /// The `λ_s` grid of an `"l0"` fit on `n_features` features.
    pub fn lambda_s_grid(&self, n_features: usize) -> LambdaS {
        match &self.lambda_s {
            Some(values) => LambdaS::Values(values.clone()),
            None => LambdaS::Auto {
                max_features: self.max_features.unwrap_or(n_features),
                n_lambda: self.n_lambda_s,
                scale_down: self.scale_down_factor,
            },
        }
    }
}
