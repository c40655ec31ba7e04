//! What every step of the pair stage reads (`Stage`: the targets, the parameters, the main
//! effects' fit, the loss, the held-out split, the clock) and the loss's two functions it is
//! given (`StateMaker`, `HeldOutLoss`), with the main effects' held-out search it may run again on
//! a sample of the rows (`MainsOn`).

use std::time::Instant;

use ndarray::ArrayView1;

use crate::data::binning::BinnedData;
use crate::descent::PairDescent;
use crate::error::Result;
use crate::fit::validation::{holdout_terms, Split};
use crate::model::report::{BinnedFit, Callback, PenaltySearch};
use crate::params::FitParams;

/// Makes the loss's state on the data from their targets and blocks (the targets of the
/// data's rows: the pair stage may choose on a sample of the rows, [`super::sample`]).
pub(crate) type StateMaker<'a, S> =
    &'a (dyn Fn(&BinnedData, ArrayView1<'_, f64>, Vec<Vec<f64>>) -> S + Sync);
/// A held-out row's loss `(v, y, f) ↦ …` of a loss with one score per row.
pub(crate) type RowLoss<'a> = &'a (dyn Fn(f64, f64, f64) -> f64 + Sync);
/// The held-out rows' loss terms of the model `(intercept, blocks)` on `data` with targets
/// `y`, one per row of `(rows, v)`, computed from the whole model (a loss with several
/// scores per row: the softmax's blocks hold one chain per class, and its intercepts follow
/// the blocks).
pub(crate) type ModelLoss<'a> = &'a (dyn Fn(&BinnedData, ArrayView1<'_, f64>, (f64, &[Vec<f64>]), (&[usize], &[f64])) -> Vec<f64>
         + Sync);

/// How the pair stage scores a model on held-out rows.
#[derive(Clone, Copy)]
pub(crate) enum HeldOutLoss<'a> {
    /// Row by row from its one score ([`holdout_terms`]).
    Row(RowLoss<'a>),
    /// From the whole model (several scores per row).
    Model(ModelLoss<'a>),
}

impl HeldOutLoss<'_> {
    /// The held-out rows' loss terms `v_i · loss_i` of the model `(intercept, blocks)`.
    pub(crate) fn terms(
        self,
        data: &BinnedData,
        y: ArrayView1<'_, f64>,
        model: (f64, &[Vec<f64>]),
        held: (&[usize], &[f64]),
    ) -> Vec<f64> {
        match self {
            Self::Row(term) => holdout_terms(data, y, model, held, term),
            Self::Model(terms) => terms(data, y, model, held),
        }
    }
}
/// The main effects' fit at a penalty chosen on held-out rows of the data (with their
/// targets): the entry point's own search, run again on the sample of rows the pair stage
/// chooses on ([`super::sample`]), so that the choices there are made at the sample's `λ_f`.
pub(crate) type MainsOn<'a> = &'a dyn Fn(
    &mut BinnedData,
    ArrayView1<'_, f64>,
    Option<Callback<'_>>,
) -> Result<(BinnedFit, PenaltySearch)>;

/// What every step of the pair stage reads: the targets, the parameters, the main effects'
/// fit, the loss (its state maker and held-out row loss), the held-out split and the clock.
pub(super) struct Stage<'a, S> {
    pub(super) y: ArrayView1<'a, f64>,
    pub(super) params: &'a FitParams,
    /// The main effects' fit (its blocks on `data`, at its `λ_f`).
    pub(super) mains: &'a BinnedFit,
    pub(super) state: StateMaker<'a, S>,
    pub(super) term: HeldOutLoss<'a>,
    /// The main effects' blocks (the pair blocks follow them in `data`).
    pub(super) p: usize,
    /// The held-out split of the pair stage ([`pair_split`], drawn once: the screen and the
    /// paths share it).
    pub(super) split: Option<Split>,
    /// Whether `ρ` is chosen on held-out rows (finer grids for the strongest pairs, narrow
    /// sides' partners binned by their main effects' pieces).
    pub(super) fine: bool,
    /// Whether the pairs are screened (not listed): then they must beat the additive model.
    pub(super) screened: bool,
    /// When the pair stage started (`max_time` counts from it).
    pub(super) start: Instant,
}

impl<S: PairDescent> Stage<'_, S> {
    /// Whether pairs leave feature `j` out: a monotone constraint (a pair term could undo it).
    pub(super) fn constrained(&self, j: usize) -> bool {
        self.params.shapes.get(j).monotone != 0
    }

    /// The weighted residual of the fit `values` on `data`.
    pub(super) fn residual(&self, data: &BinnedData, values: Vec<Vec<f64>>) -> Vec<f64> {
        let mut st = (self.state)(data, self.y, values);
        let (_, vr) = st.sums_and_residual();
        vr.map(<[f64]>::to_vec).unwrap_or_default()
    }

    /// Whether the time budget (`max_time`, from the stage's start) has run out.
    pub(super) fn out_of_time(&self) -> bool {
        self.params.out_of_time(self.start)
    }
}
