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
//! the log-mean `f`, see [`fit::loglink`]). The core is pure Rust, in layers: each module
//! below uses only those listed before it (a folder's own module, its `mod.rs`, where it is
//! listed; `python3 ../shared/tools/structure.py` checks that the folders form no cycle, and
//! `tests/python/test_design.py` that this order is the real one):
//!
//! * [`error`] — the errors, each naming the argument at fault;
//! * [`data`] — the data every solver reads:
//!   * [`data::binning`] — one binned representation (cut points, compact per-feature codes,
//!     bin weights) shared by every solver, and `Rows`, the input of every entry point;
//!   * [`data::tables`] — sufficient statistics (co-occurrence tables): iterations that
//!     never touch the rows;
//! * [`params`] — the fitting parameters, their defaults and their checks;
//! * [`model`] — the fitted additive model and its prediction; [`model::report`], the
//!   results of a fit (blocks, stop reason, KKT residual, history, progress, the held-out
//!   penalty search, pair terms);
//! * [`prox`] — the exact block solves:
//!   * [`prox::flsa`] — the weighted fused-lasso signal approximator (a weighted direct
//!     algorithm and Johnson's O(B) dynamic programme), the chain's update;
//!   * [`prox::monotone`] — weighted isotonic regression (PAVA) and the monotone chain;
//!   * [`prox::enet`] — the chain whose jumps also carry a squared penalty;
//!   * [`prox::maxflow`] — maximum flow on small networks, the minimum-cut oracle of the grid;
//!   * [`prox::smooth`] — a pair grid's smooth part (squared differences, banded Cholesky);
//!   * [`prox::grid`] — a pair grid's 2-D total variation, solved exactly by
//!     divide-and-conquer minimum cuts;
//! * [`descent`] — block coordinate descent:
//!   * [`descent::pace`] — whether the passes run in parallel, chosen by measurement;
//!   * [`descent::selection`] — per-feature bin sums of the residual, a chain's BGS-s score
//!     and KKT contribution;
//!   * [`descent::kinds`] — the one dispatch over block kinds ([`params::BlockKind`]: chain,
//!     grid, smooth part): exact updates, scores, certificates and penalty terms;
//!   * [`descent::transfer`] — penalty moved between blocks that share a feature;
//!   * the folder's own module (`descent/mod.rs`) — the one loop over any
//!     [`descent::DescentState`] (greedy BGS-s, scored sweeps or cyclic, KKT stopping rule);
//! * [`states`] — the states the loop descends:
//!   * [`states::datafit`] — per-row losses (gradient, curvature, stable loss change): the
//!     logistic loss and the log-link half losses (Poisson, Gamma, Tweedie);
//!   * [`states::line`] — exact line searches: a quadratic plus kinks, fused runs kept;
//!   * [`states::squared`] — the exact squared-loss state (residual or tables, bin sums,
//!     exact block update, two alternating blocks solved together);
//!   * [`states::engine`] — the squared loss's engine choice (rows or tables), its states,
//!     `λ_max` and fits at a given penalty;
//!   * [`states::extrapolate`] — the descent in rounds with an exact line search along each
//!     round's change;
//!   * [`states::newton`] — the proximal-Newton state over a datafit;
//!   * [`states::softmax`] — the multiclass state (one chain per class, the median shift);
//! * [`fit`] — the entry points (the pair stage in [`fit::pairs`]'s steps: `stage`, `layout`,
//!   `screen`, `search`, `rounds`, `smooth`, then `mod.rs`):
//!   * [`fit::path`] — the held-out path of penalties: its ratios, its search and its
//!     refinement, for any state that fits at one ratio;
//!   * [`fit::validation`] — the penalty chosen on held-out rows along that warm-started path,
//!     for any state;
//!   * [`fit::pairs`] — pair terms: interaction bins, screening, the pair blocks as virtual
//!     features of the one loop, the pair penalty chosen on held-out rows, smooth parts; the
//!     chosen pairs fitted on sufficient statistics (`stats`, after `mod.rs`);
//!   * [`fit::solver`] — the regression entry points (bin, engine, fixed or held-out
//!     penalty, path, thread pool);
//!   * [`fit::logistic`] — the classification entry points (binary log-loss);
//!   * [`fit::loglink`] — the log-link regression entry points (Poisson, Gamma, Tweedie);
//!   * [`fit::multinomial`] — multiclass classification (softmax log-loss);
//!   * [`fit::sparse`] — feature-sparse FAST: AGIS, group-ℓ0 FAST and the BGS local search;
//!   * [`fit::bags`] — outer bags: the fits on several held-out splits averaged into one
//!     model (union grids for the pair terms);
//!   * [`fit::entry`] — the one entry point of every loss (`fit`: the loss's `"auto"`
//!     parameters resolved, then its own entry point) and of a fit on sufficient statistics.
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
