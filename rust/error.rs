//! Errors of the core. Every message names the argument, the position and what was expected,
//! so that the Python layer can pass it through unchanged.

/// An invalid input or parameter. Failing to converge is *not* an error: see
/// [`crate::model::report::FitReport`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FastError {
    /// Two inputs that must have the same length do not.
    #[error("{what} has {got} entries but {expected} were expected ({reason})")]
    LengthMismatch {
        what: &'static str,
        expected: usize,
        got: usize,
        reason: &'static str,
    },
    /// An input that must not be empty is empty or too small.
    #[error("{0}")]
    TooFewSamples(String),
    /// A non-finite value in the feature matrix.
    #[error("X contains {value} at row {row}, column {column}; feature values must be finite (NaN marks a missing value)")]
    NonFiniteX {
        row: usize,
        column: usize,
        value: f64,
    },
    /// A non-finite value in a vector argument (`y`, a signal).
    #[error("{what} contains a non-finite value ({value}) at index {index}")]
    NonFiniteValue {
        what: &'static str,
        index: usize,
        value: f64,
    },
    /// A negative or non-finite sample weight.
    #[error("{what}[{index}] is {value}; weights must be finite and >= 0")]
    BadWeight {
        what: &'static str,
        index: usize,
        value: f64,
    },
    /// All sample weights are zero.
    #[error("{0} sums to zero; at least one weight must be positive")]
    ZeroTotalWeight(&'static str),
    /// A penalty that is negative or not finite.
    #[error("{name} must be finite and >= 0, got {value}")]
    InvalidPenalty { name: &'static str, value: f64 },
    /// Any other parameter outside its range.
    #[error("{name} {message}, got {value}")]
    InvalidParameter {
        name: &'static str,
        message: &'static str,
        value: String,
    },
    /// An allocation whose size depends on the input is larger than this machine can give.
    #[error("{what} would need {bytes} bytes ({gib:.1} GiB), more than this machine can allocate; {hint}", gib = *bytes as f64 / (1u64 << 30) as f64)]
    OutOfMemory {
        what: &'static str,
        bytes: u128,
        hint: &'static str,
    },
}

/// Result alias of the core.
pub type Result<T> = std::result::Result<T, FastError>;

/// A target of `len` entries for `n_rows` rows of X: one target per row.
///
/// # Errors
/// [`FastError::LengthMismatch`] naming `y` otherwise.
pub fn check_target_len(len: usize, n_rows: usize) -> Result<()> {
    check_len("y", n_rows, len, "one target per row of X")
}

/// Checks that `what` has `expected` entries (`got`); `reason` says why.
///
/// # Errors
/// [`FastError::LengthMismatch`] otherwise.
pub fn check_len(
    what: &'static str,
    expected: usize,
    got: usize,
    reason: &'static str,
) -> Result<()> {
    if got != expected {
        return Err(FastError::LengthMismatch {
            what,
            expected,
            got,
            reason,
        });
    }
    Ok(())
}

/// Checks a regression or classification target for `n` rows: one finite value per row, at
/// least two rows.
///
/// # Errors
/// [`FastError::LengthMismatch`], [`FastError::TooFewSamples`] or
/// [`FastError::NonFiniteValue`].
pub fn check_target(y: ndarray::ArrayView1<'_, f64>, n: usize) -> Result<()> {
    check_target_len(y.len(), n)?;
    if n < 2 {
        return Err(FastError::TooFewSamples(format!(
            "X has {n} sample (n_samples = {n}); at least 2 are needed to fit"
        )));
    }
    if let Some(index) = y.iter().position(|v| !v.is_finite()) {
        return Err(FastError::NonFiniteValue {
            what: "y",
            index,
            value: y[index],
        });
    }
    match y.iter().position(|v| v.abs() > MAX_ABS_TARGET) {
        Some(index) => Err(FastError::InvalidParameter {
            name: "y",
            message: "must hold values of magnitude <= 1e150 (their squares would overflow); \
                      rescale y: the fitted model scales with it",
            value: format!("{:e} at index {index}", y[index]),
        }),
        None => Ok(()),
    }
}

/// The largest `|y|` a fit takes: squared residuals of larger values overflow.
pub const MAX_ABS_TARGET: f64 = 1e150;

/// The range of a total sample weight that sums and means of weighted values can use
/// without overflow or loss of precision (subnormal weights); only the weights' ratios
/// matter, so any weights can be rescaled into it.
pub const WEIGHT_TOTAL_RANGE: (f64, f64) = (1e-150, 1e150);

/// Checks that every entry of `values` is finite.
///
/// # Errors
/// [`FastError::NonFiniteValue`] naming `what` and the first bad index.
pub fn check_finite(what: &'static str, values: &[f64]) -> Result<()> {
    match values.iter().position(|v| !v.is_finite()) {
        Some(index) => Err(FastError::NonFiniteValue {
            what,
            index,
            value: values[index],
        }),
        None => Ok(()),
    }
}

/// Checks sample weights (finite, `>= 0`, positive sum) and returns their sum.
///
/// # Errors
/// [`FastError::BadWeight`] or [`FastError::ZeroTotalWeight`].
pub fn check_weights(what: &'static str, weights: &[f64]) -> Result<f64> {
    if let Some(index) = weights.iter().position(|v| !(v.is_finite() && *v >= 0.0)) {
        return Err(FastError::BadWeight {
            what,
            index,
            value: weights[index],
        });
    }
    let total: f64 = weights.iter().sum();
    if !(total > 0.0) {
        return Err(FastError::ZeroTotalWeight(what));
    }
    let (low, high) = WEIGHT_TOTAL_RANGE;
    if !(low..=high).contains(&total) {
        return Err(FastError::InvalidParameter {
            name: what,
            message:
                "must sum to between 1e-150 and 1e150 (sums outside overflow or lose precision); \
                      rescale the weights: only their ratios matter",
            value: format!("a sum of {total:e}"),
        });
    }
    Ok(total)
}

/// A zeroed buffer of `len` values, allocated only if the machine can give it: `len` values
/// of `f64` are checked against the memory available now (on Linux) and reserved fallibly,
/// so an input that asks for too much gets [`FastError::OutOfMemory`] instead of aborting
/// the process.
///
/// # Errors
/// [`FastError::OutOfMemory`] naming `what` and the size, with `hint`.
pub fn try_zeros(len: usize, what: &'static str, hint: &'static str) -> Result<Vec<f64>> {
    let bytes = len as u128 * std::mem::size_of::<f64>() as u128;
    check_free(bytes, what, hint)?;
    let mut v = Vec::new();
    v.try_reserve_exact(len)
        .map_err(|_| FastError::OutOfMemory { what, bytes, hint })?;
    v.resize(len, 0.0);
    Ok(v)
}

/// Refuses `bytes` of `what` beyond the memory available now (on Linux), before any of it
/// is allocated.
///
/// # Errors
/// [`FastError::OutOfMemory`] naming `what` and the size, with `hint`.
pub fn check_free(bytes: u128, what: &'static str, hint: &'static str) -> Result<()> {
    if available_bytes().is_some_and(|free| bytes > free) {
        return Err(FastError::OutOfMemory { what, bytes, hint });
    }
    Ok(())
}

/// The memory available to new allocations (`MemAvailable` of `/proc/meminfo`), where known.
pub(crate) fn available_bytes() -> Option<u128> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u128 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn impossible_allocations_are_errors() {
        let err = try_zeros(usize::MAX / 8, "a test buffer", "ask for less").unwrap_err();
        match &err {
            FastError::OutOfMemory { what, bytes, hint } => {
                assert_eq!(*what, "a test buffer");
                assert_eq!(*bytes, (usize::MAX / 8) as u128 * 8);
                assert_eq!(*hint, "ask for less");
            }
            other => panic!("expected OutOfMemory, got {other:?}"),
        }
        assert!(err.to_string().contains("GiB"), "{err}");
        assert_eq!(try_zeros(3, "a small buffer", "").unwrap(), vec![0.0; 3]);
    }
}
