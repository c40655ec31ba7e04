//! The pair blocks' layout: interaction bins ([`axis_guided`], [`pair_bins`]: how many a side
//! under a cell budget, finer for the strongest pairs and a narrow side's partner), each
//! pair's virtual feature of cell codes (`pair_feature`) with its [`Grid`] and link, the
//! shapes of a fit with pair blocks (`with_pair_shapes`), and the layouts the first round
//! tries (`layouts`: the default and, under `interactions="auto"`, more coarser pairs).

use rayon::prelude::*;

use super::stage::Stage;
use crate::data::binning::{bin_weights, BinnedData, BinnedFeature, Code, Codes};
use crate::model::report::Axis;
use crate::params::{FitParams, Grid, Interactions, PairLink, Selection, Shapes};
use crate::with_codes;

/// Under a cell budget, and when `ρ` is chosen on held-out rows, this many pairs (the
/// strongest when screened; the first listed otherwise) get the finer budget [`FINE_CELLS`] (measured on the 20 benchmark tables:
/// `docs/pairs.md`).
pub const FINE_PAIRS: usize = 5;

/// Cells of the [`FINE_PAIRS`] finer pair grids: 32 × 32 for two many-valued features.
pub const FINE_CELLS: usize = 1024;

/// A pair side with at most this many interaction bins (a switch, a few categories) is
/// narrow: under the cell budget, where `ρ` is chosen on held-out rows, its partner gets
/// finer bins than `max_bins` ([`narrow_pair_bins`]; measured on the 20 benchmark tables:
/// `docs/pairs.md`).
pub const NARROW_SIDE: usize = 4;

/// Cells of a pair with a narrow side: 2 × 256 for a switch times a many-valued feature.
pub const NARROW_CELLS: usize = 512;

/// The partner of a narrow side gets at most this many interaction bins per piece of its
/// fitted main effect (and at least `max_bins`): a main effect of few pieces says the data
/// hold little detail along the feature, so a noisy table keeps coarse bins.
pub const NARROW_PIECES: usize = 2;

/// A feature of at most `FEW_LEVELS × max_bins` main bins is few-valued (a count, a month, a
/// small id), and its bins holding at least `1 / HEAVY_BIN` of an interaction bin's share of
/// the weight are heavy. Where a weight quantile falls inside such a bin, the quantile cut
/// goes to whichever of the bin's two edges is nearer ([`axis_guided`]); elsewhere it goes
/// past the first bin at or past the quantile. On a uniform 50-level column the median falls
/// on a level's edge, and the first-past rule cut at level 24 or 25 by the sample's noise
/// alone (1,000,000 rows of `mixed`, whose pair effect switches at level 25: the Dask and
/// Parquet fits 1.03 of the in-memory fit's test MSE, now 1.000). The nearer edge for every
/// heavy bin, many-valued features' too, changed 11 of the 20 benchmark tables' cuts and
/// `gamair_chl`'s test MSE by × 1.084 over five seeds; for few-valued features, 5 tables'
/// (`docs/pairs.md`).
pub const FEW_LEVELS: usize = 4;

/// See [`FEW_LEVELS`].
pub const HEAVY_BIN: f64 = 4.0;

/// Interaction cuts placed at the fitted main effect's largest jumps (the rest are weight
/// quantiles; measured on the 20 benchmark tables, `docs/pairs.md`).
pub const GUIDED_CUTS: usize = 1;

/// Interaction bins of `feature` (at most `max_bins` in its chain): consecutive main bins
/// grouped by weight quantiles, the missing bin, if any, last on its own; with the fitted main
/// effect `beta` (chain values first), [`GUIDED_CUTS`] of the cuts sit at its largest jumps
/// and quantile cuts give way, the one whose two groups weigh least first, until at most
/// `max_bins` groups remain.
pub fn axis_guided(feature: &BinnedFeature, beta: Option<&[f64]>, max_bins: usize) -> Axis {
    let nc = feature.n_chain();
    let w = &feature.bin_weights[..nc];
    let mut map = Vec::with_capacity(feature.n_bins());
    let mut cuts = Vec::new();
    if nc <= max_bins {
        map.extend(0..nc);
        cuts.extend_from_slice(&feature.cuts);
    } else {
        // A cut position `c` separates main bins `c` and `c + 1`.
        let mut prefix = vec![0.0; nc + 1];
        for b in 0..nc {
            prefix[b + 1] = prefix[b] + w[b];
        }
        let total = prefix[nc];
        let mut chosen = Vec::new();
        let mut group = 0usize;
        // A heavy level of a few-valued feature straddling a quantile goes to the side of
        // the nearer edge ([`FEW_LEVELS`]); any other bin, to the group it ends.
        let heavy = total / (HEAVY_BIN * max_bins as f64);
        let few = nc <= FEW_LEVELS * max_bins;
        for b in 1..nc {
            let boundary = total * (group + 1) as f64 / max_bins as f64;
            if prefix[b] >= boundary && group + 1 < max_bins {
                group += 1;
                let short = boundary - prefix[b - 1];
                let earlier = b >= 2
                    && few
                    && w[b - 1] >= heavy
                    && short < prefix[b] - boundary
                    && chosen.last().is_none_or(|&c| c + 2 < b);
                chosen.push(if earlier { b - 2 } else { b - 1 });
            }
        }
        let forced = beta.map_or_else(Vec::new, |beta| {
            largest_jumps(beta, (nc, feature.n_bins()), GUIDED_CUTS)
        });
        chosen.extend(&forced);
        chosen.sort_unstable();
        chosen.dedup();
        while chosen.len() > max_bins - 1 {
            let lightest = (0..chosen.len())
                .filter(|&i| !forced.contains(&chosen[i]))
                .map(|i| {
                    let lo = if i == 0 { 0 } else { chosen[i - 1] + 1 };
                    let hi = chosen.get(i + 1).map_or(nc, |&c| c + 1);
                    (prefix[hi] - prefix[lo], i)
                })
                .min_by(|a, b| a.0.total_cmp(&b.0));
            match lightest {
                Some((_, i)) => {
                    chosen.remove(i);
                }
                None => break,
            }
        }
        let mut group = 0usize;
        for b in 0..nc {
            if chosen.get(group).is_some_and(|&c| b > c) {
                group += 1;
            }
            map.push(group);
        }
        cuts.extend(chosen.iter().map(|&c| feature.cuts[c]));
    }
    if feature.missing {
        map.push(MISSING);
    }
    Axis {
        map,
        cuts,
        missing: feature.missing,
    }
}

/// The cut positions `c` (between chain values `c` and `c + 1`) of the `count` largest
/// nonzero jumps of `beta` (chain values first, `nc` of them; a block with one chain per
/// score holds `n_bins` values per score, and its jumps add up over the scores), largest
/// first (ties: the lower position).
fn largest_jumps(beta: &[f64], (nc, n_bins): (usize, usize), count: usize) -> Vec<usize> {
    let mut jumps: Vec<(f64, usize)> = (0..nc.saturating_sub(1))
        .map(|c| {
            let d: f64 = beta
                .chunks(n_bins.max(1))
                .filter(|b| b.len() >= nc)
                .map(|b| (b[c + 1] - b[c]).abs())
                .sum();
            (d, c)
        })
        .filter(|(d, _)| *d > 0.0)
        .collect();
    jumps.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    jumps.into_iter().take(count).map(|(_, c)| c).collect()
}

/// Interaction bins of each axis of a pair whose features have `(nj, nk)` chain bins: at most
/// `max_bins` a side, and with a cell budget `max_cells`, at most that many cells: a side
/// with at most `√cells` bins keeps them and its partner gets the cells left
/// (`cells / side`), else both get `√cells`.
pub fn pair_bins(
    (nj, nk): (usize, usize),
    max_bins: usize,
    max_cells: Option<usize>,
) -> (usize, usize) {
    let Some(cells) = max_cells else {
        return (nj.min(max_bins), nk.min(max_bins));
    };
    let (a, b) = (nj.min(max_bins), nk.min(max_bins));
    if a.saturating_mul(b) <= cells {
        return (a, b);
    }
    let side = screen_bins(max_bins, Some(cells));
    match (a <= side, b <= side) {
        (true, _) => (a, (cells / a).max(2).min(b)),
        (_, true) => ((cells / b).max(2).min(a), b),
        _ => (side, side),
    }
}

/// Interaction bins of a pair with a narrow side (at most [`NARROW_SIDE`] chain bins; `None`
/// otherwise) whose features have `(nj, nk)` chain bins and fitted main effects of
/// `(pj, pk)` pieces: the narrow side keeps its bins, and its partner gets
/// `NARROW_CELLS / narrow` at most, and at most [`NARROW_PIECES`] per piece of its main
/// effect, but never fewer than `max_bins` (nor than its chain).
pub fn narrow_pair_bins(
    (nj, nk): (usize, usize),
    (pj, pk): (usize, usize),
    max_bins: usize,
) -> Option<(usize, usize)> {
    let partner = |narrow: usize, n: usize, pieces: usize| {
        (NARROW_CELLS / narrow.max(1))
            .min(NARROW_PIECES.saturating_mul(pieces))
            .max(max_bins)
            .min(n)
    };
    if nj.min(nk) > NARROW_SIDE {
        None
    } else if nj <= nk {
        Some((nj, partner(nj, nk, pk)))
    } else {
        Some((partner(nk, nj, pj), nk))
    }
}

/// The pieces of a fitted main effect `beta` of `feature` (chain values first): one more
/// than its nonzero jumps along the chain.
fn main_pieces(feature: &BinnedFeature, beta: &[f64]) -> usize {
    1 + largest_jumps(beta, (feature.n_chain(), feature.n_bins()), usize::MAX).len()
}

/// The cell budget of the `t`-th pair (best first when screened) under a budget of `cells`
/// a pair: the first [`FINE_PAIRS`] get at least [`FINE_CELLS`].
pub fn pair_cells(t: usize, cells: usize) -> usize {
    if t < FINE_PAIRS {
        cells.max(FINE_CELLS)
    } else {
        cells
    }
}

/// Interaction bins per feature in screening: `max_bins`, or `√cells` under a cell budget.
pub fn screen_bins(max_bins: usize, max_cells: Option<usize>) -> usize {
    max_cells.map_or(max_bins, |cells| {
        // Integer square root (cells is small).
        let side = (1..=cells)
            .take_while(|s| s * s <= cells)
            .last()
            .unwrap_or(1);
        side.max(2).min(max_bins)
    })
}

/// The interaction bin of a main missing bin in [`Axis::map`]: the row is in the pair's
/// missing cell.
pub const MISSING: usize = usize::MAX;

/// The grid of the pair with axes `a` (rows) and `b` (columns).
pub fn grid_of(a: &Axis, b: &Axis) -> Grid {
    Grid::new(a.len(), b.len())
}

/// The cell of every row of the pair `(j, k)`.
fn cell_codes(data: &BinnedData, (j, k): (usize, usize), (a, b): (&Axis, &Axis)) -> Codes {
    let cols = b.len();
    let cells = a.len() * cols;
    let (fj, fk) = (&data.features[j], &data.features[k]);
    let cell = |cj: usize, ck: usize| {
        let (r, c) = (a.map[cj], b.map[ck]);
        if r == MISSING || c == MISSING {
            cells
        } else {
            r * cols + c
        }
    };
    let mut out = vec![0u32; data.n_samples];
    with_codes!(&fj.codes, cj => with_codes!(&fk.codes, ck => {
        out.par_iter_mut()
            .zip(cj.par_iter().zip(ck.par_iter()))
            .for_each(|(o, (&x, &y))| *o = cell(x.idx(), y.idx()) as u32);
    }));
    if cells < 1 << 8 {
        Codes::U8(out.into_iter().map(|c| c as u8).collect())
    } else if cells < 1 << 16 {
        Codes::U16(out.into_iter().map(|c| c as u16).collect())
    } else {
        Codes::U32(out)
    }
}

/// The virtual feature of a pair: its value is the cell index, so its bins are the cells;
/// when either feature has a missing bin, the rows missing either value share one more bin
/// (the missing cell: a free level joined to no cell, so the pair adds a constant to them,
/// which the facade moves into the intercept).
pub(crate) fn pair_feature(
    data: &BinnedData,
    pair: (usize, usize),
    axes: (&Axis, &Axis),
) -> BinnedFeature {
    let cells = axes.0.len() * axes.1.len();
    let missing = axes.0.missing || axes.1.missing;
    let codes = cell_codes(data, pair, axes);
    let bin_weights = bin_weights(
        &codes,
        cells + usize::from(missing),
        data.weights.as_deref(),
    );
    BinnedFeature {
        cuts: (1..cells).map(|c| c as f64).collect(),
        codes,
        bin_weights,
        missing,
    }
}

/// The links of the pair blocks of `pairs` under `axes`, the first pair's block at `block`.
pub(crate) fn pair_links(
    block: usize,
    pairs: &[(usize, usize)],
    axes: &[(Axis, Axis)],
) -> Vec<PairLink> {
    pairs
        .iter()
        .zip(axes)
        .enumerate()
        .map(|(t, (&features, (a, b)))| PairLink {
            block: block + t,
            features,
            maps: (a.map.clone(), b.map.clone()),
            missing: (a.missing, b.missing),
        })
        .collect()
}

/// Appends the virtual features of `pairs` under `axes` to `data`, after its last feature
/// (their blocks' indices follow on); returns their grids and links.
pub(super) fn add_pair_blocks(
    data: &mut BinnedData,
    pairs: &[(usize, usize)],
    axes: &[(Axis, Axis)],
) -> (Vec<Grid>, Vec<PairLink>) {
    let grids: Vec<Grid> = axes.iter().map(|(a, b)| grid_of(a, b)).collect();
    let links = pair_links(data.n_features(), pairs, axes);
    let virtual_features: Vec<BinnedFeature> = pairs
        .par_iter()
        .zip(axes)
        .map(|(&pair, (a, b))| pair_feature(data, pair, (a, b)))
        .collect();
    data.features.extend(virtual_features);
    (grids, links)
}

/// The shapes of the main effects (`params.shapes`) followed by `grids.len()` pair blocks
/// with the penalty factor `rho`, linked to their features by `links`.
pub(crate) fn with_pair_shapes(
    params: &FitParams,
    p: usize,
    (grids, links): (&[Grid], &[PairLink]),
    rho: f64,
    tol: f64,
) -> FitParams {
    let main = &params.shapes;
    let mut shapes = Shapes {
        monotone: (0..p).map(|j| main.get(j).monotone).collect(),
        penalty_factor: (0..p).map(|j| main.get(j).factor).collect(),
        grids: vec![None; p],
        links: links.to_vec(),
        l2: main.l2,
        grid_l2: Vec::new(),
    };
    for &g in grids {
        shapes.monotone.push(0);
        shapes.penalty_factor.push(rho);
        shapes.grids.push(Some(g));
    }
    // Scored sweeps: one pass over the rows per update, where greedy selection refreshes
    // every block's sums (pairs included) before each update.
    let selection = match params.selection {
        Selection::Auto => Selection::Sweep,
        s => s,
    };
    FitParams {
        shapes,
        tol,
        selection,
        ..params.clone()
    }
}

/// Under `interactions="auto"` the first round also tries this many times the pairs at this
/// fraction of the cells each, and keeps that layout where held-out rows prefer it: many weak
/// interactions in a noisy table want many coarse grids (`bank32NH`), a few strong smooth ones
/// fine grids (`574_house_16H`); see `layouts` and `docs/pairs.md`.
pub const COARSE_FACTOR: usize = 4;

/// The pairs of the first round of screening: how many, and their grids' cell budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Layout {
    /// Pairs screened (the list's length for a list).
    pub(super) count: usize,
    /// Cells per grid at most (`None`: `max_bins²`).
    pub(super) max_cells: Option<usize>,
    /// Whether the strongest [`FINE_PAIRS`] get [`FINE_CELLS`].
    pub(super) fine: bool,
}

/// The layouts the first round tries: the one of `interactions` and `max_cells` (`fine`: where
/// `ρ` is chosen on held-out rows), and under `interactions="auto"` with a cell budget and a
/// held-out `split`, also [`COARSE_FACTOR`] times the pairs at `1 / COARSE_FACTOR` of the cells
/// each (and no finer strongest pairs): the same cells in all, spread over more pairs.
pub(super) fn layouts(
    interactions: &Interactions,
    max_cells: Option<usize>,
    fine: bool,
    split: bool,
) -> Vec<Layout> {
    let count = match interactions {
        Interactions::Count(count) | Interactions::Auto(count) => *count,
        Interactions::List(list) => list.len(),
    };
    let default = Layout {
        count,
        max_cells,
        fine,
    };
    match (interactions, max_cells) {
        (Interactions::Auto(_), Some(cells)) if split && fine => vec![
            default,
            Layout {
                count: count.saturating_mul(COARSE_FACTOR),
                max_cells: Some((cells / COARSE_FACTOR).max(4)),
                fine: false,
            },
        ],
        _ => vec![default],
    }
}

impl<S> Stage<'_, S> {
    /// The axes of `pairs` under `layout`, the `first`-th pair's budget first: a cell budget
    /// per pair ([`pair_cells`] for the strongest under a fine layout), the narrow sides'
    /// partners binned by their main effects' pieces ([`narrow_pair_bins`], where `ρ` is chosen
    /// on held-out rows), each axis cut at its main effect's largest jump ([`axis_guided`]).
    pub(super) fn axes(
        &self,
        data: &BinnedData,
        pairs: &[(usize, usize)],
        first: usize,
        layout: Layout,
    ) -> Vec<(Axis, Axis)> {
        let (pp, mains) = (&self.params.pairs, self.mains);
        pairs
            .iter()
            .enumerate()
            .map(|(t, &(j, k))| {
                let t = first + t;
                let chains = (data.features[j].n_chain(), data.features[k].n_chain());
                let cells = layout.max_cells.map(|cells| {
                    if layout.fine {
                        pair_cells(t, cells)
                    } else {
                        cells
                    }
                });
                let narrow = (self.fine && layout.max_cells.is_some())
                    .then(|| {
                        let pieces = |f: usize| main_pieces(&data.features[f], &mains.values[f]);
                        narrow_pair_bins(chains, (pieces(j), pieces(k)), pp.max_bins)
                    })
                    .flatten();
                let (nj, nk) = narrow.unwrap_or_else(|| pair_bins(chains, pp.max_bins, cells));
                (
                    axis_guided(&data.features[j], Some(&mains.values[j]), nj),
                    axis_guided(&data.features[k], Some(&mains.values[k]), nk),
                )
            })
            .collect()
    }
}

/// The features of [`crate::testing::correlated_pairs`] in 32 bins each, with the blocks of the pairs
/// `(0, 1)` and `(1, 2)` on 16 × 16 grids appended: the data, the number of main features,
/// and the pair blocks' grids and links.
#[cfg(test)]
pub(crate) fn with_two_pair_blocks(
    x: ndarray::ArrayView2<'_, f64>,
) -> (
    BinnedData,
    usize,
    Vec<crate::params::Grid>,
    Vec<crate::params::PairLink>,
) {
    let binning = crate::data::binning::BinningParams {
        max_bins: Some(32),
        ..Default::default()
    };
    let mut data = crate::data::binning::bin_data(x, None, &binning).unwrap();
    let p = data.n_features();
    let pairs = [(0, 1), (1, 2)];
    let axes: Vec<_> = pairs
        .iter()
        .map(|&(j, k)| {
            (
                axis_guided(&data.features[j], None, 16),
                axis_guided(&data.features[k], None, 16),
            )
        })
        .collect();
    let (grids, links) = add_pair_blocks(&mut data, &pairs, &axes);
    (data, p, grids, links)
}

/// The axis whose cuts are those of every axis of `axes` (axes of one feature), and for each
/// of them the bin of that axis every bin of the union lies in.
pub(crate) fn union_axes(axes: &[&Axis]) -> (Axis, Vec<Vec<usize>>) {
    let first = axes[0];
    let mut cuts: Vec<f64> = axes.iter().flat_map(|a| a.cuts.iter().copied()).collect();
    cuts.sort_by(f64::total_cmp);
    cuts.dedup();
    // Main bins run in increasing order, so a new union bin starts where any axis's bin
    // changes.
    let mut map = Vec::with_capacity(first.map.len());
    let mut parts: Vec<Vec<usize>> = vec![Vec::new(); axes.len()];
    let mut last: Option<Vec<usize>> = None;
    for m in 0..first.map.len() {
        let bins: Vec<usize> = axes.iter().map(|a| a.map[m]).collect();
        if bins.contains(&MISSING) {
            map.push(MISSING);
            continue;
        }
        if last.as_ref() != Some(&bins) {
            for (p, &b) in parts.iter_mut().zip(&bins) {
                p.push(b);
            }
            last = Some(bins);
        }
        map.push(parts[0].len() - 1);
    }
    debug_assert_eq!(cuts.len() + 1, parts[0].len());
    (
        Axis {
            map,
            cuts,
            missing: first.missing,
        },
        parts,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feature(cuts: usize, weights: Vec<f64>, missing: bool) -> BinnedFeature {
        BinnedFeature {
            cuts: (0..cuts).map(|c| c as f64 + 0.5).collect(),
            codes: Codes::U8(vec![0]),
            bin_weights: weights,
            missing,
        }
    }

    #[test]
    fn axes_group_bins_by_weight_and_keep_the_missing_bin() {
        let f = feature(7, vec![1.0; 9], true);
        let a = axis_guided(&f, None, 4);
        assert_eq!(a.cuts.len(), 3);
        assert!(a.cuts.iter().all(|c| f.cuts.contains(c)));
        assert_eq!(a.map.len(), 9);
        assert!(a.map.windows(2).take(7).all(|w| w[1] >= w[0]));
        assert_eq!(a.map[8], MISSING);
        assert_eq!(a.len(), 4);
        let small = axis_guided(&f, None, 16);
        assert_eq!(small.cuts, f.cuts);
    }

    #[test]
    fn a_guided_axis_cuts_at_the_main_effects_largest_jump() {
        // 40 equal bins, 4 groups: quantile cuts after bins 9, 19 and 29; the main effect
        // jumps most between bins 4 and 5, so one cut moves there.
        let f = feature(39, vec![1.0; 40], false);
        let plain = axis_guided(&f, None, 4);
        assert_eq!(plain.cuts, vec![f.cuts[9], f.cuts[19], f.cuts[29]]);
        let mut beta: Vec<f64> = (0..40).map(|b| 0.01 * b as f64).collect();
        for v in &mut beta[5..] {
            *v += 3.0;
        }
        let guided = axis_guided(&f, Some(&beta), 4);
        assert_eq!(guided.cuts.len(), 3);
        assert!(guided.cuts.contains(&f.cuts[4]), "{:?}", guided.cuts);
        assert_eq!(guided.map[4] + 1, guided.map[5]);
        assert!(guided
            .map
            .windows(2)
            .all(|w| w[1] == w[0] || w[1] == w[0] + 1));
        // A flat main effect forces nothing; few bins keep them all.
        assert_eq!(axis_guided(&f, Some(&[0.0; 40]), 4).cuts, plain.cuts);
        assert_eq!(axis_guided(&f, Some(&beta), 64).cuts, f.cuts);
    }

    #[test]
    fn a_heavy_level_at_a_quantile_goes_to_the_nearer_side_whatever_the_noise() {
        // 50 levels of about equal weight, 16 groups: the median falls on the edge between
        // levels 24 and 25. The first-past rule cut after 24 or after 25 by the levels'
        // sampling noise; the nearer edge is 24 both ways.
        for noise in [-1e-3, 1e-3] {
            let mut w = vec![1.0; 50];
            w[10] += noise;
            w[40] -= noise;
            let f = feature(49, w, false);
            let a = axis_guided(&f, None, 16);
            assert!(a.cuts.contains(&f.cuts[24]), "{noise}: {:?}", a.cuts);
            assert!(!a.cuts.contains(&f.cuts[25]), "{noise}: {:?}", a.cuts);
            assert_eq!(a.len(), 16);
        }
        // A many-valued feature (4,000 bins) keeps the first-past rule.
        let mut w = vec![1.0; 4000];
        w[0] -= 1e-3;
        let f = feature(3999, w, false);
        let a = axis_guided(&f, None, 16);
        assert!(a.cuts.contains(&f.cuts[2000]), "{:?}", &a.cuts[6..9]);
    }

    #[test]
    fn the_cell_budget_shares_cells_between_the_axes() {
        let cells = Some(256);
        assert_eq!(screen_bins(64, cells), 16);
        assert_eq!(screen_bins(8, cells), 8);
        assert_eq!(screen_bins(64, None), 64);
        assert_eq!(pair_bins((4096, 4096), 64, cells), (16, 16));
        assert_eq!(pair_bins((2, 4096), 64, cells), (2, 64));
        assert_eq!(pair_bins((4096, 3), 64, cells), (64, 3));
        assert_eq!(pair_bins((4096, 10), 64, cells), (25, 10));
        assert_eq!(pair_bins((12, 20), 64, cells), (12, 20));
        assert_eq!(pair_bins((30, 40), 64, cells), (16, 16));
        assert_eq!(pair_bins((4096, 4096), 32, None), (32, 32));
        for nj in [1, 2, 3, 7, 16, 17, 40, 64, 100, 4096] {
            for nk in [1, 2, 5, 16, 33, 64, 4096] {
                let (a, b) = pair_bins((nj, nk), 64, cells);
                assert!(a <= nj.min(64) && b <= nk.min(64));
                assert!(a * b <= 256, "({nj}, {nk}) -> ({a}, {b})");
            }
        }
    }

    #[test]
    fn a_narrow_side_gives_its_partner_bins_by_its_main_effects_pieces() {
        // Two wide features: not narrow.
        assert_eq!(narrow_pair_bins((4096, 4096), (100, 100), 64), None);
        assert_eq!(narrow_pair_bins((5, 4096), (5, 100), 64), None);
        // A switch times a feature whose main effect has 174 pieces: 512 / 2 bins.
        assert_eq!(narrow_pair_bins((2, 4096), (2, 174), 64), Some((2, 256)));
        assert_eq!(narrow_pair_bins((4096, 2), (174, 2), 64), Some((256, 2)));
        // Three values: 512 / 3; four: 128.
        assert_eq!(narrow_pair_bins((3, 4096), (3, 1000), 64), Some((3, 170)));
        assert_eq!(narrow_pair_bins((4096, 4), (1000, 4), 64), Some((128, 4)));
        // Few pieces (a smooth, noisy main effect): two bins per piece, at least max_bins.
        assert_eq!(narrow_pair_bins((2, 4096), (2, 50), 64), Some((2, 100)));
        assert_eq!(narrow_pair_bins((2, 4096), (2, 7), 64), Some((2, 64)));
        // Never more bins than the chain has.
        assert_eq!(narrow_pair_bins((2, 40), (2, 40), 64), Some((2, 40)));
        assert_eq!(narrow_pair_bins((2, 3), (1, 1), 64), Some((2, 3)));
        for (nj, nk) in [(1, 4096), (2, 2), (4, 4), (3, 90), (4096, 1)] {
            for pieces in [1, 10, 4096] {
                let (a, b) = narrow_pair_bins((nj, nk), (pieces, pieces), 64).unwrap();
                assert!(a <= nj && b <= nk);
                assert!(
                    a * b <= NARROW_CELLS.max(4 * 64),
                    "({nj}, {nk}) -> ({a}, {b})"
                );
            }
        }
    }

    #[test]
    fn main_pieces_count_the_jumps_along_the_chain() {
        let f = feature(5, vec![1.0; 7], true);
        // Chain of 6 values, then the missing bin (its value is not a jump).
        assert_eq!(main_pieces(&f, &[0.0, 0.0, 1.0, 1.0, 2.0, 2.0, 9.0]), 3);
        assert_eq!(main_pieces(&f, &[0.5; 7]), 1);
    }

    #[test]
    fn the_strongest_pairs_get_finer_grids() {
        assert_eq!(pair_cells(0, 256), FINE_CELLS);
        assert_eq!(pair_cells(FINE_PAIRS - 1, 256), FINE_CELLS);
        assert_eq!(pair_cells(FINE_PAIRS, 256), 256);
        assert_eq!(pair_cells(0, 4096), 4096);
        assert_eq!(
            pair_bins((4096, 4096), 64, Some(pair_cells(0, 256))),
            (32, 32)
        );
    }

    #[test]
    fn auto_also_tries_more_coarser_pairs_where_rho_is_chosen_on_held_out_rows() {
        let auto = Interactions::Auto(40);
        let two = layouts(&auto, Some(256), true, true);
        assert_eq!(two.len(), 2);
        assert_eq!(
            two[0],
            Layout {
                count: 40,
                max_cells: Some(256),
                fine: true
            }
        );
        // Four times the pairs, every one at a quarter of the cells, no finer strongest pairs.
        assert_eq!(
            two[1],
            Layout {
                count: 160,
                max_cells: Some(64),
                fine: false
            }
        );
        // Otherwise one layout: an explicit count or list, no cell budget, a fixed `ρ`
        // (`fine` false), no held-out rows.
        for (interactions, cells, fine, split) in [
            (Interactions::Count(40), Some(256), true, true),
            (
                Interactions::List(vec![(0, 1), (1, 2)]),
                Some(256),
                true,
                true,
            ),
            (auto.clone(), None, true, true),
            (auto.clone(), Some(256), false, true),
            (auto.clone(), Some(256), true, false),
        ] {
            let one = layouts(&interactions, cells, fine, split);
            assert_eq!(one.len(), 1, "{interactions:?} {cells:?} {fine} {split}");
            assert_eq!((one[0].max_cells, one[0].fine), (cells, fine));
        }
        assert_eq!(
            layouts(
                &Interactions::List(vec![(0, 1), (1, 2)]),
                None,
                false,
                false
            )[0]
            .count,
            2
        );
    }

    #[test]
    fn union_axes_cut_wherever_any_axis_does() {
        let axis = |map: Vec<usize>, cuts: Vec<f64>| Axis {
            map,
            cuts,
            missing: false,
        };
        // Six main bins; cuts after bins 1 and 3, and after bin 2.
        let a = axis(vec![0, 0, 1, 1, 2, 2], vec![1.5, 3.5]);
        let b = axis(vec![0, 0, 0, 1, 1, 1], vec![2.5]);
        let (u, parts) = union_axes(&[&a, &b]);
        assert_eq!(u.cuts, vec![1.5, 2.5, 3.5]);
        assert_eq!(u.map, vec![0, 0, 1, 2, 3, 3]);
        assert_eq!(parts, vec![vec![0, 1, 1, 2], vec![0, 0, 1, 1]]);
    }
}
