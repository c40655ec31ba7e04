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
