//! The entry points: the penalty chosen on held-out rows ([`validation`]), the pair terms
//! ([`pairs`]), and the fits of each loss: regression ([`solver`]), classification
//! ([`logistic`], [`multinomial`]), log-link regression ([`loglink`]) and feature-sparse
//! regression ([`sparse`]).

pub mod logistic;
pub mod loglink;
pub mod multinomial;
pub mod pairs;
pub mod solver;
pub mod sparse;
pub mod validation;
