//! The entry points: the penalty chosen on held-out rows ([`validation`]), the pair terms
//! ([`pairs`]), the fits of each loss: regression ([`solver`]), classification
//! ([`logistic`], [`multinomial`]), log-link regression ([`loglink`]) and feature-sparse
//! regression ([`sparse`]); and the one entry point of every loss ([`entry`]), which resolves
//! the loss's `"auto"` parameters and dispatches to the loss's own.

pub mod entry;
pub mod logistic;
pub mod loglink;
pub mod multinomial;
pub mod pairs;
pub mod solver;
pub mod sparse;
pub mod validation;
