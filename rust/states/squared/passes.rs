//! The squared-loss state's passes over the rows and the setting of a block: a block's new
//! values moved into the residual (or, on the tables engine, into every block's sums), the
//! pass fused with another block's sums, the move along a direction, and the parallel
//! residual update in fixed row chunks.

use super::*;

/// One chunk of [`update_chunks`] (no shift) with the bin sums of another block accumulated
/// from the new residual in the same pass (`out` zeroed, not yet scaled by `1/W`); returns the
/// chunk's `Σ v r²`.
fn resid_and_sums<C1: Code, C2: Code>(
    resid: &mut [f64],
    vresid: &mut [f64],
    weights: Option<&[f64]>,
    (c1, delta): (&[C1], &[f64]),
    (c2, out): (&[C2], &mut [f64]),
) -> f64 {
    let mut s = 0.0;
    match weights {
        None => {
            for ((ri, &a), &b) in resid.iter_mut().zip(c1).zip(c2) {
                *ri -= delta[a.idx()] + 0.0;
                s += *ri * *ri;
                out[b.idx()] += *ri;
            }
        }
        Some(v) => {
            let rows = resid
                .iter_mut()
                .zip(vresid.iter_mut())
                .zip(c1.iter().zip(c2));
            for (((ri, vri), (&a, &b)), &w) in rows.zip(v) {
                *ri -= delta[a.idx()] + 0.0;
                *vri = w * *ri;
                s += *vri * *ri;
                out[b.idx()] += *vri;
            }
        }
    }
    s
}

impl BlockState {
    /// Sets block `k` to `values` (centred here, the mean going into the intercept) and
    /// updates the residual. Leaves every block's sums stale.
    pub fn set_block(&mut self, data: &BinnedData, k: usize, values: &[f64]) {
        self.set_block_then_sums(data, k, values, None);
    }

    /// [`BlockState::set_block`], then block `then`'s sums made fresh (if given): on the rows
    /// engine with one chunk of rows, in the residual's own pass ([`resid_and_sums`]; the
    /// same numbers as a separate [`bin_sums_into`]).
    pub(super) fn set_block_then_sums(
        &mut self,
        data: &BinnedData,
        k: usize,
        values: &[f64],
        then: Option<usize>,
    ) {
        let nb = values.len();
        let beta = &self.beta[k];
        for b in 0..nb {
            self.delta[b] = values[b] - beta[b];
        }
        let mean: f64 = values.iter().zip(&self.wn[k]).map(|(b, w)| b * w).sum();
        self.intercept += mean;
        let beta = &mut self.beta[k];
        for b in 0..nb {
            beta[b] = values[b] - mean;
        }
        let shape = self.shapes.get(k).copied().unwrap_or_default();
        self.tv[k] = block_tv(beta, self.n_chain[k], shape);
        self.smooth[k] = block_smooth(beta, self.n_chain[k], shape);
        let delta = std::mem::take(&mut self.delta);
        if let Backend::Tables { tables, since_sync } = &mut self.backend {
            // Block k's sums are fresh: Δloss = −Σ_b Δ_b R_kb + ½ Σ_b (w_b/W) Δ_b².
            let (d, r, wn) = (&delta[..nb], &self.sums[k], &self.wn[k]);
            self.loss += d
                .iter()
                .zip(r)
                .zip(wn)
                .map(|((d, r), w)| -d * r + 0.5 * w * d * d)
                .sum::<f64>();
            self.sums[k]
                .iter_mut()
                .zip(wn)
                .zip(d)
                .for_each(|((s, w), d)| *s -= w * d);
            tables.apply(k, d, 1.0 / tables.total_weight, &mut self.sums);
            *since_sync += 1;
            if *since_sync >= SYNC_EVERY {
                self.delta = delta;
                self.sync(data);
                return;
            }
        } else if let Some(k2) = then.filter(|_| data.n_samples <= ROW_CHUNK) {
            self.update_resid_with_sums(data, (k, &delta[..nb]), k2);
            self.delta = delta;
            return;
        } else {
            let table = if then.is_none() {
                self.table_for(data, k)
            } else {
                None
            };
            self.update_resid(data, Some((k, &delta[..nb])), 0.0);
            if let Some(t) = table {
                // Every block's sums follow: R_j −= C_jk Δ / W, block k's own by w_b Δ_b / W.
                let d = &delta[..nb];
                let own = self.sums[k].iter_mut().zip(&self.wn[k]).zip(d);
                own.for_each(|((s, w), d)| *s -= w * d);
                t.apply(k, d, 1.0 / data.total_weight, &mut self.sums);
                self.fresh_all = true;
                self.followed.since_refresh += 1;
            }
        }
        self.delta = delta;
        if let Some(k2) = then {
            self.refresh_sums(data, k2);
        }
    }

    /// `resid_i −= delta[code_k(i)]` fused with the loss and block `k2`'s sums, in one pass
    /// (rows engine, at most [`ROW_CHUNK`] rows: [`BlockState::update_resid`]'s one chunk).
    fn update_resid_with_sums(
        &mut self,
        data: &BinnedData,
        (k, delta): (usize, &[f64]),
        k2: usize,
    ) {
        let weights = data.weights.as_deref();
        let Some((resid, vresid, partials)) = self.backend.rows_mut() else {
            return;
        };
        self.fresh_all = false;
        let out = &mut self.sums[k2];
        out.iter_mut().for_each(|o| *o = 0.0);
        let (f1, f2) = (&data.features[k], &data.features[k2]);
        partials[0] = with_codes!(&f1.codes, c1 => with_codes!(&f2.codes, c2 => {
            resid_and_sums(resid, vresid, weights, (c1, delta), (c2, out))
        }));
        let inv_w = 1.0 / data.total_weight;
        out.iter_mut().for_each(|o| *o *= inv_w);
        self.loss = 0.5 * partials.iter().sum::<f64>() / data.total_weight;
    }

    /// Moves the state by `t` along a direction in place: the intercept by `t · dc`, every
    /// block by `t · d_k`, and, by `along`, every row's prediction by `t · u_i` (rows engine:
    /// `u` the direction's change of the predictions, `dc + Σ_k d_k[code_k(i)]`, the objective
    /// at `lambda` recomputed from the new residual) or every bin's sum by `t` times the
    /// direction's (tables engine: the loss from [`BlockState::tables_line`]'s quadratic), if
    /// the objective is lower; otherwise nothing moves. Every block's sums are fresh
    /// afterwards either way. Returns whether the state moved.
    pub(crate) fn move_along(
        &mut self,
        data: &BinnedData,
        (t, dc, d, along): (f64, f64, &[Vec<f64>], &Along),
        lambda: f64,
    ) -> bool {
        let beta: Vec<Vec<f64>> = self
            .beta
            .iter()
            .zip(d)
            .map(|(b, dk)| b.iter().zip(dk).map(|(x, y)| x + t * y).collect())
            .collect();
        let tv: Vec<f64> = beta
            .iter()
            .enumerate()
            .map(|(k, b)| block_tv(b, self.n_chain[k], self.shape(k)))
            .collect();
        let smooth: Vec<f64> = beta
            .iter()
            .enumerate()
            .map(|(k, b)| block_smooth(b, self.n_chain[k], self.shape(k)))
            .collect();
        let penalty = lambda * tv.iter().sum::<f64>() + smooth.iter().sum::<f64>();
        let new_resid: Vec<f64> = match (along, &self.backend) {
            (Along::Rows(u), Backend::Rows { resid, .. }) => {
                resid.iter().zip(u).map(|(r, u)| r - t * u).collect()
            }
            (Along::Tables { a, b, cross }, Backend::Tables { tables, .. }) => {
                let loss = self.loss - b * t + 0.5 * a * t * t;
                if !(loss + penalty < self.objective(lambda)) {
                    return false;
                }
                let w = tables.total_weight;
                for ((sums, wn), (dk, ck)) in
                    self.sums.iter_mut().zip(&self.wn).zip(d.iter().zip(cross))
                {
                    for (((s, wb), x), c) in sums.iter_mut().zip(wn).zip(dk).zip(ck) {
                        *s -= t * (wb * (dc + x) + c / w);
                    }
                }
                (self.beta, self.tv, self.smooth, self.loss) = (beta, tv, smooth, loss);
                self.intercept += t * dc;
                return true;
            }
            _ => return false,
        };
        let mut new_vresid = if data.weights.is_some() {
            vec![0.0; data.n_samples]
        } else {
            Vec::new()
        };
        let loss = weighted_resid_loss(data, &new_resid, &mut new_vresid);
        let moved = loss + penalty < self.objective(lambda);
        if moved {
            let Backend::Rows { resid, vresid, .. } = &mut self.backend else {
                unreachable!("checked above")
            };
            (*resid, *vresid) = (new_resid, new_vresid);
            (self.beta, self.tv, self.smooth, self.loss) = (beta, tv, smooth, loss);
            self.intercept += t * dc;
        }
        self.fresh_all = false;
        self.refresh_all_sums(data);
        moved
    }

    /// `resid_i −= delta[code_k(i)] + shift` (block `k`, or only the shift), fused with the loss.
    pub(super) fn update_resid(
        &mut self,
        data: &BinnedData,
        block: Option<(usize, &[f64])>,
        shift: f64,
    ) {
        let weights = data.weights.as_deref();
        let Some((resid, vresid, partials)) = self.backend.rows_mut() else {
            return;
        };
        match block {
            Some((k, delta)) => {
                with_codes!(&data.features[k].codes, c => {
                    update_chunks(resid, vresid, weights, partials, |i0, i| delta[c[i0 + i].idx()] + shift)
                });
                self.fresh_all = false;
            }
            None => update_chunks(resid, vresid, weights, partials, |_, _| shift),
        }
        self.loss = 0.5 * partials.iter().sum::<f64>() / data.total_weight;
    }
}

/// Parallel over fixed row chunks: `r_i −= step(chunk_start, i_in_chunk)`, `vr_i = v_i r_i`,
/// and each chunk's `Σ v r²` into `partials` (summed in order afterwards: deterministic).
fn update_chunks<F>(
    resid: &mut [f64],
    vresid: &mut [f64],
    weights: Option<&[f64]>,
    partials: &mut [f64],
    step: F,
) where
    F: Fn(usize, usize) -> f64 + Sync,
{
    if resid.len() <= ROW_CHUNK {
        // One chunk: no thread hand-off.
        let mut s = 0.0;
        match weights {
            None => resid.iter_mut().enumerate().for_each(|(i, ri)| {
                *ri -= step(0, i);
                s += *ri * *ri;
            }),
            Some(v) => resid
                .iter_mut()
                .zip(vresid.iter_mut())
                .enumerate()
                .for_each(|(i, (ri, vri))| {
                    *ri -= step(0, i);
                    *vri = v[i] * *ri;
                    s += *vri * *ri;
                }),
        }
        partials[0] = s;
        return;
    }
    match weights {
        None => resid
            .par_chunks_mut(ROW_CHUNK)
            .zip(partials.par_iter_mut())
            .enumerate()
            .with_min_len(crate::descent::pace::min_len())
            .for_each(|(ci, (r, part))| {
                let i0 = ci * ROW_CHUNK;
                let mut s = 0.0;
                for (i, ri) in r.iter_mut().enumerate() {
                    *ri -= step(i0, i);
                    s += *ri * *ri;
                }
                *part = s;
            }),
        Some(v) => resid
            .par_chunks_mut(ROW_CHUNK)
            .zip(vresid.par_chunks_mut(ROW_CHUNK))
            .zip(partials.par_iter_mut())
            .enumerate()
            .with_min_len(crate::descent::pace::min_len())
            .for_each(|(ci, ((r, vr), part))| {
                let i0 = ci * ROW_CHUNK;
                let mut s = 0.0;
                for (i, (ri, vri)) in r.iter_mut().zip(vr.iter_mut()).enumerate() {
                    *ri -= step(i0, i);
                    *vri = v[i0 + i] * *ri;
                    s += *vri * *ri;
                }
                *part = s;
            }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::binning::{bin_data, BinningParams};
    use ndarray::{Array1, Array2};

    /// The residual pass that also refreshes another block's sums gives the numbers of the
    /// two passes it replaces, with and without sample weights.
    #[test]
    fn fused_residual_and_sums_pass_is_the_two_passes() {
        let (n, p) = (700, 3);
        let mut unif = crate::testing::lcg(99);
        let x = Array2::from_shape_fn((n, p), |_| unif());
        let y = Array1::from_shape_fn(n, |i| (6.0 * x[[i, 0]]).sin() + x[[i, 2]] + unif());
        let weights: Vec<f64> = (0..n)
            .map(|i| 0.5 + f64::from(u32::try_from(i % 3).unwrap()))
            .collect();
        for w in [None, Some(&weights[..])] {
            let params = BinningParams {
                max_bins: Some(300),
                ..Default::default()
            };
            let data = bin_data(x.view(), w, &params).unwrap();
            let mut a = BlockState::new(&data, y.view());
            let values: Vec<f64> = (0..data.features[0].n_bins())
                .map(|b| (b as f64 * 0.37).sin())
                .collect();
            let mut b = a.clone();
            a.set_block_then_sums(&data, 0, &values, Some(2));
            b.set_block(&data, 0, &values);
            b.refresh_sums(&data, 2);
            assert_eq!(a.sums[2], b.sums[2]);
            assert_eq!(a.loss, b.loss);
            assert_eq!(a.intercept, b.intercept);
            assert_eq!(a.beta, b.beta);
            assert!(a.sums[2].iter().any(|&s| s != 0.0));
        }
    }
}
