//! Trie lookup versus a `BTreeMap` prefix scan, at several entry counts.

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion};
use interpose::policy::trie::Trie;
use std::collections::BTreeMap;

fn paths(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("/home/user/work/project{}/src/module{}/file{}.rs", i % 97, i % 13, i)).collect()
}

/// The obvious alternative: every ancestor of the path looked up in a map.
fn btree_lookup(map: &BTreeMap<Vec<u8>, u32>, path: &[u8]) -> Option<u32> {
    let mut best = map.get(&b"/"[..]).copied();
    for (i, &c) in path.iter().enumerate().skip(1) {
        if c == b'/' {
            if let Some(v) = map.get(&path[..i]) {
                best = Some(*v);
            }
        }
    }
    map.get(path).copied().or(best)
}

fn lookup(c: &mut Criterion) {
    let mut group = c.benchmark_group("lookup");
    for n in [10usize, 1_000, 10_000, 100_000] {
        let entries = paths(n);
        let mut trie = Trie::new();
        let mut map = BTreeMap::new();
        for (i, p) in entries.iter().enumerate() {
            trie.insert(p.as_bytes(), i as u32);
            map.insert(p.as_bytes().to_vec(), i as u32);
        }
        let probe = format!("{}/deeper/still/file.txt", entries[n / 2]);
        group.bench_with_input(BenchmarkId::new("trie", n), &probe, |b, p| {
            b.iter(|| trie.lookup(black_box(p.as_bytes())))
        });
        group.bench_with_input(BenchmarkId::new("btreemap", n), &probe, |b, p| {
            b.iter(|| btree_lookup(&map, black_box(p.as_bytes())))
        });
    }
    group.finish();
}

criterion_group!(benches, lookup);
criterion_main!(benches);
