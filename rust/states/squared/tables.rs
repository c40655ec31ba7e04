//! The squared-loss state's co-occurrence tables: the tables engine's loss along a
//! direction, and the rows engine's block tables ([`BlockTable`]) that let a block update
//! carry every block's sums.

use super::*;

impl BlockState {
    /// On the tables engine, the loss along the blocks' direction `d` (one value per bin) and
    /// the intercept's `dc`: `(a, b)` with `loss(β + t d, c + t dc) = loss − b t + a t²/2`,
    /// from the fresh sums (`b = dc Σ_b R_0b + Σ_k d_k · R_k`) and the co-occurrence tables
    /// (`a W = dc² W + 2 dc Σ_k w_k · d_k + Σ_k w_k · d_k² + Σ_{j≠k} d_j C_jk d_k`), with the
    /// products `Σ_{k≠j} C_jk d_k` that [`BlockState::move_along`] moves the sums by; `None`
    /// on the rows engine.
    pub(crate) fn tables_line(&self, d: &[Vec<f64>], dc: f64) -> Option<Along> {
        let Backend::Tables { tables, .. } = &self.backend else {
            return None;
        };
        let dot = |x: &[f64], y: &[f64]| x.iter().zip(y).map(|(a, b)| a * b).sum::<f64>();
        let along_sums: f64 = d.iter().zip(&self.sums).map(|(dk, r)| dot(dk, r)).sum();
        let b = dc * self.sums.first().map_or(0.0, |r| r.iter().sum::<f64>()) + along_sums;
        let cross = tables.cross_products(d);
        let w = tables.total_weight;
        let mut a = dc * dc;
        for ((dk, wn), ck) in d.iter().zip(&self.wn).zip(&cross) {
            a += 2.0 * dc * dot(dk, wn);
            a += dk
                .iter()
                .zip(wn)
                .zip(ck)
                .map(|((x, wb), c)| x * (wb * x + c / w))
                .sum::<f64>();
        }
        Some(Along::Tables { a, b, cross })
    }

    /// The statistics of the blocks `ws` (increasing) alone with every other block and the
    /// intercept fixed (tables engine; `None` on the rows engine): the problem whose target
    /// is the residual plus their predictions, `y − c − Σ_{k ∉ ws} β_k` (as
    /// [`BlockState::working_target`] on the rows), from the fresh sums and the tables of
    /// `ws` alone (`O((Σ_{k∈ws} B_k)²)`, no pass over the other blocks). With `g` the blocks'
    /// predictions and `r` the residual, the target is `t = r + g`: its bin sums are
    /// `W R_j + w_j β_j + Σ_{k∈ws, k≠j} C_jk β_k`, its mean `Σ v r / W + Σ_k w_k · β_k / W`
    /// and `Σ v t² = Σ v r² + 2 W Σ_k β_k · R_k + Σ_k w_k · β_k² + Σ_{j≠k} β_j C_jk β_k`.
    pub(crate) fn working_tables(&self, ws: &[usize]) -> Option<Tables> {
        let Backend::Tables { tables, .. } = &self.backend else {
            return None;
        };
        let w = tables.total_weight;
        let dot = |x: &[f64], y: &[f64]| x.iter().zip(y).map(|(a, b)| a * b).sum::<f64>();
        let mut sub = tables.restrict(ws);
        let beta: Vec<Vec<f64>> = ws.iter().map(|&k| self.beta[k].clone()).collect();
        let cross = sub.cross_products(&beta);
        let r_mean: f64 = self.sums.first().map_or(0.0, |s| s.iter().sum());
        let mut sum = w * r_mean;
        let mut squares = 2.0 * w * self.loss;
        let mut ysum = Vec::with_capacity(ws.len());
        for ((&k, b), c) in ws.iter().zip(&beta).zip(&cross) {
            let (r, wk) = (&self.sums[k], &tables.weights[k]);
            sum += dot(wk, b);
            squares += 2.0 * w * dot(b, r)
                + b.iter().zip(wk).map(|(x, v)| v * x * x).sum::<f64>()
                + dot(b, c);
            ysum.push(
                r.iter()
                    .zip(wk)
                    .zip(b.iter().zip(c))
                    .map(|((r, v), (x, c))| w * r + v * x + c)
                    .collect::<Vec<f64>>(),
            );
        }
        let mean = sum / w;
        // Centred: the sums of `t − t̄` and `Σ v (t − t̄)²`.
        for (y, &k) in ysum.iter_mut().zip(ws) {
            y.iter_mut()
                .zip(&tables.weights[k])
                .for_each(|(s, v)| *s -= mean * v);
        }
        sub.ysum = ysum;
        sub.y_mean = mean;
        sub.yy = (squares - w * mean * mean).max(0.0);
        Some(sub)
    }

    /// Block `k`'s table when its update can carry every block's sums ([`Followed`]): rows
    /// engine, tables on, sums fresh and fewer than [`SYNC_EVERY`] updates carried since
    /// they were last summed over the rows. Built at the block's first update if it pays and
    /// fits in [`BLOCK_TABLE_BYTES`].
    pub(super) fn table_for(&mut self, data: &BinnedData, k: usize) -> Option<Arc<BlockTable>> {
        let f = &mut self.followed;
        let rows = matches!(self.backend, Backend::Rows { .. });
        if !(f.on && rows && self.fresh_all && f.since_refresh < SYNC_EVERY) {
            return None;
        }
        if f.tables.len() != data.n_features() {
            f.tables = vec![None; data.n_features()];
        }
        if f.tables[k].is_none() {
            let bytes = BlockTable::bytes(data, k);
            let pays = BlockTable::pays(data, k, BLOCK_TABLE_RATIO);
            let table = (pays && f.bytes + bytes <= BLOCK_TABLE_BYTES)
                .then(|| BlockTable::build(data, k).ok().map(Arc::new))
                .flatten();
            f.bytes += if table.is_some() { bytes } else { 0 };
            f.tables[k] = Some(table);
        }
        f.tables[k].clone().flatten()
    }

    /// Lets greedy block updates carry every block's sums through the blocks' tables where
    /// that is cheaper than summing over the rows (rows engine; see [`BlockTable`]).
    pub fn follow_sums(&mut self) {
        self.followed.on = true;
    }

    /// Shares the block tables built by `other`, a state on the same data and weights.
    pub(crate) fn share_tables(&mut self, other: &BlockState) {
        self.followed.on = other.followed.on;
        self.followed.tables.clone_from(&other.followed.tables);
        self.followed.bytes = other.followed.bytes;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::binning::{bin_data, BinningParams};
    use ndarray::{Array1, Array2};

    /// Few-level features next to many-level ones: the few-level blocks' tables pay.
    fn mixed_data(n: usize, weights: Option<&[f64]>) -> (BinnedData, Array1<f64>) {
        let mut unif = crate::testing::lcg(7);
        let levels = [3.0, 12.0, 0.0, 40.0, 5.0];
        let x = Array2::from_shape_fn((n, levels.len()), |(_, j)| {
            let u = unif();
            if levels[j] > 0.0 {
                (u * levels[j]).floor()
            } else {
                u
            }
        });
        // Feature 4 nearly repeats feature 1: correlated blocks.
        let mut x = x;
        for i in 0..n {
            x[[i, 4]] = (x[[i, 1]] / 3.0).floor();
        }
        let y = Array1::from_shape_fn(n, |i| {
            x[[i, 0]] - 0.1 * x[[i, 1]] + (5.0 * x[[i, 2]]).sin() + 0.05 * x[[i, 3]] + unif()
        });
        let params = BinningParams {
            max_bins: Some(200),
            ..Default::default()
        };
        (bin_data(x.view(), weights, &params).unwrap(), y)
    }

    /// `body` on [`mixed_data`] of `n` rows without sample weights, then with the weights
    /// `pattern[i % 3]`.
    fn mixed_data_both_ways(
        n: usize,
        pattern: [f64; 3],
        mut body: impl FnMut(BinnedData, Array1<f64>),
    ) {
        let weights: Vec<f64> = (0..n).map(|i| pattern[i % 3]).collect();
        for w in [None, Some(&weights[..])] {
            let (data, y) = mixed_data(n, w);
            body(data, y);
        }
    }

    /// The statistics of a working set of blocks alone ([`BlockState::working_tables`], from
    /// a warm tables state) are those built over the rows from the target
    /// `y − c − Σ_{k ∉ ws} β_k` (to 1e-9), with and without sample weights: an independent
    /// pass over the rows checks the algebra on the sums.
    #[test]
    fn working_tables_are_those_built_from_the_rows() {
        mixed_data_both_ways(2_000, [0.5, 1.0, 2.5], |data, y| {
            let mut wave = crate::testing::lcg(3);
            let beta: Vec<Vec<f64>> = data
                .features
                .iter()
                .map(|f| (0..f.n_bins()).map(|_| wave() - 0.5).collect())
                .collect();
            let tables = Arc::new(Tables::build(&data, y.view()).unwrap());
            let st = BlockState::with_tables(&data, tables, beta);
            for ws in [vec![0, 1], vec![1, 3, 4], vec![0, 2, 3, 4]] {
                let sub = st.working_tables(&ws).unwrap();
                let mut target = y.to_vec();
                for (k, f) in data.features.iter().enumerate() {
                    if ws.contains(&k) {
                        continue;
                    }
                    for (i, t) in target.iter_mut().enumerate() {
                        *t -= st.beta[k][f.codes.get(i)];
                    }
                }
                target.iter_mut().for_each(|t| *t -= st.intercept);
                let alone = BinnedData {
                    features: ws.iter().map(|&k| data.features[k].clone()).collect(),
                    ..data.clone()
                };
                let built = Tables::build(&alone, ArrayView1::from(&target[..])).unwrap();
                let close = |a: f64, b: f64, what: &str| {
                    assert!(
                        (a - b).abs() <= 1e-9 * (1.0 + b.abs()),
                        "{ws:?} {what}: {a} vs {b}"
                    );
                };
                close(sub.y_mean, built.y_mean, "mean");
                close(sub.yy, built.yy, "sum of squares");
                for (a, b) in sub.ysum.iter().flatten().zip(built.ysum.iter().flatten()) {
                    close(*a, *b, "bin sums");
                }
                assert_eq!(sub.weights, built.weights);
                assert_eq!(sub.pairs().unwrap(), built.pairs().unwrap());
            }
        });
    }

    /// Block updates that carry every block's sums through the block tables leave the sums
    /// a fresh pass over the residual gives (to 1e-12), with and without sample weights,
    /// and across the periodic exact refresh.
    #[test]
    fn sums_carried_by_block_tables_are_the_summed_ones() {
        mixed_data_both_ways(3_000, [0.0, 1.0, 2.5], |data, y| {
            let paying: Vec<usize> = (0..data.n_features())
                .filter(|&k| BlockTable::pays(&data, k, BLOCK_TABLE_RATIO))
                .collect();
            // Every block pays here, feature 2 (200 bins) too: its own part is never read.
            assert_eq!(paying.len(), data.n_features(), "{paying:?}");
            let mut st = BlockState::new(&data, y.view());
            st.follow_sums();
            let lambda = 1e-3;
            let mut carried = 0;
            for it in 0..2 * SYNC_EVERY + 7 {
                let k = [0, 4, 1, 0, 3, 2, 4][it % 7];
                st.refresh_sums(&data, k);
                let before = st.followed.since_refresh;
                st.update_block(&data, k, lambda);
                carried += usize::from(st.followed.since_refresh > before);
                if !st.fresh_all {
                    st.refresh_all_sums(&data);
                }
                let mut exact = st.clone();
                exact.fresh_all = false;
                exact.refresh_all_sums(&data);
                for (a, b) in st.sums.iter().flatten().zip(exact.sums.iter().flatten()) {
                    assert!((a - b).abs() <= 1e-12, "update {it}: {a} vs {b}");
                }
            }
            // Most updates were carried, the others summed over the rows.
            assert!(carried > SYNC_EVERY, "{carried}");
        });
    }

    /// A greedy fit whose sums the block tables carry is the fit that sums every block over
    /// the rows after each update (to rounding), and the same numbers on one thread or two.
    #[test]
    fn greedy_fits_with_block_tables_match_and_do_not_depend_on_threads() {
        use crate::params::{FitParams, Penalty};
        let (data, y) = mixed_data(4_000, None);
        let params = FitParams {
            lambda: Penalty::Relative(2e-3),
            selection: Selection::Greedy,
            tol: 1e-6,
            ..Default::default()
        };
        let fit = |follow: bool| {
            let mut st = BlockState::new(&data, y.view());
            let lm = st.start_flat(&data);
            if follow {
                st.follow_sums();
            } else {
                // Keep every block's sums summed over the rows: no table pays.
                st.followed.tables = vec![Some(None); data.n_features()];
            }
            let leg = crate::descent::Leg::now(2e-3 * lm, lm);
            crate::descent::descend(&data, &params, &mut st, leg)
        };
        let on_pool = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            pool.install(|| fit(true))
        };
        let (one, two, rows) = (on_pool(1), on_pool(2), fit(false));
        assert_eq!(one.values, two.values);
        assert_eq!(one.report.n_iter, two.report.n_iter);
        assert!(
            one.report.converged && rows.report.converged,
            "{:?} {} {:?} {} {}",
            one.report.stop,
            one.report.kkt_residual,
            rows.report.stop,
            rows.report.kkt_residual,
            rows.report.n_iter
        );
        let rel = (one.report.objective - rows.report.objective).abs() / rows.report.objective;
        assert!(rel < 1e-9, "{rel}");
        for (a, b) in one
            .values
            .iter()
            .flatten()
            .zip(rows.values.iter().flatten())
        {
            assert!((a - b).abs() < 1e-5, "{a} vs {b}");
        }
    }

    /// Greedy steps take two blocks at a time only where the data are large enough
    /// ([`PAIR_MIN_WORK`]) and the steepest block's update would not carry every block's sums
    /// through its table.
    #[test]
    fn greedy_pairs_pay_only_where_no_table_carries_the_sums() {
        use crate::descent::DescentState;
        // 3 levels, 12 levels, and 5,000 distinct values in up to 4,096 bins.
        let n = 5_000;
        let x = Array2::from_shape_fn((n, 3), |(i, j)| match j {
            0 => (i % 3) as f64,
            1 => ((i * 7) % 12) as f64,
            _ => ((i * 7_919) % n) as f64,
        });
        let y = Array1::from_shape_fn(n, |i| x[[i, 0]] + 0.01 * x[[i, 2]].sqrt());
        let params = BinningParams {
            max_bins: Some(4096),
            ..Default::default()
        };
        let data = bin_data(x.view(), None, &params).unwrap();
        let p = data.n_features();
        let mut st = BlockState::new(&data, y.view());
        assert!(BlockState::pairs_pay(&st, &data));
        // Sums summed over the rows after every update: pairs pay for every block.
        assert!((0..p).all(|k| st.greedy_pair_pays(&data, (k, (k + 1) % p))));
        // Sums carried through the blocks' tables: not for a block whose table carries them.
        st.follow_sums();
        let pays: Vec<bool> = (0..p)
            .map(|k| st.greedy_pair_pays(&data, (k, (k + 1) % p)))
            .collect();
        assert!(
            pays.iter().any(|&b| !b) && pays.iter().any(|&b| b),
            "{pays:?}"
        );
        for (k, &b) in pays.iter().enumerate() {
            assert_eq!(
                b,
                st.followed.tables[k].clone().flatten().is_none(),
                "block {k}"
            );
        }
        let (small, ys) = mixed_data(1_000, None);
        let st = &mut BlockState::new(&small, ys.view());
        assert!(
            (0..small.n_features()).all(|k| !st.greedy_pair_pays(&small, (k, (k + 1) % p))),
            "1,000 rows and 200 bins: too small"
        );
    }
}
