//! Bandwidth kernels (STREAM's copy/scale/add/triad plus read and write), each in a
//! scalar version and in the SIMD versions this CPU has, chosen at run time.
//!
//! What a kernel reads and writes per element is data (`data/kernels.toml`), loaded
//! once and checked against the code by a test that runs every kernel and looks at
//! which arrays it depends on and which it changes. Bandwidth is then counted two
//! ways from that table: the STREAM way (bytes of the arrays read and written) and the
//! bytes actually moved, which add the write-allocate read of every plainly stored line
//! (non-temporal stores skip it).

pub mod scalar;

#[cfg(target_arch = "x86_64")]
pub mod x86;

#[cfg(target_arch = "aarch64")]
pub mod neon;

#[cfg(target_arch = "aarch64")]
pub mod sve;

pub mod verify;

pub use numalab_records::mem::kernel::{parse_table, Kernel, Op, Spec, TABLE_TOML};

pub use numalab_records::mem::kernel::spec;

pub use numalab_records::mem::kernel::Isa;

/// What this CPU makes of an [`Isa`]: whether it can run it, its vector width here
/// (SVE's is read at run time), whether it has non-temporal stores.
pub trait IsaExt: Copy {
    /// Its name with the vector length where that is chosen by the CPU ("sve256");
    /// the name otherwise.
    fn label(self) -> String;
    /// Vector width in bits on this CPU (64 for scalar; for SVE read at run time, 0
    /// where this CPU has no SVE).
    fn vector_bits(self) -> u32;
    /// Whether this CPU (and this build's architecture) can run it.
    fn available(self) -> bool;
    /// Whether it has non-temporal stores.
    fn has_nt(self) -> bool;
    /// Vector width in bytes (8 for scalar; for SVE this CPU's vector length, read at
    /// run time, or 0 where this CPU has no SVE).
    fn width_bytes(self) -> usize;
}

impl IsaExt for Isa {
    fn label(self) -> String {
        match self {
            Isa::Sve => format!("sve{}", self.vector_bits()),
            _ => self.name().to_string(),
        }
    }

    fn vector_bits(self) -> u32 {
        8 * self.width_bytes() as u32
    }

    fn available(self) -> bool {
        match self {
            Isa::Scalar => true,
            #[cfg(target_arch = "x86_64")]
            Isa::Sse2 => std::arch::is_x86_feature_detected!("sse2"),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => {
                std::arch::is_x86_feature_detected!("avx")
                    && std::arch::is_x86_feature_detected!("avx2")
            }
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => std::arch::is_x86_feature_detected!("avx512f"),
            #[cfg(target_arch = "aarch64")]
            Isa::Neon => std::arch::is_aarch64_feature_detected!("neon"),
            #[cfg(target_arch = "aarch64")]
            Isa::Sve => std::arch::is_aarch64_feature_detected!("sve"),
            #[allow(unreachable_patterns)]
            _ => false,
        }
    }

    fn has_nt(self) -> bool {
        match self {
            Isa::Scalar => scalar::HAS_NT,
            _ => true,
        }
    }

    fn width_bytes(self) -> usize {
        match self {
            Isa::Scalar => 8,
            Isa::Sse2 | Isa::Neon => 16,
            Isa::Avx2 => 32,
            Isa::Avx512 => 64,
            Isa::Sve => sve_vector_bytes(),
        }
    }
}

/// Parses an ISA name; the error names the ISAs this CPU has.
pub fn parse_isa(text: &str) -> Result<Isa, String> {
    Isa::from_name(text).ok_or_else(|| {
        format!(
            "unknown ISA {text:?} (known: scalar, sse2, avx2, avx512, neon, sve; this CPU has {})",
            available()
                .iter()
                .map(|i| i.name())
                .collect::<Vec<_>>()
                .join(", ")
        )
    })
}

/// The ISAs this CPU can run, narrowest first.
pub fn available() -> Vec<Isa> {
    Isa::ALL.into_iter().filter(|i| i.available()).collect()
}

/// This CPU's SVE vector length in bytes, 0 without SVE.
fn sve_vector_bytes() -> usize {
    #[cfg(target_arch = "aarch64")]
    if Isa::Sve.available() {
        // SAFETY: SVE is present (checked just above).
        return unsafe { sve::lanes() } * 8;
    }
    0
}

/// The ISA run by default: the widest this CPU can run, except that SVE is chosen
/// over NEON only when its vectors are wider than NEON's 128 bits (A64FX 512,
/// Neoverse V1 256). With 128-bit SVE (Neoverse N2, V2: Grace, Graviton 4) both move
/// 16 bytes per instruction, and NEON's loops carry no predicate work, so NEON stays
/// the default there; `--isa sve` runs SVE anyway.
pub fn best() -> Isa {
    let have = available();
    if have.contains(&Isa::Sve) && Isa::Sve.width_bytes() > Isa::Neon.width_bytes() {
        return Isa::Sve;
    }
    have.into_iter()
        .rfind(|&i| i != Isa::Sve)
        .unwrap_or(Isa::Scalar)
}

/// The ISAs a bandwidth trial compares when none is given: this CPU's vector ISAs
/// (AVX2 and AVX-512 on x86-64, NEON and SVE on AArch64), narrowest first; `fallback`
/// alone where it has none. The widest is not always the fastest: Zen 4 executes
/// 512-bit operations as two 256-bit halves, and 256-bit kernels stream as fast or
/// faster there (docs/benchmarks.md).
pub fn candidates(fallback: Isa) -> Vec<Isa> {
    let v: Vec<Isa> = [Isa::Avx2, Isa::Avx512, Isa::Neon, Isa::Sve]
        .into_iter()
        .filter(|i| i.available() && i.width_bytes() > 0)
        .collect();
    if v.is_empty() {
        vec![fallback]
    } else {
        v
    }
}

/// Why a kernel cannot run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KernelError {
    /// The CPU lacks the ISA.
    #[error("this CPU cannot run {0} kernels (it has: {1}); choose another --isa")]
    IsaUnavailable(Isa, String),
    /// No non-temporal stores in that ISA.
    #[error("{0} has no non-temporal stores on this architecture; use a SIMD ISA for -nt kernels")]
    NoNt(Isa),
    /// Arrays of the wrong lengths.
    #[error("kernel {0}: its arrays must have equal, non-zero lengths")]
    Lengths(String),
}

/// The three arrays of a kernel run; arrays a kernel does not touch may be empty.
#[derive(Debug)]
pub struct Arrays<'a> {
    /// Array a.
    pub a: &'a mut [f64],
    /// Array b.
    pub b: &'a mut [f64],
    /// Array c.
    pub c: &'a mut [f64],
}

impl<'a> Arrays<'a> {
    /// Splits one buffer into the arrays `kernel` uses, each `buf.len() / k` elements
    /// rounded down to whole 64-byte lines, in the order a, b, c. The rest is unused.
    pub fn split(buf: &'a mut [f64], kernel: Kernel) -> Arrays<'a> {
        let names = kernel.spec().arrays();
        let n = (buf.len() / names.len()) / 8 * 8;
        let mut rest = buf;
        let mut take = |want: bool| -> &'a mut [f64] {
            if !want {
                return &mut [];
            }
            let (head, tail) = std::mem::take(&mut rest).split_at_mut(n);
            rest = tail;
            head
        };
        let a = take(names.contains(&"a"));
        let b = take(names.contains(&"b"));
        let c = take(names.contains(&"c"));
        Arrays { a, b, c }
    }

    /// Elements per array of `kernel` (0 if the arrays it uses differ in length).
    pub fn elements(&self, kernel: Kernel) -> usize {
        let lens: Vec<usize> = kernel
            .spec()
            .arrays()
            .iter()
            .map(|n| match *n {
                "a" => self.a.len(),
                "b" => self.b.len(),
                _ => self.c.len(),
            })
            .collect();
        if lens.windows(2).all(|w| w[0] == w[1]) {
            lens.first().copied().unwrap_or(0)
        } else {
            0
        }
    }
}

/// Refuses an ISA this CPU lacks (naming those it has), and streaming stores on an ISA
/// without them.
fn check_isa(isa: Isa, nt: bool) -> Result<(), KernelError> {
    if !isa.available() {
        let have = available()
            .iter()
            .map(|i| i.name())
            .collect::<Vec<_>>()
            .join(", ");
        return Err(KernelError::IsaUnavailable(isa, have));
    }
    if nt && !isa.has_nt() {
        return Err(KernelError::NoNt(isa));
    }
    Ok(())
}

/// Runs `kernel` once over the arrays with ISA `isa` and scalar `s`; returns the sum
/// for `read` (0 otherwise), which callers must consume (e.g. `std::hint::black_box`).
pub fn run(kernel: Kernel, isa: Isa, arrays: &mut Arrays<'_>, s: f64) -> Result<f64, KernelError> {
    check_isa(isa, kernel.nt)?;
    let n = arrays.elements(kernel);
    if n == 0 {
        return Err(KernelError::Lengths(kernel.name()));
    }
    let Arrays { a, b, c } = arrays;
    if isa == Isa::Scalar {
        macro_rules! sc {
            ($nt:literal) => {
                match kernel.op {
                    Op::Read => return Ok(scalar::read(a)),
                    Op::Write => scalar::write::<$nt>(a, s),
                    Op::Copy => scalar::copy::<$nt>(a, c),
                    Op::Scale => scalar::scale::<$nt>(c, b, s),
                    Op::Add => scalar::add::<$nt>(a, b, c),
                    Op::Triad => scalar::triad::<$nt>(b, c, a, s),
                }
            };
        }
        if kernel.nt {
            sc!(true)
        } else {
            sc!(false)
        }
        return Ok(0.0);
    }
    macro_rules! simd {
        ($m:path, $nt:literal) => {{
            use $m as m;
            // SAFETY: the ISA is available (checked above) and every used array holds
            // n elements (checked by `elements`); the arrays are distinct &mut slices.
            unsafe {
                match kernel.op {
                    Op::Read => return Ok(m::read(a.as_ptr(), n)),
                    Op::Write => m::write::<$nt>(a.as_mut_ptr(), n, s),
                    Op::Copy => m::copy::<$nt>(a.as_ptr(), c.as_mut_ptr(), n),
                    Op::Scale => m::scale::<$nt>(c.as_ptr(), b.as_mut_ptr(), n, s),
                    Op::Add => m::add::<$nt>(a.as_ptr(), b.as_ptr(), c.as_mut_ptr(), n),
                    Op::Triad => m::triad::<$nt>(b.as_ptr(), c.as_ptr(), a.as_mut_ptr(), n, s),
                }
            }
        }};
    }
    macro_rules! both {
        ($m:path) => {
            if kernel.nt {
                simd!($m, true)
            } else {
                simd!($m, false)
            }
        };
    }
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Sse2 => both!(x86::sse2),
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => both!(x86::avx2),
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => both!(x86::avx512),
        #[cfg(target_arch = "aarch64")]
        Isa::Neon => both!(neon),
        #[cfg(target_arch = "aarch64")]
        Isa::Sve => both!(sve),
        _ => unreachable!("available() is false for ISAs of other architectures"),
    }
    Ok(0.0)
}

/// Copies `src` into `dst` (equal lengths) with the copy kernel of `isa`, plain or
/// streaming stores: the vectorised copy `mem migrate` uses.
pub fn copy(isa: Isa, src: &[f64], dst: &mut [f64], nt: bool) -> Result<(), KernelError> {
    if src.len() != dst.len() || src.is_empty() {
        return Err(KernelError::Lengths("copy".into()));
    }
    check_isa(isa, nt)?;
    let n = dst.len();
    macro_rules! simd {
        ($m:path) => {{
            use $m as m;
            // SAFETY: the ISA is available and both slices hold n elements; a shared
            // and a mutable borrow cannot overlap.
            unsafe {
                if nt {
                    m::copy::<true>(src.as_ptr(), dst.as_mut_ptr(), n)
                } else {
                    m::copy::<false>(src.as_ptr(), dst.as_mut_ptr(), n)
                }
            }
        }};
    }
    match isa {
        Isa::Scalar if nt => scalar::copy::<true>(src, dst),
        Isa::Scalar => scalar::copy::<false>(src, dst),
        #[cfg(target_arch = "x86_64")]
        Isa::Sse2 => simd!(x86::sse2),
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => simd!(x86::avx2),
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => simd!(x86::avx512),
        #[cfg(target_arch = "aarch64")]
        Isa::Neon => simd!(neon),
        #[cfg(target_arch = "aarch64")]
        Isa::Sve => simd!(sve),
        #[allow(unreachable_patterns)]
        _ => unreachable!("available() is false for ISAs of other architectures"),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fill(len: usize, seed: f64) -> Vec<f64> {
        (0..len).map(|i| seed + (i % 97) as f64 * 0.25).collect()
    }

    /// Runs a kernel on fresh arrays (offset by `skew` elements so that heads and
    /// tails are exercised) and returns (result, a, b, c).
    fn exec(k: Kernel, isa: Isa, n: usize, skew: usize) -> (f64, Vec<f64>, Vec<f64>, Vec<f64>) {
        let mut a = fill(n + skew, 1.0);
        let mut b = fill(n + skew, 2.0);
        let mut c = fill(n + skew, 3.0);
        let names = k.spec().arrays();
        let mut arrays = Arrays {
            a: if names.contains(&"a") {
                &mut a[skew..]
            } else {
                &mut []
            },
            b: if names.contains(&"b") {
                &mut b[skew..]
            } else {
                &mut []
            },
            c: if names.contains(&"c") {
                &mut c[skew..]
            } else {
                &mut []
            },
        };
        // Scalar code has no non-temporal stores on AArch64: the plain kernel computes
        // the same arrays.
        let k = if isa == Isa::Scalar && !isa.has_nt() {
            Kernel::plain(k.op)
        } else {
            k
        };
        let r = run(k, isa, &mut arrays, 3.0).unwrap();
        (r, a, b, c)
    }

    #[test]
    fn the_shipped_table_is_valid() {
        let t = parse_table(TABLE_TOML).unwrap();
        assert_eq!(t.len(), 6);
        assert!(parse_table("[[kernel]]\nname='read'\nformula=''\nreads=['a']\nwrites=['a']\nflops=0\nnt_variant=false").is_err());
        assert!(parse_table("kernel = []")
            .unwrap_err()
            .contains("appears 0 times"));
    }

    #[test]
    fn every_isa_here_matches_scalar_exactly() {
        let isas = available();
        assert!(isas.contains(&Isa::Scalar));
        #[cfg(target_arch = "x86_64")]
        assert!(isas.contains(&Isa::Sse2), "every x86-64 CPU has SSE2");
        #[cfg(target_arch = "aarch64")]
        assert!(
            isas.contains(&Isa::Neon),
            "every AArch64 Linux CPU has NEON"
        );
        // Under emulation (scripts/cross-aarch64.sh: qemu-aarch64 -cpu max) SVE is
        // there unless switched off (sve=off): its absence is then a failure, not a
        // silently smaller test; NUMALAB_EXPECT_SVE=1 asks for it anywhere.
        let runner =
            std::env::var("CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER").unwrap_or_default();
        let emulated_max = runner.contains("qemu-aarch64 -cpu max") && !runner.contains("sve=off");
        if emulated_max || std::env::var("NUMALAB_EXPECT_SVE").is_ok_and(|v| v == "1") {
            assert!(
                isas.contains(&Isa::Sve),
                "SVE expected but not detected ({runner})"
            );
        }
        eprintln!(
            "ISAs compared with scalar: {}",
            isas.iter()
                .map(|i| i.label())
                .collect::<Vec<_>>()
                .join(", ")
        );
        for k in Kernel::all() {
            // Lengths around the unroll width of every ISA, and odd offsets.
            // (SVE at 2048 bits does 4 x 32 f64 per block: 128, 129 and 257 cover it.)
            for n in [1, 7, 8, 31, 32, 33, 64, 100, 128, 129, 257, 1000, 4099] {
                for skew in [0, 1, 3] {
                    let want = exec(k, Isa::Scalar, n, skew);
                    for &isa in &isas {
                        if k.nt && !isa.has_nt() {
                            continue;
                        }
                        let got = exec(k, isa, n, skew);
                        assert_eq!(got.1, want.1, "{k} {isa} n={n} skew={skew}: a differs");
                        assert_eq!(got.2, want.2, "{k} {isa} n={n}: b differs");
                        assert_eq!(got.3, want.3, "{k} {isa} n={n}: c differs");
                        // Sums are reassociated by the vector accumulators: equal to
                        // rounding.
                        assert!(
                            (got.0 - want.0).abs() <= 1e-9 * want.0.abs().max(1.0),
                            "{k} {isa} n={n}: sum {} vs {}",
                            got.0,
                            want.0
                        );
                    }
                }
            }
        }
    }

    /// SVE is the default only when wider than NEON; NEON stays available.
    #[test]
    fn the_default_isa_follows_the_documented_rule() {
        let b = best();
        assert!(b.available());
        if cfg!(target_arch = "aarch64") {
            assert!(Isa::Neon.available());
            let sve_wider = Isa::Sve.available() && Isa::Sve.vector_bits() > 128;
            assert_eq!(b, if sve_wider { Isa::Sve } else { Isa::Neon });
        } else {
            assert_eq!(b, *available().last().unwrap());
            assert_eq!(Isa::Sve.vector_bits(), 0);
        }
        assert_eq!(Isa::Scalar.label(), "scalar");
        if Isa::Sve.available() {
            assert_eq!(Isa::Sve.label(), format!("sve{}", Isa::Sve.vector_bits()));
            assert!((128..=2048).contains(&Isa::Sve.vector_bits()));
            assert_eq!(Isa::Sve.vector_bits() % 128, 0);
        }
    }

    #[test]
    fn scalar_kernels_compute_the_formulas() {
        let n = 10;
        let a0 = fill(n, 1.0);
        let b0 = fill(n, 2.0);
        let c0 = fill(n, 3.0);
        let (r, ..) = exec(Kernel::plain(Op::Read), Isa::Scalar, n, 0);
        assert_eq!(r, a0.iter().sum::<f64>());
        let (_, a, ..) = exec(Kernel::plain(Op::Write), Isa::Scalar, n, 0);
        assert!(a.iter().all(|&v| v == 3.0));
        let (_, _, _, c) = exec(Kernel::plain(Op::Copy), Isa::Scalar, n, 0);
        assert_eq!(c, a0);
        let (_, _, b, _) = exec(Kernel::plain(Op::Scale), Isa::Scalar, n, 0);
        assert_eq!(b, c0.iter().map(|v| 3.0 * v).collect::<Vec<_>>());
        let (_, _, _, c) = exec(Kernel::plain(Op::Add), Isa::Scalar, n, 0);
        assert_eq!(
            c,
            a0.iter().zip(&b0).map(|(x, y)| x + y).collect::<Vec<_>>()
        );
        let (_, a, ..) = exec(Kernel::plain(Op::Triad), Isa::Scalar, n, 0);
        assert_eq!(
            a,
            b0.iter()
                .zip(&c0)
                .map(|(x, y)| x + 3.0 * y)
                .collect::<Vec<_>>()
        );
    }

    /// The table says which arrays each kernel reads and writes; check it against the
    /// code: an array is written iff running the kernel changes it, and read iff
    /// changing it changes the result.
    #[test]
    fn accounting_matches_code() {
        let n = 64;
        for k in Kernel::all() {
            let spec = k.spec();
            let base = exec(k, Isa::Scalar, n, 0);
            let initial = [fill(n, 1.0), fill(n, 2.0), fill(n, 3.0)];
            let outs = [&base.1, &base.2, &base.3];
            for (i, name) in ["a", "b", "c"].iter().enumerate() {
                let written = outs[i] != &initial[i];
                assert_eq!(
                    written,
                    spec.writes.iter().any(|w| w == name),
                    "{k}: writes {name}?"
                );
            }
            // Perturb each input array and see whether any output changes.
            for (i, name) in ["a", "b", "c"].iter().enumerate() {
                if !spec.arrays().contains(name) {
                    continue;
                }
                let mut arr = [fill(n, 1.0), fill(n, 2.0), fill(n, 3.0)];
                arr[i][5] += 1000.0;
                let before = arr.clone();
                let [a, b, c] = &mut arr;
                let mut arrays = Arrays { a, b, c };
                for (j, nm) in ["a", "b", "c"].iter().enumerate() {
                    if !spec.arrays().contains(nm) {
                        match j {
                            0 => arrays.a = &mut [],
                            1 => arrays.b = &mut [],
                            _ => arrays.c = &mut [],
                        }
                    }
                }
                let plain = if Isa::Scalar.has_nt() {
                    k
                } else {
                    Kernel::plain(k.op)
                };
                let r = run(plain, Isa::Scalar, &mut arrays, 3.0).unwrap();
                let changed_result = r != base.0;
                let changed_outputs = (0..3).any(|j| {
                    j != i
                        && spec.writes.iter().any(|w| w == ["a", "b", "c"][j])
                        && arr[j] != *outs[j]
                });
                let read = changed_result || changed_outputs;
                assert_eq!(
                    read,
                    spec.reads.iter().any(|w| w == name),
                    "{k}: reads {name}? {before:?}"
                );
            }
        }
    }

    #[test]
    fn byte_accounting() {
        let b = |name: &str| {
            let k = Kernel::parse(name).unwrap();
            (
                k.stream_bytes_per_element(),
                k.actual_bytes_per_element(),
                k.arrays(),
            )
        };
        assert_eq!(b("read"), (8, 8, 1));
        assert_eq!(b("write"), (8, 16, 1));
        assert_eq!(b("write-nt"), (8, 8, 1));
        assert_eq!(b("copy"), (16, 24, 2));
        assert_eq!(b("copy-nt"), (16, 16, 2));
        assert_eq!(b("scale"), (16, 24, 2));
        assert_eq!(b("add"), (24, 32, 3));
        assert_eq!(b("triad"), (24, 32, 3));
        assert_eq!(b("triad-nt"), (24, 24, 3));
    }

    #[test]
    fn names_parse_and_errors_say_what_exists() {
        for k in Kernel::all() {
            assert_eq!(Kernel::parse(&k.name()).unwrap(), k);
            let json = serde_json::to_string(&k).unwrap();
            assert_eq!(serde_json::from_str::<Kernel>(&json).unwrap(), k);
        }
        assert!(Kernel::parse("read-nt")
            .unwrap_err()
            .contains("no non-temporal"));
        assert!(Kernel::parse("stream").unwrap_err().contains("triad"));
        assert_eq!(parse_isa("AVX512").unwrap(), Isa::Avx512);
        assert!(parse_isa("sve2").unwrap_err().contains("this CPU has"));
        assert_eq!(parse_isa("sve").unwrap(), Isa::Sve);
    }

    #[test]
    fn split_gives_line_aligned_equal_arrays() {
        let mut buf = vec![0.0f64; 1000];
        let arr = Arrays::split(&mut buf, Kernel::plain(Op::Triad));
        assert_eq!((arr.a.len(), arr.b.len(), arr.c.len()), (328, 328, 328));
        let mut buf = vec![0.0f64; 1000];
        let arr = Arrays::split(&mut buf, Kernel::plain(Op::Scale));
        assert_eq!((arr.a.len(), arr.b.len(), arr.c.len()), (0, 496, 496));
        assert_eq!(arr.elements(Kernel::plain(Op::Scale)), 496);
    }

    #[test]
    fn bad_calls_are_errors_not_crashes() {
        let mut a = vec![1.0; 8];
        let mut c = vec![1.0; 9];
        let mut arrays = Arrays {
            a: &mut a,
            b: &mut [],
            c: &mut c,
        };
        assert!(matches!(
            run(Kernel::plain(Op::Copy), Isa::Scalar, &mut arrays, 1.0),
            Err(KernelError::Lengths(_))
        ));
        let missing = Isa::ALL.into_iter().find(|i| !i.available());
        if let Some(isa) = missing {
            assert!(matches!(
                run(Kernel::plain(Op::Read), isa, &mut arrays, 1.0),
                Err(KernelError::IsaUnavailable(..))
            ));
        }
        let src = vec![2.5; 100];
        let mut dst = vec![0.0; 100];
        copy(best(), &src, &mut dst, true).unwrap();
        assert_eq!(src, dst);
    }
}
