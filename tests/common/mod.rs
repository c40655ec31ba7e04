//! Helpers shared by the integration tests (each test binary uses some of them).
#![allow(dead_code)]

use fastpcam::binning::BinningParams;
use fastpcam::blocks::total_variation;
use fastpcam::params::{FitParams, Penalty, Selection};
use fastpcam::solver::Fit;
use ndarray::Array2;
use rand::Rng;

/// `n × p` features with `levels` distinct values each, on `[0, 1)`.
pub fn grid_features(rng: &mut impl Rng, n: usize, p: usize, levels: usize) -> Array2<f64> {
    Array2::from_shape_fn((n, p), |_| {
        (rng.random_range(0..levels) as f64) / levels as f64
    })
}

/// Fit parameters with a generous `max_iter` and no time budget.
pub fn params(
    lambda: Penalty,
    selection: Selection,
    tol: f64,
    max_bins: Option<usize>,
) -> FitParams {
    FitParams {
        lambda,
        selection,
        tol,
        max_iter: 200_000,
        max_time: None,
        binning: BinningParams {
            max_bins,
            ..BinningParams::default()
        },
    }
}

/// `λ_f Σ_j Σ_b |Δβ_{j,b}|` of a fitted model (the penalty part of the objective).
pub fn penalty(f: &Fit) -> f64 {
    f.lambda_f
        * f.model
            .values
            .iter()
            .map(|b| total_variation(b))
            .sum::<f64>()
}
