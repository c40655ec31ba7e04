//! Pair terms: the 2-D block solver against brute force (2×2) and an independent slow
//! reference (small grids, missing lines included), and fits with pairs: a known interaction
//! is found, the objective never increases, the KKT certificate holds, `interactions = 0`
//! is the additive fit, and 1 and 2 threads agree bit for bit.

mod common;

use fastpcam::fit::solver::{fit, Fit};
use fastpcam::params::{Grid, Interactions, Penalty, Selection};
use fastpcam::prox::grid::{grid_tv, solve_grid, GridWorkspace};
use fastpcam::Rows;
use ndarray::{Array1, Array2};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};

fn objective(theta: &[f64], z: &[f64], h: &[f64], grid: Grid, lambda: f64) -> f64 {
    fastpcam::prox::half_weighted_squares(z, h, theta) + lambda * grid_tv(theta, grid)
}

fn solve(z: &[f64], h: &[f64], grid: Grid, lambda: f64) -> Vec<f64> {
    let mut ws = GridWorkspace::default();
    let (mut out, mut dual) = (vec![0.0; z.len()], vec![0.0; z.len()]);
    let s = solve_grid((z, h), grid, lambda, None, (&mut dual, &mut ws), &mut out);
    // The solve's own certificate: its duality gap is at rounding level.
    let scale = objective(z, z, h, grid, lambda).max(1.0);
    assert!(s.gap <= 1e-10 * scale, "gap {} of {scale}", s.gap);
    // Warm starts reach the same optimum: from the solution itself (its parts are kept, one
    // cut each), from a perturbed response's solution, and from an arbitrary start.
    let f = objective(&out, z, h, grid, lambda);
    let shifted: Vec<f64> = z
        .iter()
        .enumerate()
        .map(|(i, v)| v + 0.1 * ((i % 3) as f64 - 1.0))
        .collect();
    let mut near = vec![0.0; z.len()];
    solve_grid(
        (&shifted, h),
        grid,
        lambda,
        None,
        (&mut dual, &mut ws),
        &mut near,
    );
    let arbitrary: Vec<f64> = (0..z.len()).map(|i| ((i * 7) % 5) as f64).collect();
    for start in [&out, &near, &arbitrary] {
        let mut warm = vec![0.0; z.len()];
        let w = solve_grid(
            (z, h),
            grid,
            lambda,
            Some(start),
            (&mut dual, &mut ws),
            &mut warm,
        );
        assert!(w.gap <= 1e-10 * scale, "warm gap {}", w.gap);
        let fw = objective(&warm, z, h, grid, lambda);
        assert!((fw - f).abs() <= 1e-10 * scale, "warm {fw} vs {f}");
    }
    // Stored edge flows start the maximum flows (`dual` of `Grid::dual_len` entries): the
    // perturbed response's flows, and arbitrary ones up to twice the penalty (clamped), with
    // and without a seed, give the same optimum; the flows written back stay within the penalty
    // and their column part is the dual's first part.
    let n = z.len();
    let mut flows = vec![0.0; grid.dual_len()];
    solve_grid(
        (&shifted, h),
        grid,
        lambda,
        None,
        (&mut flows, &mut ws),
        &mut near,
    );
    let wild: Vec<f64> = (0..grid.dual_len())
        .map(|i| {
            if i < n {
                0.0
            } else {
                lambda * (((i * 5) % 9) as f64 / 2.0 - 2.0)
            }
        })
        .collect();
    for start_flows in [&flows, &wild] {
        for seed in [None, Some(&near[..])] {
            let mut dual = start_flows.clone();
            let mut warm = vec![0.0; n];
            let w = solve_grid((z, h), grid, lambda, seed, (&mut dual, &mut ws), &mut warm);
            assert!(w.gap <= 1e-10 * scale, "warm-flow gap {}", w.gap);
            let fw = objective(&warm, z, h, grid, lambda);
            assert!((fw - f).abs() <= 1e-10 * scale, "warm flows {fw} vs {f}");
            let mut q = vec![0.0; n];
            let mut e = 0;
            grid.for_each_edge(|_, a, b, vertical| {
                let flow = dual[n + e];
                assert!(
                    flow.abs() <= lambda * (1.0 + 1e-12),
                    "flow {flow} beyond {lambda}"
                );
                if vertical {
                    q[a] += flow;
                    q[b] -= flow;
                }
                e += 1;
            });
            for (x, y) in q.iter().zip(&dual[..n]) {
                assert!(
                    (x - y).abs() <= 1e-12 * (1.0 + y.abs()),
                    "column part {x} vs {y}"
                );
            }
        }
    }
    out
}

/// The edges of a grid as cell pairs.
fn edges(grid: Grid) -> Vec<(usize, usize)> {
    let (rows, cols) = (grid.rows, grid.cols);
    let chain_c = cols - usize::from(grid.missing_col);
    let chain_r = rows - usize::from(grid.missing_row);
    let mut e = Vec::new();
    for r in 0..rows {
        for c in 0..chain_c.saturating_sub(1) {
            e.push((r * cols + c, r * cols + c + 1));
        }
    }
    for r in 0..chain_r.saturating_sub(1) {
        for c in 0..cols {
            e.push((r * cols + c, (r + 1) * cols + c));
        }
    }
    e
}

/// Brute force: for every sign pattern of the edges (−, 0, +), the minimiser of the
/// objective with those signs fixed (cells joined by 0-edges merged, the rest a linear
/// term), evaluated at the true objective; the best of them all is the optimum (each is a
/// feasible point, and the optimum's own pattern gives the optimum).
fn brute_force(z: &[f64], h: &[f64], grid: Grid, lambda: f64) -> f64 {
    let e = edges(grid);
    let n = z.len();
    let mut best = f64::INFINITY;
    for code in 0..3usize.pow(e.len() as u32) {
        let mut signs = vec![0i32; e.len()];
        let mut c = code;
        for s in signs.iter_mut() {
            *s = (c % 3) as i32 - 1;
            c /= 3;
        }
        // Union of cells joined by zero edges.
        let mut group: Vec<usize> = (0..n).collect();
        fn find(g: &mut Vec<usize>, i: usize) -> usize {
            if g[i] != i {
                let r = find(g, g[i]);
                g[i] = r;
            }
            g[i]
        }
        for (k, &(a, b)) in e.iter().enumerate() {
            if signs[k] == 0 {
                let (ra, rb) = (find(&mut group, a), find(&mut group, b));
                group[ra] = rb;
            }
        }
        // Linear term: λ Σ s_e (θ_b − θ_a).
        let mut lin = vec![0.0; n];
        for (k, &(a, b)) in e.iter().enumerate() {
            lin[b] += lambda * f64::from(signs[k]);
            lin[a] -= lambda * f64::from(signs[k]);
        }
        let mut num = vec![0.0; n];
        let mut den = vec![0.0; n];
        for i in 0..n {
            let g = find(&mut group, i);
            num[g] += h[i] * z[i] - lin[i];
            den[g] += h[i];
        }
        let theta: Vec<f64> = (0..n)
            .map(|i| {
                let g = find(&mut group, i);
                num[g] / den[g]
            })
            .collect();
        best = best.min(objective(&theta, z, h, grid, lambda));
    }
    best
}

/// Independent slow reference: FISTA on the dual (one flow per edge, `|u_e| ≤ λ`),
/// `θ = z − Dᵀu / h`, run to convergence.
fn dual_reference(z: &[f64], h: &[f64], grid: Grid, lambda: f64) -> Vec<f64> {
    let e = edges(grid);
    let n = z.len();
    let hmin = h.iter().cloned().fold(f64::INFINITY, f64::min);
    let step = hmin / 8.0; // 1 / ‖D H⁻¹ Dᵀ‖ with at most 4 edges per cell
    let theta_of = |u: &[f64]| {
        let mut t = z.to_vec();
        for (k, &(a, b)) in e.iter().enumerate() {
            // Dθ_e = θ_b − θ_a; Dᵀu adds −u to a and +u to b.
            t[a] += u[k] / h[a];
            t[b] -= u[k] / h[b];
        }
        t
    };
    let (mut u, mut v) = (vec![0.0; e.len()], vec![0.0; e.len()]);
    let mut tk = 1.0f64;
    for _ in 0..200_000 {
        let t = theta_of(&v);
        let mut un = vec![0.0; e.len()];
        for (k, &(a, b)) in e.iter().enumerate() {
            un[k] = (v[k] + step * (t[b] - t[a])).clamp(-lambda, lambda);
        }
        let tn = 0.5 * (1.0 + (1.0 + 4.0 * tk * tk).sqrt());
        for k in 0..e.len() {
            v[k] = un[k] + (tk - 1.0) / tn * (un[k] - u[k]);
        }
        u = un;
        tk = tn;
    }
    let _ = n;
    theta_of(&u)
}

fn random_problem(rng: &mut impl Rng, n: usize) -> (Vec<f64>, Vec<f64>) {
    let z = (0..n).map(|_| rng.random_range(-2.0..2.0)).collect();
    let h = (0..n).map(|_| rng.random_range(0.2..2.0)).collect();
    (z, h)
}

#[test]
fn two_by_two_blocks_match_brute_force() {
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(1);
    let grid = Grid::new(2, 2);
    for case in 0..200 {
        let (z, h) = random_problem(&mut rng, 4);
        let lambda = rng.random_range(0.0..1.5);
        let theta = solve(&z, &h, grid, lambda);
        let got = objective(&theta, &z, &h, grid, lambda);
        let want = brute_force(&z, &h, grid, lambda);
        assert!(
            got <= want + 1e-9 * (1.0 + want.abs()),
            "case {case}: {got} vs {want}"
        );
        assert!(
            got >= want - 1e-12 * (1.0 + want.abs()),
            "case {case}: below the optimum"
        );
    }
}

#[test]
fn small_grids_match_the_dual_reference() {
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(2);
    for (rows, cols, mr, mc) in [
        (3, 4, false, false),
        (4, 3, true, false),
        (3, 3, true, true),
        (5, 5, false, true),
    ] {
        let grid = Grid {
            missing_row: mr,
            missing_col: mc,
            ..Grid::new(rows, cols)
        };
        for _ in 0..3 {
            let (z, h) = random_problem(&mut rng, rows * cols);
            let lambda = rng.random_range(0.05..1.0);
            let theta = solve(&z, &h, grid, lambda);
            let reference = dual_reference(&z, &h, grid, lambda);
            let (a, b) = (
                objective(&theta, &z, &h, grid, lambda),
                objective(&reference, &z, &h, grid, lambda),
            );
            assert!(
                (a - b).abs() <= 1e-8 * (1.0 + b.abs()),
                "{rows}x{cols}: {a} vs {b}"
            );
            for (x, y) in theta.iter().zip(&reference) {
                assert!((x - y).abs() < 1e-5, "{rows}x{cols}: values {x} vs {y}");
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// The block solve never does worse than its input `θ = z`-projection bounds: it beats
    /// both the flat grid and `z` itself, and a 2×2 grid reaches the brute-force optimum.
    #[test]
    fn grid_solve_beats_simple_points(seed in 0u64..10_000, rows in 1usize..6, cols in 2usize..6, lambda in 0.0f64..2.0) {
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
        let grid = Grid { rows, cols, missing_row: false, missing_col: false };
        let (z, h) = random_problem(&mut rng, rows * cols);
        let theta = solve(&z, &h, grid, lambda);
        let f = objective(&theta, &z, &h, grid, lambda);
        let mean = z.iter().zip(&h).map(|(a, b)| a * b).sum::<f64>() / h.iter().sum::<f64>();
        let flat = vec![mean; z.len()];
        prop_assert!(f <= objective(&flat, &z, &h, grid, lambda) + 1e-9);
        prop_assert!(f <= objective(&z, &z, &h, grid, lambda) + 1e-9);
    }
}

/// `y = 2·[x0 > ½]·[x1 > ½] + x2 + noise` with 6 features.
fn interaction_data(n: usize, seed: u64) -> (Array2<f64>, Array1<f64>) {
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
    let x = Array2::from_shape_fn((n, 6), |_| rng.random_range(0.0..1.0));
    let y = Array1::from_shape_fn(n, |i| {
        let r = &x.row(i);
        let inter = if r[0] > 0.5 && r[1] > 0.5 { 2.0 } else { 0.0 };
        inter + r[2] + 0.1 * rng.random_range(-1.0..1.0)
    });
    (x, y)
}

fn pair_params(interactions: Interactions, penalty: Option<f64>) -> fastpcam::params::FitParams {
    let mut prm = common::pair_params(common::HELD_OUT, interactions);
    prm.pairs.penalty = penalty;
    prm
}

#[test]
fn a_known_interaction_is_found_and_certified() {
    let (x, y) = interaction_data(4000, 3);
    let prm = pair_params(Interactions::Count(3), None);
    let f = fit(Rows::new(x.view(), y.view(), None), &prm, None).unwrap();
    assert_eq!(
        f.pairs.terms[0].features,
        (0, 1),
        "gains {:?}",
        f.pairs.gains
    );
    assert!(f.report.converged, "kkt {}", f.report.kkt_residual);
    assert!(f.report.kkt_residual <= 1e-2);
    // The objective never increases along the final fit.
    common::assert_never_increases(&f.report.history.objective, "known interaction");
    // The held-out path of the pair penalty ran and chose one of its values.
    assert!(!f.pairs.path.is_empty());
    assert!(f.pairs.path.contains(&f.pairs.penalty));
    // Far better than the additive model in training loss.
    let additive = fit(
        Rows::new(x.view(), y.view(), None),
        &pair_params(Interactions::Count(0), None),
        None,
    )
    .unwrap();
    assert!(f.report.objective < 0.5 * additive.report.objective);
}

#[test]
fn zero_interactions_is_the_additive_fit() {
    let (x, y) = interaction_data(1500, 4);
    let mut plain = common::params(common::HELD_OUT, Selection::Auto, 1e-2, Some(64));
    let a = fit(Rows::new(x.view(), y.view(), None), &plain, None).unwrap();
    plain.pairs.interactions = Interactions::List(vec![]);
    let b = fit(Rows::new(x.view(), y.view(), None), &plain, None).unwrap();
    let c = fit(
        Rows::new(x.view(), y.view(), None),
        &pair_params(Interactions::Count(0), Some(0.1)),
        None,
    )
    .unwrap();
    for other in [&b, &c] {
        assert_eq!(a.model, other.model);
        assert_eq!(a.report.objective, other.report.objective);
        assert!(other.pairs.terms.is_empty());
    }
}

#[test]
fn one_and_two_threads_agree_with_pairs() {
    let (x, y) = interaction_data(3000, 5);
    let prm = pair_params(Interactions::List(vec![(0, 1), (2, 3)]), None);
    common::assert_threads_agree(|| fit(Rows::new(x.view(), y.view(), None), &prm, None));
}

/// Under `interactions="auto"` with a cell budget, the two layouts' held-out paths run side by
/// side on two threads (one after the other on one), as do the smooth parts' `μ` path and the
/// fit without them: the same model either way.
#[test]
fn one_and_two_threads_agree_with_both_layouts_and_smooth_parts() {
    let (x, y) = interaction_data(3000, 6);
    let mut prm = pair_params(Interactions::Auto(4), None);
    prm.pairs.smoothing = fastpcam::params::Smoothing::Auto;
    assert!(prm.pairs.max_cells.is_some());
    common::assert_threads_agree(|| fit(Rows::new(x.view(), y.view(), None), &prm, None));
    let f = fastpcam::fit::solver::with_threads(Some(2), || {
        fit(Rows::new(x.view(), y.view(), None), &prm, None)
    })
    .unwrap()
    .unwrap();
    assert_eq!(f.pairs.terms[0].features, (0, 1));
    // The smooth parts' path ran: the fit without them first, then at least one `μ`.
    assert!(
        f.pairs.smoothing_path.len() >= 2,
        "{:?}",
        f.pairs.smoothing_path
    );
    assert_eq!(f.pairs.smoothing_path[0], 0.0);
    assert!(f.report.converged, "kkt {}", f.report.kkt_residual);
}

/// On enough rows, greedy steps solve the two steepest pair blocks side by side
/// (`BlockState::update_pair` of two grids, `PAIR_MIN_WORK`): the same fit on 1 and 2
/// threads, certified, its objective never increasing, and its optimum that of the plain
/// cyclic loop (one block at a time) to the tolerance's order.
#[test]
fn two_pair_blocks_solved_side_by_side() {
    let (x, y) = interaction_data(6000, 8);
    let mut prm = pair_params(Interactions::List(vec![(0, 1), (2, 3), (1, 2)]), Some(0.05));
    prm.lambda = Penalty::Relative(1e-3);
    prm.selection = Selection::Greedy;
    prm.tol = 1e-4;
    let run = |prm: &fastpcam::params::FitParams| {
        fit(Rows::new(x.view(), y.view(), None), prm, None).unwrap()
    };
    common::assert_threads_agree(|| fit(Rows::new(x.view(), y.view(), None), &prm, None));
    let greedy = run(&prm);
    assert!(
        greedy.report.converged,
        "kkt {}",
        greedy.report.kkt_residual
    );
    common::assert_never_increases(&greedy.report.history.objective, "greedy");
    let cyclic = run(&fastpcam::params::FitParams {
        selection: Selection::Cyclic,
        ..prm.clone()
    });
    let (a, b) = (greedy.report.objective, cyclic.report.objective);
    assert!((a - b).abs() <= 1e-4 * b.abs(), "greedy {a} vs cyclic {b}");
}

#[test]
fn fixed_pair_penalty_and_bad_lists() {
    let (x, y) = interaction_data(1000, 6);
    let prm = pair_params(Interactions::List(vec![(1, 0)]), Some(0.5));
    let f = fit(Rows::new(x.view(), y.view(), None), &prm, None).unwrap();
    assert_eq!(f.pairs.terms[0].features, (0, 1));
    assert_eq!(f.pairs.penalty, 0.5);
    assert!(f.pairs.path.is_empty());
    let t = &f.pairs.terms[0];
    assert_eq!(t.values.len(), t.grid.cells());
    let bad = pair_params(Interactions::List(vec![(0, 9)]), None);
    common::assert_invalid(
        fit(Rows::new(x.view(), y.view(), None), &bad, None),
        "interactions",
        "index",
    );
    let mut fixed = pair_params(Interactions::Count(2), None);
    fixed.lambda = Penalty::Relative(1e-3);
    // Two pairs that share a feature, at a small penalty: the transfers between them and
    // the main effects let the fit converge within a few hundred sweeps' worth of updates.
    fixed.max_iter = 5000;
    let f = fit(Rows::new(x.view(), y.view(), None), &fixed, None).unwrap();
    assert_eq!(
        f.pairs.penalty,
        fastpcam::fit::pairs::search::DEFAULT_PAIR_PENALTY
    );
    assert!(f.report.converged, "kkt {}", f.report.kkt_residual);
}

/// `Interactions::Auto(K)`: the `K` strongest pairs cut the additive model's held-out loss
/// below `SECOND_ROUND_CUT²` of it, so `K` more are screened on the residual of the fit with
/// pairs and found, and a third round screens `K` more again (`MAX_ROUNDS`), which find no
/// signal left and stay near zero; `Count(K)` keeps `K`.
#[test]
fn more_rounds_screen_the_residual_of_the_last() {
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(3);
    let n = 6000;
    let x = Array2::from_shape_fn((n, 8), |_| rng.random_range(-1.0..1.0));
    let truth: Vec<f64> = (0..n)
        .map(|i| {
            let r = x.row(i);
            3.0 * r[0] * r[1] + 3.0 * r[2] * r[3] + r[4] * r[5] + r[6] * r[7]
        })
        .collect();
    let y = Array1::from_shape_fn(n, |i| truth[i] + 0.1 * rng.random_range(-1.0..1.0));
    // 16 x 16 grids without a cell budget: one layout (`Auto` with a cell budget also tries
    // four times the pairs on coarser grids, which here would take every true pair at once).
    let pairs_of = |interactions| {
        let mut prm = pair_params(interactions, None);
        prm.pairs.max_cells = None;
        prm.pairs.max_bins = 16;
        let f = fit(Rows::new(x.view(), y.view(), None), &prm, None).unwrap();
        let mut found: Vec<(usize, usize)> = f.pairs.terms.iter().map(|t| t.features).collect();
        found.sort_unstable();
        (f, found)
    };
    let (auto, _) = pairs_of(Interactions::Auto(2));
    assert_eq!(fastpcam::fit::pairs::rounds::MAX_ROUNDS, 3);
    assert_eq!(auto.pairs.terms.len(), 6);
    let mut two_rounds: Vec<(usize, usize)> =
        auto.pairs.terms[..4].iter().map(|t| t.features).collect();
    two_rounds.sort_unstable();
    assert_eq!(two_rounds, vec![(0, 1), (2, 3), (4, 5), (6, 7)]);
    // The true pairs' surfaces span about 2 (the weak ones) to 6; the third round's, noise.
    let range = |t: &fastpcam::model::report::PairTerm| {
        let (lo, hi) = t
            .values
            .iter()
            .fold((f64::MAX, f64::MIN), |(a, b), &v| (a.min(v), b.max(v)));
        hi - lo
    };
    for t in &auto.pairs.terms[..4] {
        assert!(range(t) > 1.0, "{:?}: {}", t.features, range(t));
    }
    for t in &auto.pairs.terms[4..] {
        assert!(range(t) < 0.1, "{:?}: {}", t.features, range(t));
    }
    assert!(auto.report.converged, "kkt {}", auto.report.kkt_residual);
    assert_eq!(auto.pairs.gains.len(), auto.pairs.terms.len());
    let (count, found) = pairs_of(Interactions::Count(2));
    assert_eq!(found, vec![(0, 1), (2, 3)]);
    // Same mains and the same first round, so the same penalties: the second round's pairs
    // fit the weak interactions the first left in the residual.
    assert_eq!(auto.pairs.penalty, count.pairs.penalty);
    assert!(
        auto.report.objective < 0.75 * count.report.objective,
        "{} vs {}",
        auto.report.objective,
        count.report.objective
    );
}

/// Pairs are screened on the rows that fit the pair path, not on the held-out rows that judge
/// it. Every row carries the pair `(2, 3)`; the held-out rows alone also carry a pair `(0, 1)`,
/// strong enough to screen first on all rows (and then kept: the held-out loss flatters a pair
/// chosen for the held-out rows' own signal). Screened on the training rows, `(2, 3)` is the
/// one pair.
#[test]
fn pairs_are_screened_without_the_held_out_rows() {
    use fastpcam::params::DEFAULT_VALIDATION_FRACTION;
    let n = 4000;
    let held = fastpcam::fit::validation::validation_rows(n, DEFAULT_VALIDATION_FRACTION, 0);
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(11);
    let x = Array2::from_shape_fn((n, 6), |_| rng.random_range(-1.0..1.0));
    let mut y = Array1::from_shape_fn(n, |i| {
        let r = x.row(i);
        r[4] + 3.0 * r[2] * r[3] + 0.1 * rng.random_range(-1.0..1.0)
    });
    for &i in &held {
        y[i] += 20.0 * x[[i, 0]] * x[[i, 1]];
    }
    let f = fit(
        Rows::new(x.view(), y.view(), None),
        &pair_params(Interactions::Count(1), None),
        None,
    )
    .unwrap();
    let found: Vec<(usize, usize)> = f.pairs.terms.iter().map(|t| t.features).collect();
    assert_eq!(found, vec![(2, 3)], "path {:?}", f.pairs.path_loss);
}

/// Above `search_rows` rows the pair stage chooses on a sample and fits on every row: the
/// known pair is found, the fit is certified on all rows (its cells weigh every row), its
/// error against the noiseless surface is within 1.5 times that of the choice made on every
/// row (0.0059 against 0.0077), and at `search_rows >= n` the fit is the one made on every
/// row, bit for bit.
#[test]
fn large_data_choose_on_a_sample_then_fit_on_every_row() {
    let n = 6000;
    let (x, y) = interaction_data(n, 5);
    let rows = || Rows::new(x.view(), y.view(), None);
    let every = fit(rows(), &pair_params(Interactions::Count(3), None), None).unwrap();
    let mut prm = pair_params(Interactions::Count(3), None);
    prm.pairs.search_rows = n;
    let same = fit(rows(), &prm, None).unwrap();
    assert_eq!(same.report.objective, every.report.objective);
    prm.pairs.search_rows = 3000;
    let f = fit(rows(), &prm, None).unwrap();
    common::assert_pair_found(&f, (0, 1), "sampled search");
    for term in &f.pairs.terms {
        assert_eq!(term.cell_weights.iter().sum::<f64>(), n as f64);
    }
    assert!(f.pairs.path.contains(&f.pairs.penalty));
    common::assert_never_increases(&f.report.history.objective, "sampled pair stage");
    // The choice on a sample is as accurate as the choice on every row: the two models'
    // errors against the noiseless surface (not their objectives, which differ with `ρ`
    // wherever the two held-out paths stop at different penalties).
    let truth = Array1::from_shape_fn(n, |i| {
        let r = x.row(i);
        f64::from(u8::from(r[0] > 0.5 && r[1] > 0.5)) * 2.0 + r[2]
    });
    let error = |g: &Fit| {
        let mut pred = g.model.predict(x.view()).unwrap();
        for t in &g.pairs.terms {
            let ((j, k), (a, b)) = (t.features, &t.axes);
            let bin = |cuts: &[f64], v: f64| cuts.partition_point(|&c| c <= v);
            for (i, p) in pred.iter_mut().enumerate() {
                *p += t.values[bin(&a.cuts, x[[i, j]]) * b.len() + bin(&b.cuts, x[[i, k]])];
            }
        }
        pred.iter()
            .zip(&truth)
            .map(|(p, t)| (p - t).powi(2))
            .sum::<f64>()
            / n as f64
    };
    let (sampled, all) = (error(&f), error(&every));
    assert!(sampled < 1.5 * all, "{sampled} vs {all}");
    // A sample of the rows really was used: the screening gains differ.
    assert_ne!(f.pairs.gains, every.pairs.gains);
}

/// Pruning under `interactions="auto"` (`prune::PRUNE_SE`, from `PRUNE_MIN_HELD_ROWS` held-out
/// rows): on 70,000 rows (10,500 held out) with one real pair among six features, the screen
/// passes six pairs (`Interactions::Count(10)`, never pruned, keeps them); "auto" keeps the
/// real pair and drops those whose own held-out gain is none, and its fit is certified.
#[test]
fn pruning_drops_screened_pairs_that_gain_nothing_on_held_out_rows() {
    let n = 70_000;
    let (x, y) = interaction_data(n, 21);
    let rows = || Rows::new(x.view(), y.view(), None);
    let one_layout = |interactions| {
        let mut prm = pair_params(interactions, None);
        prm.pairs.max_cells = None;
        prm.pairs.max_bins = 16;
        prm
    };
    let count = fit(rows(), &one_layout(Interactions::Count(10)), None).unwrap();
    let screened = count.pairs.terms.len();
    assert!(screened >= 5, "gains {:?}", count.pairs.gains);
    let auto = fit(rows(), &one_layout(Interactions::Auto(10)), None).unwrap();
    let found: Vec<(usize, usize)> = auto.pairs.terms.iter().map(|t| t.features).collect();
    assert!(found.contains(&(0, 1)), "{found:?}");
    assert!(
        found.len() < screened - 1,
        "{found:?}, gains {:?}",
        auto.pairs.gains
    );
    assert_eq!(auto.pairs.gains.len(), found.len());
    assert!(auto.report.converged, "kkt {}", auto.report.kkt_residual);
}

/// The fit with pairs on all rows runs on the co-occurrence tables of every block where the
/// engine's cost model picks them for the data with the pair blocks (20,000 rows, 6 features
/// of at most 64 bins, one 16 × 16 pair: a block update on the tables costs a third of a pass
/// over the rows): the same optimum as on the rows (`engine = Rows`), each certified, and the
/// engine reported.
#[test]
fn the_fit_with_pairs_on_all_rows_runs_on_tables_where_they_pay() {
    use fastpcam::fit::solver::fit_with_engine;
    use fastpcam::params::Engine;
    let (x, y) = interaction_data(20_000, 7);
    let rows = || Rows::new(x.view(), y.view(), None);
    let mut prm = common::pair_params(Penalty::Relative(1e-3), Interactions::List(vec![(0, 1)]));
    prm.pairs.penalty = Some(0.5);
    prm.tol = 1e-5;
    let on_tables = fit_with_engine(rows(), &prm, Engine::Auto, None).unwrap();
    let on_rows = fit_with_engine(rows(), &prm, Engine::Rows, None).unwrap();
    assert_eq!(on_tables.engine, Engine::Tables);
    assert_eq!(on_rows.engine, Engine::Rows);
    for f in [&on_tables, &on_rows] {
        assert_eq!(f.pairs.terms.len(), 1);
        let (kkt, engine) = (f.report.kkt_residual, f.engine);
        assert!(f.report.converged, "{engine:?}: kkt {kkt}");
        assert!(kkt <= prm.tol, "{engine:?}: kkt {kkt}");
        common::assert_never_increases(&f.report.history.objective, "fit with pairs");
    }
    let (a, b) = (on_tables.report.objective, on_rows.report.objective);
    assert!((a - b).abs() <= 1e-7 * b, "{a} vs {b}");
    let gap = common::max_prediction_gap(&on_tables, &on_rows, &x);
    assert!(gap < 1e-3, "{gap}");
}

/// The held-out paths of the pair stage (the `ρ` path, the rounds, the pruning, the smooth
/// parts' `μ` path) run on a copy of the split's training rows, on their co-occurrence
/// tables where the engine's cost model picks them (20,000 rows of 6 features with at most
/// 64 bins: a block update on the tables costs a fraction of a pass over the rows): the same
/// choices as on the rows (`engine = Rows`), about the same held-out losses, and the same
/// certified optimum on all rows.
#[test]
fn held_out_pair_paths_on_the_training_rows_tables_choose_as_on_the_rows() {
    use fastpcam::fit::solver::fit_with_engine;
    use fastpcam::params::Engine;
    let (x, y) = interaction_data(20_000, 8);
    let rows = || Rows::new(x.view(), y.view(), None);
    let prm = pair_params(Interactions::Count(4), None);
    let auto = fit_with_engine(rows(), &prm, Engine::Auto, None).unwrap();
    let on_rows = fit_with_engine(rows(), &prm, Engine::Rows, None).unwrap();
    let features = |f: &Fit| f.pairs.terms.iter().map(|t| t.features).collect::<Vec<_>>();
    assert!(!auto.pairs.terms.is_empty());
    assert_eq!(features(&auto), features(&on_rows));
    assert_eq!(auto.pairs.penalty, on_rows.pairs.penalty);
    assert_eq!(auto.pairs.path, on_rows.pairs.path);
    assert_eq!(auto.pairs.path_loss.len(), on_rows.pairs.path_loss.len());
    // The additive model's fit (the path's first) converges: equal to rounding. The later
    // fits stop at the paths' update budget or loose tolerance, and the two engines order
    // their updates differently: near each other (measured: within 0.33%).
    let (a, b) = (auto.pairs.path_loss[0], on_rows.pairs.path_loss[0]);
    assert!(
        (a - b).abs() <= 1e-9 * b,
        "additive held-out loss {a} vs {b}"
    );
    for (a, b) in auto.pairs.path_loss.iter().zip(&on_rows.pairs.path_loss) {
        assert!((a - b).abs() <= 1e-2 * b, "held-out losses {a} vs {b}");
    }
    for f in [&auto, &on_rows] {
        assert!(f.report.converged, "kkt {}", f.report.kkt_residual);
        assert!(f.report.kkt_residual <= prm.tol);
    }
    let (a, b) = (auto.report.objective, on_rows.report.objective);
    assert!((a - b).abs() <= 1e-4 * b, "{a} vs {b}");
}
