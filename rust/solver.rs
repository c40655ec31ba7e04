//! Greedy block coordinate descent (GBCD) for FAST (DESIGN §2–3).
//!
//! Minimises `F(c, β) = 1/(2W) Σ_i v_i (y_i − c − Σ_j β_j[code_j(i)])² + λ_f Σ_j Σ_b |β_{j,b+1} − β_{j,b}|`.
//! Each iteration: bin sums of the residual for every feature (one pass per feature,
//! parallel over features) → BGS-s scores and the KKT residual → the chosen block's
//! weighted FLSA ([`crate::flsa`]) → residual update (one pass over the rows). The intercept
//! starts at the weighted mean of `y` and every block starts at 0; after each update the
//! block's weighted mean moves into the intercept, so every shape function stays centred.
//!
//! Stops when the KKT residual `max d / λ_f ≤ tol` (unscaled `max d` when `λ_f = 0`), at
//! `max_iter` block updates, at the time budget, or when a callback asks to.

use std::time::Instant;

use ndarray::{ArrayView1, ArrayView2};
use rayon::prelude::*;

use crate::binning::{bin_data, BinnedData, Code};
use crate::error::{FastError, Result};
use crate::flsa::{flsa_weighted_unchecked, FlsaWorkspace};
use crate::model::AdditiveModel;
use crate::params::{FitParams, Penalty, Selection};
use crate::selection::{all_bin_sums, bin_sums_into, block_score, select, BlockScore, PARALLEL_THRESHOLD};
use crate::with_codes;

/// Rows per chunk of the parallel residual update (fixed, so results do not depend on the
/// number of threads).
const ROW_CHUNK: usize = 1 << 15;

/// One entry per block update.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct History {
    /// Objective after the update.
    pub objective: Vec<f64>,
    /// The block (feature) updated.
    pub feature: Vec<usize>,
    /// Seconds since the start of the optimisation.
    pub time: Vec<f64>,
}

/// Why the solver stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// KKT residual ≤ tol.
    Converged,
    /// `max_iter` block updates done.
    MaxIter,
    /// Time budget used up.
    MaxTime,
    /// The callback asked to stop.
    Callback,
    /// No block can move but the KKT residual is still above `tol` (rounding level).
    Stalled,
}

/// How the optimisation went. Not converging is not an error.
#[derive(Debug, Clone, PartialEq)]
pub struct FitReport {
    /// Block updates done.
    pub n_iter: usize,
    /// Whether the KKT residual reached `tol`.
    pub converged: bool,
    /// Final KKT residual (`max d / λ_f`, or `max d` when `λ_f = 0`).
    pub kkt_residual: f64,
    /// Final objective `F`.
    pub objective: f64,
    /// Why it stopped.
    pub stop: StopReason,
    /// One entry per block update.
    pub history: History,
}

/// Progress passed to a callback before each block update.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Progress {
    /// Block updates so far.
    pub n_iter: usize,
    /// Current objective.
    pub objective: f64,
    /// Current KKT residual.
    pub kkt_residual: f64,
    /// Seconds since the start.
    pub elapsed: f64,
}

/// A callback: return `false` to stop (the model reached so far is kept).
pub type Callback<'a> = &'a mut (dyn FnMut(&Progress) -> bool + Send);

/// The result of a fit on binned data.
#[derive(Debug, Clone, PartialEq)]
pub struct BinnedFit {
    /// The intercept `c`.
    pub intercept: f64,
    /// `β_j`, one value per bin, centred (`Σ_b w_b β_b = 0`).
    pub values: Vec<Vec<f64>>,
    /// The `λ_f` used.
    pub lambda_f: f64,
    /// The smallest `λ_f` whose fit is constant.
    pub lambda_max: f64,
    /// How it went.
    pub report: FitReport,
}

/// The result of a fit on a feature matrix.
#[derive(Debug, Clone, PartialEq)]
pub struct Fit {
    /// The fitted model (cut points and values).
    pub model: AdditiveModel,
    /// Total sample weight of the training rows in each bin.
    pub bin_weights: Vec<Vec<f64>>,
    /// The `λ_f` used.
    pub lambda_f: f64,
    /// The smallest `λ_f` whose fit is constant.
    pub lambda_max: f64,
    /// How it went.
    pub report: FitReport,
}

/// Runs `f` on a rayon pool of `n_threads` threads (`None`: all cores).
///
/// # Errors
/// [`FastError::InvalidParameter`] if the pool cannot be built.
pub fn with_threads<R: Send>(n_threads: Option<usize>, f: impl FnOnce() -> R + Send) -> Result<R> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(n_threads.unwrap_or(0))
        .build()
        .map_err(|e| FastError::InvalidParameter {
            name: "n_jobs",
            message: "could not start a thread pool of that size",
            value: format!("{n_threads:?} ({e})"),
        })?;
    Ok(pool.install(f))
}

fn check_target(y: ArrayView1<'_, f64>, n: usize) -> Result<()> {
    if y.len() != n {
        return Err(FastError::LengthMismatch {
            what: "y",
            expected: n,
            got: y.len(),
            reason: "one target per row of X",
        });
    }
    if n < 2 {
        return Err(FastError::TooFewSamples(format!(
            "X has {n} sample (n_samples = {n}); at least 2 are needed to fit"
        )));
    }
    match y.iter().position(|v| !v.is_finite()) {
        Some(index) => Err(FastError::NonFiniteValue { what: "y", index, value: y[index] }),
        None => Ok(()),
    }
}

/// Bins `x` and fits. Runs on the current rayon pool (see [`with_threads`]).
///
/// # Errors
/// Bad parameters, a non-finite value in `x` or `y`, mismatched lengths, bad weights, fewer
/// than two rows: see [`FastError`].
pub fn fit(
    x: ArrayView2<'_, f64>,
    y: ArrayView1<'_, f64>,
    weights: Option<&[f64]>,
    params: &FitParams,
    callback: Option<Callback<'_>>,
) -> Result<Fit> {
    params.check()?;
    if y.len() != x.nrows() {
        return Err(FastError::LengthMismatch {
            what: "y",
            expected: x.nrows(),
            got: y.len(),
            reason: "one target per row of X",
        });
    }
    let data = bin_data(x, weights, &params.binning)?;
    let fitted = fit_binned(&data, y, params, callback)?;
    let cuts: Vec<Vec<f64>> = data.features.iter().map(|f| f.cuts.clone()).collect();
    Ok(Fit {
        model: AdditiveModel { intercept: fitted.intercept, cuts, values: fitted.values },
        bin_weights: data.features.into_iter().map(|f| f.bin_weights).collect(),
        lambda_f: fitted.lambda_f,
        lambda_max: fitted.lambda_max,
        report: fitted.report,
    })
}

/// `λ_max` of binned data: the smallest `λ_f` whose fit is constant, `max_{k,t} |g_{k,t}|` at `β = 0`.
///
/// # Errors
/// As [`fit_binned`] for `y`.
pub fn lambda_max(data: &BinnedData, y: ArrayView1<'_, f64>) -> Result<f64> {
    check_target(y, data.n_samples)?;
    let state = State::new(data, y);
    Ok(state.lambda_max())
}

/// The optimisation state: residual, intercept, blocks, bin sums.
struct State {
    intercept: f64,
    // resid = y − intercept − Σ_j β_j[code_j(i)], kept up to date after every update.
    resid: Vec<f64>,
    // v ∘ resid (empty for unit weights: then resid itself is used).
    vresid: Vec<f64>,
    beta: Vec<Vec<f64>>,
    // sums[k][b] = Σ_{code_k(i)=b} v_i resid_i / W.
    sums: Vec<Vec<f64>>,
    // Normalised bin weights w_b / W.
    wn: Vec<Vec<f64>>,
    // Loss 1/(2W) Σ v r² as of the last pass.
    loss: f64,
    // Σ_b |β_{k,b+1} − β_{k,b}| per block.
    tv: Vec<f64>,
}

fn weighted_resid_loss(data: &BinnedData, resid: &[f64], vresid: &mut [f64]) -> f64 {
    let ss: f64 = match &data.weights {
        Some(v) => {
            let mut s = 0.0;
            for ((vr, &r), &w) in vresid.iter_mut().zip(resid).zip(v) {
                *vr = w * r;
                s += *vr * r;
            }
            s
        }
        None => resid.iter().map(|r| r * r).sum(),
    };
    0.5 * ss / data.total_weight
}

impl State {
    fn new(data: &BinnedData, y: ArrayView1<'_, f64>) -> Self {
        let n = data.n_samples;
        let w_total = data.total_weight;
        let intercept = match &data.weights {
            Some(v) => y.iter().zip(v).map(|(a, b)| a * b).sum::<f64>() / w_total,
            None => y.iter().sum::<f64>() / w_total,
        };
        let resid: Vec<f64> = y.iter().map(|&yi| yi - intercept).collect();
        let mut vresid = if data.weights.is_some() { vec![0.0; n] } else { Vec::new() };
        let loss = weighted_resid_loss(data, &resid, &mut vresid);
        let p = data.n_features();
        let beta: Vec<Vec<f64>> = data.features.iter().map(|f| vec![0.0; f.n_bins()]).collect();
        let wn = data
            .features
            .iter()
            .map(|f| f.bin_weights.iter().map(|w| w / w_total).collect())
            .collect();
        let mut state = Self { intercept, resid, vresid, sums: beta.clone(), beta, wn, loss, tv: vec![0.0; p] };
        state.refresh_all_sums(data);
        state
    }

    fn refresh_all_sums(&mut self, data: &BinnedData) {
        let vr = if self.vresid.is_empty() { &self.resid } else { &self.vresid };
        all_bin_sums(data, vr, &mut self.sums);
    }

    fn refresh_sums(&mut self, data: &BinnedData, k: usize) {
        let vr = if self.vresid.is_empty() { &self.resid } else { &self.vresid };
        bin_sums_into(&data.features[k], vr, 1.0 / data.total_weight, &mut self.sums[k]);
    }

    fn lambda_max(&self) -> f64 {
        self.sums
            .iter()
            .zip(&self.beta)
            .map(|(s, b)| block_score(s, b, 0.0).max_d)
            .fold(0.0, f64::max)
    }

    fn objective(&self, lambda: f64) -> f64 {
        self.loss + lambda * self.tv.iter().sum::<f64>()
    }

    /// Scores every block from fresh sums; returns the KKT residual's unscaled `max d`.
    fn score_all(&self, lambda: f64, scores: &mut [BlockScore]) -> f64 {
        let total_bins: usize = self.beta.iter().map(Vec::len).sum();
        if total_bins < PARALLEL_THRESHOLD / 8 {
            scores
                .iter_mut()
                .zip(self.sums.iter().zip(&self.beta))
                .for_each(|(s, (r, b))| *s = block_score(r, b, lambda));
        } else {
            scores
                .par_iter_mut()
                .zip(self.sums.par_iter().zip(self.beta.par_iter()))
                .for_each(|(s, (r, b))| *s = block_score(r, b, lambda));
        }
        let block_max = scores.iter().map(|s| s.max_d).fold(0.0, f64::max);
        block_max.max(self.intercept_gradient().abs())
    }

    /// `Σ_i v_i r_i / W` (the intercept's gradient, up to sign): any feature's bins add up to it.
    fn intercept_gradient(&self) -> f64 {
        self.sums.first().map_or(0.0, |s| s.iter().sum())
    }

    /// Moves the residual's weighted mean into the intercept (no pass needed for the sums).
    fn intercept_step(&mut self, data: &BinnedData, partials: &mut [f64]) {
        let s = self.intercept_gradient();
        self.intercept += s;
        self.update_resid(data, None, s, partials);
        for (sums, wn) in self.sums.iter_mut().zip(&self.wn) {
            sums.iter_mut().zip(wn).for_each(|(r, w)| *r -= s * w);
        }
    }

    /// `resid_i −= delta[code_k(i)] + shift` (block `k`, or only the shift), fused with the loss.
    fn update_resid(&mut self, data: &BinnedData, block: Option<(usize, &[f64])>, shift: f64, partials: &mut [f64]) {
        let weights = data.weights.as_deref();
        let vresid = &mut self.vresid;
        let resid = &mut self.resid;
        match block {
            Some((k, delta)) => with_codes!(&data.features[k].codes, c => {
                update_chunks(resid, vresid, weights, partials, |i0, i| delta[c[i0 + i].idx()] + shift)
            }),
            None => update_chunks(resid, vresid, weights, partials, |_, _| shift),
        }
        self.loss = 0.5 * partials.iter().sum::<f64>() / data.total_weight;
    }
}

/// Parallel over fixed row chunks: `r_i −= step(chunk_start, i_in_chunk)`, `vr_i = v_i r_i`,
/// and each chunk's `Σ v r²` into `partials` (summed in order afterwards: deterministic).
fn update_chunks<F>(resid: &mut [f64], vresid: &mut [f64], weights: Option<&[f64]>, partials: &mut [f64], step: F)
where
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
            Some(v) => resid.iter_mut().zip(vresid.iter_mut()).enumerate().for_each(|(i, (ri, vri))| {
                *ri -= step(0, i);
                *vri = v[i] * *ri;
                s += *vri * *ri;
            }),
        }
        partials[0] = s;
        return;
    }
    match weights {
        None => resid.par_chunks_mut(ROW_CHUNK).zip(partials.par_iter_mut()).enumerate().for_each(
            |(ci, (r, part))| {
                let i0 = ci * ROW_CHUNK;
                let mut s = 0.0;
                for (i, ri) in r.iter_mut().enumerate() {
                    *ri -= step(i0, i);
                    s += *ri * *ri;
                }
                *part = s;
            },
        ),
        Some(v) => resid
            .par_chunks_mut(ROW_CHUNK)
            .zip(vresid.par_chunks_mut(ROW_CHUNK))
            .zip(partials.par_iter_mut())
            .enumerate()
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

/// Fits FAST on binned data. Runs on the current rayon pool.
///
/// # Errors
/// Bad parameters (see [`FitParams::check`]); `y` of the wrong length, non-finite, or fewer
/// than two rows.
pub fn fit_binned(
    data: &BinnedData,
    y: ArrayView1<'_, f64>,
    params: &FitParams,
    mut callback: Option<Callback<'_>>,
) -> Result<BinnedFit> {
    params.check()?;
    check_target(y, data.n_samples)?;
    let start = Instant::now();
    let p = data.n_features();
    let mut st = State::new(data, y);
    let lambda_max = st.lambda_max();
    let lambda = match params.lambda {
        Penalty::Absolute(v) => v,
        Penalty::Relative(r) => r * lambda_max,
    };
    let scale = |max_d: f64| if lambda > 0.0 { max_d / lambda } else { max_d };

    let max_bins = data.features.iter().map(|f| f.n_bins()).max().unwrap_or(1);
    let mut ws = FlsaWorkspace::with_capacity(max_bins);
    let mut z = vec![0.0; max_bins];
    let mut bnew = vec![0.0; max_bins];
    let mut delta = vec![0.0; max_bins];
    let mut scores = vec![BlockScore::default(); p];
    let mut partials = vec![0.0; data.n_samples.div_ceil(ROW_CHUNK)];
    let mut history = History::default();
    // Cyclic order skips one-bin blocks: they never move.
    let movable: Vec<usize> = (0..p).filter(|&k| data.features[k].n_bins() > 1).collect();
    let mut sweep_pos = 0usize;
    let mut n_iter = 0usize;
    let mut fresh = true; // sums of every block are up to date
    let mut last_was_intercept = false;
    let mut last_kkt: Option<f64> = None; // KKT residual of the current iterate, if known

    let stop = loop {
        // In cyclic mode, the KKT residual is evaluated at the start of each sweep.
        let evaluate = params.selection == Selection::Greedy || sweep_pos == 0;
        if evaluate {
            if !fresh {
                st.refresh_all_sums(data);
                fresh = true;
            }
            let max_d = st.score_all(lambda, &mut scores);
            let kkt = scale(max_d);
            last_kkt = Some(kkt);
            let elapsed = start.elapsed().as_secs_f64();
            if let Some(cb) = callback.as_mut() {
                let progress = Progress { n_iter, objective: st.objective(lambda), kkt_residual: kkt, elapsed };
                if !cb(&progress) {
                    break StopReason::Callback;
                }
            }
            if kkt <= params.tol {
                break StopReason::Converged;
            }
            if n_iter >= params.max_iter {
                break StopReason::MaxIter;
            }
            if params.max_time.is_some_and(|t| elapsed >= t) {
                break StopReason::MaxTime;
            }
            // Rounding can move the residual's mean off zero; the intercept absorbs it.
            let icpt = st.intercept_gradient().abs();
            let threshold = 0.5 * params.tol * if lambda > 0.0 { lambda } else { 1.0 };
            if !last_was_intercept && icpt > threshold && icpt >= 0.5 * max_d {
                st.intercept_step(data, &mut partials);
                last_was_intercept = true;
                continue;
            }
        } else {
            if n_iter >= params.max_iter {
                break StopReason::MaxIter;
            }
            if params.max_time.is_some_and(|t| start.elapsed().as_secs_f64() >= t) {
                break StopReason::MaxTime;
            }
        }
        last_was_intercept = false;
        last_kkt = None;

        let k = match params.selection {
            Selection::Greedy => match select(&scores) {
                Some(k) => k,
                // No block can move and the intercept step did not help: rounding level.
                None => break StopReason::Stalled,
            },
            Selection::Cyclic => {
                if movable.is_empty() {
                    break StopReason::Converged;
                }
                let k = movable[sweep_pos];
                if !(sweep_pos == 0 && fresh) {
                    st.refresh_sums(data, k);
                }
                sweep_pos = (sweep_pos + 1) % movable.len();
                k
            }
        };

        // Block update: z_b = β_b + (bin mean of the residual) = partial-residual bin means.
        let nb = data.features[k].n_bins();
        let (wn, sums, beta) = (&st.wn[k], &st.sums[k], &st.beta[k]);
        for b in 0..nb {
            z[b] = if wn[b] > 0.0 { beta[b] + sums[b] / wn[b] } else { beta[b] };
        }
        flsa_weighted_unchecked(&z[..nb], &wn[..nb], lambda, &mut ws, &mut bnew[..nb]);
        for b in 0..nb {
            delta[b] = bnew[b] - beta[b];
        }
        // Centre the block; the intercept takes its weighted mean (the residual is unchanged).
        let mean: f64 = bnew[..nb].iter().zip(&wn[..nb]).map(|(b, w)| b * w).sum();
        st.intercept += mean;
        let beta = &mut st.beta[k];
        for b in 0..nb {
            beta[b] = bnew[b] - mean;
        }
        st.tv[k] = beta.windows(2).map(|w| (w[1] - w[0]).abs()).sum();
        st.update_resid(data, Some((k, &delta[..nb])), 0.0, &mut partials);
        fresh = false;
        n_iter += 1;
        history.objective.push(st.objective(lambda));
        history.feature.push(k);
        history.time.push(start.elapsed().as_secs_f64());
    };

    // The KKT residual of the returned model: fresh unless a cyclic sweep stopped midway.
    let kkt = match last_kkt {
        Some(kkt) => kkt,
        None => {
            st.refresh_all_sums(data);
            scale(st.score_all(lambda, &mut scores))
        }
    };
    let converged = kkt <= params.tol;
    Ok(BinnedFit {
        intercept: st.intercept,
        lambda_f: lambda,
        lambda_max,
        report: FitReport { n_iter, converged, kkt_residual: kkt, objective: st.objective(lambda), stop, history },
        values: st.beta,
    })
}
