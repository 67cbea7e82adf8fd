//! The three C math functions reclaim's code and its crates call (`pow` from indicatif's rate
//! estimate, `exp2` and `log2` from the age buckets of `--keep-free`), defined here from the
//! `libm` crate so that the executable does not need glibc's `libm.so` loaded at every start.
//! The linker resolves the calls to these definitions first and, linking `--as-needed`, drops
//! `libm.so` from the executable's needs: 0.95x a one-file removal's CPU, 10 fewer page faults
//! (bench/RESULTS.md, 2026-11-29, "libm.so no longer loaded"). A new call of another C math
//! function makes the executable need `libm.so` again, and the start test
//! `reclaim_itself_needs_no_library_but_libc` fails.

/// C's `pow`.
#[no_mangle]
pub extern "C" fn pow(x: f64, y: f64) -> f64 {
    libm::pow(x, y)
}

/// C's `exp2`.
#[no_mangle]
pub extern "C" fn exp2(x: f64) -> f64 {
    libm::exp2(x)
}

/// C's `log2`.
#[no_mangle]
pub extern "C" fn log2(x: f64) -> f64 {
    libm::log2(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Within one unit in the last place (C's functions promise no more for inexact results).
    fn close(got: f64, want: f64) -> bool {
        (got - want).abs() <= want.abs() * f64::EPSILON
    }

    // Exact where the result is representable; std's `powf` and friends call these same
    // symbols in a test binary, so the expected values are written out, not computed.
    #[test]
    fn the_math_functions_give_c_s_results() {
        assert_eq!(pow(2.0, 10.0), 1024.0);
        assert_eq!(pow(10.0, -2.0), 0.01);
        assert!(close(pow(0.5, 0.5), std::f64::consts::FRAC_1_SQRT_2));
        assert_eq!(pow(f64::NAN, 0.0), 1.0);
        assert!(pow(-8.0, 1.0 / 3.0).is_nan());
        assert_eq!(exp2(3.0), 8.0);
        assert_eq!(exp2(-1.0), 0.5);
        assert!(close(exp2(0.5), std::f64::consts::SQRT_2));
        assert_eq!(exp2(f64::NEG_INFINITY), 0.0);
        assert_eq!(log2(1024.0), 10.0);
        assert!(close(log2(std::f64::consts::SQRT_2), 0.5));
        assert_eq!(log2(0.0), f64::NEG_INFINITY);
        assert!(log2(-1.0).is_nan());
    }
}
