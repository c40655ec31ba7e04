//! Twin features under the squared term on the jumps: features that bin every row alike
//! (the same codes row by row, so the same bin weights) fit one effect between them.
//!
//! Without the squared term any split of that effect is optimal. With it (`μ > 0`) the even
//! split is the unique optimal one: jump by jump, `g(a) + g(s − a)` with
//! `g(x) = λ|x| + (μ/2) x²` is smallest at `a = s/2`, and the group of `n` twins then pays
//! `n g(s/n) = λ|s| + (μ/2n) s²` for a summed jump `s`: one chain with the squared term's
//! weight divided by `n`.
//!
//! Updating one twin at a time with the others fixed reaches that split only by zig-zag.
//! At a jump that should be 0 but carries a small summed jump `ε`, a twin alone can remove
//! only its own share (the loss does not pay for crossing 0), so `ε` shrinks by a share per
//! update and never reaches 0, while a nonzero jump on the wrong side of its gradient violates
//! optimality by up to `2λ` however small it is: thousands of updates, or a stall once the
//! falls sink below what the objective can see. So a twin group is updated as one block
//! ([`update_group`]).

use crate::data::binning::BinnedData;
use crate::descent::DescentState;
use crate::params::{BlockKind, ChainShape};

/// The groups of features that bin every row alike (the same cuts' order: equal codes row by
/// row, so equal bin weights), each of at least two features, in feature order.
pub fn twin_groups(data: &BinnedData) -> Vec<Vec<usize>> {
    let f = &data.features;
    let same = |a: usize, b: usize| {
        f[a].missing == f[b].missing
            && f[a].bin_weights == f[b].bin_weights
            && (0..data.n_samples).all(|i| f[a].codes.get(i) == f[b].codes.get(i))
    };
    let mut taken = vec![false; f.len()];
    let mut groups = Vec::new();
    for a in 0..f.len() {
        if taken[a] || f[a].n_bins() < 2 {
            continue;
        }
        let mut group = vec![a];
        for b in a + 1..f.len() {
            if !taken[b] && f[b].n_bins() == f[a].n_bins() && same(a, b) {
                taken[b] = true;
                group.push(b);
            }
        }
        if group.len() > 1 {
            groups.push(group);
        }
    }
    groups
}

/// The twin group of block `k` when it is to be updated as one block: a chain with the
/// squared term, every twin of the same shape, at a finite penalty.
pub fn group_of<'g>(
    groups: &'g [Vec<usize>],
    shapes: &[ChainShape],
    k: usize,
    lambda: f64,
) -> Option<&'g [usize]> {
    let shape = shapes.get(k).copied().unwrap_or_default();
    if !(shape.l2 > 0.0 && shape.kind() == BlockKind::Chain && lambda.is_finite()) {
        return None;
    }
    let group = groups.iter().find(|g| g.contains(&k))?;
    group
        .iter()
        .all(|&m| shapes.get(m).copied().unwrap_or_default() == shape)
        .then_some(group.as_slice())
}

/// Updates the twin `group` as one block through block `k`: block `k` takes the group's sum
/// and the others 0 (no prediction changes), the update runs with `k`'s squared term at
/// `μ/n`, and every twin then takes `1/n` of the result. [`DescentState::set_values`] and
/// [`DescentState::set_shapes`] keep the objective right at every step; the objective at
/// the end is at most the one before (the even split's penalty is at most any split's, and
/// the update does not raise it). `None`, changing nothing, where the state cannot set
/// values; else whether the update moved.
pub fn update_group<S: DescentState>(
    st: &mut S,
    data: &BinnedData,
    (group, k): (&[usize], usize),
    lambda: f64,
) -> Option<bool> {
    let n = group.len() as f64;
    let nb = st.blocks()[k].len();
    let mut sum = vec![0.0; nb];
    for &m in group {
        sum.iter_mut()
            .zip(&st.blocks()[m])
            .for_each(|(s, b)| *s += b);
    }
    if !st.set_values(data, k, &sum) {
        return None;
    }
    let zero = vec![0.0; nb];
    for &m in group.iter().filter(|&&m| m != k) {
        st.set_values(data, m, &zero);
    }
    let shapes = st.shapes().to_vec();
    let mut one = shapes.clone();
    one[k].l2 = shapes[k].l2 / n;
    st.set_shapes(&one);
    st.refresh_sums(data, k);
    let moved = st.update_block(data, k, lambda);
    st.set_shapes(&shapes);
    let even: Vec<f64> = st.blocks()[k].iter().map(|b| b / n).collect();
    for &m in group {
        st.set_values(data, m, &even);
    }
    Some(moved)
}
