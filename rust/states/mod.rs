//! The descent states the loop runs on: the exact squared-loss state ([`squared`], its
//! engine choice in [`engine`] and its descent in rounds with line searches in
//! [`extrapolate`]), and the proximal-Newton state ([`newton`]) over a per-row datafit
//! ([`datafit`]).

pub mod datafit;
pub mod engine;
pub mod extrapolate;
pub mod newton;
pub mod softmax;
pub mod squared;
