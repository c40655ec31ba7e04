//! Property tests of the binning (`fastpcam::data::binning::bin_data`), on random matrices with
//! ties, NaN and weights (some zero), in both memory layouts:
//! * cut points are finite and strictly increasing, at most `max_bins - 1` of them;
//! * every row's code is its value's bin (`bin_of`), NaN the missing bin after the chain;
//! * each feature's bin weights add up to the total weight, and each bin's weight is the sum
//!   of its rows' weights;
//! * with exact bins (or few distinct values) every distinct value of a row with weight has
//!   its own bin;
//! * C and Fortran order, and one or two threads, give identical results.
//!
//! Case counts are fixed so the file runs in a few seconds: `cargo test --test prop_binning`.

use fastpcam::data::binning::{bin_data, bin_of, BinnedData, BinningParams};
use ndarray::{Array2, ShapeBuilder};
use proptest::prelude::*;
use proptest::test_runner::Config;

fn config(cases: u32) -> Config {
    Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    }
}

/// A value: one of a few ties, a continuous value, or (one time in ten) NaN.
fn value() -> impl Strategy<Value = f64> {
    prop_oneof![
        4 => (-3i32..=3).prop_map(f64::from),
        5 => -1e3f64..1e3,
        1 => Just(f64::NAN),
    ]
}

fn problem() -> impl Strategy<Value = (usize, usize, Vec<f64>, Option<Vec<f64>>, Option<usize>)> {
    (1usize..60, 1usize..5).prop_flat_map(|(n, p)| {
        (
            Just(n),
            Just(p),
            prop::collection::vec(value(), n * p),
            prop::option::of(prop::collection::vec(
                prop_oneof![1 => Just(0.0), 4 => 0.1f64..10.0],
                n,
            )),
            prop::option::of(2usize..12),
        )
    })
}

fn params(max_bins: Option<usize>) -> BinningParams {
    BinningParams {
        max_bins,
        ..BinningParams::default()
    }
}

fn check(data: &BinnedData, x: &Array2<f64>, w: Option<&[f64]>, max_bins: Option<usize>) {
    let (n, p) = x.dim();
    let total: f64 = w.map_or(n as f64, |w| w.iter().sum());
    assert!((data.total_weight - total).abs() <= 1e-9 * total.max(1.0));
    for j in 0..p {
        let f = &data.features[j];
        assert!(f.cuts.iter().all(|c| c.is_finite()));
        assert!(
            f.cuts.windows(2).all(|c| c[0] < c[1]),
            "cuts not increasing: {:?}",
            f.cuts
        );
        if let Some(m) = max_bins {
            assert!(
                f.cuts.len() < m.max(2),
                "{} cuts for max_bins {m}",
                f.cuts.len()
            );
        }
        let nc = f.cuts.len() + 1;
        let mut weights = vec![0.0; f.n_bins()];
        for i in 0..n {
            let v = x[[i, j]];
            let code = f.codes.get(i);
            if v.is_nan() {
                assert!(f.missing, "feature {j} has NaN but no missing bin");
                assert_eq!(code, nc, "NaN not in the missing bin");
            } else {
                assert_eq!(code, bin_of(&f.cuts, v), "row {i} feature {j} value {v}");
            }
            weights[code] += w.map_or(1.0, |w| w[i]);
        }
        for (got, want) in f.bin_weights.iter().zip(&weights) {
            assert!(
                (got - want).abs() <= 1e-9 * want.max(1.0),
                "bin weights {:?} vs {:?}",
                f.bin_weights,
                weights
            );
        }
        // the values of rows with weight (weightless rows do not shape the bins)
        let mut distinct: Vec<f64> = (0..n)
            .filter(|&i| w.is_none_or(|w| w[i] > 0.0))
            .map(|i| x[[i, j]])
            .filter(|v| !v.is_nan())
            .collect();
        distinct.sort_by(f64::total_cmp);
        distinct.dedup();
        if max_bins.is_none_or(|m| distinct.len() <= m) {
            // exact bins: distinct values never share a bin
            for pair in distinct.windows(2) {
                assert_ne!(
                    bin_of(&f.cuts, pair[0]),
                    bin_of(&f.cuts, pair[1]),
                    "{pair:?} share a bin"
                );
            }
        }
    }
}

proptest! {
    #![proptest_config(config(300))]

    #[test]
    fn binning_invariants((n, p, values, w, max_bins) in problem()) {
        let x = Array2::from_shape_vec((n, p), values).unwrap();
        let w = w.map(|mut w| { w[0] = 1.0; w });  // a positive total weight
        let got = bin_data(x.view(), w.as_deref(), &params(max_bins));
        let data = match got {
            Ok(d) => d,
            Err(e) => {
                // the only refusal on such data: too few rows
                prop_assert!(n < 2 || e.to_string().contains("rows"), "unexpected error {e}");
                return Ok(());
            }
        };
        check(&data, &x, w.as_deref(), max_bins);
        // Fortran order reads the same matrix the same way
        let mut xf = Array2::<f64>::zeros((n, p).f());
        xf.assign(&x);
        let data_f = bin_data(xf.view(), w.as_deref(), &params(max_bins)).unwrap();
        prop_assert_eq!(&data_f.features, &data.features);
        // one thread gives the same bins as the default pool
        let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
        let serial = pool.install(|| bin_data(x.view(), w.as_deref(), &params(max_bins))).unwrap();
        prop_assert_eq!(&serial.features, &data.features);
    }
}
