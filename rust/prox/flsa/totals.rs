//! The first pass over a weighted FLSA problem: per-point weights (a slice, or [`Unit`]
//! weights never stored), their [`Totals`] accumulated in four lanes (validated in the same
//! pass by the checked entry points), and `λ_max` of the centred problem.

use crate::error::{check_finite, check_weights, Result};

/// The totals of a weighted problem, validated in the same pass: when the pass sees a
/// non-finite `y`, a bad weight or a total outside [`crate::error::WEIGHT_TOTAL_RANGE`], the
/// detailed checks run to name the first bad entry.
fn checked_totals(y: &[f64], w: &[f64], w_name: &'static str) -> Result<Totals> {
    let t = weighted_totals(y, w);
    let (low, high) = crate::error::WEIGHT_TOTAL_RANGE;
    // A finite Σ w·y means every y is finite (0·∞ and 0·NaN are NaN); every w ≥ 0 with a
    // finite sum means every w is finite. The margins leave the exact boundary of the
    // total's range to the detailed check.
    let clean = t.swy.is_finite()
        && t.w_min >= 0.0
        && t.sw >= low * (1.0 + 1e-9)
        && t.sw <= high * (1.0 - 1e-9);
    if !clean {
        check_finite("y", y)?;
        check_weights(w_name, w)?;
    }
    Ok(t)
}

/// The totals of a unit-weight problem, validated in the same pass.
fn checked_unit_totals(y: &[f64]) -> Result<Totals> {
    let t = unit_totals(y);
    if !t.swy.is_finite() {
        check_finite("y", y)?;
    }
    Ok(t)
}

/// Per-point weights: a slice, or [`Unit`] weights that are never stored.
pub(super) trait Weights: Copy {
    /// The weight of point `i`.
    fn at(self, i: usize) -> f64;
    /// Adds points `from..to` to the accumulators of [`Totals`] (`from` a multiple of 4, and
    /// `to` too unless it is the end: each lane takes the points of its index modulo 4, in
    /// order, so the totals do not depend on how the range is cut).
    fn accumulate(self, y: &[f64], from: usize, to: usize, lanes: &mut Lanes);
    /// The [`Totals`] of `n` points accumulated in `lanes`.
    fn finish(lanes: &Lanes, n: usize) -> Totals;
    /// Whether the points accumulated in `lanes` are all finite, with weights in
    /// `[1e-30, 1e30]` and values within `±1e30` (what the unscaled direct algorithm needs).
    fn lanes_plain(lanes: &Lanes) -> bool;
    /// [`Totals`] in one pass, validated (see [`checked_totals`]).
    fn checked_totals(self, y: &[f64], name: &'static str) -> Result<Totals>;
}

impl Weights for &[f64] {
    #[inline(always)]
    fn at(self, i: usize) -> f64 {
        self[i]
    }

    #[inline(always)]
    fn accumulate(self, y: &[f64], from: usize, to: usize, lanes: &mut Lanes) {
        let (ys, ws) = (&y[from..to], &self[from..to]);
        let chunks = ys.len() / 4;
        for (yc, wc) in ys.chunks_exact(4).zip(ws.chunks_exact(4)) {
            for j in 0..4 {
                lanes.add(j, yc[j], wc[j]);
            }
        }
        for (j, i) in (4 * chunks..ys.len()).enumerate() {
            lanes.add(j, ys[i], ws[i]);
        }
    }

    fn finish(lanes: &Lanes, _n: usize) -> Totals {
        let Lanes {
            sw,
            swy,
            w_min,
            y_max,
        } = lanes;
        Totals {
            sw: (sw[0] + sw[1]) + (sw[2] + sw[3]),
            swy: (swy[0] + swy[1]) + (swy[2] + swy[3]),
            w_min: w_min[0].min(w_min[1]).min(w_min[2].min(w_min[3])),
            y_max: y_max[0].max(y_max[1]).max(y_max[2].max(y_max[3])),
        }
    }

    fn lanes_plain(lanes: &Lanes) -> bool {
        (0..4).all(|j| {
            lanes.swy[j].is_finite()
                && lanes.sw[j] <= 1e30
                && lanes.w_min[j] >= 1e-30
                && lanes.y_max[j] <= 1e30
        })
    }

    fn checked_totals(self, y: &[f64], name: &'static str) -> Result<Totals> {
        checked_totals(y, self, name)
    }
}

/// Unit weights.
#[derive(Debug, Clone, Copy)]
pub(super) struct Unit;

impl Weights for Unit {
    #[inline(always)]
    fn at(self, _i: usize) -> f64 {
        1.0
    }

    /// A plain sum and maximum (in `swy` and `y_max`), which stream through `y` faster than
    /// the weighted form (whose weight lanes are constants here).
    #[inline(always)]
    fn accumulate(self, y: &[f64], from: usize, to: usize, lanes: &mut Lanes) {
        let ys = &y[from..to];
        let chunks = ys.chunks_exact(4);
        let rest = chunks.remainder();
        for yc in chunks {
            for j in 0..4 {
                lanes.swy[j] += yc[j];
                lanes.y_max[j] = lanes.y_max[j].max(yc[j].abs());
            }
        }
        for (j, &yt) in rest.iter().enumerate() {
            lanes.swy[j] += yt;
            lanes.y_max[j] = lanes.y_max[j].max(yt.abs());
        }
    }

    fn finish(lanes: &Lanes, n: usize) -> Totals {
        let Lanes { swy, y_max, .. } = lanes;
        Totals {
            // Exact for any length a slice can have in memory.
            sw: n as f64,
            swy: (swy[0] + swy[1]) + (swy[2] + swy[3]),
            w_min: 1.0,
            y_max: y_max[0].max(y_max[1]).max(y_max[2].max(y_max[3])),
        }
    }

    fn lanes_plain(lanes: &Lanes) -> bool {
        (0..4).all(|j| lanes.swy[j].is_finite() && lanes.y_max[j] <= 1e30)
    }

    fn checked_totals(self, y: &[f64], _name: &'static str) -> Result<Totals> {
        checked_unit_totals(y)
    }
}

/// What the first pass learns about a problem.
#[derive(Debug, Clone, Copy)]
pub(super) struct Totals {
    /// `Σ w`.
    pub(super) sw: f64,
    /// `Σ w·y`.
    pub(super) swy: f64,
    /// Smallest weight (`0` when some point has zero weight).
    pub(super) w_min: f64,
    /// Largest `|y|`.
    pub(super) y_max: f64,
}

/// [`Totals`] in one pass with four independent accumulators (no conditional: a zero
/// weight adds exactly 0 for finite `y`).
#[inline]
pub(super) fn weighted_totals<W: Weights>(y: &[f64], w: W) -> Totals {
    let mut lanes = Lanes::new();
    w.accumulate(y, 0, y.len(), &mut lanes);
    W::finish(&lanes, y.len())
}

/// The four independent accumulators of [`weighted_totals`] (lane `j` takes the points of
/// index `j` modulo 4).
#[derive(Debug, Clone, Copy)]
pub(super) struct Lanes {
    sw: [f64; 4],
    swy: [f64; 4],
    w_min: [f64; 4],
    y_max: [f64; 4],
}

impl Lanes {
    pub(super) fn new() -> Self {
        Self {
            sw: [0.0; 4],
            swy: [0.0; 4],
            w_min: [f64::INFINITY; 4],
            y_max: [0.0; 4],
        }
    }

    #[inline(always)]
    fn add(&mut self, j: usize, yt: f64, wt: f64) {
        self.sw[j] += wt;
        self.swy[j] += wt * yt;
        self.w_min[j] = if wt < self.w_min[j] {
            wt
        } else {
            self.w_min[j]
        };
        let a = yt.abs();
        self.y_max[j] = if a > self.y_max[j] { a } else { self.y_max[j] };
    }
}

/// [`weighted_totals`] for unit weights.
fn unit_totals(y: &[f64]) -> Totals {
    weighted_totals(y, Unit)
}

/// `max_t |u_t|` for the prefix sums `u_t = Σ_{s≤t} w_s (y_s − ȳ)` over all of `y`.
///
/// The prefix sum is a serial dependency chain, so the range is cut into four blocks whose
/// local prefix sums advance in lockstep; each block's extremes are then shifted by the
/// total of the blocks before it. (Zero weights add exactly 0.)
pub(super) fn lambda_max_centred<W: Weights>(y: &[f64], w: W, ybar: f64) -> f64 {
    const K: usize = 4;
    let m = y.len();
    let q = m / K;
    let mut u = [0.0_f64; K];
    let mut hi = [0.0_f64; K];
    let mut lo = [0.0_f64; K];
    for i in 0..q {
        for j in 0..K {
            let t = j * q + i;
            u[j] += w.at(t) * (y[t] - ybar);
            hi[j] = if u[j] > hi[j] { u[j] } else { hi[j] };
            lo[j] = if u[j] < lo[j] { u[j] } else { lo[j] };
        }
    }
    // The tail continues the last block.
    for t in K * q..m {
        u[K - 1] += w.at(t) * (y[t] - ybar);
        hi[K - 1] = if u[K - 1] > hi[K - 1] {
            u[K - 1]
        } else {
            hi[K - 1]
        };
        lo[K - 1] = if u[K - 1] < lo[K - 1] {
            u[K - 1]
        } else {
            lo[K - 1]
        };
    }
    let (mut offset, mut max_u, mut min_u) = (0.0_f64, 0.0_f64, 0.0_f64);
    for j in 0..K {
        max_u = max_u.max(offset + hi[j]);
        min_u = min_u.min(offset + lo[j]);
        offset += u[j];
    }
    max_u.max(-min_u)
}
