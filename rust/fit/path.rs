//! # The held-out path of penalties
//!
//! The search that [`crate::fit::validation`] runs for every loss, on any state that can fit
//! at one ratio ([`PathFit`]): down a decreasing path of ratios `r_k = START_RATIO · STEP^k`
//! while the held-out loss improves ([`PATIENCE`]), up towards `λ_max` when the first ratio
//! wins, then one refinement at the vertex of the parabola through the best ratio and its
//! neighbours ([`run_path`]; the module documentation of [`crate::fit::validation`] says why).
//! The fits are carried in one state from ratio to ratio and converged to [`PATH_TOL`]; the
//! squared loss's fit each ratio in rounds with line searches
//! ([`crate::states::extrapolate::path_fit_in_rounds`]).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use crate::data::binning::BinnedData;
use crate::descent::{descend, DescentState, Leg};
use crate::error::{FastError, Result};
use crate::model::report::{BinnedFit, Callback, PenaltySearch, StopReason};
use crate::params::{FitParams, ObjectiveTracking};
use crate::states::datafit::Datafit;
use crate::states::extrapolate::path_fit_in_rounds;
use crate::states::newton::NewtonState;
use crate::states::softmax::MultinomialState;
use crate::states::squared::BlockState;

/// First ratio of the path (no real data set we measured wanted more than about 0.04).
pub const START_RATIO: f64 = 0.0625;
/// Ratio between neighbouring penalties of the path.
pub const STEP: f64 = 0.5;
/// Smallest ratio tried. The better ratio falls with the rows: a floor of `1e-4` fused the
/// 2,000 site levels of 1,000,000 `smoke_pairs` rows (test MSE 1.022 of the noise floor;
/// 1.013 now; `docs/benchmarks.md`). No benchmark table comes near it (smallest `9.8e-4`).
pub const MIN_RATIO: f64 = 1e-6;
/// Below this ratio a ratio counts as better (and the path goes on) only where it lowers the
/// best held-out loss by [`FINE_FALL`] of it: fits there cost more updates, and on clean data
/// the loss keeps falling by ever less. The [`refinement`] may still settle below the best.
pub const FINE_RATIO: f64 = 1e-4;
/// See [`FINE_RATIO`]; `1e-3` cost 1M `smoke_pairs` rows 24 s against 19.5 s for test MSE
/// 0.25304 against 0.25314 (`docs/benchmarks.md`).
pub const FINE_FALL: f64 = 5e-3;
/// Ratios in a row without a better held-out error before the path stops.
pub const PATIENCE: usize = 1;
/// KKT tolerance of the path fits (the final fit uses the requested one). Measured on the
/// 20 data sets: 0.5 chooses as well as 0.1 (test MSE unchanged to 0.1%); 2.0 does not.
pub const PATH_TOL: f64 = 0.5;
/// The callback for one more fit, keeping it for the next.
pub(crate) fn reborrow<'b>(callback: &'b mut Option<Callback<'_>>) -> Option<Callback<'b>> {
    match callback {
        Some(c) => Some(&mut **c),
        None => None,
    }
}

/// The default path rule `(path_tol, patience)` of [`run_path`]: [`PATH_TOL`] and [`PATIENCE`].
pub(crate) const RULE: (f64, usize) = (PATH_TOL, PATIENCE);

/// How a state fits at one ratio of a held-out path ([`run_path`]), from its blocks: the
/// plain loop ([`descend`]) by default; the squared loss in rounds with line searches
/// ([`path_fit_in_rounds`]).
pub(crate) trait PathFit: DescentState + Sized {
    /// The fit at `leg.lambda` from the state's blocks.
    fn path_fit(&mut self, data: &BinnedData, params: &FitParams, leg: Leg<'_>) -> BinnedFit {
        descend(data, params, self, leg)
    }
}

impl PathFit for BlockState {
    fn path_fit(&mut self, data: &BinnedData, params: &FitParams, leg: Leg<'_>) -> BinnedFit {
        path_fit_in_rounds(self, data, params, leg)
    }
}

impl<D: Datafit> PathFit for NewtonState<D> {}

impl PathFit for MultinomialState {}

/// The held-out path: one solver state (made by `state` from blocks) carried from ratio to
/// ratio, each fit scored by `loss(intercept, blocks)`, with the path tolerance and patience
/// `(path_tol, patience)` (mostly [`RULE`]); returns the search and the blocks of the best
/// fit. `offset` counts the block updates done.
pub(crate) fn run_path<S: PathFit>(
    data: &BinnedData,
    params: &FitParams,
    state: &dyn Fn(Vec<Vec<f64>>) -> S,
    loss: &dyn Fn(f64, &[Vec<f64>]) -> f64,
    offset: &AtomicUsize,
    callback: &mut Option<Callback<'_>>,
    (path_tol, patience): (f64, usize),
) -> Result<(PenaltySearch, Vec<Vec<f64>>)> {
    params.shapes.check_len(data.n_features())?;
    let (mut st, lambda_max, path_params) = path_start(data, params, state, path_tol);
    // One clock for the whole path: `max_time` holds for the search, not for each fit.
    let start = Instant::now();
    let mut fit_at = |ratio: f64, restart: Option<Vec<Vec<f64>>>| {
        if let Some(blocks) = restart {
            st = state(blocks);
        }
        let lambda = ratio * lambda_max;
        let cb = reborrow(callback);
        let leg = Leg::new(lambda, lambda_max, start, cb);
        let fit = st.path_fit(data, &path_params, leg);
        let loss = loss(fit.intercept, &fit.values);
        offset.fetch_add(fit.report.n_iter, Ordering::Relaxed);
        let stopped = matches!(fit.report.stop, StopReason::Callback | StopReason::MaxTime);
        Ok((loss, fit.report.n_iter, stopped, fit.values))
    };
    search_path(patience, &mut fit_at)
}

/// The start of a held-out path ([`run_path`]): the state made by `state` at the flat model
/// (shapes set), its `λ_max`, and the parameters of the path's fits (the tolerance at least
/// `path_tol`).
pub(crate) fn path_start<S: DescentState>(
    data: &BinnedData,
    params: &FitParams,
    state: &dyn Fn(Vec<Vec<f64>>) -> S,
    path_tol: f64,
) -> (S, f64, FitParams) {
    let mut st = state(data.zero_blocks());
    st.set_shapes(&params.shapes.resolve(data.n_features()));
    let lambda_max = st.start_flat(data);
    let path_params = FitParams {
        tol: params.tol.max(path_tol),
        objective: ObjectiveTracking::Bounded,
        ..params.clone()
    };
    (st, lambda_max, path_params)
}

/// One held-out fit of a path: its loss, its block updates, whether the callback stopped
/// it, and its blocks.
pub(crate) type PathPoint<B> = (f64, usize, bool, B);

/// The search of a held-out path (see the module documentation), whatever fits it:
/// `fit_at(ratio, restart)` fits at `ratio`, from the blocks `restart` if given (else from
/// where the previous fit ended). Down from [`START_RATIO`] while the loss improves
/// (`patience`), up towards `λ_max` when the first ratio wins, then one refinement from the
/// blocks of the ratio tried nearest to it (the best or a neighbour). Returns the search and
/// the best fit's blocks.
pub(crate) fn search_path<B: Clone>(
    patience: usize,
    fit_at: &mut dyn FnMut(f64, Option<B>) -> Result<PathPoint<B>>,
) -> Result<(PenaltySearch, B)> {
    let mut search = PenaltySearch::default();
    let mut try_ratio = |ratio: f64, restart: Option<B>, search: &mut PenaltySearch| {
        let (loss, n_iter, stopped, blocks) = fit_at(ratio, restart)?;
        search.ratios.push(ratio);
        search.validation_loss.push(loss);
        search.n_iter.push(n_iter);
        Ok::<_, FastError>((loss, stopped, blocks))
    };

    // The decreasing path, until the held-out loss stops improving. `best` is the best
    // ratio and its loss; `near` the blocks of it and of the ratios tried next to it (one
    // step either side), where the refinement may start.
    let mut best: Option<(f64, f64)> = None;
    let mut near: Vec<(f64, B)> = Vec::new();
    let mut since_best = 0;
    let mut ratio = START_RATIO;
    let mut interrupted = false;
    while ratio >= MIN_RATIO && since_best < patience && !interrupted {
        let (loss, stop, values) = try_ratio(ratio, None, &mut search)?;
        interrupted = stop;
        // Below [`FINE_RATIO`] a ratio must lower the best loss by [`FINE_FALL`] of it to
        // count as better (and for the path to go on).
        let fall = if ratio < FINE_RATIO { FINE_FALL } else { 0.0 };
        match &best {
            Some(b) if loss >= b.1 - fall * b.1.abs() => since_best += 1,
            _ => {
                best = Some((ratio, loss));
                since_best = 0;
            }
        }
        keep_near(&mut near, (ratio, values), best);
        ratio *= STEP;
    }
    // The first ratio won (noise-heavy data): climb towards λ_max while that improves.
    let mut up = START_RATIO / STEP;
    // (`up · STEP` is the largest ratio tried so far: the best one, or stop.)
    while !interrupted && up < 1.0 && best.is_some_and(|b| b.0 >= up * STEP * (1.0 - 1e-12)) {
        let (loss, stop, values) = try_ratio(up, None, &mut search)?;
        interrupted = stop;
        let better = best.is_some_and(|b| loss < b.1);
        if better {
            best = Some((up, loss));
        }
        keep_near(&mut near, (up, values), best);
        if !better {
            break;
        }
        up /= STEP;
    }
    let (mut ratio, loss) = best.expect("the path fits at least one ratio");
    let at = |r: f64| near.iter().position(|p| p.0 == r);
    let mut values = near
        .swap_remove(at(ratio).expect("the best fit's blocks are kept"))
        .1;

    // One refinement: the vertex of the parabola through the best ratio and its neighbours
    // (in log ratio), or the geometric midpoint towards the one neighbour at an end.
    if let Some(t) = refinement(&search, ratio).filter(|_| !interrupted) {
        // Continue from the fit of the nearest ratio tried (the best, or a neighbour).
        let gap = |r: f64| (r / t).ln().abs();
        let from = match near.iter().min_by(|a, b| gap(a.0).total_cmp(&gap(b.0))) {
            Some((r, b)) if gap(*r) < gap(ratio) => b.clone(),
            _ => values.clone(),
        };
        let (l_new, _, refined) = try_ratio(t, Some(from), &mut search)?;
        if l_new < loss {
            (ratio, values) = (t, refined);
        }
    }
    search.ratio = ratio;
    Ok((search, values))
}

/// Adds the fit `point` (ratio, blocks) to `near` and keeps there only the fits of the
/// `best` ratio and of the ratios one [`STEP`] from it: the fits a refinement next to the
/// best may start from (at most three, whatever the path's length).
fn keep_near<B>(near: &mut Vec<(f64, B)>, point: (f64, B), best: Option<(f64, f64)>) {
    near.push(point);
    if let Some((b, _)) = best {
        let reach = (1.0 / STEP).ln() * (1.0 + 1e-9);
        near.retain(|(r, _)| (r / b).ln().abs() <= reach);
    }
}

/// The ratio to try once the path has stopped (see [`run_path`]), or `None`.
fn refinement(search: &PenaltySearch, best: f64) -> Option<f64> {
    // The ratios tried, decreasing (the path may have climbed above its first ratio).
    let mut tried: Vec<(f64, f64)> = search
        .ratios
        .iter()
        .zip(&search.validation_loss)
        .map(|(&r, &l)| (r.ln(), l))
        .collect();
    tried.sort_by(|a, b| b.0.total_cmp(&a.0));
    let (x, l): (Vec<f64>, Vec<f64>) = tried.into_iter().unzip();
    let k = x.iter().position(|&v| v == best.ln())?;
    let t = if x.len() < 2 {
        return None;
    } else if k == 0 {
        0.5 * (x[0] + x[1])
    } else if k + 1 == x.len() {
        0.5 * (x[k - 1] + x[k])
    } else {
        // x decreases along the path: x[k - 1] > x[k] > x[k + 1].
        let (a, b) = (x[k] - x[k - 1], x[k] - x[k + 1]);
        let (fa, fb) = (l[k] - l[k - 1], l[k] - l[k + 1]);
        let den = a * fb - b * fa;
        if !(den.abs() > 0.0) {
            return None;
        }
        let t = x[k] - 0.5 * (a * a * fb - b * b * fa) / den;
        // Strictly between the neighbours, and not on the best point itself.
        let t = t.clamp(x[k + 1] + 0.1 * b, x[k - 1] + 0.1 * a);
        if (t - x[k]).abs() <= 0.1 * b.min(-a) {
            return None;
        }
        t
    };
    t.is_finite().then(|| t.exp())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The search on a made-up held-out loss of `x = ln(r / r*)`, `1 + 10⁻³ x²` below `r*` and
    /// `1 + 8·10⁻³ x²` above (so flat that below [`FINE_RATIO`] a lower loss may not count as
    /// better, and the parabola's vertex may fall nearer a neighbour than the best), each fit's
    /// "blocks" its own ratio: the search, its blocks and every fit's `(ratio, restart)`.
    fn searched(r_star: f64) -> (PenaltySearch, f64, Vec<(f64, Option<f64>)>) {
        let mut calls = Vec::new();
        let mut fit_at = |ratio: f64, restart: Option<f64>| {
            calls.push((ratio, restart));
            let x = (ratio / r_star).ln();
            let loss = 1.0 + 1e-3 * if x < 0.0 { x * x } else { 8.0 * x * x };
            Ok((loss, 1, false, ratio))
        };
        let (search, blocks) = search_path(PATIENCE, &mut fit_at).unwrap();
        (search, blocks, calls)
    }

    /// The refinement starts from the fit of the ratio tried nearest to it (a neighbour of
    /// the best where the vertex lies nearer one), every other fit from where the last one
    /// ended; the blocks returned are those of the ratio chosen.
    #[test]
    fn the_refinement_starts_from_the_nearest_ratio_tried() {
        let (mut from_a_neighbour, mut refined) = (0, 0);
        let mut r_star = 1e-5;
        while r_star < 0.05 {
            let (search, blocks, calls) = searched(r_star);
            let (t, from) = *calls.last().unwrap();
            r_star *= 1.13;
            if from.is_none() {
                // No refinement (the vertex fell on the best ratio).
                assert!(calls.iter().all(|c| c.1.is_none()));
                assert_eq!(blocks, search.ratio);
                continue;
            }
            let n = search.ratios.len() - 1;
            let tried = &search.ratios[..n];
            assert!(tried.iter().all(|&r| r != t), "{t} is a new ratio");
            let gap = |r: f64| (r / t).ln().abs();
            let nearest = tried
                .iter()
                .copied()
                .min_by(|a, b| gap(*a).total_cmp(&gap(*b)));
            assert_eq!(
                from, nearest,
                "r* = {r_star}: refinement at {t} from {from:?}"
            );
            // The search's best, by its rule (below FINE_RATIO a ratio must lower the best
            // loss by FINE_FALL of it): not always the lowest loss.
            let mut best: Option<(f64, f64)> = None;
            for (&r, &l) in search.ratios[..n].iter().zip(&search.validation_loss) {
                let fall = if r < FINE_RATIO { FINE_FALL } else { 0.0 };
                if r <= START_RATIO && best.is_none_or(|b| l < b.1 - fall * b.1.abs()) {
                    best = Some((r, l));
                }
            }
            let (best, best_loss) = best.unwrap();
            from_a_neighbour += usize::from(from != Some(best));
            assert!(calls[..n].iter().all(|c| c.1.is_none()));
            let won = search.validation_loss[n] < best_loss;
            let chosen = if won { t } else { best };
            assert_eq!(search.ratio, chosen);
            assert_eq!(blocks, chosen);
            refined += 1;
        }
        assert!(refined > 10, "{refined} refinements");
        assert!(from_a_neighbour > 0, "no case started from a neighbour");
    }

    /// When the first ratio wins the search climbs, and keeps the neighbours of its best.
    #[test]
    fn a_climbing_search_keeps_the_neighbours_of_its_best() {
        let (search, blocks, calls) = searched(0.3);
        let (t, from) = *calls.last().unwrap();
        assert!(search.ratios.contains(&0.25) && search.ratios.contains(&0.5));
        let gap = |r: f64| (r / t).ln().abs();
        let tried = &search.ratios[..search.ratios.len() - 1];
        let nearest = tried
            .iter()
            .copied()
            .min_by(|a, b| gap(*a).total_cmp(&gap(*b)));
        assert_eq!(from, nearest);
        assert_eq!(blocks, search.ratio);
    }
}
