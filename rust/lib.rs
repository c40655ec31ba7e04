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
//! with sample weights `v_i ≥ 0` and `W = Σ v_i`. The core is pure Rust:
//!
//! * [`flsa`] — the weighted fused-lasso signal approximator (Johnson's O(B) dynamic
//!   programme), the exact block update;
//! * [`binning`] — one binned representation of the data (cut points, compact per-feature
//!   codes, bin weights) shared by every solver;
//! * [`blocks`] — the block coordinate descent state (residual, bin sums, exact block update)
//!   shared by every solver;
//! * [`selection`] — per-feature bin sums of the residual and the BGS-s scores / KKT residual;
//! * [`solver`] — greedy (BGS-s) or cyclic block coordinate descent with a KKT stopping rule;
//! * [`validation`] — the penalty chosen on held-out rows along a warm-started path;
//! * [`tables`] — sufficient statistics (co-occurrence tables): iterations that never touch
//!   the rows;
//! * [`model`] — the fitted additive model and its prediction;
//! * [`logistic`] — the same greedy solver for the logistic loss (binary classification);
//! * [`sparse`] — feature-sparse FAST: AGIS, group-ℓ0 FAST and the BGS local search.
//!
//! The PyO3 layer lives in `bindings` behind the `python` feature.

pub mod binning;
pub mod blocks;
pub mod datafit;
pub mod descent;
pub mod engine;
pub mod error;
pub mod flsa;
pub mod logistic;
pub mod model;
pub mod newton;
pub mod params;
pub mod report;
pub mod selection;
pub mod solver;
pub mod sparse;
pub mod tables;
pub mod validation;

#[cfg(feature = "python")]
mod bindings;

pub use error::{FastError, Result};
