//! Anderson extrapolation of the rounds of a descent (Anderson 1965; for coordinate descent,
//! Bertrand & Massias 2021, "Anderson acceleration of coordinate descent").
//!
//! The fits on all rows run the descent loop in rounds, each followed by an exact line search
//! through the round's start and end ([`crate::states::extrapolate`]). Where main effects can
//! stand in for one another (a date, its year and its day of the year: the date's trend is
//! as cheap, in total variation, as the year's steps plus the day's ramp), the rounds creep
//! along a long valley and every round's line search sees only its own change. Anderson
//! extrapolation looks at the last `m + 1` round ends `x_0 … x_m` together: with the changes
//! `r_i = x_{i+1} − x_i`, it takes the weights `c` (summing to 1) that make `Σ c_i r_i` the
//! shortest, and proposes `Σ c_i x_{i+1}`. On a linear iteration `x ↦ A x + b` of dimension
//! at most `m` that is its fixed point exactly. Here it is only a proposal: the state moves
//! towards it by the same exact line search, and only where the objective falls, so the
//! objective never rises and the certificate stays the loop's.

/// Round ends per extrapolation: every `ANDERSON_DEPTH` rounds the last `ANDERSON_DEPTH + 1`
/// round ends propose a point (Bertrand & Massias's default). Measured on the final refit of
/// `benches/python/huge_shape.py`'s `dates` (9.2M rows; 27,969 block updates without): a
/// first version took 19,716, 18,887 and 20,477 updates at depths 3, 5 and 10; this one
/// 17,670 at 5 (`ties` 898 → 708, `smoke` 1,165 → 801; the refits of `issue`, `ids` and
/// `steps` unchanged: 16, 1,475 and 24 updates).
pub const ANDERSON_DEPTH: usize = 5;

/// Relative ridge on the Gram matrix of the changes, so that nearly parallel changes give
/// bounded weights.
const RIDGE: f64 = 1e-10;

/// The Anderson weights of the changes `r` (each a flattened change between consecutive
/// round ends, all of one length): `c` minimising `‖Σ c_i r_i‖²` subject to `Σ c_i = 1`
/// (with a relative ridge on the Gram matrix); `None` when every change is zero or the
/// weights are not finite.
pub fn anderson_weights(r: &[Vec<f64>]) -> Option<Vec<f64>> {
    let m = r.len();
    if m == 0 {
        return None;
    }
    let mut g = vec![0.0; m * m];
    for i in 0..m {
        for j in 0..=i {
            let v: f64 = r[i].iter().zip(&r[j]).map(|(a, b)| a * b).sum();
            g[i * m + j] = v;
            g[j * m + i] = v;
        }
    }
    let trace: f64 = (0..m).map(|i| g[i * m + i]).sum();
    if !(trace > 0.0) || !trace.is_finite() {
        return None;
    }
    for i in 0..m {
        g[i * m + i] += RIDGE * trace;
    }
    // `G z = 1` by Cholesky (G is symmetric positive definite with the ridge); `c = z / Σ z`.
    let mut l = vec![0.0; m * m];
    for i in 0..m {
        for j in 0..=i {
            let s: f64 = g[i * m + j] - (0..j).map(|k| l[i * m + k] * l[j * m + k]).sum::<f64>();
            if i == j {
                if !(s > 0.0) {
                    return None;
                }
                l[i * m + i] = s.sqrt();
            } else {
                l[i * m + j] = s / l[j * m + j];
            }
        }
    }
    let mut z = vec![1.0; m];
    for i in 0..m {
        let s: f64 = (0..i).map(|k| l[i * m + k] * z[k]).sum();
        z[i] = (z[i] - s) / l[i * m + i];
    }
    for i in (0..m).rev() {
        let s: f64 = (i + 1..m).map(|k| l[k * m + i] * z[k]).sum();
        z[i] = (z[i] - s) / l[i * m + i];
    }
    let total: f64 = z.iter().sum();
    let c: Vec<f64> = z.iter().map(|v| v / total).collect();
    c.iter().all(|v| v.is_finite()).then_some(c)
}

/// The point Anderson extrapolation proposes from the round ends `x` (at least two, each
/// flattened, all of one length): `Σ c_i x_{i+1}` with the weights of the changes
/// ([`anderson_weights`]); `None` where those are not defined.
pub fn anderson_point(x: &[Vec<f64>]) -> Option<Vec<f64>> {
    let r: Vec<Vec<f64>> = x
        .windows(2)
        .map(|w| w[1].iter().zip(&w[0]).map(|(a, b)| a - b).collect())
        .collect();
    let c = anderson_weights(&r)?;
    let mut out = vec![0.0; x.first()?.len()];
    for (ci, xi) in c.iter().zip(&x[1..]) {
        for (o, v) in out.iter_mut().zip(xi) {
            *o += ci * v;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On a linear iteration `x ↦ A x + b` in `m` dimensions, `m` changes (`m + 1`
    /// iterates) give its fixed point up to the ridge's rounding, where the iteration itself
    /// is still far from it (spectral radius 0.95 here): a thousand times closer than the
    /// last iterate.
    #[test]
    fn anderson_finds_the_fixed_point_of_a_linear_iteration() {
        let m = 4;
        // A lower-triangular contraction with eigenvalues 0.95, 0.9, 0.8, 0.5 and
        // off-diagonal coupling 0.1, `b = 1`.
        let diag = [0.95, 0.9, 0.8, 0.5];
        let a = |x: &[f64]| -> Vec<f64> {
            (0..m)
                .map(|i| diag[i] * x[i] + (0..i).map(|j| 0.1 * x[j]).sum::<f64>() + 1.0)
                .collect()
        };
        // The fixed point, `(I − A) x = b` by forward substitution.
        let mut fixed = vec![0.0; m];
        for i in 0..m {
            let coupled: f64 = (0..i).map(|j| 0.1 * fixed[j]).sum();
            fixed[i] = (1.0 + coupled) / (1.0 - diag[i]);
        }
        let mut x = vec![vec![0.0; m]];
        for _ in 0..m {
            let next = a(x.last().unwrap());
            x.push(next);
        }
        let dist = |u: &[f64]| -> f64 {
            u.iter()
                .zip(&fixed)
                .map(|(a, b)| (a - b) * (a - b))
                .sum::<f64>()
                .sqrt()
        };
        let p = anderson_point(&x).unwrap();
        let last = dist(x.last().unwrap());
        assert!(last > 10.0, "{last}");
        assert!(dist(&p) < 1e-3 * last, "{} against {last}", dist(&p));
    }

    /// The weights sum to 1; one change gives weight 1; all-zero changes give none.
    #[test]
    fn anderson_weights_sum_to_one_and_need_a_change() {
        let r = vec![
            vec![1.0, 2.0, 0.5],
            vec![-0.5, 1.0, 3.0],
            vec![0.2, -0.1, 0.0],
        ];
        let c = anderson_weights(&r).unwrap();
        assert!((c.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        assert_eq!(anderson_weights(&r[..1]).unwrap(), vec![1.0]);
        assert!(anderson_weights(&[vec![0.0; 3], vec![0.0; 3]]).is_none());
        assert!(anderson_weights(&[]).is_none());
        // Parallel changes stay finite thanks to the ridge.
        let c = anderson_weights(&[vec![1.0, 1.0], vec![2.0, 2.0]]).unwrap();
        assert!(c.iter().all(|v| v.is_finite()));
    }
}
