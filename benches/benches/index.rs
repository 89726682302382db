//! The vector kernels and the exact scan, side by side: the run-time dispatched AVX2/FMA dot
//! product against the portable (SSE2) build of the same code, the scalar oracle and the
//! estimate from 8-bit codes that the graph walks on, and the
//! exact scan of 100k 384-d vectors (its throughput against memory bandwidth is reported by
//! `mnemon bench ann`).
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use mnemon::index::exact::scan_all;
use mnemon::index::kernel::{dot, dot_portable, dot_scalar};
use mnemon::index::quant::Quantiser;
use mnemon::index::synth::{Shape, clustered};

fn kernels(c: &mut Criterion) {
    let v = clustered(2, Shape::new(384), 1);
    let (a, b) = (&v[0], &v[1]);
    let mut g = c.benchmark_group("dot_384");
    g.throughput(Throughput::Elements(1));
    g.bench_function("dispatched", |bench| {
        bench.iter(|| dot(std::hint::black_box(a), std::hint::black_box(b)))
    });
    g.bench_function("portable", |bench| {
        bench.iter(|| dot_portable(std::hint::black_box(a), std::hint::black_box(b)))
    });
    g.bench_function("scalar", |bench| {
        bench.iter(|| dot_scalar(std::hint::black_box(a), std::hint::black_box(b)))
    });
    // What the graph walk computes instead: the estimate from a query's codes and a stored
    // code (the integer kernel, dispatched to AVX2 like `dot`).
    let quant = Quantiser::fit(&[a.as_slice(), b.as_slice()].concat(), 384);
    let mut code = Vec::new();
    quant.encode(b, &mut code);
    let q = quant.query(a);
    g.bench_function("codes", |bench| {
        bench.iter(|| quant.estimate(std::hint::black_box(&q), std::hint::black_box(&code)))
    });
    g.finish();
}

fn exact_scan(c: &mut Criterion) {
    let n = 100_000;
    let data: Vec<f32> =
        clustered(n, Shape::new(384), 2).into_iter().flat_map(|v| mnemon::normalise(&v).unwrap()).collect();
    let q = mnemon::normalise(&clustered(1, Shape::new(384), 3)[0]).unwrap();
    let mut g = c.benchmark_group("exact_scan_100k_384");
    g.sample_size(20);
    g.throughput(Throughput::Bytes((n * 384 * 4) as u64));
    g.bench_function("top10", |bench| bench.iter(|| scan_all(&data, 384, &q, 10, &|_| true)));
    g.finish();
}

criterion_group!(benches, kernels, exact_scan);
criterion_main!(benches);
