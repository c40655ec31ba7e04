//! Two coupled blocks solved together.
//!
//! Where one feature nearly determines another (a date and its year, a reading and its
//! near copy), greedy updates alternate between their two blocks for thousands of updates:
//! each moves part of the shared effect back to the other, and every such update moves
//! every block's sums (through the tables, or by a pass over the rows). The loss of the two
//! blocks with everything else fixed needs only their own sums and their one co-occurrence
//! table `C_kj`, so [`BlockState::update_coupled`] alternates their exact updates on copies
//! of the two blocks' sums (each step moves the other's sums by `C_kj Δ / W`, a product of
//! `B_k · B_j` entries), and moves every block's sums only for the end point: the cost of
//! two ordinary updates and a few small products, for what took many. `C_kj` comes from the
//! tables engine's statistics, or on the rows engine from one pass over the two features'
//! codes, kept for the next coupled update of the same two ([`PairTable`]): both engines
//! then take the same course up to rounding, and so make the same held-out choice.
//!
//! Where the two nearly copy each other (a temperature and the apparent temperature that
//! equals it below 10 degrees) even those alternations creep: each undoes most of the
//! other's move. So every round ends with an exact line search along its change, and every
//! [`ANDERSON_DEPTH`] rounds the round ends propose a point by Anderson extrapolation,
//! reached by the same line search ([`Line::search`]): along a line the two blocks' loss is
//! a quadratic and their total variation piecewise linear. Each move is taken only where it
//! lowers the objective. The extrapolation runs only in the fits that extrapolate their own
//! rounds ([`BlockState::with_coupled_extrapolation`]): a fit at a given penalty takes the
//! same course for `y` and `y` scaled by 1e100 (to 1e-9), which an extrapolated point,
//! moving with the rounding of nearly parallel changes, does not.

use super::update::predicted_change;
use super::*;
use crate::states::anderson::{anderson_point, ANDERSON_DEPTH};
use crate::states::line::{chain_kinks, keep_fused, line_minimum, Jump};

/// Most alternations of the two blocks' exact updates in one coupled update.
pub const COUPLED_ROUNDS: usize = 16;

/// A coupled update stops alternating once a round lowers the objective by at most this
/// share of what its first round did.
pub const COUPLED_SHARE: f64 = 1e-2;

/// Where the product of two blocks' co-occurrence comes from: the tables engine's
/// statistics, or (rows engine) the pair's own table ([`PairTable`]).
enum Cross {
    Tables(Arc<Tables>),
    Rows(Arc<PairTable>),
}

impl Cross {
    /// `out −= scale · C_{ba} Δ`: block `b`'s sums after a change `Δ` of block `a`.
    fn apply(&self, a: usize, b: usize, delta: &[f64], scale: f64, out: &mut [f64]) {
        match self {
            Cross::Tables(t) => t.apply_to(a, b, delta, scale, out),
            Cross::Rows(t) => t.apply(a, delta, scale, out),
        }
    }
}

/// The rows engine's pair table of its last coupled update, with the rows it was counted on
/// (their number and total weight): the next coupled update of the same two blocks reuses it.
#[derive(Debug, Clone)]
pub(super) struct KeptPair {
    rows: (usize, u64),
    table: Arc<PairTable>,
}

impl BlockState {
    /// Turns coupled updates off (tests measure what they save).
    #[cfg(test)]
    pub(crate) fn without_coupled(mut self) -> Self {
        self.coupled = false;
        self
    }

    /// Lets coupled updates extrapolate their round ends (Anderson), as the fits that
    /// extrapolate their own rounds do ([`crate::states::extrapolate`]'s refits). Fits at a
    /// given penalty keep the rounds' line searches alone: an extrapolated point moves with
    /// the rounding of nearly parallel changes, and such fits should take one course for `y`
    /// and `y` scaled, or for weights 2 and rows repeated.
    pub(crate) fn with_coupled_extrapolation(mut self) -> Self {
        self.coupled_anderson = true;
        self
    }

    /// Blocks `k` and `j` (two chains, every block's sums fresh) updated together: up to
    /// [`COUPLED_ROUNDS`] rounds of `k`'s exact update then `j`'s, each applied only if it
    /// lowers the objective (predicted exactly from the two blocks' sums, which follow each
    /// step through `C_kj`), until a round lowers it by at most [`COUPLED_SHARE`] of the
    /// first; each round ends with an exact line search along its change, and (in the fits
    /// that extrapolate) every [`ANDERSON_DEPTH`] rounds a move towards the Anderson point of
    /// the round ends (both `Line::search`, taken only where the objective falls). Then both blocks are set to
    /// where the rounds ended, as an ordinary update moves
    /// them, so the objective never increases. `None` where the state cannot or should not
    /// (any pair block, `k = j`, turned off, or on the rows engine no memory for the pair's
    /// table); else whether it moved.
    pub fn update_coupled(
        &mut self,
        data: &BinnedData,
        (k, j): (usize, usize),
        lambda: f64,
    ) -> Option<bool> {
        // Main effects alone: the pair stage's fits keep their course (their flat directions,
        // between a pair block and its main effects, have their own moves: the transfers).
        let chains = self.shapes.iter().all(|s| s.kind() == BlockKind::Chain);
        if k == j || !chains || !self.coupled {
            return None;
        }
        let (cross, inv_w) = match &self.backend {
            Backend::Tables { tables, .. } => {
                (Cross::Tables(Arc::clone(tables)), 1.0 / tables.total_weight)
            }
            Backend::Rows { .. } => {
                let (pair, rows) = (
                    (k.min(j), k.max(j)),
                    (data.n_samples, data.total_weight.to_bits()),
                );
                let table = match &self.kept_pair {
                    Some(t) if t.rows == rows && t.table.features() == pair => Arc::clone(&t.table),
                    _ => Arc::new(PairTable::build(data, pair.0, pair.1).ok()?),
                };
                let table = Arc::clone(&self.kept_pair.insert(KeptPair { rows, table }).table);
                (Cross::Rows(table), 1.0 / data.total_weight)
            }
        };
        let blocks = [k, j];
        let nbs = blocks.map(|b| data.features[b].n_bins());
        let shapes = blocks.map(|b| self.shape(b));
        let mut vals = [0, 1].map(|s| self.beta[blocks[s]][..nbs[s]].to_vec());
        let mut sums = [0, 1].map(|s| self.sums[blocks[s]][..nbs[s]].to_vec());
        let mut delta = vec![0.0; nbs[0].max(nbs[1])];
        let (mut first, mut moved) = (None, [false; 2]);
        let line = Line {
            cross: &cross,
            blocks,
            wn: blocks.map(|b| &self.wn[b][..]),
            chains: blocks.map(|b| self.n_chain[b]),
            shapes,
            lambda,
            inv_w,
        };
        let mut start = vals.clone();
        let mut ends: Vec<Vec<f64>> = Vec::with_capacity(ANDERSON_DEPTH + 1);
        for round in 0..COUPLED_ROUNDS {
            let mut fall = 0.0;
            if round > 0 {
                for (s, v) in start.iter_mut().zip(&vals) {
                    s.copy_from_slice(v);
                }
            }
            for side in 0..2 {
                let (a, nb, wn) = (blocks[side], nbs[side], &self.wn[blocks[side]][..nbs[side]]);
                block_step(
                    (&sums[side], &vals[side], wn),
                    (self.n_chain[a], shapes[side]),
                    lambda,
                    &mut [],
                    (&mut self.ws, &mut self.pava, &mut self.grid_ws),
                    &mut self.z,
                    &mut self.bnew,
                );
                let new = &self.bnew[..nb];
                let change = predicted_change(
                    &sums[side],
                    &vals[side],
                    wn,
                    new,
                    self.n_chain[a],
                    shapes[side],
                    lambda,
                );
                if !(change < 0.0) {
                    continue;
                }
                fall -= change;
                moved[side] = true;
                let d = &mut delta[..nb];
                d.iter_mut()
                    .zip(new)
                    .zip(&vals[side])
                    .for_each(|((d, n), v)| *d = n - v);
                sums[side]
                    .iter_mut()
                    .zip(wn)
                    .zip(d.iter())
                    .for_each(|((s, w), d)| *s -= w * d);
                cross.apply(a, blocks[1 - side], d, inv_w, &mut sums[1 - side]);
                vals[side].copy_from_slice(new);
            }
            if fall > 0.0 {
                let d = [0, 1].map(|s| -> Vec<f64> {
                    vals[s].iter().zip(&start[s]).map(|(v, s)| v - s).collect()
                });
                fall += line.search(&d, &mut vals, &mut sums);
                if self.coupled_anderson {
                    ends.push(vals.concat());
                }
                if ends.len() > ANDERSON_DEPTH {
                    if let Some(point) = anderson_point(&std::mem::take(&mut ends)) {
                        // Towards the proposed point, over the blocks' runs (a move that
                        // splits a run pays its kink at once), where the objective falls.
                        let mut d = [0, 1].map(|s| -> Vec<f64> {
                            let at = if s == 0 { 0 } else { vals[0].len() };
                            let p = &point[at..at + vals[s].len()];
                            p.iter().zip(&vals[s]).map(|(p, v)| p - v).collect()
                        });
                        for s in 0..2 {
                            let nc = line.chains[s];
                            keep_fused(&mut d[s][..nc], &vals[s][..nc], &line.wn[s][..nc]);
                        }
                        fall += line.search(&d, &mut vals, &mut sums);
                    }
                }
            }
            let done = match first {
                None => {
                    first = Some(fall);
                    fall == 0.0
                }
                Some(f0) => fall <= COUPLED_SHARE * f0,
            };
            if done {
                break;
            }
        }
        for side in 0..2 {
            if moved[side] {
                self.set_block(data, blocks[side], &vals[side]);
            }
        }
        Some(moved[0] || moved[1])
    }
}

/// What the exact line search of a coupled update's round needs ([`Line::search`]): the two
/// blocks, their co-occurrence, bin weights (`w_b / W`), chain lengths and shapes.
struct Line<'a> {
    cross: &'a Cross,
    blocks: [usize; 2],
    wn: [&'a [f64]; 2],
    chains: [usize; 2],
    shapes: [ChainShape; 2],
    lambda: f64,
    inv_w: f64,
}

impl Line<'_> {
    /// Moves the two blocks from `vals` along the direction `d` (a round's change, or the move
    /// towards an extrapolated point) to the lowest objective of the two (every other block
    /// fixed), `vals + t d`, `t ≥ 0`, and their sums with them (`sums −= (w/W) t d` for a
    /// block's own, `C t d / W` for the other's). Along the line the loss is `−b t + a t²/2` with `b = Σ d·R` and
    /// `a = Σ (w/W) d² + 2 d_kᵀ C_kj d_j / W`, the total variation a sum of `c |g + t h|`
    /// over the jumps, so [`line_minimum`] finds the exact minimiser (monotone chains capped
    /// where a jump would change sign). Returns the objective's fall (0: no move). Not for
    /// blocks with a squared jump term (`l2`) or an infinite penalty: those keep the rounds
    /// alone.
    fn search(&self, d: &[Vec<f64>; 2], vals: &mut [Vec<f64>; 2], sums: &mut [Vec<f64>; 2]) -> f64 {
        let penalty = self.shapes.map(|s| s.penalty(self.lambda));
        if self.shapes.iter().any(|s| s.l2 > 0.0) || !penalty.iter().all(|c| c.is_finite()) {
            return 0.0;
        }
        let mut b = 0.0;
        let mut a = 0.0;
        for s in 0..2 {
            b += d[s].iter().zip(&sums[s]).map(|(d, r)| d * r).sum::<f64>();
            a += d[s]
                .iter()
                .zip(self.wn[s])
                .map(|(d, w)| w * d * d)
                .sum::<f64>();
        }
        // C_jk d_k / W on block j's bins: out −= scale · C Δ with scale −1/W.
        let mut cross = vec![0.0; d[1].len()];
        self.cross.apply(
            self.blocks[0],
            self.blocks[1],
            &d[0],
            -self.inv_w,
            &mut cross,
        );
        a += 2.0 * d[1].iter().zip(&cross).map(|(d, c)| d * c).sum::<f64>();
        let mut jumps: Vec<Jump> = Vec::new();
        let mut t_max = f64::INFINITY;
        for s in 0..2 {
            let (nc, monotone) = (self.chains[s], self.shapes[s].monotone);
            chain_kinks(
                &vals[s], &d[s], nc, monotone, penalty[s], &mut jumps, &mut t_max,
            );
        }
        let t = line_minimum(a, b, &mut jumps, t_max);
        if !(t > 0.0) {
            return 0.0;
        }
        let kinks: f64 = jumps
            .iter()
            .map(|&(g, h, c)| c * ((g + t * h).abs() - g.abs()))
            .sum();
        let fall = b * t - 0.5 * a * t * t - kinks;
        if !(fall > 0.0) {
            return 0.0;
        }
        for s in 0..2 {
            let step: Vec<f64> = d[s].iter().map(|d| t * d).collect();
            vals[s].iter_mut().zip(&step).for_each(|(v, st)| *v += st);
            sums[s]
                .iter_mut()
                .zip(self.wn[s])
                .zip(&step)
                .for_each(|((r, w), st)| *r -= w * st);
            if s == 0 {
                // Block j's sums move by C_jk (t d_k) / W, the product taken for `a` above.
                let other = sums[1].iter_mut().zip(&cross);
                other.for_each(|(r, c)| *r -= t * c);
            } else {
                let other = &mut sums[0];
                self.cross
                    .apply(self.blocks[1], self.blocks[0], &step, self.inv_w, other);
            }
        }
        fall
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::binning::{bin_data, BinningParams};
    use crate::descent::fit_from;
    use crate::params::{FitParams, Penalty, Shapes};
    use crate::testing::{assert_fewer_updates, date_year_day};

    fn binned(x: &ndarray::Array2<f64>, max_bins: usize) -> BinnedData {
        let binning = BinningParams {
            max_bins: Some(max_bins),
            ..Default::default()
        };
        bin_data(x.view(), None, &binning).unwrap()
    }

    /// A date, its year and its day of the year (tables engine, greedy): with coupled
    /// updates the same optimum, certified, in fewer updates, the objective never rising;
    /// on the rows engine too.
    #[test]
    fn coupled_updates_reach_the_same_optimum_in_fewer_updates() {
        let (x, y) = date_year_day(20_000, 0.6);
        let data = binned(&x, 64);
        let tables = Arc::new(Tables::build(&data, y.view()).unwrap());
        let params = FitParams {
            lambda: Penalty::Relative(2e-4),
            tol: 1e-3,
            selection: Selection::Greedy,
            ..Default::default()
        };
        let fit = |coupled: bool| {
            let state = |beta| {
                let st = BlockState::with_tables(&data, Arc::clone(&tables), beta);
                if coupled {
                    st
                } else {
                    st.without_coupled()
                }
            };
            fit_from(&data, &params, None, state, None).unwrap()
        };
        let (coupled, plain) = (fit(true), fit(false));
        let rows = fit_from(
            &data,
            &params,
            None,
            |b| BlockState::with_start(&data, y.view(), b),
            None,
        );
        let rows = rows.unwrap();
        // The rows engine counts the pair's table itself: as few updates, the same optimum.
        assert_fewer_updates(rows.report.n_iter, plain.report.n_iter, "rows, plain");
        for f in [&coupled, &plain, &rows] {
            assert!(f.report.converged && f.report.kkt_residual <= params.tol);
        }
        assert_fewer_updates(coupled.report.n_iter, plain.report.n_iter, "coupled, plain");
        for a in [coupled.report.objective, rows.report.objective] {
            let b = plain.report.objective;
            assert!((a - b).abs() <= 1e-6 * b.abs(), "{a} vs {b}");
        }
        let o = &coupled.report.history.objective;
        assert!(o.windows(2).all(|w| w[1] <= w[0] * (1.0 + 1e-12)));
    }

    /// The line search of a coupled round, on a reading and its near copy after one exact
    /// update of each (free and monotone): the move it makes lowers the objective by what it
    /// returns (recomputed from the tables, every block's sums with it), and no point of the
    /// line from `t = 0` to three times its step is lower.
    #[test]
    fn a_coupled_line_search_finds_the_lowest_point_of_its_line() {
        let n = 4_000;
        let mut x = ndarray::Array2::zeros((n, 3));
        let mut y = ndarray::Array1::zeros(n);
        for i in 0..n {
            let u = ((i * 7919) % 4001) as f64 / 4001.0;
            x[[i, 0]] = u;
            x[[i, 1]] = u + (((i * 104_729) % 1013) as f64 / 1013.0 - 0.5) * 0.02;
            x[[i, 2]] = ((i * 31) % 97) as f64;
            y[i] = (3.0 * u).sin()
                + 0.2 * (x[[i, 2]] / 30.0).cos()
                + (((i * 65_537) % 1009) as f64 / 1009.0 - 0.5) * 0.3;
        }
        let data = binned(&x, 32);
        let tables = Arc::new(Tables::build(&data, y.view()).unwrap());
        let lambda = 2e-4;
        for monotone in [vec![], vec![1, 1, 0]] {
            let shapes = Shapes {
                monotone,
                ..Default::default()
            }
            .resolve(data.n_features());
            let mut st = BlockState::with_tables(&data, Arc::clone(&tables), data.zero_blocks());
            st.set_shapes(&shapes);
            st.update_block(&data, 0, lambda);
            st.update_block(&data, 1, lambda);
            let blocks = [0, 1];
            let cross = Cross::Tables(Arc::clone(&tables));
            let inv_w = 1.0 / tables.total_weight;
            let line = Line {
                cross: &cross,
                blocks,
                wn: blocks.map(|b| &st.wn[b][..]),
                chains: blocks.map(|b| st.n_chain[b]),
                shapes: blocks.map(|b| st.shape(b)),
                lambda,
                inv_w,
            };
            let vals0 = blocks.map(|b| st.beta[b].clone());
            let mut vals = vals0.clone();
            let mut sums = blocks.map(|b| st.sums[b].clone());
            // The direction of one more round of exact updates, as a coupled round's.
            let mut next = st.clone();
            next.update_block(&data, 0, lambda);
            next.update_block(&data, 1, lambda);
            let d = [0, 1].map(|s| -> Vec<f64> {
                let b = blocks[s];
                next.beta[b]
                    .iter()
                    .zip(&st.beta[b])
                    .map(|(n, v)| n - v)
                    .collect()
            });
            let fall = line.search(&d, &mut vals, &mut sums);
            let at = |t: f64| {
                let mut moved = st.clone();
                for s in 0..2 {
                    let v: Vec<f64> = vals0[s].iter().zip(&d[s]).map(|(v, d)| v + t * d).collect();
                    moved.set_block(&data, blocks[s], &v);
                }
                moved.sync(&data);
                moved.objective(lambda)
            };
            let before = st.objective(lambda);
            assert!(fall > 0.0, "the direction lowers the objective");
            let (i, _) = d[0]
                .iter()
                .enumerate()
                .max_by(|a, b| a.1.abs().total_cmp(&b.1.abs()))
                .unwrap();
            let t = (vals[0][i] - vals0[0][i]) / d[0][i];
            let after = at(t);
            assert!(
                (before - after - fall).abs() <= 1e-9 * before,
                "{before} - {after} vs {fall}"
            );
            for i in 0..=60 {
                let other = at(3.0 * t * f64::from(i) / 60.0);
                assert!(
                    other >= after - 1e-12 * after,
                    "{i}/20 of the step: {other} < {after}"
                );
            }
            // The sums it leaves are those of the point it moved to.
            let mut exact = st.clone();
            for s in 0..2 {
                exact.set_block(&data, blocks[s], &vals[s]);
            }
            exact.sync(&data);
            for s in 0..2 {
                for (a, b) in sums[s].iter().zip(&exact.sums[blocks[s]]) {
                    assert!((a - b).abs() <= 1e-12, "{a} vs {b}");
                }
            }
        }
    }

    /// One coupled update of two correlated blocks, free, monotone or with penalty factors
    /// and squared jumps: its loss and sums are
    /// those recomputed from the tables, and it ends no higher than one exact update of each
    /// (its own first round); monotone chains stay monotone. The rows engine makes the same
    /// update; one block makes none.
    #[test]
    fn a_coupled_update_is_exact_and_no_worse_than_one_round() {
        let (x, y) = date_year_day(5_000, 0.3);
        let data = binned(&x, 32);
        let tables = Arc::new(Tables::build(&data, y.view()).unwrap());
        let lambda = 1e-3;
        for shapes in [
            Shapes::default(),
            Shapes {
                monotone: vec![1, 1, 0, 0],
                ..Default::default()
            },
            Shapes {
                penalty_factor: vec![1.0, 2.0, 1.0, 0.5],
                l2: 0.5,
                ..Default::default()
            },
        ] {
            let resolved = shapes.resolve(data.n_features());
            let start = || {
                let mut st =
                    BlockState::with_tables(&data, Arc::clone(&tables), data.zero_blocks());
                st.set_shapes(&resolved);
                st
            };
            let mut one_round = start();
            one_round.update_block(&data, 0, lambda);
            one_round.update_block(&data, 1, lambda);
            let mut coupled = start();
            let before = coupled.objective(lambda);
            assert_eq!(coupled.update_coupled(&data, (0, 1), lambda), Some(true));
            let after = coupled.objective(lambda);
            assert!(after < before);
            assert!(after <= one_round.objective(lambda) + 1e-14 * after.abs());
            let mut exact = coupled.clone();
            exact.sync(&data);
            assert!((exact.loss - coupled.loss).abs() <= 1e-12 * exact.loss.abs());
            for (s, e) in coupled.sums.iter().zip(&exact.sums) {
                for (a, b) in s.iter().zip(e) {
                    assert!((a - b).abs() <= 1e-12, "{a} vs {b}");
                }
            }
            for (k, &c) in shapes.monotone.iter().enumerate() {
                let chain = &coupled.beta[k][..data.features[k].n_chain()];
                if c == 1 {
                    assert!(chain.windows(2).all(|w| w[1] >= w[0] - 1e-12), "block {k}");
                }
            }
            assert_eq!(coupled.update_coupled(&data, (2, 2), lambda), None);
        }
        // The rows engine: the same update from the pair's table counted over the rows.
        let mut on_tables = BlockState::with_tables(&data, Arc::clone(&tables), data.zero_blocks());
        let mut rows = BlockState::new(&data, y.view());
        rows.refresh_all_sums(&data);
        assert_eq!(rows.update_coupled(&data, (0, 1), lambda), Some(true));
        assert_eq!(on_tables.update_coupled(&data, (0, 1), lambda), Some(true));
        let (a, b) = (rows.objective(lambda), on_tables.objective(lambda));
        assert!((a - b).abs() <= 1e-12 * b.abs(), "{a} vs {b}");
        for (r, t) in rows.beta.iter().zip(&on_tables.beta) {
            for (a, b) in r.iter().zip(t) {
                assert!((a - b).abs() <= 1e-9, "{a} vs {b}");
            }
        }
    }
}
