//! # fastpcam
//!
//! FAST (Liu & Mazumder, "FAST: An Optimization Framework for Fast Additive Segmentation
//! in Transparent ML") fits piecewise-constant additive models
//!
//! ```text
//! f(x) = c + Σ_j β_j[bin_j(x_j)]
//! ```
//!
//! by minimising, over the intercept `c` and one value per bin per feature,
//!
//! ```text
//! F(c, β) = 1/(2W) Σ_i v_i (y_i − f(x_i))²  +  λ_f Σ_j Σ_b |β_{j,b+1} − β_{j,b}|
//! ```
//!
//! with sample weights `v_i ≥ 0` and `W = Σ v_i` (or, for classification, the mean log-loss
//! of the log-odds `f`; for Poisson, Gamma and Tweedie regression, the mean half deviance of
//! the log-mean `f`, see [`loglink`]). The core is pure Rust; its modules depend one way, each on those
//! listed before it:
//!
//! * [`error`] — the errors, each naming the argument at fault;
//! * [`flsa`] — the weighted fused-lasso signal approximator (a weighted direct algorithm
//!   and Johnson's O(B) dynamic programme), the exact block update;
//! * [`monotone`] — weighted isotonic regression (PAVA) and the exact monotone block solve;
//! * [`binning`] — one binned representation of the data (cut points, compact per-feature
//!   codes, bin weights) shared by every solver;
//! * [`params`] — the fitting parameters and their defaults;
//! * [`model`] — the fitted additive model and its prediction;
//! * [`report`] — the results of a fit: blocks, stop reason, KKT residual, history, progress
//!   and the held-out penalty search;
//! * [`selection`] — per-feature bin sums of the residual and the BGS-s scores / KKT residual;
//! * [`grid`] — the 2-D block of a pair term (weighted 2-D TV denoising by Dykstra's
//!   splitting into exact 1-D FLSAs, its certificate) and the scores and penalties of every
//!   block kind;
//! * [`tables`] — sufficient statistics (co-occurrence tables): iterations that never touch
//!   the rows;
//! * [`descent`] — the one block coordinate descent loop (greedy BGS-s, scored sweeps or
//!   cyclic, KKT stopping rule) over any [`descent::DescentState`];
//! * [`blocks`] — the exact squared-loss state (residual or tables, bin sums, exact block
//!   update), shared by every squared-loss solver;
//! * [`datafit`] — per-row losses (gradient, curvature, stable loss change): the logistic
//!   loss and the log-link half losses (Poisson, Gamma, Tweedie);
//! * [`newton`] — the proximal-Newton state over a datafit;
//! * [`engine`] — the squared loss's engine choice (rows or tables), `λ_max` and fits at a
//!   given penalty;
//! * [`validation`] — the penalty chosen on held-out rows along a warm-started path, for any
//!   state;
//! * [`extrapolate`] — block coordinate descent in rounds with an exact line search along
//!   each round's change (the squared loss's final refit on the rows engine, greedy);
//! * [`pairs`] — pair terms: interaction bins, screening, the pair blocks as virtual
//!   features of the one loop, and the pair penalty chosen on held-out rows;
//! * [`solver`] — the regression entry points (bin, engine, fixed or held-out penalty, path,
//!   thread pool);
//! * [`logistic`] — the classification entry points (binary log-loss);
//! * [`loglink`] — the log-link regression entry points (Poisson, Gamma, Tweedie);
//! * [`multinomial`] — multiclass classification (softmax log-loss, one chain per class);
//! * [`sparse`] — feature-sparse FAST: AGIS, group-ℓ0 FAST and the BGS local search.
//!
//! The PyO3 layer lives in `bindings` behind the `python` feature.

pub mod data;
pub mod descent;
pub mod error;
pub mod fit;
pub mod model;
pub mod params;
pub mod prox;
pub mod states;
#[cfg(test)]
mod testing;

#[cfg(feature = "python")]
mod bindings;

pub use data::binning::Rows;
pub use error::{FastError, Result};
