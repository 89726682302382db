//! Scalar quantisation: what the graph walks on.
//!
//! Each component of a vector is stored as a byte (`0..=255`) on a per-dimension range fitted
//! to the data, a quarter of the bytes of its `f32`. A query is turned into one signed byte
//! per component (`-127..=127`), scaled by that component's step, so that the dot product of
//! the query with a stored vector is, up to rounding, an affine function of the integer dot
//! product of the two codes:
//!
//! `q . x ~ sum_d q_d (lo_d + c_d step_d) = sum_d q_d lo_d + sum_d (q_d step_d) c_d
//!        ~ offset + scale * sum_d c_d i_d`
//!
//! with `i_d = round((q_d step_d) / scale)`. Every product of two codes fits an `i16` (`255 *
//! 127 < 32,767`), so the compiler turns the kernel into the CPU's multiply-add of 16-bit
//! pairs (`vpmaddwd`: 16 products per instruction with AVX2). The estimate guides the walk
//! only: the graph reranks what it found with the exact `f32` vectors (see
//! [`crate::FlatHnsw`]).

/// Bytes a code takes per component: codes are padded with zeros to a multiple of this, so
/// the kernel needs no scalar tail.
pub(crate) const CODE_ALIGN: usize = 32;

/// The largest stored code.
const TOP: f32 = 255.0;
/// The largest query code (in magnitude).
const QUERY_TOP: f32 = 127.0;

/// A per-dimension range and the codes' layout.
#[derive(Clone, Debug, PartialEq)]
pub struct Quantiser {
    dim: usize,
    /// Bytes per code: `dim` rounded up to [`CODE_ALIGN`].
    stride: usize,
    lo: Vec<f32>,
    step: Vec<f32>,
}

/// A query prepared for [`Quantiser::estimate`] and [`Quantiser::refine`].
#[derive(Clone, Debug)]
pub struct QueryCode {
    codes: Vec<i8>,
    scale: f32,
    offset: f32,
    /// Each component times its dimension's step (`q_d step_d`), padded like a code.
    scaled: Vec<f32>,
    /// The standard deviation of [`Quantiser::refine`]'s error (see there).
    spread: f32,
}

impl QueryCode {
    /// The standard deviation of [`Quantiser::refine`]'s error for this query.
    pub fn spread(&self) -> f32 {
        self.spread
    }
}

impl Quantiser {
    /// A range per dimension covering `data` (rows of `dim` components; unit vectors' range,
    /// `[-1, 1]`, for a dimension with no data or no spread).
    pub fn fit(data: &[f32], dim: usize) -> Quantiser {
        let mut lo = vec![f32::INFINITY; dim];
        let mut hi = vec![f32::NEG_INFINITY; dim];
        for row in data.chunks_exact(dim.max(1)) {
            for ((l, h), &x) in lo.iter_mut().zip(hi.iter_mut()).zip(row) {
                if x.is_finite() {
                    *l = l.min(x);
                    *h = h.max(x);
                }
            }
        }
        let (lo, step) = lo
            .iter()
            .zip(&hi)
            .map(|(&l, &h)| if l.is_finite() && h > l { (l, (h - l) / TOP) } else { (-1.0, 2.0 / TOP) })
            .unzip();
        Quantiser::from_parts(dim, lo, step)
    }

    /// A quantiser from its ranges (as [`Quantiser::parts`] gives them).
    pub(crate) fn from_parts(dim: usize, lo: Vec<f32>, step: Vec<f32>) -> Quantiser {
        Quantiser { dim, stride: dim.div_ceil(CODE_ALIGN) * CODE_ALIGN, lo, step }
    }

    /// Each dimension's low end and step.
    pub(crate) fn parts(&self) -> (&[f32], &[f32]) {
        (&self.lo, &self.step)
    }

    /// Bytes of one code.
    pub fn stride(&self) -> usize {
        self.stride
    }

    /// Append the code of `v` (clamped to the ranges) to `out`: [`Quantiser::stride`] bytes.
    /// Returns the norm of what the ranges cut off: the components outside them (a vector
    /// added after the ranges were fitted may reach beyond), each less its range's end. Within
    /// the ranges a code is off by at most half a step per component, the error
    /// [`Quantiser::refine`] allows for; beyond them by this much more at most (for a unit
    /// query, by Cauchy-Schwarz).
    pub fn encode(&self, v: &[f32], out: &mut Vec<u8>) -> f32 {
        let start = out.len();
        let mut cut = 0f32;
        for ((&x, &lo), &step) in v.iter().zip(&self.lo).zip(&self.step) {
            let exact = ((x - lo) / step).round();
            let c = exact.clamp(0.0, TOP);
            if c != exact {
                let beyond = x - (lo + c * step);
                cut += beyond * beyond;
            }
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            out.push(c as u8);
        }
        out.resize(start + self.stride, 0);
        cut.sqrt()
    }

    /// The query's code (see the module documentation).
    pub fn query(&self, q: &[f32]) -> QueryCode {
        let mut scaled: Vec<f32> = q.iter().zip(&self.step).map(|(x, s)| x * s).collect();
        let offset = q.iter().zip(&self.lo).map(|(x, l)| x * l).sum();
        let most = scaled.iter().fold(0f32, |m, x| m.max(x.abs()));
        let scale = if most > 0.0 { most / QUERY_TOP } else { 1.0 };
        let mut codes: Vec<i8> = scaled
            .iter()
            .map(|x| {
                // Half away from zero, as `f32::round`, which is a library call on the
                // x86-64 baseline (a sixteenth of a query's time at ef 10); the conversion
                // truncates in one instruction.
                let y = (x / scale).clamp(-QUERY_TOP, QUERY_TOP);
                #[allow(clippy::cast_possible_truncation)]
                let c = (y + 0.5f32.copysign(y)) as i8;
                c
            })
            .collect();
        codes.resize(self.stride, 0);
        let spread = (scaled.iter().map(|x| x * x).sum::<f32>() / 12.0).sqrt();
        scaled.resize(self.stride, 0.0);
        QueryCode { codes, scale, offset, scaled, spread }
    }

    /// A finer estimate of the dot product of the query and the vector of `code`: the exact
    /// query against the code (`offset + sum_d q_d step_d c_d`), where [`Quantiser::estimate`]
    /// takes the query's bytes. Its error is then the code's rounding alone, `sum_d q_d step_d
    /// e_d` with each `e_d` within half a step: near normal over hundreds of dimensions, of
    /// standard deviation [`QueryCode::spread`] (`e_d` uniform: variance 1/12 each), for a
    /// vector within the ranges; one beyond them is off by up to the norm [`Quantiser::encode`]
    /// returned for it (times the query's norm) more.
    #[inline]
    pub fn refine(&self, q: &QueryCode, code: &[u8]) -> f32 {
        q.offset + dot_scaled(&q.scaled, code)
    }

    /// The estimated dot product of the query and the vector of `code`.
    #[inline]
    pub fn estimate(&self, q: &QueryCode, code: &[u8]) -> f32 {
        #[allow(clippy::cast_precision_loss)]
        let dot = dot_codes(code, &q.codes) as f32;
        q.offset + q.scale * dot
    }

    /// The vector a code stands for.
    pub fn decode(&self, code: &[u8]) -> Vec<f32> {
        code.iter().zip(&self.lo).zip(&self.step).map(|((&c, &lo), &step)| lo + f32::from(c) * step).collect()
    }

    /// The dimension.
    pub fn dim(&self) -> usize {
        self.dim
    }
}

/// Lanes of the byte kernel: one AVX2 register of bytes.
const BYTE_LANES: usize = 32;

/// The dot product of `f32` components and bytes, over the shorter length (whole chunks of
/// [`CODE_ALIGN`]: codes and scaled queries are padded). `step(x, y, acc)` accumulates one
/// lane, as in [`crate::kernel`].
#[inline(always)]
fn dot_scaled_lanes(q: &[f32], c: &[u8], step: impl Fn(f32, f32, f32) -> f32) -> f32 {
    let mut acc = [0f32; BYTE_LANES];
    for (x, y) in q.chunks_exact(BYTE_LANES).zip(c.chunks_exact(BYTE_LANES)) {
        for i in 0..BYTE_LANES {
            acc[i] = step(x[i], f32::from(y[i]), acc[i]);
        }
    }
    acc.iter().sum()
}

/// The integer dot product of stored codes and a query's codes, over the shorter length
/// (whole chunks of [`CODE_ALIGN`] bytes: codes are padded).
#[inline(always)]
fn dot_bytes(a: &[u8], b: &[i8]) -> i32 {
    let mut acc = [0i32; BYTE_LANES];
    for (x, y) in a.chunks_exact(BYTE_LANES).zip(b.chunks_exact(BYTE_LANES)) {
        for i in 0..BYTE_LANES {
            acc[i] += i32::from(i16::from(x[i]) * i16::from(y[i]));
        }
    }
    acc.iter().sum()
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    #[allow(unsafe_code)]
    #[target_feature(enable = "avx2")]
    pub(super) fn dot_bytes_avx2(a: &[u8], b: &[i8]) -> i32 {
        super::dot_bytes(a, b)
    }

    #[allow(unsafe_code)]
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn dot_scaled_avx2(q: &[f32], c: &[u8]) -> f32 {
        super::dot_scaled_lanes(q, c, f32::mul_add)
    }
}

/// [`dot_scaled_lanes`], with AVX2 and FMA where the CPU has them.
#[inline]
fn dot_scaled(q: &[f32], c: &[u8]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    {
        if crate::kernel::has_avx2() {
            // SAFETY: `dot_scaled_avx2` only needs AVX2 and FMA, which `has_avx2` checked at
            // run time. Run on every candidate a search considers ranking again.
            #[allow(unsafe_code)]
            return unsafe { x86::dot_scaled_avx2(q, c) };
        }
    }
    dot_scaled_lanes(q, c, |x, y, acc| acc + x * y)
}

/// [`dot_bytes`], with AVX2 where the CPU has it.
#[inline]
pub(crate) fn dot_codes(a: &[u8], b: &[i8]) -> i32 {
    #[cfg(target_arch = "x86_64")]
    {
        if crate::kernel::has_avx2() {
            // SAFETY: `dot_bytes_avx2` only needs AVX2, which `has_avx2` checked at run time.
            // The graph walk's hot loop: the walk on codes runs at 1.2-1.9x the walk on `f32`
            // vectors at equal recall (`benches/ann_all.sh`, docs/index.md).
            #[allow(unsafe_code)]
            return unsafe { x86::dot_bytes_avx2(a, b) };
        }
    }
    dot_bytes(a, b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::dot_scalar;
    use crate::synth::{Shape, clustered};

    #[test]
    fn estimates_follow_the_exact_products() {
        let dim = 100;
        let data: Vec<f32> = clustered(500, Shape::new(dim), 3)
            .into_iter()
            .flat_map(|v| mnemon_storage::normalise(&v).unwrap())
            .collect();
        let qz = Quantiser::fit(&data, dim);
        assert_eq!(qz.stride(), 128);
        let mut codes = Vec::new();
        for row in data.chunks_exact(dim) {
            // Within the ranges fitted on them: nothing cut.
            assert_eq!(qz.encode(row, &mut codes), 0.0);
        }
        assert_eq!(codes.len(), 500 * 128);
        let mut worst = 0f32;
        for q in data.chunks_exact(dim).take(20) {
            let qc = qz.query(q);
            for (row, code) in data.chunks_exact(dim).zip(codes.chunks_exact(128)) {
                let err = (qz.estimate(&qc, code) - dot_scalar(q, row)).abs();
                worst = worst.max(err);
            }
        }
        assert!(worst < 0.02, "worst error {worst}");
        // The refined estimate takes the exact query: its error is the codes' rounding alone,
        // within a few of its standard deviations, and smaller than the estimate's.
        let (mut coarse, mut fine, mut beyond) = (0f64, 0f64, 0usize);
        for q in data.chunks_exact(dim).skip(20).take(20) {
            let qc = qz.query(q);
            assert!(qc.spread() > 0.0);
            for (row, code) in data.chunks_exact(dim).zip(codes.chunks_exact(128)) {
                let exact = dot_scalar(q, row);
                let err = qz.refine(&qc, code) - exact;
                coarse += f64::from((qz.estimate(&qc, code) - exact).powi(2));
                fine += f64::from(err.powi(2));
                beyond += usize::from(err.abs() > 4.0 * qc.spread());
            }
        }
        assert!(fine < coarse, "refined {fine} against {coarse}");
        // Within four standard deviations: all but about 1 in 16,000 (none expected here).
        assert!(beyond <= 1, "{beyond} of 10,000 errors beyond four spreads");
        // Beyond the ranges, the cut is the norm of what lies past their ends.
        let mut beyond_ranges = data[..dim].to_vec();
        let (lo, step) = qz.parts();
        beyond_ranges[0] = lo[0] - 0.25;
        beyond_ranges[1] = lo[1] + step[1] * 255.0 + 0.5;
        let cut = qz.encode(&beyond_ranges, &mut Vec::new());
        assert!((cut - (0.25f32.powi(2) + 0.5f32.powi(2)).sqrt()).abs() < 1e-4, "{cut}");
        // Decoding lands within half a step of each component.
        let back = qz.decode(&codes[..128]);
        for ((x, y), s) in back.iter().zip(&data[..dim]).zip(qz.parts().1) {
            assert!((x - y).abs() <= s * 0.5 + 1e-6);
        }
    }

    #[test]
    fn the_kernel_matches_the_plain_sum() {
        let a: Vec<u8> = (0..96).map(|i| (i * 37 % 256) as u8).collect();
        let b: Vec<i8> = (0..96).map(|i| (i * 53 % 255 - 127) as i8).collect();
        let want: i32 = a.iter().zip(&b).map(|(&x, &y)| i32::from(x) * i32::from(y)).sum();
        assert_eq!(dot_codes(&a, &b), want);
        assert_eq!(dot_bytes(&a, &b), want);
        // Extremes do not saturate.
        let a = vec![255u8; 64];
        let b = vec![-127i8; 64];
        assert_eq!(dot_codes(&a, &b), -255 * 127 * 64);
    }
}
