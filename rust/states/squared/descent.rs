//! The squared-loss state in the one descent loop ([`DescentState`]).

use super::*;

/// The exact squared-loss state in the one descent loop: the intercept takes its exact step
/// whenever its gradient is at least half the largest violation (keeping the sums fresh),
/// every block update moves, and the tables engine recomputes the objective exactly at the
/// end.
impl DescentState for BlockState {
    const INTERCEPT_SHARE: f64 = 0.5;

    fn resolve_selection(&self, requested: Selection, n_blocks: usize) -> Selection {
        match requested {
            // Greedy pays when an update is cheap next to a refresh of every block's sums
            // (the tables engine, or few features); otherwise scored sweeps (README,
            // "Defaults").
            Selection::Auto if self.uses_tables() || n_blocks <= AUTO_GREEDY_MAX_FEATURES => {
                Selection::Greedy
            }
            Selection::Auto => Selection::Sweep,
            s => s,
        }
    }

    const FLAT_SWEEPS: usize = 1_000;

    /// Relative to the root mean square of the residual.
    fn flat_tolerance(&self) -> f64 {
        1e-13 * (2.0 * self.loss).sqrt().max(f64::MIN_POSITIVE)
    }

    fn settle_intercept(&mut self, data: &BinnedData) -> bool {
        self.refresh_all_sums(data);
        let moves = self.intercept_gradient() != 0.0;
        if moves {
            self.intercept_step(data);
        }
        moves
    }

    fn sums(&self) -> &[Vec<f64>] {
        &self.sums
    }

    /// Nothing to do while block updates have kept every block's sums fresh.
    fn refresh_all_sums(&mut self, data: &BinnedData) {
        if self.fresh_all {
            return;
        }
        if let (sums, Some(vr)) = self.sums_and_residual() {
            all_bin_sums(data, vr, sums);
            self.fresh_all = true;
            self.followed.since_refresh = 0;
        }
    }

    /// One pass over the rows that sums and scores each two blocks in turn
    /// ([`sums_and_scores`], the same numbers).
    fn refresh_and_score(
        &mut self,
        data: &BinnedData,
        lambda: f64,
        scores: &mut [BlockScore],
    ) -> (f64, f64) {
        let vr = match self.backend.weighted_residual() {
            Some(vr) if !self.fresh_all => vr,
            _ => return self.score(lambda, scores),
        };
        let inputs = ScoreInputs {
            beta: &self.beta,
            n_chain: &self.n_chain,
            shapes: &self.shapes,
            duals: &self.duals,
            lambda,
            splits: self.splits,
        };
        let block_max = sums_and_scores(data, vr, &mut self.sums, inputs, scores);
        self.fresh_all = true;
        self.followed.since_refresh = 0;
        (block_max, self.intercept_gradient().abs())
    }

    fn refresh_sums(&mut self, data: &BinnedData, k: usize) {
        if self.fresh_all {
            return;
        }
        if let (sums, Some(vr)) = self.sums_and_residual() {
            bin_sums_into(&data.features[k], vr, 1.0 / data.total_weight, &mut sums[k]);
        }
    }

    fn follow_sums(&mut self) {
        BlockState::follow_sums(self);
    }

    /// The tables engine keeps its sums fresh through the co-occurrence tables.
    fn sums_and_residual(&mut self) -> (&mut [Vec<f64>], Option<&[f64]>) {
        (&mut self.sums, self.backend.weighted_residual())
    }

    fn n_chain(&self) -> &[usize] {
        &self.n_chain
    }

    fn shapes(&self) -> &[ChainShape] {
        &self.shapes
    }

    fn set_shapes(&mut self, shapes: &[ChainShape]) {
        BlockState::set_shapes(self, shapes);
    }

    fn duals(&self) -> &[Vec<f64>] {
        &self.duals
    }

    fn grid_splits(&self) -> GridSplits {
        self.splits
    }

    fn set_grid_splits(&mut self, splits: GridSplits) {
        self.splits = splits;
    }

    /// `Σ_i v_i r_i / W` from block 0's sums (every block's sums add up to it).
    fn intercept_gradient(&self) -> f64 {
        self.sums.first().map_or(0.0, |s| s.iter().sum())
    }

    fn objective(&self, lambda: f64) -> f64 {
        BlockState::objective(self, lambda)
    }

    fn step_intercept(&mut self, data: &BinnedData, _block_max: f64, _threshold: f64) -> bool {
        self.intercept_step(data);
        false
    }

    fn update_block(&mut self, data: &BinnedData, k: usize, lambda: f64) -> bool {
        self.update_block_if_lower(data, k, lambda)
    }

    fn set_values(&mut self, data: &BinnedData, k: usize, values: &[f64]) -> bool {
        // On the tables engine every block's sums are fresh, as the move through the tables
        // reads them, and stay so.
        self.set_block(data, k, values);
        true
    }

    fn pairs_pay(&self, data: &BinnedData) -> bool {
        BlockState::pairs_pay(self, data)
    }

    fn greedy_pair_pays(&mut self, data: &BinnedData, (k, k2): (usize, usize)) -> bool {
        // Two chains or two pair blocks (a grid with a chain takes one ordinary update), and
        // no table carrying every block's sums through block `k`'s update (that saves more
        // than a pair).
        let (kind1, kind2) = (self.shape(k).kind(), self.shape(k2).kind());
        let chains = kind1 == BlockKind::Chain && kind2 == BlockKind::Chain;
        let grids = kind1 != BlockKind::Chain && kind2 != BlockKind::Chain;
        (chains || grids) && BlockState::pairs_pay(self, data) && self.table_for(data, k).is_none()
    }

    fn update_pair(&mut self, data: &BinnedData, pair: Pair, lambda: f64) -> (f64, bool) {
        BlockState::update_pair(self, data, pair, lambda)
    }

    fn update_coupled(
        &mut self,
        data: &BinnedData,
        pair: (usize, usize),
        lambda: f64,
    ) -> Option<bool> {
        BlockState::update_coupled(self, data, pair, lambda)
    }

    fn finish(&mut self, data: &BinnedData) {
        if self.uses_tables() {
            // The reported objective is recomputed exactly from the tables.
            self.sync(data);
        }
    }

    fn intercept(&self) -> f64 {
        self.intercept
    }

    fn blocks(&self) -> &[Vec<f64>] {
        &self.beta
    }
}
