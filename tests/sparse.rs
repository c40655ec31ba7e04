//! Tests of feature-sparse FAST (AGIS, group ℓ0, the BGS local search): support recovery with
//! correlated decoys, monotone objectives, sizes, determinism across thread counts, errors.

use fastpcam::data::binning::{bin_data, BinnedData, BinningParams};
use fastpcam::fit::solver::{fit, with_threads};
use fastpcam::fit::sparse::{
    agis, agis_binned, l0, l0_binned, LambdaS, SparseFit, SparseParams, SparseSolver,
};
use fastpcam::params::{FitParams, Penalty, Selection};
use fastpcam::Rows;
use ndarray::{Array1, Array2};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};

/// The true features of [`sparse_data`], and the decoys (noisy copies of true ones).
const TRUE: [usize; 5] = [2, 9, 14, 21, 27];
const DECOYS: [(usize, usize); 3] = [(3, 2), (10, 9), (15, 14)];

/// 30 uniform features; `y` depends on the 5 in [`TRUE`]; three decoys are copies of true
/// features plus noise (correlation ≈ 0.97).
fn sparse_data(n: usize, seed: u64) -> (Array2<f64>, Array1<f64>) {
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
    let mut x = Array2::from_shape_fn((n, 30), |_| rng.random::<f64>());
    for &(decoy, of) in &DECOYS {
        for i in 0..n {
            x[[i, decoy]] = x[[i, of]] + 0.07 * (rng.random::<f64>() - 0.5) * 2.0;
        }
    }
    let y = Array1::from_shape_fn(n, |i| {
        let r = x.row(i);
        (if r[2] > 0.5 { 1.0 } else { 0.0 })
            + (6.0 * r[9]).sin()
            + 1.5 * r[14]
            + (if r[21] > 0.3 { 0.8 } else { -0.4 })
            - (if r[27] > 0.7 { 1.0 } else { 0.0 })
            + 0.3 * (rng.random::<f64>() - 0.5)
    });
    (x, y)
}

fn params(tol: f64) -> SparseParams {
    SparseParams {
        lambda: Penalty::Relative(1e-3),
        tol,
        binning: BinningParams {
            max_bins: Some(32),
            ..BinningParams::default()
        },
        ..SparseParams::default()
    }
}

fn binned(x: &Array2<f64>) -> BinnedData {
    bin_data(
        x.view(),
        None,
        &BinningParams {
            max_bins: Some(32),
            ..BinningParams::default()
        },
    )
    .unwrap()
}

/// `F` of model `i` recomputed from its predictions (DESIGN §1).
fn objective_of(f: &SparseFit, i: usize, x: &Array2<f64>, y: &Array1<f64>) -> f64 {
    let pred = f.model(i).predict(x.view()).unwrap();
    let loss = 0.5
        * y.iter()
            .zip(&pred)
            .map(|(a, b)| (a - b).powi(2))
            .sum::<f64>()
        / y.len() as f64;
    let tv: f64 = f.path.models[i]
        .values
        .iter()
        .map(|b| b.windows(2).map(|d| (d[1] - d[0]).abs()).sum::<f64>())
        .sum();
    loss + f.path.lambda_f * tv
}

fn assert_monotone(h: &[f64], what: &str) {
    for (t, pair) in h.windows(2).enumerate() {
        assert!(
            pair[1] <= pair[0] + 1e-12 * pair[0].abs(),
            "{what}: objective rose at update {t}: {pair:?}"
        );
    }
}

#[test]
fn agis_and_l0_recover_the_true_support_despite_decoys() {
    let (x, y) = sparse_data(4_000, 1);
    let a = agis(Rows::new(x.view(), y.view(), None), &params(1e-3), 5).unwrap();
    assert_eq!(a.path.models.len(), 5);
    assert_eq!(a.path.models[4].support, TRUE.to_vec());
    let b = l0(
        Rows::new(x.view(), y.view(), None),
        &params(1e-3),
        &LambdaS::auto(5),
    )
    .unwrap();
    let last = b.path.models.last().unwrap();
    assert_eq!(
        last.support,
        TRUE.to_vec(),
        "sizes {:?}",
        b.path
            .models
            .iter()
            .map(|m| m.support.len())
            .collect::<Vec<_>>()
    );
    // Every reported objective is the model's F (plus λ_s·|S| for ℓ0).
    for (f, l0) in [(&a, false), (&b, true)] {
        for (i, m) in f.path.models.iter().enumerate() {
            let ours = objective_of(f, i, &x, &y);
            assert!(
                (ours - m.fast_objective).abs() <= 1e-10 * ours,
                "{ours} vs {}",
                m.fast_objective
            );
            let extra = if l0 {
                m.lambda_s * m.support.len() as f64
            } else {
                0.0
            };
            assert!((m.objective - m.fast_objective - extra).abs() <= 1e-12 * m.objective);
            assert!(m.converged, "model {i}: kkt {}", m.kkt_residual);
            assert!(m.kkt_residual <= 1e-3);
        }
    }
}

#[test]
fn local_search_swaps_a_decoy_out_and_never_increases_the_objective() {
    let (x, y) = sparse_data(3_000, 2);
    let data = binned(&x);
    let lmax = fastpcam::fit::solver::lambda_max(&data, y.view()).unwrap();
    let mut sv = SparseSolver::new(&data, y.view(), 1e-3 * lmax, 1e-4);
    // Start from a support of three decoys and two true features.
    let mut s = vec![3, 10, 15, 21, 27];
    assert!(sv.converge(&mut s, None, usize::MAX));
    let mut last = sv.objective(None);
    let mut swaps = Vec::new();
    while let Some(swap) = sv.local_search_step(&mut s, None) {
        let after_swap = sv.objective(None);
        assert!(
            after_swap < last,
            "a swap must lower the objective: {after_swap} vs {last}"
        );
        assert!(sv.converge(&mut s, None, usize::MAX));
        let after_sweep = sv.objective(None);
        assert!(after_sweep <= after_swap + 1e-12 * after_swap);
        last = after_sweep;
        swaps.push(swap);
        assert!(swaps.len() < 20);
    }
    // Every decoy went out for the feature it copies.
    assert_eq!(swaps.len(), 3, "{swaps:?}");
    s.sort_unstable();
    assert_eq!(s, TRUE.to_vec());
    assert_monotone(&sv.history().objective, "sweeps and swaps");
    // The same from the good support: no swap helps.
    let mut good = TRUE.to_vec();
    assert!(sv.converge(&mut good, None, usize::MAX));
    assert_eq!(sv.local_search_step(&mut good, None), None);
}

#[test]
fn local_search_never_hurts_agis_and_l0() {
    let (x, y) = sparse_data(2_000, 3);
    for ls in [false, true] {
        let p = SparseParams {
            local_search: ls,
            ..params(1e-3)
        };
        let a = agis(Rows::new(x.view(), y.view(), None), &p, 6).unwrap();
        assert_monotone(&a.path.history.objective, "AGIS");
        let swaps: usize = a.path.models.iter().map(|m| m.n_swaps).sum();
        if !ls {
            assert_eq!(swaps, 0);
        }
    }
}

#[test]
fn l0_objective_never_increases_at_a_fixed_lambda_s() {
    let (x, y) = sparse_data(2_000, 4);
    let f = l0(
        Rows::new(x.view(), y.view(), None),
        &params(1e-3),
        &LambdaS::auto(8),
    )
    .unwrap();
    let h = &f.path.history;
    assert!(h.objective.len() > 50);
    let mut start = 0;
    for t in 1..=h.objective.len() {
        if t == h.objective.len() || h.segment[t] != h.segment[start] {
            assert_monotone(&h.objective[start..t], "l0 at one λ_s");
            assert!(h.lambda_s[start..t].iter().all(|&l| l == h.lambda_s[start]));
            start = t;
        }
    }
    // The path reports one model per size, by increasing size, each within the budget.
    let sizes: Vec<usize> = f.path.models.iter().map(|m| m.support.len()).collect();
    assert!(sizes.windows(2).all(|w| w[0] < w[1]), "{sizes:?}");
    assert!(*sizes.last().unwrap() <= 8);
    for m in &f.path.models {
        assert!(m.lambda_s > 0.0 && m.lambda_s < f.path.lambda_s_max);
        assert_eq!(m.selected.len(), m.support.len());
    }
}

#[test]
fn l0_at_lambda_s_zero_is_the_dense_fit_and_a_huge_lambda_s_is_empty() {
    let (x, y) = sparse_data(1_500, 5);
    let x = x.slice(ndarray::s![.., 0..8]).to_owned();
    let p = SparseParams {
        tol: 1e-8,
        ..params(1e-8)
    };
    let f = l0(
        Rows::new(x.view(), y.view(), None),
        &p,
        &LambdaS::Values(vec![1e3, 0.0]),
    )
    .unwrap();
    assert!(f.path.models[0].support.is_empty());
    assert!(f.path.models[0].values.iter().flatten().all(|&v| v == 0.0));
    let dense = fit(
        Rows::new(x.view(), y.view(), None),
        &FitParams {
            lambda: Penalty::Relative(1e-3),
            selection: Selection::Greedy,
            tol: 1e-9,
            binning: BinningParams {
                max_bins: Some(32),
                ..BinningParams::default()
            },
            ..FitParams::default()
        },
        None,
    )
    .unwrap();
    let ours = f.path.models[1].fast_objective;
    let reference = dense.report.objective;
    assert!(
        (ours - reference).abs() <= 1e-7 * reference,
        "{ours} vs {reference}"
    );
    // AGIS with K = p reaches the same optimum when every feature is used.
    let a = agis(Rows::new(x.view(), y.view(), None), &p, 8).unwrap();
    let last = a.path.models.last().unwrap();
    if last.support.len() == 8 {
        assert!((last.fast_objective - reference).abs() <= 1e-7 * reference);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    /// AGIS model `s` selects `s` blocks; all are non-flat unless reported flat; objectives
    /// fall with the size; 1 and 2 threads give identical paths.
    #[test]
    fn agis_sizes_and_threads(seed in 0u64..1_000, n in 60usize..400, k in 1usize..6, ratio in 1e-4f64..0.3, weighted in any::<bool>()) {
        let (x, y) = sparse_data(n, seed);
        let x = x.slice(ndarray::s![.., 0..12]).to_owned();
        let w: Option<Vec<f64>> = weighted.then(|| (0..n).map(|i| 0.5 + (i % 3) as f64).collect());
        let p = SparseParams { lambda: Penalty::Relative(ratio), max_iter: 2_000, ..params(1e-4) };
        let run = |t| with_threads(Some(t), || agis(Rows::new(x.view(), y.view(), w.as_deref()), &p, k).unwrap()).unwrap();
        let (mut a, mut b) = (run(1), run(2));
        a.path.history.time.clear();
        b.path.history.time.clear();
        prop_assert_eq!(&a, &b);
        let models = &a.path.models;
        prop_assert!(models.len() <= k);
        for (i, m) in models.iter().enumerate() {
            prop_assert_eq!(m.selected.len(), i + 1);
            prop_assert!(m.support.len() <= i + 1);
            prop_assert_eq!(m.support.len() + m.flat.len(), i + 1);
            for &j in &m.flat {
                prop_assert!(m.values[j].iter().all(|&v| v == 0.0));
            }
            for &j in &m.support {
                prop_assert!(m.values[j].windows(2).any(|d| d[0] != d[1]));
            }
            // Outside the support every shape is exactly 0.
            let nonzero = m.values.iter().filter(|v| v.iter().any(|&x| x != 0.0)).count();
            prop_assert_eq!(nonzero, m.support.len());
        }
        for pair in models.windows(2) {
            prop_assert!(pair[1].objective <= pair[0].objective + 1e-12 * pair[0].objective);
        }
        for pair in a.path.history.objective.windows(2) {
            prop_assert!(pair[1] <= pair[0] + 1e-12 * pair[0].abs());
        }
    }

    #[test]
    fn l0_paths_are_the_same_on_1_and_2_threads(seed in 0u64..1_000, n in 60usize..400, k in 1usize..5) {
        let (x, y) = sparse_data(n, seed);
        let x = x.slice(ndarray::s![.., 0..10]).to_owned();
        let p = SparseParams { max_iter: 2_000, ..params(1e-4) };
        let run = |t| with_threads(Some(t), || l0(Rows::new(x.view(), y.view(), None), &p, &LambdaS::auto(k)).unwrap()).unwrap();
        let (mut a, mut b) = (run(1), run(2));
        a.path.history.time.clear();
        b.path.history.time.clear();
        prop_assert_eq!(&a, &b);
        for m in &a.path.models {
            prop_assert!(m.support.len() <= k);
        }
    }
}

#[test]
fn identical_on_1_and_2_threads_across_row_chunks() {
    // More rows than one residual chunk (parallel residual and bin-sum passes).
    let (x, y) = sparse_data(40_000, 6);
    let x = x.slice(ndarray::s![.., 0..16]).to_owned();
    let w: Vec<f64> = (0..40_000).map(|i| 0.5 + (i % 7) as f64).collect();
    let p = params(1e-3);
    for method in 0..2 {
        let run = |t| {
            let mut f = with_threads(Some(t), || match method {
                0 => agis(Rows::new(x.view(), y.view(), Some(&w)), &p, 3).unwrap(),
                _ => l0(
                    Rows::new(x.view(), y.view(), Some(&w)),
                    &p,
                    &LambdaS::auto(3),
                )
                .unwrap(),
            })
            .unwrap();
            f.path.history.time.clear();
            f
        };
        let a = run(1);
        assert!(!a.path.models.is_empty());
        assert_eq!(a, run(2));
    }
}

#[test]
fn max_iter_bounds_the_updates_per_model() {
    let (x, y) = sparse_data(1_000, 7);
    let p = SparseParams {
        max_iter: 4,
        tol: 0.0,
        local_search: false,
        ..params(0.0)
    };
    let f = agis(Rows::new(x.view(), y.view(), None), &p, 3).unwrap();
    assert_eq!(f.path.models.len(), 3);
    for (i, m) in f.path.models.iter().enumerate() {
        assert_eq!(m.n_iter, 4 * (i + 1));
        assert!(!m.converged);
    }
}

#[test]
fn a_constant_target_selects_nothing() {
    let (x, _) = sparse_data(200, 8);
    let y = Array1::from_elem(200, 3.0);
    let f = agis(Rows::new(x.view(), y.view(), None), &params(1e-3), 3).unwrap();
    assert!(f.path.models.is_empty());
    assert_eq!(f.path.stop, fastpcam::fit::sparse::PathStop::NoCandidate);
    let f = l0(
        Rows::new(x.view(), y.view(), None),
        &params(1e-3),
        &LambdaS::auto(3),
    )
    .unwrap();
    assert!(f.path.models.is_empty());
}

#[test]
fn bad_input_names_the_argument() {
    let (x, y) = sparse_data(100, 9);
    let data = binned(&x);
    let msg = |e: fastpcam::FastError| e.to_string();
    let e = msg(agis(Rows::new(x.view(), y.view(), None), &params(1e-3), 0).unwrap_err());
    assert!(e.contains("max_features") && e.contains(">= 1"), "{e}");
    let e = msg(agis(Rows::new(x.view(), y.view(), None), &params(1e-3), 31).unwrap_err());
    assert!(
        e.contains("max_features") && e.contains("30 features"),
        "{e}"
    );
    let e = msg(agis_binned(&data, y.view(), &params(1e-3), 31).unwrap_err());
    assert!(e.contains("max_features"), "{e}");
    let e = msg(l0(
        Rows::new(x.view(), y.view(), None),
        &params(1e-3),
        &LambdaS::auto(0),
    )
    .unwrap_err());
    assert!(e.contains("max_features"), "{e}");
    for bad in [-1.0, f64::NAN, f64::INFINITY] {
        let e = msg(l0_binned(
            &data,
            y.view(),
            &params(1e-3),
            &LambdaS::Values(vec![0.1, bad]),
        )
        .unwrap_err());
        assert!(e.contains("lambda_s"), "{e}");
    }
    let e = msg(l0_binned(&data, y.view(), &params(1e-3), &LambdaS::Values(vec![])).unwrap_err());
    assert!(e.contains("lambda_s"), "{e}");
    let e = msg(l0_binned(
        &data,
        y.view(),
        &params(1e-3),
        &LambdaS::Auto {
            max_features: 3,
            n_lambda: 10,
            scale_down: 1.0,
        },
    )
    .unwrap_err());
    assert!(e.contains("scale_down_factor"), "{e}");
    let e = msg(agis(
        Rows::new(x.view(), y.view(), None),
        &SparseParams {
            lambda: Penalty::Absolute(-1.0),
            ..params(1e-3)
        },
        2,
    )
    .unwrap_err());
    assert!(e.contains("lambda_f"), "{e}");
    let e = msg(agis(
        Rows::new(x.view(), y.view(), None),
        &SparseParams {
            tol: -1.0,
            ..params(1e-3)
        },
        2,
    )
    .unwrap_err());
    assert!(e.contains("tol"), "{e}");
    let e = msg(agis(
        Rows::new(x.view(), y.slice(ndarray::s![..50]), None),
        &params(1e-3),
        2,
    )
    .unwrap_err());
    assert!(e.contains('y'), "{e}");
}

#[test]
fn missing_values_form_their_own_level() {
    // A true feature (without a decoy) with 20% missing values: it is still selected, and
    // the missing rows get their own value.
    let (mut x, y) = sparse_data(2_000, 10);
    for i in (0..2_000).step_by(5) {
        x[[i, 21]] = f64::NAN;
    }
    let f = agis(Rows::new(x.view(), y.view(), None), &params(1e-3), 5).unwrap();
    let m = f.path.models.last().unwrap();
    assert_eq!(m.support, TRUE.to_vec());
    assert_eq!(f.missing_weights[21], 400.0);
    assert!(m.missing_values[21] != 0.0);
    assert!(f
        .missing_weights
        .iter()
        .enumerate()
        .all(|(j, &w)| j == 21 || w == 0.0));
    let pred = f.model(4).predict(x.view()).unwrap();
    assert!(pred.iter().all(|v| v.is_finite()));
}
