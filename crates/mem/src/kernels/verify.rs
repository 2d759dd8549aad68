//! Result checks: a kernel that computes wrong values must not produce a bandwidth
//! figure.
//!
//! As STREAM validates its arrays against the values its formulas must produce, a
//! check sets the kernel's arrays to known values, runs the kernel (the same code,
//! ISA, lengths and alignment that were measured), and compares **every element** of
//! every array it uses with the closed-form expectation: outputs must equal the formula
//! applied to the initial inputs, inputs must be unchanged, and `read` must return
//! their sum. No kernel writes an array it reads (the accounting table's rule, tested),
//! so after k >= 1 repetitions the outputs are the formula of the initial values; the
//! check runs the kernel [`REPETITIONS`] times.
//!
//! The initial values are small multiples of 1/4 (`base + (i mod 16) / 4`), so every
//! product with the kernels' scalar 3, every sum and the whole-array checksum are exact
//! in f64 whatever the order of the additions: the comparison could be exact; it allows
//! a relative error of [`TOLERANCE`] all the same (as STREAM's epsilon), far below any
//! real fault (a missed, repeated, shifted or mis-scaled element changes a value by at
//! least 1/4).

use super::{Arrays, Isa, Kernel, KernelError, Op};
use serde::{Deserialize, Serialize};

/// Kernel runs before the arrays are compared.
pub const REPETITIONS: u32 = 1;

/// Relative error allowed on an element and on the checksum.
pub const TOLERANCE: f64 = 1e-13;

/// What a passed check saw.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Checked {
    /// Elements compared, all arrays of the kernel.
    pub elements: u64,
    /// Sum of the output array as found after the run (`read`: the kernel's result).
    pub checksum: f64,
    /// The closed-form value of that sum.
    pub expected_checksum: f64,
}

impl Checked {
    /// Adds another thread's check.
    pub fn merge(&mut self, other: &Checked) {
        self.elements += other.elements;
        self.checksum += other.checksum;
        self.expected_checksum += other.expected_checksum;
    }
}

/// Initial value of array `which` ("a", "b" or "c") at element `i`.
pub fn initial(which: &str, i: usize) -> f64 {
    let base = match which {
        "a" => 1.0,
        "b" => 2.0,
        _ => 0.5,
    };
    base + (i % 16) as f64 * 0.25
}

/// Sum of `initial(which, i)` for i < n, in closed form (exact: quarter units).
fn initial_sum(which: &str, n: usize) -> f64 {
    let base_q: u128 = match which {
        "a" => 4,
        "b" => 8,
        _ => 2,
    };
    let n = n as u128;
    let full = n / 16;
    let part = n % 16;
    // Per full period of 16: 16 * base + (0 + 1 + ... + 15) quarters.
    let q = full * (16 * base_q + 120) + part * base_q + part * (part.saturating_sub(1)) / 2;
    q as f64 * 0.25
}

/// The value element `i` of the output array must have after `kernel` with scalar `s`.
fn expected(op: Op, i: usize, s: f64) -> f64 {
    let (a, b, c) = (initial("a", i), initial("b", i), initial("c", i));
    match op {
        Op::Read => a,
        Op::Write => s,
        Op::Copy => a,
        Op::Scale => s * c,
        Op::Add => a + b,
        Op::Triad => b + s * c,
    }
}

fn close(got: f64, want: f64) -> bool {
    (got - want).abs() <= TOLERANCE * want.abs().max(1.0)
}

/// Checks `kernel` with ISA `isa` on these arrays (their contents are overwritten).
pub fn verify(
    kernel: Kernel,
    isa: Isa,
    arrays: &mut Arrays<'_>,
    s: f64,
) -> Result<Checked, String> {
    verify_with(kernel, arrays, s, |arr| super::run(kernel, isa, arr, s))
}

/// Checks `kernel` as run by `run` (the real kernel, or in tests a wrong one).
pub fn verify_with(
    kernel: Kernel,
    arrays: &mut Arrays<'_>,
    s: f64,
    mut run: impl FnMut(&mut Arrays<'_>) -> Result<f64, KernelError>,
) -> Result<Checked, String> {
    let spec = kernel.spec();
    let n = arrays.elements(kernel);
    if n == 0 {
        return Err(format!(
            "kernel {kernel}: its arrays must have equal, non-zero lengths"
        ));
    }
    let names = spec.arrays();
    for name in &names {
        for (i, v) in slot(arrays, name).iter_mut().enumerate() {
            *v = initial(name, i);
        }
    }
    let mut result = 0.0;
    for _ in 0..REPETITIONS {
        result = run(arrays).map_err(|e| e.to_string())?;
    }
    let mut elements = 0u64;
    let mut checksum = 0.0;
    for name in &names {
        let written = spec.writes.iter().any(|w| w == name);
        let arr = slot(arrays, name);
        for (i, &got) in arr.iter().enumerate() {
            let want = if written {
                expected(kernel.op, i, s)
            } else {
                initial(name, i)
            };
            if !close(got, want) {
                return Err(if written {
                    format!(
                        "{name}[{i}] of {n} is {got} after the run, expected {want} ({}, arrays set to known values): the kernel computes wrong results",
                        spec.formula
                    )
                } else {
                    format!(
                        "{name}[{i}] of {n} changed from {want} to {got}: the kernel wrote an array it only reads ({})",
                        spec.formula
                    )
                });
            }
            if written {
                checksum += got;
            }
        }
        elements += arr.len() as u64;
    }
    let expected_checksum = match kernel.op {
        Op::Read => initial_sum("a", n),
        Op::Write => s * n as f64,
        _ => (0..n).map(|i| expected(kernel.op, i, s)).sum(),
    };
    if kernel.op == Op::Read {
        checksum = result;
    }
    if !close(checksum, expected_checksum) {
        return Err(format!(
            "checksum {checksum} over {n} elements, expected {expected_checksum} ({}): the kernel computes wrong results",
            spec.formula
        ));
    }
    Ok(Checked {
        elements,
        checksum,
        expected_checksum,
    })
}

fn slot<'s>(arrays: &'s mut Arrays<'_>, name: &str) -> &'s mut [f64] {
    match name {
        "a" => arrays.a,
        "b" => arrays.b,
        _ => arrays.c,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::IsaExt;
    use crate::kernels::{available, run};

    fn arrays_for<'a>(
        k: Kernel,
        a: &'a mut [f64],
        b: &'a mut [f64],
        c: &'a mut [f64],
    ) -> Arrays<'a> {
        let names = k.spec().arrays();
        Arrays {
            a: if names.contains(&"a") { a } else { &mut [] },
            b: if names.contains(&"b") { b } else { &mut [] },
            c: if names.contains(&"c") { c } else { &mut [] },
        }
    }

    #[test]
    fn closed_form_sums_are_exact() {
        for which in ["a", "b", "c"] {
            for n in [0, 1, 15, 16, 17, 1000, 4099] {
                let direct: f64 = (0..n).map(|i| initial(which, i)).sum();
                assert_eq!(initial_sum(which, n), direct, "{which} n={n}");
            }
        }
    }

    #[test]
    fn every_kernel_on_every_isa_here_passes() {
        for isa in available() {
            for k in Kernel::all() {
                if k.nt && !isa.has_nt() {
                    continue;
                }
                for n in [1, 7, 33, 129, 1000, 4099] {
                    let (mut a, mut b, mut c) = (vec![9.0; n], vec![9.0; n], vec![9.0; n]);
                    let mut arr = arrays_for(k, &mut a, &mut b, &mut c);
                    let got = verify(k, isa, &mut arr, 3.0)
                        .unwrap_or_else(|e| panic!("{k} {} n={n}: {e}", isa.label()));
                    assert_eq!(got.checksum, got.expected_checksum);
                    assert_eq!(got.elements, (n * k.arrays()) as u64);
                }
            }
        }
    }

    /// Wrong kernels of every kind are caught: one wrong element, a skipped tail, a
    /// shifted element, a scaled result, an input overwritten, nothing done at all.
    #[test]
    fn wrong_kernels_are_caught() {
        let isa = crate::kernels::best();
        let n = 1000;
        type Corrupt = fn(&mut Arrays<'_>, Kernel);
        let wrongs: [(&str, Corrupt); 4] = [
            ("one element off", |arr, k| {
                let o = output(arr, k);
                o[o.len() / 2] += 0.25;
            }),
            ("tail skipped", |arr, k| {
                let o = output(arr, k);
                let last = o.len() - 1;
                o[last] = 0.0;
            }),
            ("shifted by one", |arr, k| {
                let o = output(arr, k);
                o.copy_within(1.., 0);
            }),
            ("scaled", |arr, k| {
                for v in output(arr, k) {
                    *v *= 1.0 + 1e-9;
                }
            }),
        ];
        for k in Kernel::all() {
            if k.nt && !isa.has_nt() {
                continue;
            }
            for (what, corrupt) in wrongs {
                if k.op == Op::Write && what == "shifted by one" {
                    // Every element is s: a shift changes nothing.
                    continue;
                }
                let (mut a, mut b, mut c) = (vec![0.0; n], vec![0.0; n], vec![0.0; n]);
                let mut arr = arrays_for(k, &mut a, &mut b, &mut c);
                let r = verify_with(k, &mut arr, 3.0, |arr| {
                    let s = run(k, isa, arr, 3.0)?;
                    if k.op == Op::Read {
                        // read writes nothing: a wrong sum is its fault.
                        return Ok(s + 0.25);
                    }
                    corrupt(arr, k);
                    Ok(s)
                });
                let e = r.expect_err(&format!("{k} {what}: not caught"));
                assert!(e.contains("wrong results"), "{k} {what}: {e}");
            }
            // A kernel that does nothing.
            if k.op != Op::Read {
                let (mut a, mut b, mut c) = (vec![0.0; n], vec![0.0; n], vec![0.0; n]);
                let mut arr = arrays_for(k, &mut a, &mut b, &mut c);
                assert!(verify_with(k, &mut arr, 3.0, |_| Ok(0.0)).is_err(), "{k}");
            }
            // A kernel that writes one of its inputs.
            if let Some(input) = k.spec().reads.first().cloned() {
                let (mut a, mut b, mut c) = (vec![0.0; n], vec![0.0; n], vec![0.0; n]);
                let mut arr = arrays_for(k, &mut a, &mut b, &mut c);
                let e = verify_with(k, &mut arr, 3.0, |arr| {
                    let s = run(k, isa, arr, 3.0)?;
                    slot(arr, &input)[3] = -1.0;
                    Ok(s)
                })
                .unwrap_err();
                assert!(e.contains("wrote an array it only reads"), "{k}: {e}");
            }
        }
    }

    fn output<'s>(arr: &'s mut Arrays<'_>, k: Kernel) -> &'s mut [f64] {
        let name = k
            .spec()
            .writes
            .first()
            .cloned()
            .unwrap_or_else(|| "a".into());
        slot(arr, &name)
    }
}
