//! [`SquareMatrix`]: the cells of a core-to-core matrix in one flat allocation, 8 bytes a
//! cell (a 2,000-CPU matrix is 4 million cells: 32 MB, where rows of `Option<f64>` took
//! 64 MB in 2,001 allocations).

use serde::de::{self, DeserializeSeed, SeqAccess, Visitor};
use serde::ser::{SerializeSeq, Serializer};
use serde::{Deserialize, Deserializer, Serialize};
use std::fmt;

/// An n x n matrix of latencies (ns), row-major in one `Vec<f64>`; NaN marks a cell
/// without a value (unmeasured, or the diagonal).
///
/// Its JSON form is what a journal has always held: n rows of n numbers and nulls
/// (`null` where there is no value). It deserializes streaming, the cells straight into
/// the flat vector (no rows in between), and rejects ragged rows, a number of rows other
/// than the length of a row, and infinite or NaN numbers, naming the row and the cell.
#[derive(Debug, Clone, Default)]
pub struct SquareMatrix {
    n: usize,
    cells: Vec<f64>,
}

impl SquareMatrix {
    /// n x n cells, none with a value.
    pub fn new(n: usize) -> Self {
        SquareMatrix {
            n,
            cells: vec![f64::NAN; n * n],
        }
    }

    /// n x n cells, `f(i, j)` in cell (i, j) (`None`: no value).
    pub fn from_fn(n: usize, mut f: impl FnMut(usize, usize) -> Option<f64>) -> Self {
        let mut cells = Vec::with_capacity(n * n);
        for i in 0..n {
            for j in 0..n {
                cells.push(f(i, j).unwrap_or(f64::NAN));
            }
        }
        SquareMatrix { n, cells }
    }

    /// The matrix of these rows, or what is wrong with their shape (rows of different
    /// lengths, or as many rows as a row has cells).
    pub fn from_rows(rows: &[Vec<Option<f64>>]) -> Result<Self, String> {
        let n = rows.len();
        if let Some((i, r)) = rows.iter().enumerate().find(|(_, r)| r.len() != n) {
            return Err(format!(
                "row {i} has {} cells in a matrix of {n} rows: the matrix must be square",
                r.len()
            ));
        }
        Ok(Self::from_fn(n, |i, j| rows[i][j]))
    }

    /// Rows (and columns).
    pub fn n(&self) -> usize {
        self.n
    }

    /// The value of cell (i, j); `None` where there is none. Panics out of bounds.
    pub fn get(&self, i: usize, j: usize) -> Option<f64> {
        assert!(
            i < self.n && j < self.n,
            "cell ({i}, {j}) of {0}x{0}",
            self.n
        );
        let v = self.cells[i * self.n + j];
        (!v.is_nan()).then_some(v)
    }

    /// Sets cell (i, j) (`None` or NaN: no value). Panics out of bounds.
    pub fn set(&mut self, i: usize, j: usize, v: Option<f64>) {
        assert!(
            i < self.n && j < self.n,
            "cell ({i}, {j}) of {0}x{0}",
            self.n
        );
        self.cells[i * self.n + j] = v.unwrap_or(f64::NAN);
    }

    /// Row i, its cells in order (`None` where there is no value).
    pub fn row(&self, i: usize) -> impl Iterator<Item = Option<f64>> + '_ {
        self.cells[i * self.n..(i + 1) * self.n]
            .iter()
            .map(|&v| (!v.is_nan()).then_some(v))
    }

    /// The rows, in order (see [`SquareMatrix::row`]).
    pub fn rows(&self) -> impl Iterator<Item = impl Iterator<Item = Option<f64>> + '_> + '_ {
        (0..self.n).map(|i| self.row(i))
    }

    /// The finite values below the diagonal (cell (i, j) for j < i), row by row; where
    /// there are none, every finite value, row by row. Gathered in the matrix's own
    /// memory (no second allocation) and then shrunk to their number.
    pub fn into_pair_values(self) -> Vec<f64> {
        let n = self.n;
        let mut v = self.cells;
        // Each value moves to a place no later than its own: nothing is overwritten
        // before it is read.
        let mut w = 0;
        for i in 0..n {
            for j in 0..i {
                let x = v[i * n + j];
                if x.is_finite() {
                    v[w] = x;
                    w += 1;
                }
            }
        }
        if w == 0 {
            // Nothing was moved: the matrix is whole.
            for r in 0..v.len() {
                let x = v[r];
                if x.is_finite() {
                    v[w] = x;
                    w += 1;
                }
            }
        }
        v.truncate(w);
        v.shrink_to_fit();
        v
    }

    /// The same cells over m rows and columns: cut, or extended with cells without a
    /// value.
    pub fn resized(&self, m: usize) -> SquareMatrix {
        SquareMatrix::from_fn(m, |i, j| {
            if i < self.n && j < self.n {
                self.get(i, j)
            } else {
                None
            }
        })
    }
}

/// Equal shapes and cells, a cell without a value equal to another without one.
impl PartialEq for SquareMatrix {
    fn eq(&self, other: &Self) -> bool {
        self.n == other.n
            && self
                .cells
                .iter()
                .zip(&other.cells)
                .all(|(a, b)| a == b || (a.is_nan() && b.is_nan()))
    }
}

impl Serialize for SquareMatrix {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        struct Row<'a>(&'a [f64]);
        impl Serialize for Row<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut seq = s.serialize_seq(Some(self.0.len()))?;
                for &v in self.0 {
                    seq.serialize_element(&(!v.is_nan()).then_some(v))?;
                }
                seq.end()
            }
        }
        let mut seq = s.serialize_seq(Some(self.n))?;
        if self.n > 0 {
            for row in self.cells.chunks(self.n) {
                seq.serialize_element(&Row(row))?;
            }
        }
        seq.end()
    }
}

impl<'de> Deserialize<'de> for SquareMatrix {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_seq(Rows)
    }
}

/// The outer sequence: the rows.
struct Rows;

impl<'de> Visitor<'de> for Rows {
    type Value = SquareMatrix;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a square matrix: rows of numbers (ns) and nulls")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<SquareMatrix, A::Error> {
        let mut cells = Vec::new();
        // The length of the first row is n; then all n x n cells are reserved at once
        // (where the allocator grants them; else the vector grows as usual).
        let mut n = None;
        let mut rows = 0usize;
        loop {
            if n.is_some_and(|n| rows >= n) {
                // One more row than cells in a row is an error: read no more of it.
                if seq.next_element::<de::IgnoredAny>()?.is_some() {
                    return Err(de::Error::custom(format_args!(
                        "more than {rows} rows of {rows} cells: the matrix must be square"
                    )));
                }
                break;
            }
            let row = RowSeed {
                cells: &mut cells,
                expected: n,
                row: rows,
            };
            let Some(len) = seq.next_element_seed(row)? else {
                break;
            };
            if n.is_none() {
                n = Some(len);
                if let Some(total) = len.checked_mul(len) {
                    let _ = cells.try_reserve_exact(total.saturating_sub(cells.len()));
                }
            }
            rows += 1;
        }
        let n = n.unwrap_or(0);
        if rows != n {
            return Err(de::Error::custom(format_args!(
                "{rows} rows of {n} cells: the matrix must be square"
            )));
        }
        Ok(SquareMatrix { n, cells })
    }
}

/// One row, its cells appended to the flat vector; gives its length.
struct RowSeed<'a> {
    cells: &'a mut Vec<f64>,
    /// The length of the rows before (none for the first).
    expected: Option<usize>,
    row: usize,
}

impl<'de> DeserializeSeed<'de> for RowSeed<'_> {
    type Value = usize;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<usize, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for RowSeed<'_> {
    type Value = usize;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "row {} of the matrix: numbers (ns) and nulls", self.row)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<usize, A::Error> {
        let mut len = 0usize;
        while let Some(v) = seq.next_element::<Option<f64>>()? {
            if self.expected.is_some_and(|n| len >= n) {
                return Err(de::Error::custom(format_args!(
                    "row {} has more than {} cells, the rows before have {}: the matrix must be square",
                    self.row, len, len
                )));
            }
            match v {
                Some(v) if !v.is_finite() => {
                    return Err(de::Error::custom(format_args!(
                        "row {}, cell {len}: {v} is not a latency (a finite number of ns, or null)",
                        self.row
                    )));
                }
                v => self.cells.push(v.unwrap_or(f64::NAN)),
            }
            len += 1;
        }
        if let Some(n) = self.expected.filter(|&n| n != len) {
            return Err(de::Error::custom(format_args!(
                "row {} has {len} cells, the rows before have {n}: the matrix must be square",
                self.row
            )));
        }
        Ok(len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> Result<SquareMatrix, String> {
        serde_json::from_str(json).map_err(|e| e.to_string())
    }

    /// The JSON form is rows of numbers and nulls, written back byte for byte.
    #[test]
    fn round_trips_rows_of_numbers_and_nulls() {
        let json = "[[null,40.5,90],[40.5,null,null],[90.25,1e-7,null]]";
        let m = parse(json).unwrap();
        assert_eq!(m.n(), 3);
        assert_eq!(m.get(0, 1), Some(40.5));
        assert_eq!(m.get(1, 2), None);
        assert_eq!(m.get(2, 1), Some(1e-7));
        let rows: Vec<Vec<Option<f64>>> = m.rows().map(|r| r.collect()).collect();
        let old: Vec<Vec<Option<f64>>> = serde_json::from_str(json).unwrap();
        assert_eq!(rows, old);
        assert_eq!(
            serde_json::to_string(&m).unwrap(),
            serde_json::to_string(&old).unwrap()
        );
        assert_eq!(parse("[]").unwrap(), SquareMatrix::new(0));
        assert_eq!(serde_json::to_string(&SquareMatrix::new(0)).unwrap(), "[]");
        assert_eq!(SquareMatrix::from_rows(&old).unwrap(), m);
    }

    /// Ragged rows, a shape other than square and numbers that are no latency are
    /// errors naming the row and the cell.
    #[test]
    fn rejects_ragged_non_square_and_non_finite() {
        let e = parse("[[null,1],[1]]").unwrap_err();
        assert!(
            e.contains("row 1 has 1 cells, the rows before have 2"),
            "{e}"
        );
        let e = parse("[[null,1],[1,null,2]]").unwrap_err();
        assert!(e.contains("row 1 has more than 2 cells"), "{e}");
        let e = parse("[[null,1,2],[1,null,2]]").unwrap_err();
        assert!(
            e.contains("2 rows of 3 cells: the matrix must be square"),
            "{e}"
        );
        let e = parse("[[null],[1]]").unwrap_err();
        assert!(e.contains("more than 1 rows of 1 cells"), "{e}");
        let e = parse("[[]]").unwrap_err();
        assert!(e.contains("square"), "{e}");
        let e = parse("[[null,1e999],[1,null]]").unwrap_err();
        assert!(e.contains("line 1"), "{e}");
        assert!(parse("[[null,\"a\"],[1,null]]").is_err());
        let bad = serde_json::json!([[null, 1.0], [1.0, null]]);
        let mut v = serde_json::from_value::<SquareMatrix>(bad).unwrap();
        v.set(0, 1, Some(f64::INFINITY));
        let back = serde_json::to_value(&v).unwrap();
        assert_eq!(back, serde_json::json!([[null, null], [1.0, null]]));
        let e = SquareMatrix::from_rows(&[vec![None, Some(1.0)], vec![Some(1.0)]]).unwrap_err();
        assert!(e.contains("row 1 has 1 cells"), "{e}");
    }

    /// A non-finite number is rejected by name where the format can carry one (TOML).
    #[test]
    fn rejects_infinite_numbers_by_row_and_cell() {
        #[derive(Debug, Deserialize)]
        struct Doc {
            #[allow(dead_code)]
            m: SquareMatrix,
        }
        let e = toml::from_str::<Doc>("m = [[0.0, 1.0], [inf, 0.0]]").unwrap_err();
        assert!(
            e.to_string()
                .contains("row 1, cell 0: inf is not a latency"),
            "{e}"
        );
        let e = toml::from_str::<Doc>("m = [[0.0, nan], [1.0, 0.0]]").unwrap_err();
        assert!(
            e.to_string()
                .contains("row 0, cell 1: NaN is not a latency"),
            "{e}"
        );
        assert!(toml::from_str::<Doc>("m = [[0.0, 1.0], [1.0, 0.0]]").is_ok());
    }

    /// The pair values are the lower triangle's, else the whole matrix's, in row order.
    #[test]
    fn pair_values_are_the_lower_triangle_else_every_value() {
        let m = SquareMatrix::from_fn(3, |i, j| (i != j).then_some((i * 3 + j) as f64));
        assert_eq!(m.into_pair_values(), vec![3.0, 6.0, 7.0]);
        let mut upper = SquareMatrix::from_fn(3, |i, j| (j > i).then_some((i * 3 + j) as f64));
        upper.set(0, 2, Some(f64::INFINITY));
        assert_eq!(upper.into_pair_values(), vec![1.0, 5.0]);
        let mut holes = SquareMatrix::new(3);
        holes.set(2, 1, Some(4.5));
        holes.set(0, 1, Some(9.0));
        assert_eq!(holes.into_pair_values(), vec![4.5]);
        assert!(SquareMatrix::new(0).into_pair_values().is_empty());
    }

    /// Cells cut or extended keep their values.
    #[test]
    fn resized_keeps_the_cells_it_can() {
        let m = SquareMatrix::from_fn(3, |i, j| (i != j).then_some((i * 3 + j) as f64));
        let small = m.resized(2);
        assert_eq!(small.n(), 2);
        assert_eq!(small.get(1, 0), Some(3.0));
        let big = m.resized(4);
        assert_eq!(big.get(2, 1), Some(7.0));
        assert_eq!(big.get(3, 0), None);
    }
}
