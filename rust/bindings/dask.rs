//! Bindings of the sufficient statistics (`crate::data::tables`, DESIGN §4) for out-of-core and
//! distributed fits: `bin_edges` (cut points of a sample), `partition_stats` (one partition's
//! statistics), `add_stats` (their exact reduction) and `fit_stats` (a fit on statistics alone).

use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;

use super::config::FitConfig;
use super::errors::{compute, no_panic};
use super::output::{arrays, FitDict, FitOutput};
use crate::data::binning::bin_data;
use crate::data::tables::{partition_tables, Tables};
use crate::fit::entry;
use crate::fit::pairs::stats::{StatsPair, StatsPairs};

/// One data set's (or partition's) sufficient statistics, as plain arrays.
#[derive(IntoPyObject)]
struct StatsOutput<'py> {
    n_bins: Bound<'py, PyArray1<i64>>,
    total_weight: f64,
    y_mean: f64,
    yy: f64,
    ysum: Vec<Bound<'py, PyArray1<f64>>>,
    weights: Vec<Bound<'py, PyArray1<f64>>>,
    pairs: Bound<'py, PyArray1<f64>>,
}

/// The statistics dict passed back in (`n_bins` may be any sequence of integers).
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
struct StatsInput<'py> {
    n_bins: Vec<usize>,
    total_weight: f64,
    y_mean: f64,
    yy: f64,
    ysum: Vec<PyReadonlyArray1<'py, f64>>,
    weights: Vec<PyReadonlyArray1<'py, f64>>,
    pairs: PyReadonlyArray1<'py, f64>,
}

fn to_tables(s: &StatsInput<'_>) -> crate::Result<Tables> {
    Tables::from_parts(
        s.n_bins.clone(),
        s.total_weight,
        s.y_mean,
        s.yy,
        s.ysum.iter().map(|a| a.as_array().to_vec()).collect(),
        s.weights.iter().map(|a| a.as_array().to_vec()).collect(),
        s.pairs.as_array().to_vec(),
    )
}

fn stats_output(py: Python<'_>, t: Tables) -> PyResult<StatsOutput<'_>> {
    let pairs = t.pairs()?;
    Ok(StatsOutput {
        n_bins: t
            .n_bins
            .iter()
            .map(|&b| b as i64)
            .collect::<Vec<_>>()
            .into_pyarray(py),
        total_weight: t.total_weight,
        y_mean: t.y_mean,
        yy: t.yy,
        pairs: pairs.into_pyarray(py),
        ysum: arrays(py, t.ysum),
        weights: arrays(py, t.weights),
    })
}

/// The sufficient statistics of one partition binned with shared cut points and missing flags.
#[pyfunction]
#[pyo3(signature = (x, y, sample_weight, cuts, missing, *, n_jobs=None))]
fn partition_stats<'py>(
    py: Python<'py>,
    x: PyReadonlyArray2<'py, f64>,
    y: PyReadonlyArray1<'py, f64>,
    sample_weight: Option<PyReadonlyArray1<'py, f64>>,
    cuts: Vec<Vec<f64>>,
    missing: Vec<bool>,
    n_jobs: Option<usize>,
) -> PyResult<StatsOutput<'py>> {
    let (x, y) = (x.as_array(), y.as_array());
    let w = super::weights(sample_weight);
    let tables = compute(py, "partition_stats", n_jobs, || {
        partition_tables(x, y, w.as_deref(), &cuts, &missing)
    })?;
    stats_output(py, tables)
}

/// `a + b`: the statistics of the union of two partitions with the same bins (pooled exactly).
#[pyfunction]
fn add_stats<'py>(
    py: Python<'py>,
    a: StatsInput<'py>,
    b: StatsInput<'py>,
) -> PyResult<StatsOutput<'py>> {
    let (mut ta, tb) = (to_tables(&a)?, to_tables(&b)?);
    py.detach(|| no_panic("add_stats", || ta.add(&tb)))??;
    stats_output(py, ta)
}

/// Cut points of every feature of `x` (a sample), exactly as `fit` bins with `config`;
/// `max_bins="auto"` resolves for `n_rows` rows (the whole data's; default: the sample's) of
/// `x`'s features.
#[pyfunction]
#[pyo3(signature = (x, sample_weight=None, *, config, n_rows=None))]
fn bin_edges<'py>(
    py: Python<'py>,
    x: PyReadonlyArray2<'py, f64>,
    sample_weight: Option<PyReadonlyArray1<'py, f64>>,
    config: FitConfig,
    n_rows: Option<usize>,
) -> PyResult<Vec<Bound<'py, PyArray1<f64>>>> {
    let x = x.as_array();
    let binning = config.binning((n_rows.unwrap_or(x.nrows()), x.ncols()), None);
    let w = super::weights(sample_weight);
    let cuts = compute(py, "bin_edges", config.n_jobs, || {
        bin_data(x, w.as_deref(), &binning)
            .map(|d| d.features.into_iter().map(|f| f.cuts).collect::<Vec<_>>())
    })?;
    Ok(arrays(py, cuts))
}

/// A pair term of `fit_stats`: its features and their interaction cuts.
type PairInput = ((usize, usize), (Vec<f64>, Vec<f64>));

/// Fits FAST on sufficient statistics alone (`crate::fit::entry::fit_stats`); with `held_out`
/// statistics and `lambda_ratio="auto"`, the penalty is chosen on them and `n_validation` is
/// reported as the number of held-out rows. The configuration's binning keys are not used:
/// the statistics are binned. With `pairs` (`((j, k), (cuts_j, cuts_k))` each), the
/// statistics hold one cell column per pair after the `len(cuts)` features, fitted as pair
/// terms at `interaction_penalty` (`ρ`).
#[pyfunction]
#[pyo3(signature = (
    stats, cuts, missing, *, config, held_out=None, n_validation=0, pairs=Vec::new(),
    interaction_penalty=0.0
))]
#[allow(clippy::too_many_arguments)]
fn fit_stats<'py>(
    py: Python<'py>,
    stats: StatsInput<'py>,
    cuts: Vec<Vec<f64>>,
    missing: Vec<bool>,
    config: FitConfig,
    held_out: Option<StatsInput<'py>>,
    n_validation: usize,
    pairs: Vec<PairInput>,
    interaction_penalty: f64,
) -> PyResult<FitDict<'py>> {
    let (loss, _) = config.loss_engine()?;
    let params = config.fit_params((0, cuts.len()), held_out.is_some(), None)?;
    let tables = to_tables(&stats)?;
    drop(stats);
    let held = match held_out.filter(|_| entry::stats_read_held_out(&params)) {
        Some(h) => Some(to_tables(&h)?),
        None => None,
    };
    let pairs = StatsPairs {
        pairs: pairs
            .into_iter()
            .map(|(features, cuts)| StatsPair { features, cuts })
            .collect(),
        rho: interaction_penalty,
    };
    let fitted = compute(py, "fit_stats", config.n_jobs, || {
        entry::fit_stats(
            loss,
            (tables, held),
            (cuts, missing),
            &params,
            &pairs,
            n_validation,
        )
    })?;
    Ok(FitOutput::new(py, fitted))
}

/// Adds this module's functions to `_core`.
pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(partition_stats, m)?)?;
    m.add_function(wrap_pyfunction!(add_stats, m)?)?;
    m.add_function(wrap_pyfunction!(bin_edges, m)?)?;
    m.add_function(wrap_pyfunction!(fit_stats, m)?)
}
