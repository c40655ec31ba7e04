//! One co-occurrence table `C_jk` (`B_j × B_k`, row-major): its entries in the narrowest
//! type that holds them exactly ([`Narrow`]), dense or by its nonzero entries ([`Part`]),
//! and the two products an update reads it by ([`dots_into`], [`sub_rows_into`]).

/// A table entry as `f64` (exact for `u16` and `u32`).
pub(super) trait Entry: Copy + Send + Sync + Default {
    fn value(self) -> f64;
}
impl Entry for f64 {
    #[inline(always)]
    fn value(self) -> f64 {
        self
    }
}
impl Entry for u32 {
    #[inline(always)]
    fn value(self) -> f64 {
        f64::from(self)
    }
}
impl Entry for u16 {
    #[inline(always)]
    fn value(self) -> f64 {
        f64::from(self)
    }
}

/// Rows of a table whose dot products [`dots_into`] computes side by side.
const DOT_ROWS: usize = 8;

/// `o −= scale Σ_b Δ_b t[b, ·]` for the table `t` of rows `width` wide, one row per entry of
/// `delta` (rows of a zero `Δ_b` skipped). In AVX2 instructions where the processor has them
/// ([`wide`]): the same numbers.
pub(super) fn sub_rows_into<T: Entry>(
    t: &[T],
    width: usize,
    delta: &[f64],
    scale: f64,
    o: &mut [f64],
) {
    #[cfg(target_arch = "x86_64")]
    if wide::available() {
        return wide::sub_rows_into(t, width, delta, scale, o);
    }
    sub_rows_body(t, width, delta, scale, o);
}

/// The body of [`sub_rows_into`], compiled once for any processor and once for AVX2.
#[inline(always)]
fn sub_rows_body<T: Entry>(t: &[T], width: usize, delta: &[f64], scale: f64, o: &mut [f64]) {
    for (row, &d) in t.chunks_exact(width).zip(delta) {
        if d != 0.0 {
            let f = scale * d;
            o.iter_mut()
                .zip(row)
                .for_each(|(ob, c)| *ob -= f * c.value());
        }
    }
}

/// `o_b −= scale · Σ_b' t[b, b'] Δ_b'` for every row `b` of the row-major table `t` (rows of
/// `delta.len()` entries). Each row's sum runs in `b'` order from `−0.0`, as `Iterator::sum`
/// does, but [`DOT_ROWS`] rows at a time: their running sums are independent, so their
/// additions overlap instead of each waiting on the previous one; the numbers are those of
/// one row at a time. In AVX2 instructions where the processor has them ([`wide`]): the same
/// numbers.
pub(super) fn dots_into<T: Entry>(t: &[T], delta: &[f64], scale: f64, o: &mut [f64]) {
    #[cfg(target_arch = "x86_64")]
    if wide::available() {
        return wide::dots_into(t, delta, scale, o);
    }
    dots_body(t, delta, scale, o);
}

/// The body of [`dots_into`], compiled once for any processor and once for AVX2.
#[inline(always)]
fn dots_body<T: Entry>(t: &[T], delta: &[f64], scale: f64, o: &mut [f64]) {
    let nk = delta.len();
    if nk == 0 {
        return;
    }
    let mut outs = o.chunks_exact_mut(DOT_ROWS);
    let mut groups = t.chunks_exact(DOT_ROWS * nk);
    for (og, tg) in (&mut outs).zip(&mut groups) {
        let r: [&[T]; DOT_ROWS] = std::array::from_fn(|i| &tg[i * nk..(i + 1) * nk]);
        let mut acc = [-0.0f64; DOT_ROWS];
        for (b, &d) in delta.iter().enumerate() {
            for i in 0..DOT_ROWS {
                acc[i] += r[i][b].value() * d;
            }
        }
        for (ob, a) in og.iter_mut().zip(acc) {
            *ob -= scale * a;
        }
    }
    let rest = groups.remainder();
    for (ob, row) in outs.into_remainder().iter_mut().zip(rest.chunks_exact(nk)) {
        let dot: f64 = row.iter().zip(delta).map(|(c, d)| c.value() * d).sum();
        *ob -= scale * dot;
    }
}

/// The table products compiled for AVX2 (wider registers, and a one-instruction widening of
/// `u16` counts), chosen at run time where the processor has it: 1.8–1.9× faster on 10⁶ × 14
/// rows (`cargo bench --bench fit -- tables`). The compiler may not reorder or fuse
/// floating-point operations, so both compilations give the same numbers to the bit (tested).
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod wide {
    use super::{dots_body, sub_rows_body, Entry};

    /// Whether this processor has AVX2 (detected once, then a cached load).
    pub(super) fn available() -> bool {
        std::arch::is_x86_feature_detected!("avx2")
    }

    #[target_feature(enable = "avx2")]
    fn dots_avx2<T: Entry>(t: &[T], delta: &[f64], scale: f64, o: &mut [f64]) {
        dots_body(t, delta, scale, o);
    }

    #[target_feature(enable = "avx2")]
    fn sub_rows_avx2<T: Entry>(t: &[T], width: usize, delta: &[f64], scale: f64, o: &mut [f64]) {
        sub_rows_body(t, width, delta, scale, o);
    }

    /// [`super::dots_into`] in AVX2 instructions; only where [`available`].
    pub(super) fn dots_into<T: Entry>(t: &[T], delta: &[f64], scale: f64, o: &mut [f64]) {
        assert!(available());
        // SAFETY: the one requirement of a `target_feature` function is that the processor
        // has the feature, checked above.
        unsafe { dots_avx2(t, delta, scale, o) }
    }

    /// [`super::sub_rows_into`] in AVX2 instructions; only where [`available`].
    pub(super) fn sub_rows_into<T: Entry>(
        t: &[T],
        width: usize,
        delta: &[f64],
        scale: f64,
        o: &mut [f64],
    ) {
        assert!(available());
        // SAFETY: as in `dots_into`.
        unsafe { sub_rows_avx2(t, width, delta, scale, o) }
    }

    #[cfg(test)]
    mod tests {
        use super::super::{dots_body, sub_rows_body};
        use super::*;

        /// Both compilations of both products give the same numbers to the bit, on counts
        /// and on real entries, for widths that leave remainders of every size.
        #[test]
        fn the_avx2_products_equal_the_portable_ones_to_the_bit() {
            if !available() {
                eprintln!("no AVX2 on this processor: nothing to compare");
                return;
            }
            let mut x = 0x2545_f491_4f6c_dd1du64;
            let mut next = move || {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x
            };
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            for (rows, width) in [(1, 1), (7, 3), (8, 5), (13, 17), (64, 33), (9, 250)] {
                let counts: Vec<u16> = (0..rows * width)
                    .map(|_| (next() % 70_000) as u16)
                    .collect();
                let reals: Vec<f64> = counts.iter().map(|&c| f64::from(c) * 0.37 - 11.0).collect();
                let mut delta: Vec<f64> = (0..width)
                    .map(|_| (next() % 1000) as f64 / 7.0 - 70.0)
                    .collect();
                delta[0] = 0.0;
                // By rows: `rows` entries of Δ (every third one 0), rows `width` wide.
                let drow: Vec<f64> = (0..rows)
                    .map(|i| (i % 3 != 1) as u8 as f64 * ((next() % 100) as f64 - 49.5))
                    .collect();
                let start: Vec<f64> = (0..rows).map(|i| i as f64 / 3.0).collect();
                let out0: Vec<f64> = (0..width).map(|i| i as f64 * 0.1).collect();
                for scale in [1.3e-3, -0.7] {
                    let (mut a, mut b) = (start.clone(), start.clone());
                    dots_into(&counts, &delta, scale, &mut a);
                    dots_body(&counts, &delta, scale, &mut b);
                    assert_eq!(bits(&a), bits(&b));
                    let (mut a, mut b) = (start.clone(), start.clone());
                    dots_into(&reals, &delta, scale, &mut a);
                    dots_body(&reals, &delta, scale, &mut b);
                    assert_eq!(bits(&a), bits(&b));
                    let (mut a, mut b) = (out0.clone(), out0.clone());
                    sub_rows_into(&counts, width, &drow, scale, &mut a);
                    sub_rows_body(&counts, width, &drow, scale, &mut b);
                    assert_eq!(bits(&a), bits(&b));
                    let (mut a, mut b) = (out0.clone(), out0.clone());
                    sub_rows_into(&reals, width, &drow, scale, &mut a);
                    sub_rows_body(&reals, width, &drow, scale, &mut b);
                    assert_eq!(bits(&a), bits(&b));
                }
            }
        }
    }
}

/// One `C_jk`: row-major `B_j × B_k`, or by rows keeping only the nonzero entries (most of
/// them are zero when `B_j B_k` is large next to the rows: 10–20% nonzero on elevators,
/// ailerons and 201_pol), when at most [`SPARSE_SHARE`] of them are nonzero.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Part<T> {
    Dense(Vec<T>),
    Sparse {
        // Row b's entries are start[b]..start[b + 1].
        start: Vec<usize>,
        col: Vec<u32>,
        val: Vec<T>,
    },
}

/// Largest share of nonzero entries for which a table keeps only those. An entry kept
/// sparse costs a scattered update and 6 bytes (column and count) against a contiguous one
/// and 2 bytes dense.
pub(super) const SPARSE_SHARE: f64 = 0.25;

/// The table `t` (rows `width` wide) by its nonzero entries, if at most [`SPARSE_SHARE`] of
/// them are nonzero and they take fewer bytes so than dense even as `u16` counts (a row
/// start per row, a column and a count per entry: so also for wider entries).
pub(super) fn sparse_part<T: Entry>(t: &[T], width: usize) -> Option<Part<T>> {
    let nonzero = t.iter().filter(|c| c.value() != 0.0).count();
    let rows = t.len().checked_div(width).unwrap_or(0);
    if (nonzero as f64) > SPARSE_SHARE * t.len() as f64
        || 6 * nonzero + 8 * (rows + 1) >= 2 * t.len()
        || width == 0
        || u32::try_from(width).is_err()
    {
        return None;
    }
    let mut start = Vec::with_capacity(t.len() / width + 1);
    let (mut col, mut val) = (Vec::with_capacity(nonzero), Vec::with_capacity(nonzero));
    start.push(0);
    for row in t.chunks_exact(width) {
        for (b, &c) in row.iter().enumerate() {
            if c.value() != 0.0 {
                col.push(b as u32);
                val.push(c);
            }
        }
        start.push(col.len());
    }
    Some(Part::Sparse { start, col, val })
}

impl<T: Entry> Part<T> {
    /// The entries stored, as `f64`.
    fn values(&self) -> impl Iterator<Item = f64> + '_ {
        let stored = match self {
            Part::Dense(t) => t,
            Part::Sparse { val, .. } => val,
        };
        stored.iter().map(|c| c.value())
    }

    /// The part with every stored entry mapped by `f`.
    fn mapped<U>(&self, f: impl Fn(T) -> U) -> Part<U> {
        match self {
            Part::Dense(t) => Part::Dense(t.iter().map(|&c| f(c)).collect()),
            Part::Sparse { start, col, val } => Part::Sparse {
                start: start.clone(),
                col: col.clone(),
                val: val.iter().map(|&c| f(c)).collect(),
            },
        }
    }

    /// `o_b −= scale Σ_b' C[b, b'] Δ_b'` for every row `b`: dense as [`dots_into`]; sparse
    /// each row's nonzero terms in the same order from `−0.0` (a zero term leaves a sum as
    /// it is but for the sign of a zero).
    pub(super) fn dots_into(&self, delta: &[f64], scale: f64, o: &mut [f64]) {
        match self {
            Part::Dense(t) => dots_into(t, delta, scale, o),
            Part::Sparse { start, col, val } => {
                for (b, ob) in o.iter_mut().enumerate() {
                    let (lo, hi) = (start[b], start[b + 1]);
                    let dot: f64 = col[lo..hi]
                        .iter()
                        .zip(&val[lo..hi])
                        .map(|(&c, v)| v.value() * delta[c as usize])
                        .sum();
                    *ob -= scale * dot;
                }
            }
        }
    }

    /// Entries stored.
    pub(super) fn len(&self) -> usize {
        match self {
            Part::Dense(t) => t.len(),
            Part::Sparse { val, .. } => val.len(),
        }
    }

    /// Bytes held.
    fn bytes(&self) -> usize {
        let entry = std::mem::size_of::<T>();
        match self {
            Part::Dense(t) => entry * t.len(),
            Part::Sparse { start, col, val } => 8 * start.len() + 4 * col.len() + entry * val.len(),
        }
    }

    /// `o −= scale Σ_b Δ_b C[b, ·]` (rows of a zero `Δ_b` skipped): dense as
    /// [`sub_rows_into`]; sparse the same numbers, each entry of `o` taking the same nonzero
    /// terms in the same order (a zero term leaves it as it is).
    pub(super) fn sub_into(&self, width: usize, delta: &[f64], scale: f64, o: &mut [f64]) {
        match self {
            Part::Dense(t) => sub_rows_into(t, width, delta, scale, o),
            Part::Sparse { start, col, val } => {
                for (b, &d) in delta.iter().enumerate() {
                    if d != 0.0 {
                        let f = scale * d;
                        let (lo, hi) = (start[b], start[b + 1]);
                        for (&c, v) in col[lo..hi].iter().zip(&val[lo..hi]) {
                            o[c as usize] -= f * v.value();
                        }
                    }
                }
            }
        }
    }

    /// `out[b · width + b'] += scale · C[b, b']` for every stored entry (`out` is the dense
    /// table's shape).
    fn add_to(&self, width: usize, scale: f64, out: &mut [f64]) {
        match self {
            Part::Dense(t) => out
                .iter_mut()
                .zip(t)
                .for_each(|(o, c)| *o += scale * c.value()),
            Part::Sparse { start, col, val } => {
                for (b, w) in start.windows(2).enumerate() {
                    for (&c, v) in col[w[0]..w[1]].iter().zip(&val[w[0]..w[1]]) {
                        out[b * width + c as usize] += scale * v.value();
                    }
                }
            }
        }
    }
}

/// `a + sign · b`, entry by entry, for two tables of the same shape (rows `width` wide): dense
/// where either is, else by the nonzero entries of the sum, row by row (columns below
/// `u32::MAX`, as [`sparse_part`] keeps them).
fn combine(a: Part<f64>, b: &Part<f64>, sign: f64, width: usize) -> Part<f64> {
    match (a, b) {
        (Part::Dense(mut t), _) => {
            b.add_to(width, sign, &mut t);
            Part::Dense(t)
        }
        (a, Part::Dense(u)) => {
            let mut t: Vec<f64> = u.iter().map(|&v| sign * v).collect();
            a.add_to(width, 1.0, &mut t);
            Part::Dense(t)
        }
        (
            Part::Sparse {
                start: sa,
                col: ca,
                val: va,
            },
            Part::Sparse {
                start: sb,
                col: cb,
                val: vb,
            },
        ) => {
            let mut start = Vec::with_capacity(sa.len());
            let (mut col, mut val) = (Vec::with_capacity(ca.len()), Vec::with_capacity(ca.len()));
            start.push(0);
            for b in 0..sa.len() - 1 {
                let (mut i, mut k) = (sa[b], sb[b]);
                while i < sa[b + 1] || k < sb[b + 1] {
                    let ci = if i < sa[b + 1] { ca[i] } else { u32::MAX };
                    let ck = if k < sb[b + 1] { cb[k] } else { u32::MAX };
                    let (c, v) = if ci < ck {
                        i += 1;
                        (ci, va[i - 1])
                    } else if ck < ci {
                        k += 1;
                        (ck, sign * vb[k - 1])
                    } else {
                        (i, k) = (i + 1, k + 1);
                        (ci, va[i - 1] + sign * vb[k - 1])
                    };
                    if v != 0.0 {
                        col.push(c);
                        val.push(v);
                    }
                }
                start.push(col.len());
            }
            Part::Sparse { start, col, val }
        }
    }
}

/// The narrowest entry type that holds some values exactly.
enum Width {
    U16,
    U32,
    F64,
}

impl Width {
    fn of(values: impl Iterator<Item = f64>) -> Self {
        let (mut whole, mut max) = (true, 0.0f64);
        for v in values {
            whole &= v >= 0.0 && v <= f64::from(u32::MAX) && v.fract() == 0.0;
            max = max.max(v);
        }
        if !whole {
            Width::F64
        } else if max <= f64::from(u16::MAX) {
            Width::U16
        } else {
            Width::U32
        }
    }
}

/// One table `C_jk` in the narrowest entries that hold it exactly, chosen for this table
/// alone: whole numbers below 2¹⁶ as `u16` (every count of a pair whose two features have a
/// bin of fewer than 65,536 rows), below 2³² as `u32`, anything else as `f64`; each dense
/// or by its nonzero entries ([`Part`]). The same numbers as the `f64` table, in a quarter
/// of its bytes or less for unit weights.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Narrow {
    U16(Part<u16>),
    U32(Part<u32>),
    F64(Part<f64>),
}

/// `$body` on the [`Part`] a [`Narrow`] holds, bound to `$p`, whatever its entry type.
macro_rules! on_part {
    ($narrow:expr, $p:ident => $body:expr) => {
        match $narrow {
            Narrow::U16($p) => $body,
            Narrow::U32($p) => $body,
            Narrow::F64($p) => $body,
        }
    };
}

impl Narrow {
    /// The dense table `t` (rows `width` wide): by its nonzero entries if at most
    /// [`SPARSE_SHARE`] of them are nonzero, in the narrowest entries.
    pub(super) fn dense<T: Entry>(t: &[T], width: usize) -> Self {
        if let Some(part) = sparse_part(t, width) {
            return Self::of(&part);
        }
        let values = || t.iter().map(|c| c.value());
        match Width::of(values()) {
            Width::U16 => Narrow::U16(Part::Dense(values().map(|v| v as u16).collect())),
            Width::U32 => Narrow::U32(Part::Dense(values().map(|v| v as u32).collect())),
            Width::F64 => Narrow::F64(Part::Dense(values().collect())),
        }
    }

    /// `part` in the narrowest entries (dense or sparse as it is).
    pub(super) fn of<T: Entry>(part: &Part<T>) -> Self {
        match Width::of(part.values()) {
            Width::U16 => Narrow::U16(part.mapped(|c| c.value() as u16)),
            Width::U32 => Narrow::U32(part.mapped(|c| c.value() as u32)),
            Width::F64 => Narrow::F64(part.mapped(Entry::value)),
        }
    }

    /// An empty table (the diagonal place of a block's own feature).
    pub(super) fn empty() -> Self {
        Narrow::U16(Part::Dense(Vec::new()))
    }

    /// `self + sign · other` (same shape, rows `width` wide), narrowed again: dense tables
    /// that became mostly zero are kept by their nonzero entries.
    pub(super) fn combine(&self, other: &Narrow, sign: f64, width: usize) -> Self {
        let a = on_part!(self, p => p.mapped(Entry::value));
        let b = on_part!(other, p => p.mapped(Entry::value));
        match combine(a, &b, sign, width) {
            Part::Dense(t) => Self::dense(&t, width),
            sparse => Self::of(&sparse),
        }
    }

    /// As [`Part::dots_into`].
    pub(super) fn dots_into(&self, delta: &[f64], scale: f64, o: &mut [f64]) {
        on_part!(self, p => p.dots_into(delta, scale, o))
    }

    /// As [`Part::sub_into`].
    pub(super) fn sub_into(&self, width: usize, delta: &[f64], scale: f64, o: &mut [f64]) {
        on_part!(self, p => p.sub_into(width, delta, scale, o))
    }

    /// `out += C` on the dense table's shape `out` (rows `width` wide).
    pub(super) fn add_to(&self, width: usize, out: &mut [f64]) {
        on_part!(self, p => p.add_to(width, 1.0, out))
    }

    /// Entries stored.
    pub(super) fn len(&self) -> usize {
        on_part!(self, p => p.len())
    }

    /// Bytes held.
    pub(super) fn bytes(&self) -> usize {
        on_part!(self, p => p.bytes())
    }

    /// Whether the table is kept by its nonzero entries.
    #[cfg(test)]
    pub(super) fn is_sparse(&self) -> bool {
        on_part!(self, p => matches!(p, Part::Sparse { .. }))
    }

    /// The table as a dense `f64` table of the same entries (tests).
    #[cfg(test)]
    pub(super) fn to_dense(&self, cells: usize, width: usize) -> Vec<f64> {
        let mut t = vec![0.0; cells];
        self.add_to(width, &mut t);
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Eight rows' dot products side by side are each row's `Iterator::sum`, bit for bit,
    /// for any number of rows and any row length (zero included).
    #[test]
    fn side_by_side_dots_are_the_row_sums() {
        for (rows, nk) in [(0usize, 5usize), (3, 4), (8, 9), (21, 13), (17, 1), (4, 0)] {
            let t: Vec<u16> = (0..rows * nk).map(|i| ((i * 37) % 101) as u16).collect();
            let delta: Vec<f64> = (0..nk).map(|b| ((b as f64) * 1.3).sin() * 1e-3).collect();
            let mut got: Vec<f64> = (0..rows).map(|b| (b as f64).cos()).collect();
            let mut want = got.clone();
            dots_into(&t, &delta, 0.7, &mut got);
            if nk > 0 {
                for (ob, row) in want.iter_mut().zip(t.chunks_exact(nk)) {
                    let dot: f64 = row.iter().zip(&delta).map(|(c, d)| c.value() * d).sum();
                    *ob -= 0.7 * dot;
                }
            }
            assert_eq!(got, want, "{rows} rows of {nk}");
        }
    }

    /// Each table takes the narrowest entries that hold it: u16 below 2¹⁶, u32 below 2³²,
    /// f64 for fractions, negative values or more; mostly-zero tables keep their nonzero
    /// entries only. The entries are the same numbers.
    #[test]
    fn tables_take_the_narrowest_entries_that_hold_them() {
        type Case<'a> = (&'a [f64], fn(&Narrow) -> bool);
        let cases: [Case<'_>; 4] = [
            (&[1.0, 65_535.0, 0.0, 2.0], |n| {
                matches!(n, Narrow::U16(Part::Dense(_)))
            }),
            (&[1.0, 65_536.0, 0.0, 2.0], |n| {
                matches!(n, Narrow::U32(Part::Dense(_)))
            }),
            (&[1.0, 4_294_967_296.0, 0.0, 2.0], |n| {
                matches!(n, Narrow::F64(_))
            }),
            (&[1.5, 2.0, 3.0, 0.0], |n| {
                matches!(n, Narrow::F64(Part::Dense(_)))
            }),
        ];
        for (t, kind) in cases {
            let n = Narrow::dense(t, 2);
            assert!(kind(&n), "{t:?} -> {n:?}");
            assert_eq!(n.to_dense(4, 2), t);
        }
        assert_eq!(Narrow::dense(&[1.0; 8], 4).bytes(), 16);
        // One nonzero entry in 64: 6 bytes and 9 row starts against 128 bytes dense; in 4,
        // the row starts alone outweigh the dense table.
        let mut t = vec![0.0; 64];
        t[37] = 7.0;
        let n = Narrow::dense(&t, 8);
        assert!(matches!(n, Narrow::U16(Part::Sparse { .. })) && n.bytes() < 128);
        assert_eq!(n.to_dense(64, 8), t);
        assert!(!Narrow::dense(&[0.0, 0.0, 0.0, 7.0], 2).is_sparse());
    }

    /// Adding and subtracting tables, dense, sparse or one of each, gives the entries of the
    /// dense `f64` sums.
    #[test]
    fn combined_tables_are_the_sums_of_their_entries() {
        let width = 5;
        let make = |seed: usize, every: usize| -> Vec<f64> {
            (0..20)
                .map(|i| {
                    if (i * 7 + seed).is_multiple_of(every) {
                        ((i * 13 + seed) % 9 + 1) as f64
                    } else {
                        0.0
                    }
                })
                .collect()
        };
        for (ea, eb) in [(1, 1), (1, 6), (6, 1), (6, 7), (5, 5)] {
            let (a, b) = (make(1, ea), make(3, eb));
            let (na, nb) = (Narrow::dense(&a, width), Narrow::dense(&b, width));
            for sign in [1.0, -1.0] {
                let want: Vec<f64> = a.iter().zip(&b).map(|(x, y)| x + sign * y).collect();
                let got = na.combine(&nb, sign, width);
                assert_eq!(got.to_dense(20, width), want, "({ea}, {eb}) sign {sign}");
                if sign > 0.0 {
                    assert!(!matches!(got, Narrow::F64(_)), "sums of counts stay counts");
                }
            }
        }
    }
}
