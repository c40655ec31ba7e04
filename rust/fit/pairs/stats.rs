//! Pair terms fitted from sufficient statistics (DESIGN §11, "Pairs beyond memory"): data
//! too large for memory (Dask partitions, Parquet batches) never hold their rows at once, so
//! the pairs, their interaction bins and `ρ` are chosen on a sample of rows, and every chosen
//! pair then enters the statistics as one more column: its cell index, the same virtual
//! feature a fit on rows appends ([`super::layout::pair_feature`]). The co-occurrence tables
//! of those columns with the main features' bins and with each other are what the tables
//! engine reads for a pair block, so the fit on the statistics is the exact fit of the chosen
//! pairs on every row, with its KKT certificate.
//!
//! A pair `(j, k)` with interaction cuts `(a, b)` (subsets of the main cuts of `j` and `k`)
//! has the column value `searchsorted(a, x_j, "right") · (len(b) + 1) + searchsorted(b, x_k,
//! "right")`, missing where either value is; its statistics are binned with the cuts
//! `1, 2, …, cells − 1` and a missing bin where `j` or `k` has one (the missing cell).

use std::sync::Arc;

use super::layout::{grid_of, pair_links, with_pair_shapes, MISSING};
use super::{zip_terms, FINISH_SWEEP_SHARE};
use crate::data::tables::Tables;
use crate::descent::{Leg, PairDescent};
use crate::error::{FastError, Result};
use crate::fit::validation::fit_tables_validated;
use crate::model::report::{Axis, Fit, PairFit};
use crate::params::{Engine, FitParams, Grid, GridSplits, PairLink, Penalty};
use crate::states::engine::tables_shell;
use crate::states::squared::BlockState;

/// One pair term of a fit on statistics: its features `(j, k)`, `j < k`, and its interaction
/// cuts along each, subsets of the features' main cuts.
#[derive(Debug, Clone, PartialEq)]
pub struct StatsPair {
    /// The features.
    pub features: (usize, usize),
    /// Interaction cuts of `j`, then of `k`.
    pub cuts: (Vec<f64>, Vec<f64>),
}

/// The pair terms of a fit on statistics: the pairs (their columns after the main features',
/// in this order) and `ρ = λ_pair / λ_f`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StatsPairs {
    /// The pairs.
    pub pairs: Vec<StatsPair>,
    /// Their penalty relative to the main effects'.
    pub rho: f64,
}

/// The pair blocks of a fit on statistics: their axes, grids and links, for `p` main features.
pub(crate) struct PairLayout {
    p: usize,
    features: Vec<(usize, usize)>,
    axes: Vec<(Axis, Axis)>,
    grids: Vec<Grid>,
    links: Vec<PairLink>,
    rho: f64,
}

fn invalid(message: &'static str, value: String) -> FastError {
    FastError::InvalidParameter {
        name: "pairs",
        message,
        value,
    }
}

/// The interaction axis of a feature with main cuts `main` (and a missing bin if `missing`)
/// whose interaction cuts are `cuts`: each main bin's interaction bin.
///
/// # Errors
/// [`FastError::InvalidParameter`] if `cuts` is not an increasing subset of `main`.
fn axis_of(main: &[f64], missing: bool, cuts: &[f64]) -> Result<Axis> {
    let mut map = Vec::with_capacity(main.len() + 1 + usize::from(missing));
    let mut next = 0;
    map.push(0);
    for &c in main {
        if next < cuts.len() && cuts[next] == c {
            next += 1;
        }
        map.push(next);
    }
    if next != cuts.len() {
        return Err(invalid(
            "interaction cuts must be an increasing subset of the feature's cut points",
            format!("{cuts:?}"),
        ));
    }
    if missing {
        map.push(MISSING);
    }
    Ok(Axis {
        map,
        cuts: cuts.to_vec(),
        missing,
    })
}

impl PairLayout {
    /// The pair blocks of `pairs` after the `p` main features binned with `cuts` and `missing`.
    ///
    /// # Errors
    /// [`FastError::InvalidParameter`] for a feature out of range, a pair with `j >= k`, or
    /// interaction cuts that are not a subset of the main cuts; [`FastError::InvalidPenalty`]
    /// for a negative or non-finite `ρ`.
    pub(crate) fn new(pairs: &StatsPairs, (cuts, missing): (&[Vec<f64>], &[bool])) -> Result<Self> {
        let p = cuts.len();
        if !(pairs.rho.is_finite() && pairs.rho >= 0.0) {
            return Err(FastError::InvalidPenalty {
                name: "interaction_penalty",
                value: pairs.rho,
            });
        }
        let mut features = Vec::with_capacity(pairs.pairs.len());
        let mut axes = Vec::with_capacity(pairs.pairs.len());
        for pair in &pairs.pairs {
            let (j, k) = pair.features;
            if j >= k || k >= p {
                return Err(invalid(
                    "must hold pairs (j, k) of feature indices with j < k < n_features",
                    format!("({j}, {k})"),
                ));
            }
            let a = axis_of(&cuts[j], missing[j], &pair.cuts.0)?;
            let b = axis_of(&cuts[k], missing[k], &pair.cuts.1)?;
            features.push((j, k));
            axes.push((a, b));
        }
        let grids = axes.iter().map(|(a, b)| grid_of(a, b)).collect();
        let links = pair_links(p, &features, &axes);
        Ok(Self {
            p,
            features,
            axes,
            grids,
            links,
            rho: pairs.rho,
        })
    }

    /// The cuts and missing flags of every column, the pairs' cell columns after the main
    /// features' (`cuts`, `missing`).
    pub(crate) fn binning(
        &self,
        (cuts, missing): (&[Vec<f64>], &[bool]),
    ) -> (Vec<Vec<f64>>, Vec<bool>) {
        let mut all_cuts = cuts.to_vec();
        let mut all_missing = missing.to_vec();
        for (a, b) in &self.axes {
            let cells = a.len() * b.len();
            all_cuts.push((1..cells).map(|c| c as f64).collect());
            all_missing.push(a.missing || b.missing);
        }
        (all_cuts, all_missing)
    }

    /// The parameters of the fit with the pair blocks: the main effects' shapes, then each
    /// pair's grid at the penalty factor `ρ` (`params` itself without pairs).
    pub(crate) fn params(&self, params: &FitParams) -> FitParams {
        if self.grids.is_empty() {
            return params.clone();
        }
        with_pair_shapes(
            params,
            self.p,
            (&self.grids, &self.links),
            self.rho,
            params.tol,
        )
    }

    /// The fit with the pairs where the penalty is chosen on held-out statistics, as on rows
    /// (`crate::fit::pairs::fit_pairs`): `λ_f` on the held-out path of the main effects alone
    /// (the cell columns left out), then every block on all the rows at that `λ_f`,
    /// warm-started from the main effects, its scored sweeps on a working set
    /// ([`FINISH_SWEEP_SHARE`]). `lambda_max` stays the main effects'. `params` are the main
    /// effects' (without the pair blocks); `cuts` and `missing` every column's
    /// ([`PairLayout::binning`]).
    ///
    /// # Errors
    /// Those of the fits.
    pub(crate) fn fit_validated(
        &self,
        (train, held): (Tables, Tables),
        (cuts, missing): (Vec<Vec<f64>>, Vec<bool>),
        params: &FitParams,
        n_validation: usize,
    ) -> Result<Fit> {
        let p = self.p;
        let mut all = train.clone();
        all.add(&held)?;
        let (mains, mut search) = fit_tables_validated(
            train.leading(p),
            held.leading(p),
            cuts[..p].to_vec(),
            missing[..p].to_vec(),
            params,
            None,
        )?;
        drop((train, held));
        search.n_validation = n_validation;
        let data = tables_shell(&all, cuts, missing)?;
        let mut init: Vec<Vec<f64>> = Vec::with_capacity(data.n_features());
        for (j, f) in data.features.iter().enumerate() {
            let mut beta = vec![0.0; f.n_bins()];
            if j < p {
                let nc = f.n_chain();
                beta[..nc].copy_from_slice(&mains.model.values[j]);
                if f.missing {
                    beta[nc] = mains.model.missing_values[j];
                }
            }
            init.push(beta);
        }
        let mut prm = self.params(&FitParams {
            lambda: Penalty::Absolute(mains.lambda_f),
            ..params.clone()
        });
        prm.sweep_share = FINISH_SWEEP_SHARE;
        prm.grid_splits = GridSplits::Best;
        let lambdas = (mains.lambda_f, mains.lambda_max);
        let fitted = descend_on_tables(&data, Arc::new(all), &prm, init, lambdas)?;
        let mut fit = Fit::new(&data, Engine::Tables, fitted, Some(search));
        fit.lambda_max = mains.lambda_max;
        Ok(fit)
    }

    /// Moves the pair blocks of `fit` (its columns after the main features') into its pair
    /// terms.
    pub(crate) fn into_terms(self, fit: &mut Fit) {
        let p = self.p;
        let mut values = fit.model.values.split_off(p);
        let missing_values = fit.model.missing_values.split_off(p);
        fit.model.cuts.truncate(p);
        let mut cell_weights = fit.bin_weights.split_off(p);
        let missing_weights = fit.missing_weights.split_off(p);
        for (t, (a, b)) in self.axes.iter().enumerate() {
            if a.missing || b.missing {
                values[t].push(missing_values[t]);
                cell_weights[t].push(missing_weights[t]);
            }
        }
        let terms = zip_terms(
            self.features,
            (self.axes, self.grids),
            (values, cell_weights),
        );
        fit.pairs = PairFit {
            terms,
            penalty: self.rho,
            engine: Some(fit.engine),
            ..PairFit::default()
        };
    }
}

/// The fit of every block of `data` (main effects and pairs) on its statistics `tables` at
/// `λ_f = lambda` from the blocks `init`, by the descent of the in-memory fit on all rows
/// (`super::finish`): rounds with extrapolation, the steepest blocks solved together
/// ([`PairDescent::descend_pairs`]), the same stopping rule and certificate. The plain loop
/// took 50,033 updates on 1,000,000 Parquet rows of `smoke_pairs` with five pairs, this one
/// 4,764 (the same KKT residual under `tol`).
///
/// # Errors
/// [`FastError::LengthMismatch`] if the shapes of `params` do not match the blocks.
fn descend_on_tables(
    data: &crate::data::binning::BinnedData,
    tables: Arc<Tables>,
    params: &FitParams,
    init: Vec<Vec<f64>>,
    (lambda, lambda_max): (f64, f64),
) -> Result<crate::model::report::BinnedFit> {
    params.shapes.check_len(data.n_features())?;
    let mut st = BlockState::with_tables(data, tables, init);
    st.set_shapes(&params.shapes.resolve(data.n_features()));
    Ok(st.descend_pairs(data, params, Leg::now(lambda, lambda_max)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::binning::{bin_data, BinningParams};
    use crate::data::tables::partition_tables;
    use crate::fit::entry::fit_stats;
    use crate::fit::pairs::layout::add_pair_blocks;
    use crate::fit::solver::fit_binned;
    use crate::params::{Loss, Penalty};
    use crate::testing::lcg;
    use ndarray::{Array1, Array2};

    /// The fit on statistics that hold a pair's cell column is the fit of that pair on the
    /// rows: the same objective at the same penalties, missing values included.
    #[test]
    fn a_fit_on_statistics_with_a_pair_is_the_fit_on_rows() {
        let (n, mut u) = (600, lcg(11));
        let mut x = Array2::from_shape_fn((n, 3), |_| u() * 2.0 - 1.0);
        for i in (0..n).step_by(17) {
            x[[i, 1]] = f64::NAN;
        }
        let y = Array1::from_shape_fn(n, |i| {
            let b = if x[[i, 1]].is_nan() { 0.3 } else { x[[i, 1]] };
            b * x[[i, 0]].signum() + x[[i, 2]] + 0.3 * (u() - 0.5)
        });
        let cuts: Vec<Vec<f64>> = (0..3).map(|_| vec![-0.6, -0.2, 0.0, 0.2, 0.6]).collect();
        let binning = BinningParams {
            user_cuts: cuts.iter().cloned().map(Some).collect(),
            ..BinningParams::default()
        };
        let mut data = bin_data(x.view(), None, &binning).unwrap();
        let missing: Vec<bool> = data.features.iter().map(|f| f.missing).collect();
        assert_eq!(missing, vec![false, true, false]);
        let pairs = StatsPairs {
            pairs: vec![StatsPair {
                features: (0, 1),
                cuts: (vec![0.0], vec![-0.2, 0.2]),
            }],
            rho: 0.5,
        };
        let layout = PairLayout::new(&pairs, (&cuts, &missing)).unwrap();
        let params = FitParams {
            lambda: Penalty::Absolute(0.002),
            tol: 1e-10,
            ..FitParams::default()
        };
        // On the rows: the pair's virtual feature appended, the fit with its grid.
        add_pair_blocks(&mut data, &[(0, 1)], &layout.axes);
        let on_rows = fit_binned(&data, y.view(), &layout.params(&params), None, None).unwrap();
        // On statistics: the cell column computed from the raw values, as the facade does.
        let cell = |i: usize| {
            let (a, b) = (x[[i, 0]], x[[i, 1]]);
            if b.is_nan() {
                f64::NAN
            } else {
                let r = usize::from(a >= 0.0);
                let c = usize::from(b >= -0.2) + usize::from(b >= 0.2);
                (r * 3 + c) as f64
            }
        };
        let x_cells =
            Array2::from_shape_fn((n, 4), |(i, j)| if j < 3 { x[[i, j]] } else { cell(i) });
        let (all_cuts, all_missing) = layout.binning((&cuts, &missing));
        let tables =
            partition_tables(x_cells.view(), y.view(), None, &all_cuts, &all_missing).unwrap();
        let on_stats = fit_stats(
            Loss::Squared,
            (tables, None),
            (cuts, missing),
            &params,
            &pairs,
            0,
        )
        .unwrap();
        let (a, b) = (on_rows.report.objective, on_stats.report.objective);
        assert!(
            (a - b).abs() <= 1e-9 * a.abs(),
            "{a} on rows, {b} on statistics"
        );
        assert_eq!(on_stats.model.n_features(), 3);
        let term = &on_stats.pairs.terms[0];
        assert_eq!(term.features, (0, 1));
        assert_eq!(term.values.len(), 2 * 3 + 1);
        let w: f64 = term.cell_weights.iter().sum();
        assert!((w - n as f64).abs() < 1e-9);
        for (v, r) in term.values.iter().zip(&on_rows.values[3]) {
            assert!((v - r).abs() < 1e-6, "{v} against {r}");
        }
    }

    #[test]
    fn an_axis_maps_every_main_bin_to_its_interaction_bin() {
        let a = axis_of(&[1.0, 2.0, 3.0, 4.0], true, &[2.0, 4.0]).unwrap();
        assert_eq!(a.map, vec![0, 0, 1, 1, 2, MISSING]);
        assert_eq!(a.len(), 3);
        let whole = axis_of(&[1.0, 2.0], false, &[1.0, 2.0]).unwrap();
        assert_eq!(whole.map, vec![0, 1, 2]);
        assert!(axis_of(&[1.0, 2.0], false, &[1.5]).is_err());
        assert!(axis_of(&[1.0, 2.0], false, &[2.0, 1.0]).is_err());
    }

    #[test]
    fn bad_pairs_are_named() {
        let cuts = vec![vec![1.0], vec![1.0]];
        let missing = vec![false, false];
        let pairs = |features, rho| StatsPairs {
            pairs: vec![StatsPair {
                features,
                cuts: (vec![1.0], vec![1.0]),
            }],
            rho,
        };
        for bad in [pairs((1, 0), 0.5), pairs((0, 2), 0.5), pairs((0, 1), -1.0)] {
            let err = PairLayout::new(&bad, (&cuts, &missing)).err().unwrap();
            assert!(
                err.to_string().contains("pairs")
                    || err.to_string().contains("interaction_penalty")
            );
        }
        let ok = PairLayout::new(&pairs((0, 1), 0.5), (&cuts, &missing)).unwrap();
        let (c, m) = ok.binning((&cuts, &missing));
        assert_eq!(c[2], vec![1.0, 2.0, 3.0]);
        assert_eq!(m, vec![false, false, false]);
    }

    /// The fit on statistics descends as the fit on all rows does ([`descend_on_tables`]):
    /// from the main effects with two correlated pairs at zero, it reaches the plain loop's
    /// optimum (objectives within 1e-6, both under `tol`) in fewer updates.
    #[test]
    fn the_fit_on_statistics_extrapolates_to_the_same_optimum_in_fewer_updates() {
        use crate::fit::pairs::layout::with_pair_shapes;
        use crate::states::engine::fit_binned_tables;
        use crate::testing::assert_fewer_updates;

        let (x, y) = crate::testing::correlated_pairs(2_000, 99);
        let (data, p, grids, links) = crate::fit::pairs::layout::with_two_pair_blocks(x.view());
        let base = FitParams {
            lambda: Penalty::Absolute(2e-3),
            tol: 1e-4,
            max_iter: 200_000,
            ..FitParams::default()
        };
        // The main effects alone (the pair blocks at zero), as the search hands them over.
        let mut mains_data = data.clone();
        mains_data.features.truncate(p);
        let mains = fit_binned(&mains_data, y.view(), &base, None, None).unwrap();
        let mut init = mains.values.clone();
        init.extend(data.features[p..].iter().map(|f| vec![0.0; f.n_bins()]));
        let mut prm = with_pair_shapes(&base, p, (&grids, &links), 0.05, base.tol);
        prm.sweep_share = FINISH_SWEEP_SHARE;
        let tables = Arc::new(Tables::build(&data, y.view()).unwrap());
        let plain =
            fit_binned_tables(&data, Arc::clone(&tables), &prm, Some(init.clone()), None).unwrap();
        let lambdas = (mains.lambda_f, mains.lambda_max);
        let fast = descend_on_tables(&data, tables, &prm, init, lambdas).unwrap();
        for f in [&plain, &fast] {
            assert!(f.report.converged, "kkt {}", f.report.kkt_residual);
        }
        let (a, b) = (plain.report.objective, fast.report.objective);
        assert!((a - b).abs() <= 1e-6 * a, "{a} plain, {b} extrapolated");
        assert_fewer_updates(fast.report.n_iter, plain.report.n_iter, "statistics");
    }
}
