//! The exact block solves (proximal steps): the weighted fused-lasso signal approximator
//! ([`flsa`]), isotonic regression and the monotone chain ([`monotone`]), the chain with
//! squared jumps ([`enet`]), the pair grid's smooth part ([`smooth`]) and its 2-D total
//! variation ([`grid`], by minimum cuts of [`maxflow`]).

pub mod enet;
pub mod flsa;
pub mod grid;
pub mod maxflow;
pub mod monotone;
pub mod smooth;

/// The fit part of a block problem: `½ Σ_t h_t (b_t − z_t)²`, summed in order.
pub fn half_weighted_squares(z: &[f64], h: &[f64], b: &[f64]) -> f64 {
    z.iter()
        .zip(h)
        .zip(b)
        .map(|((z, h), b)| 0.5 * h * (b - z) * (b - z))
        .sum()
}
