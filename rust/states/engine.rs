//! The squared loss on its two engines: the engine choice (rows or sufficient statistics,
//! from a cost model), `λ_max`, and fits at a given penalty on binned data or on statistics
//! alone, each running the one descent loop ([`crate::descent`]) on a [`BlockState`].

use std::sync::Arc;

use ndarray::ArrayView1;

use crate::data::binning::BinnedData;
use crate::data::tables::{table_bytes, Tables};
use crate::descent::{fit_from, DescentState};
use crate::error::{check_target, FastError, Result};
use crate::model::report::{BinnedFit, Callback};
use crate::params::{Engine, FitParams};
use crate::states::squared::BlockState;

/// `λ_max` of binned data: the smallest `λ_f` whose fit has flat shape functions over the
/// non-missing values (`max_{k,t} |g_{k,t}|` at that fit; without missing values it is the
/// constant model).
///
/// # Errors
/// As `solver::fit_binned` for `y`.
pub fn lambda_max(data: &BinnedData, y: ArrayView1<'_, f64>) -> Result<f64> {
    check_target(y, data.n_samples)?;
    let mut st = BlockState::new(data, y);
    Ok(st.start_flat(data))
}

/// Picks the engine from a cost model. One iteration of the rows engine reads every code and
/// the residual (`≈ n·(p+1)`); one of the tables engine costs `≈ B̄·Σ_j B_j`, after a build of
/// `≈ n·p²/2`. Since fits take at least a few times `p` iterations, the tables pay off when
/// an iteration is at least twice cheaper with them, and their memory stays below
/// `max(256 MiB, the codes' bytes × 4)` (so below half of X's bytes for 8-bit codes).
pub fn choose_engine(data: &BinnedData) -> Engine {
    choose_engine_at(data, TABLES_PAY)
}

/// [`choose_engine`]'s factor: the tables engine where an iteration is at least this many
/// times cheaper with it.
pub const TABLES_PAY: f64 = 2.0;

/// [`choose_engine`] with the tables where an iteration is at least `pay` times cheaper with
/// them (the same memory bound).
pub fn choose_engine_at(data: &BinnedData, pay: f64) -> Engine {
    let n = data.n_samples as f64;
    let p = data.n_features();
    let total_bins: usize = data.features.iter().map(|f| f.n_bins()).sum();
    let mean_bins = total_bins as f64 / p.max(1) as f64;
    let rows_cost = n * (p as f64 + 1.0);
    let tables_cost = mean_bins * total_bins as f64;
    let budget = (256usize << 20).max(4 * data.n_samples * p);
    if p >= 2 && rows_cost > pay * tables_cost && table_bytes(data) <= budget {
        Engine::Tables
    } else {
        Engine::Rows
    }
}

/// `engine`, with [`Engine::Auto`] resolved by [`choose_engine`].
pub fn resolve_engine(data: &BinnedData, engine: Engine) -> Engine {
    match engine {
        Engine::Auto => choose_engine(data),
        e => e,
    }
}

/// Makes squared-loss states at given blocks on `data`: on the statistics `tables` when
/// given, else on the rows with targets `y`.
pub(crate) fn squared_state<'a>(
    data: &'a BinnedData,
    y: ArrayView1<'a, f64>,
    tables: Option<&'a Arc<Tables>>,
) -> impl Fn(Vec<Vec<f64>>) -> BlockState + 'a {
    move |beta| match tables {
        Some(t) => BlockState::with_tables(data, Arc::clone(t), beta),
        None => BlockState::with_start(data, y, beta),
    }
}

/// `solver::fit_binned` on a chosen engine (`Auto` is resolved with [`choose_engine`]).
///
/// # Errors
/// As `solver::fit_binned`.
pub fn fit_binned_engine(
    data: &BinnedData,
    y: ArrayView1<'_, f64>,
    params: &FitParams,
    init: Option<Vec<Vec<f64>>>,
    engine: Engine,
    callback: Option<Callback<'_>>,
) -> Result<BinnedFit> {
    params.check()?;
    check_target(y, data.n_samples)?;
    let tables = match resolve_engine(data, engine) {
        Engine::Tables => Some(Arc::new(Tables::build(data, y)?)),
        _ => None,
    };
    let state = squared_state(data, y, tables.as_ref());
    fit_from(data, params, init, state, callback)
}

/// `solver::fit_binned` on the tables engine with statistics already built on `data` (so a
/// path of fits builds them once).
///
/// # Errors
/// As `solver::fit_binned`.
pub fn fit_binned_tables(
    data: &BinnedData,
    tables: Arc<Tables>,
    params: &FitParams,
    init: Option<Vec<Vec<f64>>>,
    callback: Option<Callback<'_>>,
) -> Result<BinnedFit> {
    params.check()?;
    let state = |beta: Vec<Vec<f64>>| BlockState::with_tables(data, Arc::clone(&tables), beta);
    fit_from(data, params, init, state, callback)
}

/// A [`BinnedData`] without rows for statistics `tables` binned by `cuts` / `missing`: the
/// tables engine reads only the bins' sizes and weights.
///
/// # Errors
/// [`FastError::ZeroTotalWeight`] for weightless statistics; [`FastError::LengthMismatch`]
/// or [`FastError::InvalidParameter`] if the cuts or missing flags do not match the bins.
pub(crate) fn tables_shell(
    tables: &Tables,
    cuts: Vec<Vec<f64>>,
    missing: Vec<bool>,
) -> Result<BinnedData> {
    if !(tables.total_weight > 0.0) {
        return Err(FastError::ZeroTotalWeight("the statistics' total weight"));
    }
    let p = tables.n_features();
    if cuts.len() != p || missing.len() != p {
        return Err(FastError::LengthMismatch {
            what: "cuts / missing flags",
            expected: p,
            got: cuts.len().min(missing.len()),
            reason: "one entry per feature of the tables",
        });
    }
    let mut features = Vec::with_capacity(p);
    for (j, (c, m)) in cuts.into_iter().zip(missing).enumerate() {
        if c.len() + 1 + usize::from(m) != tables.n_bins[j] {
            return Err(FastError::InvalidParameter {
                name: "cuts",
                message: "must give the tables' number of bins (len(cuts) + 1, plus 1 with a missing bin)",
                value: format!("feature {j}: {} cuts, missing={m}, {} bins", c.len(), tables.n_bins[j]),
            });
        }
        let bin_weights = tables.weights[j].clone();
        features.push(crate::data::binning::BinnedFeature {
            cuts: c,
            codes: crate::data::binning::Codes::U8(Vec::new()),
            bin_weights,
            missing: m,
        });
    }
    Ok(BinnedData {
        n_samples: 0,
        features,
        weights: None,
        total_weight: tables.total_weight,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::binning::{bin_data, BinningParams};
    use ndarray::Array2;

    /// Four features of 64 levels on `n` rows: an iteration costs `5n` on the rows and
    /// `4 · 64²` on the tables.
    fn levels(n: usize) -> BinnedData {
        let x = Array2::from_shape_fn((n, 4), |(i, j)| ((i * (2 * j + 1) + j) % 64) as f64);
        let params = BinningParams {
            max_bins: Some(64),
            ..BinningParams::default()
        };
        bin_data(x.view(), None, &params).unwrap()
    }

    /// The tables where an iteration is at least `pay` times cheaper with them: at 1.5 times
    /// cheaper the default factor keeps the rows and a factor of one takes the tables; far
    /// below or above, both agree.
    #[test]
    fn the_engine_follows_the_cost_ratio_and_its_factor() {
        for (n, default, at_one) in [
            (1_000, Engine::Rows, Engine::Rows),
            (4_915, Engine::Rows, Engine::Tables),
            (20_000, Engine::Tables, Engine::Tables),
        ] {
            let data = levels(n);
            assert!(data.features.iter().all(|f| f.n_bins() == 64));
            assert_eq!(choose_engine(&data), default, "{n} rows");
            assert_eq!(choose_engine_at(&data, 1.0), at_one, "{n} rows");
        }
    }
}
