//! Outer bags (`outer_bags`, as EBM's): the fits of one task on several held-out splits,
//! averaged into one model.
//!
//! A fit with its penalty chosen on held-out rows ([`Penalty::Validated`]) depends on the
//! split: the ratio `λ_f / λ_max`, the pairs kept, their `ρ` and `μ` are chosen on one draw of
//! the held-out rows, and on a few thousand rows that draw moves the test log-loss by several
//! per cent (`docs/classification.md`). Bag `b` draws its held-out rows with the seed
//! `seed + b` (bag 0 is the fit without bags) and is refitted on all rows as usual; the model
//! is the mean of the bags' scores, so it is again an additive model with pairs:
//!
//! * every bag bins the rows the same way (the binning does not depend on the held-out
//!   seed), so the main effects share their cuts and are averaged bin by bin;
//! * a pair term is the mean of its tables over the bags (a bag without the pair adds 0),
//!   on the union of the bags' interaction cuts for it ([`union_axes`]), with the cell
//!   weights of that union grid.
//!
//! The averaged model is not the optimum of one penalised problem: each bag certifies its
//! own fit (its KKT residual at its own penalty), and the report says how the bags went
//! together ([`BagSummary`] for each).

use std::collections::BTreeMap;

use crate::data::binning::BinnedData;
use crate::error::{FastError, Result};
use crate::fit::multinomial::Classes;
use crate::fit::pairs::layout::{grid_of, pair_feature, union_axes};
use crate::fit::solver::{Fit, History};
use crate::model::report::{Axis, FitReport, PairTerm, StopReason};

/// How one bag went.
#[derive(Debug, Clone, PartialEq)]
pub struct BagSummary {
    /// The seed of its held-out rows.
    pub seed: u64,
    /// Its `λ_f / λ_max`.
    pub lambda_ratio: f64,
    /// Its `ρ` (0 without pairs).
    pub interaction_penalty: f64,
    /// Its `μ` (0 without smooth parts).
    pub interaction_smoothing: f64,
    /// Its pair terms.
    pub n_interactions: usize,
    /// Its `l2_jumps`.
    pub l2_jumps: f64,
    /// Its block updates, held-out fits included.
    pub n_iter: usize,
    /// Its KKT residual at its own penalty.
    pub kkt_residual: f64,
    /// Whether it reached its tolerance.
    pub converged: bool,
}

impl BagSummary {
    /// The summary of `fit`, fitted with the held-out seed `seed` and `l2_jumps`.
    pub fn of(fit: &Fit, seed: u64, l2_jumps: f64) -> Self {
        let ratio = fit.search.as_ref().map_or_else(
            || {
                if fit.lambda_max > 0.0 {
                    fit.lambda_f / fit.lambda_max
                } else {
                    0.0
                }
            },
            |s| s.ratio,
        );
        Self {
            seed,
            lambda_ratio: ratio,
            interaction_penalty: if fit.pairs.terms.is_empty() {
                0.0
            } else {
                fit.pairs.penalty
            },
            interaction_smoothing: fit.pairs.smoothing,
            n_interactions: fit.pairs.terms.len(),
            l2_jumps,
            n_iter: fit.report.n_iter,
            kkt_residual: fit.report.kkt_residual,
            converged: fit.report.converged,
        }
    }
}

/// The mean of `fits` (the bags of one task on the rows binned as `data`, main features
/// only), with their softmax `classes` if any: bag 0's search, penalties and engine, every
/// bag's updates and history (one after the other), the largest KKT residual, the mean
/// objective, converged only if every bag converged.
///
/// # Errors
/// [`FastError::InvalidParameter`] for no fit, or bags whose main effects do not share the
/// cuts of `data` (they always do: the binning does not depend on the held-out seed).
pub fn average(
    data: &BinnedData,
    mut fits: Vec<Fit>,
    classes: Vec<Option<Classes>>,
) -> Result<(Fit, Option<Classes>)> {
    let k = fits.len();
    if k == 0 || classes.len() != k {
        return Err(FastError::InvalidParameter {
            name: "outer_bags",
            message: "needs one fit per bag, at least one",
            value: format!("{k} fits, {} class sets", classes.len()),
        });
    }
    let w = 1.0 / k as f64;
    let mut out = fits.remove(0);
    let rest = fits;
    let data_cuts = data.features.iter().map(|f| &f.cuts);
    if rest.iter().any(|f| f.model.cuts != out.model.cuts)
        || out.model.cuts.len() != data.features.len()
        || out.model.cuts.iter().zip(data_cuts).any(|(a, b)| a != b)
    {
        return Err(FastError::InvalidParameter {
            name: "outer_bags",
            message: "needs bags binned alike (the same cuts as the rows' binning)",
            value: format!("{k} bags"),
        });
    }
    // Main effects, bin by bin.
    let m = &mut out.model;
    m.intercept = w * (m.intercept + rest.iter().map(|f| f.model.intercept).sum::<f64>());
    for (j, values) in m.values.iter_mut().enumerate() {
        for (b, v) in values.iter_mut().enumerate() {
            *v = w * (*v + rest.iter().map(|f| f.model.values[j][b]).sum::<f64>());
        }
    }
    for (j, v) in m.missing_values.iter_mut().enumerate() {
        *v = w * (*v + rest.iter().map(|f| f.model.missing_values[j]).sum::<f64>());
    }
    let classes = average_classes(classes, w);
    // Pair terms, each on the union of its bags' cuts.
    let mut by_pair: BTreeMap<(usize, usize), Vec<&PairTerm>> = BTreeMap::new();
    for t in out
        .pairs
        .terms
        .iter()
        .chain(rest.iter().flat_map(|f| &f.pairs.terms))
    {
        by_pair.entry(t.features).or_default().push(t);
    }
    let terms: Vec<PairTerm> = by_pair
        .into_iter()
        .map(|(pair, parts)| average_term(data, pair, &parts, w))
        .collect();
    out.pairs.terms = terms;
    out.pairs.gains = Vec::new();
    out.report = combined_report(&out.report, rest.iter().map(|f| &f.report), w);
    Ok((out, classes))
}

/// The mean of the bags' softmax intercepts and missing bins (`None` for the other losses).
fn average_classes(classes: Vec<Option<Classes>>, w: f64) -> Option<Classes> {
    let mut it = classes.into_iter();
    let mut first = it.next()??;
    for c in it.flatten() {
        for (a, b) in first.intercepts.iter_mut().zip(&c.intercepts) {
            *a += b;
        }
        for (a, b) in first.missing_values.iter_mut().zip(&c.missing_values) {
            for (x, y) in a.iter_mut().zip(b) {
                *x += y;
            }
        }
    }
    first.intercepts.iter_mut().for_each(|v| *v *= w);
    first
        .missing_values
        .iter_mut()
        .flatten()
        .for_each(|v| *v *= w);
    Some(first)
}

/// The mean over the bags of one pair term's tables `parts` (a bag without the pair adds 0:
/// each part is weighted `w`), on the union of their axes, every class's table (class-major)
/// and the missing cell's value included.
fn average_term(data: &BinnedData, pair: (usize, usize), parts: &[&PairTerm], w: f64) -> PairTerm {
    let rows_axes: Vec<&Axis> = parts.iter().map(|t| &t.axes.0).collect();
    let cols_axes: Vec<&Axis> = parts.iter().map(|t| &t.axes.1).collect();
    let (ra, rows) = union_axes(&rows_axes);
    let (ca, cols) = union_axes(&cols_axes);
    let missing = ra.missing || ca.missing;
    let (nr, nc) = (ra.len(), ca.len());
    let block = nr * nc + usize::from(missing);
    let first_block = parts[0].axes.0.len() * parts[0].axes.1.len() + usize::from(missing);
    let n_tables = parts[0].values.len() / first_block;
    let mut values = vec![0.0; n_tables * block];
    for (t, part) in parts.iter().enumerate() {
        let (pr, pc) = (part.axes.0.len(), part.axes.1.len());
        let pblock = pr * pc + usize::from(missing);
        for c in 0..n_tables {
            let (src, dst) = (&part.values[c * pblock..], &mut values[c * block..]);
            for (i, &r) in rows[t].iter().enumerate() {
                for (l, &q) in cols[t].iter().enumerate() {
                    dst[i * nc + l] += w * src[r * pc + q];
                }
            }
            if missing {
                dst[nr * nc] += w * src[pr * pc];
            }
        }
    }
    let cell_weights = pair_feature(data, pair, (&ra, &ca)).bin_weights;
    PairTerm {
        features: pair,
        grid: grid_of(&ra, &ca),
        axes: (ra, ca),
        values,
        cell_weights,
    }
}

/// The report of the bags together: their updates summed, the largest KKT residual, the mean
/// objective, converged only if every bag did (else the first other stop), their histories one
/// after the other.
fn combined_report<'a>(
    first: &FitReport,
    rest: impl Iterator<Item = &'a FitReport>,
    w: f64,
) -> FitReport {
    let mut out = first.clone();
    let mut objective = first.objective;
    for r in rest {
        out.n_iter += r.n_iter;
        out.converged &= r.converged;
        out.kkt_residual = out.kkt_residual.max(r.kkt_residual);
        objective += r.objective;
        if out.stop == StopReason::Converged && r.stop != StopReason::Converged {
            out.stop = r.stop;
        }
        let offset = out.history.time.last().copied().unwrap_or(0.0);
        append_history(&mut out.history, &r.history, offset);
    }
    out.objective = w * objective;
    out
}

fn append_history(to: &mut History, from: &History, offset: f64) {
    to.objective.extend_from_slice(&from.objective);
    to.feature.extend_from_slice(&from.feature);
    to.time.extend(from.time.iter().map(|t| t + offset));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::binning::Rows;
    use crate::fit::entry::{fit, FitResult};
    use crate::fit::pairs::layout::MISSING;
    use crate::params::{
        Engine, FitParams, Interactions, L2Jumps, Loss, Penalty, Task, Validation,
    };
    use crate::testing::lcg;
    use ndarray::{Array1, Array2};

    /// 600 rows of three features (the second with missing values), labels of a score with a
    /// product term.
    fn rows() -> (Array2<f64>, Array1<f64>) {
        let (n, mut u) = (600, lcg(91));
        let mut x = Array2::from_shape_fn((n, 3), |_| 2.0 * u() - 1.0);
        let y = Array1::from_shape_fn(n, |i| {
            let s = 1.5 * x[[i, 0]] + 2.0 * x[[i, 0]] * x[[i, 1]] - x[[i, 2]];
            f64::from(u() < 1.0 / (1.0 + (-s).exp()))
        });
        for i in (0..n).step_by(9) {
            x[[i, 1]] = f64::NAN;
        }
        (x, y)
    }

    /// The score of every training row under `fit` (main effects and pair terms).
    fn scores(data: &BinnedData, fit: &Fit) -> Vec<f64> {
        (0..data.n_samples)
            .map(|i| {
                let mut s = fit.model.intercept;
                for (j, f) in data.features.iter().enumerate() {
                    let b = f.codes.get(i);
                    s += if f.missing && b == f.n_chain() {
                        fit.model.missing_values[j]
                    } else {
                        fit.model.values[j][b]
                    };
                }
                for t in &fit.pairs.terms {
                    let (j, k) = t.features;
                    let (r, c) = (
                        t.axes.0.map[data.features[j].codes.get(i)],
                        t.axes.1.map[data.features[k].codes.get(i)],
                    );
                    s += if r == MISSING || c == MISSING {
                        t.values[t.axes.0.len() * t.axes.1.len()]
                    } else {
                        t.values[r * t.axes.1.len() + c]
                    };
                }
                s
            })
            .collect()
    }

    /// The binary classifier's task with `outer_bags` bags.
    fn logistic_bags(outer_bags: usize) -> Task {
        Task {
            loss: Loss::Logistic,
            power: crate::fit::loglink::DEFAULT_TWEEDIE_POWER,
            n_classes: None,
            engine: Engine::Auto,
            l2_jumps: L2Jumps::Value(0.0),
            outer_bags,
        }
    }

    /// The penalty chosen on a quarter of the rows, drawn with `seed`.
    fn validated(seed: u64) -> FitParams {
        FitParams {
            lambda: Penalty::Validated(Validation {
                fraction: 0.25,
                seed,
            }),
            ..FitParams::default()
        }
    }

    #[test]
    fn a_bagged_fit_scores_the_mean_of_its_bags() {
        let (x, y) = rows();
        let rows = Rows::new(x.view(), y.view(), None);
        let with_pairs = |seed| {
            let mut params = validated(seed);
            params.pairs.interactions = Interactions::Count(3);
            params.pairs.penalty = Some(0.5);
            params
        };
        let params = with_pairs(4);
        let bagged: FitResult = fit(rows, &params, &logistic_bags(3), None).unwrap();
        let singles: Vec<Fit> = (4..7)
            .map(|seed| {
                fit(rows, &with_pairs(seed), &logistic_bags(1), None)
                    .unwrap()
                    .fit
            })
            .collect();
        let data = rows.bin(&params.binning).unwrap();
        let each: Vec<Vec<f64>> = singles.iter().map(|f| scores(&data, f)).collect();
        assert!(each[0] != each[1], "the bags should differ");
        assert!(singles.iter().any(|f| !f.pairs.terms.is_empty()));
        let mean = scores(&data, &bagged.fit);
        for (i, m) in mean.iter().enumerate() {
            let want = each.iter().map(|s| s[i]).sum::<f64>() / 3.0;
            assert!((m - want).abs() < 1e-9, "row {i}: {m} against {want}");
        }
        let seeds: Vec<u64> = bagged.bags.iter().map(|b| b.seed).collect();
        assert_eq!(seeds, vec![4, 5, 6]);
        let n_iter: usize = singles.iter().map(|f| f.report.n_iter).sum();
        assert_eq!(bagged.fit.report.n_iter, n_iter);
        // The union grid's cell weights are the rows in each cell.
        for t in &bagged.fit.pairs.terms {
            let total: f64 = t.cell_weights.iter().sum();
            assert!((total - 600.0).abs() < 1e-9);
        }
    }

    #[test]
    fn a_spent_time_budget_starts_no_further_wave_of_bags() {
        let (x, y) = rows();
        let rows = Rows::new(x.view(), y.view(), None);
        let params = FitParams {
            max_time: Some(1e-9),
            ..validated(0)
        };
        let out = fit(rows, &params, &logistic_bags(8), None).unwrap();
        let width = rayon::current_num_threads().clamp(1, 8);
        assert_eq!(out.bags.len(), width);
        assert_eq!(out.fit.report.stop, StopReason::MaxTime);
        assert!(out.fit.model.values.iter().flatten().all(|v| v.is_finite()));
    }

    #[test]
    fn a_callback_stop_ends_the_bagging() {
        let (x, y) = rows();
        let rows = Rows::new(x.view(), y.view(), None);
        let mut calls = 0usize;
        let mut stop = |_: &crate::model::report::Progress| {
            calls += 1;
            false
        };
        let out = fit(rows, &validated(0), &logistic_bags(8), Some(&mut stop)).unwrap();
        assert!(calls >= 1);
        assert!(out.bags.len() < 8, "{} bags", out.bags.len());
        assert_eq!(out.fit.report.stop, StopReason::Callback);
    }
}
