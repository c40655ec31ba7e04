//! Choosing pairs: every pair among the [`SCREEN_FEATURES`] features with the largest main
//! effects scored on a residual by the gain of its cell means less a noise allowance
//! ([`screen`]), a listed pair checked ([`check_pairs`]); the first round's candidates of
//! each layout and a later round's further pairs.

use rayon::prelude::*;

use super::layout::{axis_guided, screen_bins, Layout, MISSING};
use super::stage::Stage;
use crate::data::binning::{BinnedData, Code};
use crate::descent::PairDescent;
use crate::error::{FastError, Result};
use crate::fit::validation::{with_weights, Split};
use crate::model::report::Axis;
use crate::params::Interactions;
use crate::with_codes;

/// The number of pairs the estimators' default `interactions="auto"` screens for where the
/// model has pair terms (measured on the 20 benchmark tables: `docs/pairs.md`).
pub const AUTO_INTERACTIONS: usize = 40;

/// Pairs are screened among this many features with the largest main effects at most.
pub const SCREEN_FEATURES: usize = 40;

/// The main effects' size: `Σ_b w_b β_b²` (weighted variance of the block's contribution;
/// summed over the scores of a block that holds one chain per score).
fn main_size(data: &BinnedData, beta: &[Vec<f64>], j: usize) -> f64 {
    let w = &data.features[j].bin_weights;
    beta[j]
        .chunks(w.len().max(1))
        .map(|b| b.iter().zip(w).map(|(b, w)| w * b * b).sum::<f64>())
        .sum()
}

/// The pairs with the largest screening gain on the residual `vr` (`v∘r`, one per row, or
/// `m` per row, row-major, for a model of `m` scores: the gains of the scores summed, each
/// with its own noise allowance), at most `count`, among the `eligible` features with the
/// largest main effects (see the module documentation); returns the pairs (`j < k`) and their
/// gains, best first.
pub fn screen(
    data: &BinnedData,
    beta: &[Vec<f64>],
    vr: &[f64],
    (count, max_bins): (usize, usize),
    eligible: impl Fn(usize) -> bool,
) -> Vec<((usize, usize), f64)> {
    let p = data.n_features();
    let mut order: Vec<usize> = (0..p)
        .filter(|&j| data.features[j].n_bins() > 1 && eligible(j))
        .collect();
    let size: Vec<f64> = (0..p).map(|j| main_size(data, beta, j)).collect();
    order.sort_by(|&a, &b| size[b].total_cmp(&size[a]).then(a.cmp(&b)));
    order.truncate(SCREEN_FEATURES);
    order.sort_unstable();
    let axes: Vec<Option<Axis>> = (0..p)
        .map(|j| {
            order
                .contains(&j)
                .then(|| axis_guided(&data.features[j], Some(&beta[j]), max_bins))
        })
        .collect();
    let candidates: Vec<(usize, usize)> = order
        .iter()
        .enumerate()
        .flat_map(|(i, &j)| order[i + 1..].iter().map(move |&k| (j, k)))
        .collect();
    let weights = data.weights.as_deref();
    let m = (vr.len() / data.n_samples.max(1)).max(1);
    let (mut ss, mut w_total) = (vec![0.0; m], 0.0);
    for (i, row) in vr.chunks_exact(m).enumerate() {
        let v = weights.map_or(1.0, |w| w[i]);
        if v > 0.0 {
            for (s, &x) in ss.iter_mut().zip(row) {
                *s += x * x / v;
            }
            w_total += v;
        }
    }
    let sigma2: Vec<f64> = ss
        .iter()
        .map(|&s| if w_total > 0.0 { s / w_total } else { 0.0 })
        .collect();
    let mut gains: Vec<((usize, usize), f64)> = candidates
        .par_iter()
        .map(|&(j, k)| {
            let (a, b) = (
                axes[j].as_ref().unwrap_or_else(|| unreachable!()),
                axes[k].as_ref().unwrap_or_else(|| unreachable!()),
            );
            let cols = b.len();
            let cells = a.len() * cols;
            let (mut s, mut w, mut w2) = (vec![0.0; cells * m], vec![0.0; cells], vec![0.0; cells]);
            let (fj, fk) = (&data.features[j], &data.features[k]);
            with_codes!(&fj.codes, cj => with_codes!(&fk.codes, ck => {
                for i in 0..vr.len() / m {
                    let (r, c) = (a.map[cj[i].idx()], b.map[ck[i].idx()]);
                    if r == MISSING || c == MISSING {
                        continue;
                    }
                    let cell = r * cols + c;
                    for q in 0..m {
                        s[cell * m + q] += vr[i * m + q];
                    }
                    let v = weights.map_or(1.0, |w| w[i]);
                    w[cell] += v;
                    w2[cell] += v * v;
                }
            }));
            // A cell's `s²/w` less what noise of variance `σ²` gives it on average,
            // `σ² Σv²/Σv` (`σ²` on unit weights): the gain scales with the weights, so
            // weights of any common scale choose the same pairs.
            let mut gain = 0.0;
            for ((s, w), w2) in s.chunks_exact(m).zip(&w).zip(&w2) {
                if *w > 0.0 {
                    for (s, sigma2) in s.iter().zip(&sigma2) {
                        gain += s * s / w - sigma2 * (w2 / w);
                    }
                }
            }
            ((j, k), gain)
        })
        .collect();
    gains.retain(|(_, g)| *g > 0.0);
    gains.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    gains.truncate(count);
    gains
}

/// Checks a list of pairs against `p` features: distinct features below `p`, no pair twice,
/// no feature that `monotone(j)` says is constrained (a pair term could undo its
/// monotonicity). Returns them as `(min, max)`.
///
/// # Errors
/// [`FastError::InvalidParameter`] naming `interactions` and the pair.
pub fn check_pairs(
    pairs: &[(usize, usize)],
    p: usize,
    monotone: impl Fn(usize) -> bool,
) -> Result<Vec<(usize, usize)>> {
    let mut out: Vec<(usize, usize)> = Vec::with_capacity(pairs.len());
    for &(j, k) in pairs {
        let bad = |message| FastError::InvalidParameter {
            name: "interactions",
            message,
            value: format!("({j}, {k})"),
        };
        if j >= p || k >= p {
            return Err(bad(
                "every pair must hold two feature indices below n_features_in_",
            ));
        }
        if j == k {
            return Err(bad("a pair needs two different features"));
        }
        if monotone(j) || monotone(k) {
            return Err(bad(
                "a pair may not hold a feature that monotonic_cst constrains (the pair term could undo its monotonicity)",
            ));
        }
        let pair = (j.min(k), j.max(k));
        if out.contains(&pair) {
            return Err(bad("lists a pair twice"));
        }
        out.push(pair);
    }
    Ok(out)
}

/// Pairs with their screening gains (none for a list).
pub(super) type Screened = (Vec<(usize, usize)>, Vec<f64>);

impl<S: PairDescent> Stage<'_, S> {
    /// Each layout's first-round pairs: a list checked ([`check_pairs`]), or pairs screened
    /// from one residual of the main effects. Where `ρ` (and the additive check) is decided on
    /// held-out rows, the pairs are screened on the other rows only: pairs screened on every
    /// row are chosen partly for the held-out rows' noise, and the held-out loss then flatters
    /// them.
    ///
    /// # Errors
    /// A bad pair list ([`check_pairs`]).
    pub(super) fn candidates(
        &self,
        data: &mut BinnedData,
        layouts: &[Layout],
    ) -> Result<Vec<Screened>> {
        let pp = &self.params.pairs;
        Ok(match &pp.interactions {
            Interactions::List(list) => {
                vec![(
                    check_pairs(list, self.p, |j| self.constrained(j))?,
                    Vec::new(),
                )]
            }
            Interactions::Count(_) | Interactions::Auto(_) => {
                let screen_rows = |data: &BinnedData| {
                    let vr = self.residual(data, self.mains.values.clone());
                    layouts
                        .iter()
                        .map(|layout| {
                            let side = screen_bins(pp.max_bins, layout.max_cells);
                            screen(data, &self.mains.values, &vr, (layout.count, side), |j| {
                                !self.constrained(j)
                            })
                            .into_iter()
                            .unzip()
                        })
                        .collect()
                };
                match &self.split {
                    Some(split) => with_weights(data, split.train.clone(), screen_rows),
                    None => screen_rows(data),
                }
            }
        })
    }

    /// A later round's pairs under `layout`: `layout.count` more than `pairs` (none of them),
    /// screened on the split's training rows' residual of the fit with pairs `values` (the
    /// pair blocks in `data`, after the main effects, set aside while screening); with their
    /// gains, best first.
    pub(super) fn screen_more(
        &self,
        data: &mut BinnedData,
        layout: Layout,
        pairs: &[(usize, usize)],
        values: &[Vec<f64>],
        split: &Split,
    ) -> Screened {
        let vr = with_weights(data, split.train.clone(), |d| {
            self.residual(d, values.to_vec())
        });
        let blocks = data.features.split_off(self.p);
        let side = screen_bins(self.params.pairs.max_bins, layout.max_cells);
        let more = with_weights(data, split.train.clone(), |d| {
            screen(d, values, &vr, (layout.count + pairs.len(), side), |j| {
                !self.constrained(j)
            })
        })
        .into_iter()
        .filter(|(pair, _)| !pairs.contains(pair))
        .take(layout.count)
        .unzip();
        data.features.extend(blocks);
        more
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pair_lists_are_checked() {
        let free = |_| false;
        assert_eq!(check_pairs(&[(2, 0)], 3, free).unwrap(), vec![(0, 2)]);
        assert!(check_pairs(&[(0, 3)], 3, free).is_err());
        assert!(check_pairs(&[(1, 1)], 3, free).is_err());
        assert!(check_pairs(&[(0, 1), (1, 0)], 3, free).is_err());
        assert!(check_pairs(&[(0, 1)], 3, |j| j == 1).is_err());
    }
}
