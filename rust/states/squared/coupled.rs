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

use super::update::predicted_change;
use super::*;

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

    /// Blocks `k` and `j` (two chains, every block's sums fresh) updated together: up to
    /// [`COUPLED_ROUNDS`] rounds of `k`'s exact update then `j`'s, each applied only if it
    /// lowers the objective (predicted exactly from the two blocks' sums, which follow each
    /// step through `C_kj`), until a round lowers it by at most [`COUPLED_SHARE`] of the
    /// first. Then both blocks are set to where the rounds ended, as an ordinary update moves
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
        for _ in 0..COUPLED_ROUNDS {
            let mut fall = 0.0;
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
