//! The data every solver reads: the binned representation of the rows ([`binning`]) and
//! their sufficient statistics ([`tables`]).

pub mod binning;
pub mod tables;
