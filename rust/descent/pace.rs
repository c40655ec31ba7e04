//! Whether the greedy descent's passes run in parallel: chosen by measurement, per fit.
//!
//! A greedy step of the rows engine is one pass over every block's rows (bin sums and
//! scores, parallel over blocks) and one block update (serial, with a residual update
//! parallel over row chunks). On two cores the parallel passes pay where the cores share
//! data cheaply; on a virtual machine whose two cores at times sit far apart, every hand-off
//! costs more than it saves (574_house_16H on a 2-core AMD EPYC in such a spell: 0.345 s with
//! two threads, 0.245 s with one). The greedy descent times its steps in either mode and
//! keeps the faster, probing the other now and then ([`Pace`]). Measured on that machine
//! over 11 minutes (115 rounds of fresh-process fits of 574_house_16H, each build alternating,
//! the best of two fits each): always parallel median 0.224 s, worst 0.351 s; chosen by
//! measurement median 0.229 s, worst 0.291 s; one thread median 0.248 s. In the six rounds
//! where always-parallel took more than 0.28 s, the chosen mode took 0.219–0.289 s.
//!
//! Every parallel loop that the choice reaches runs the same chunks in the same order when
//! serial (`with_min_len` of [`min_len`] only stops rayon from splitting them), so the fit's
//! numbers do not depend on the choice: a fit is the same with one thread, two threads, or
//! either mode.

use std::cell::Cell;
use std::time::Instant;

thread_local! {
    // Whether the descent running on this thread asked its passes to stay serial.
    static SERIAL: Cell<bool> = const { Cell::new(false) };
}

/// The `with_min_len` of the parallel loops [`Pace`] governs: 1 (rayon splits as it likes),
/// or `usize::MAX` while the descent on this thread runs serially (one piece, run inline).
pub fn min_len() -> usize {
    if SERIAL.with(Cell::get) {
        usize::MAX
    } else {
        1
    }
}

/// Steps timed in each mode before the faster is chosen: parallel, serial, in turn.
const WARM_STEPS: usize = 6;
/// Once chosen, one step in every this many runs in the other mode, to notice a change.
const PROBE_EVERY: usize = 16;
/// Weight of the newest step time in each mode's running mean.
const NEW_WEIGHT: f64 = 0.25;

/// The step clock of one greedy descent: times the steps in each mode and sets this
/// thread's mode for the next step. Restores the parallel mode when dropped.
pub struct Pace {
    on: bool,
    mean: [Option<f64>; 2], // [parallel, serial]
    steps: usize,
    last: Option<(Instant, bool)>,
}

impl Pace {
    /// A clock that chooses only when `on` (more than one thread in the pool).
    pub fn new(on: bool) -> Self {
        Pace {
            on,
            mean: [None, None],
            steps: 0,
            last: None,
        }
    }

    /// Called at the start of each step: books the time since the last call to the mode it
    /// ran in, and sets the mode of the step that starts now.
    pub fn step(&mut self) {
        if !self.on {
            return;
        }
        let now = Instant::now();
        if let Some((t, serial)) = self.last {
            self.book(serial, now.duration_since(t).as_secs_f64());
        }
        let serial = self.next_serial();
        SERIAL.with(|c| c.set(serial));
        self.last = Some((now, serial));
    }

    /// Adds a step of `dt` seconds in the given mode to that mode's running mean.
    fn book(&mut self, serial: bool, dt: f64) {
        let m = &mut self.mean[usize::from(serial)];
        *m = Some(m.map_or(dt, |m| m + NEW_WEIGHT * (dt - m)));
    }

    /// The mode of the next step: parallel and serial in turn while warming up, then the
    /// faster, with one step in every [`PROBE_EVERY`] in the other.
    fn next_serial(&mut self) -> bool {
        self.steps += 1;
        if self.steps <= WARM_STEPS {
            return self.steps.is_multiple_of(2);
        }
        let faster_serial = match self.mean {
            [Some(p), Some(s)] => s < p,
            _ => false,
        };
        faster_serial != self.steps.is_multiple_of(PROBE_EVERY)
    }
}

impl Drop for Pace {
    fn drop(&mut self) {
        if self.on {
            SERIAL.with(|c| c.set(false));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Steps of the given durations per mode: the modes the clock chooses for 64 steps.
    fn modes(parallel: f64, serial: f64, switch_at: usize) -> Vec<bool> {
        let mut pace = Pace::new(true);
        let mut modes = Vec::new();
        for i in 0..64 {
            let s = pace.next_serial();
            modes.push(s);
            let slow_serial = i < switch_at;
            let dt = match (s, slow_serial) {
                (true, true) | (false, false) => serial.max(parallel),
                _ => serial.min(parallel),
            };
            pace.book(s, dt);
        }
        modes
    }

    #[test]
    fn the_clock_keeps_the_faster_mode_and_probes_the_other() {
        // Serial steps slower throughout: warm-up in turn, then parallel with one probe in
        // every PROBE_EVERY steps.
        let m = modes(1e-4, 3e-4, usize::MAX);
        assert_eq!(&m[..WARM_STEPS], &[false, true, false, true, false, true]);
        let late = &m[WARM_STEPS..];
        assert_eq!(
            late.iter().filter(|&&s| s).count(),
            (WARM_STEPS + 1..=64)
                .filter(|k| k % PROBE_EVERY == 0)
                .count()
        );
        // Parallel turns slower at step 20 (a slow spell): the probes notice, and the clock
        // runs serially from there but for its probes.
        let m = modes(1e-4, 3e-4, 20);
        let tail = &m[40..];
        assert!(
            tail.iter().filter(|&&s| !s).count() <= tail.len() / PROBE_EVERY + 1,
            "{m:?}"
        );
    }

    #[test]
    fn the_mode_is_set_for_this_thread_and_restored() {
        let mut pace = Pace::new(true);
        pace.step(); // the first step: parallel
        assert_eq!(min_len(), 1);
        pace.step(); // the second: serial (warm-up)
        assert_eq!(min_len(), usize::MAX);
        drop(pace);
        assert_eq!(min_len(), 1);
        // Off (one thread in the pool): always parallel, no choice made.
        let mut off = Pace::new(false);
        off.step();
        off.step();
        assert_eq!(min_len(), 1);
    }
}
