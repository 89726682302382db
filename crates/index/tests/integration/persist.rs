//! Publishing, reloading without a rebuild, catching up, and refusing damaged files.

use mnemon_index::{Engine, IndexOptions, Manifest, Mode, Query, SearchPath};
use mnemon_storage::*;

use crate::common::*;

fn top_ids(
    index: &mnemon_index::VectorIndexes,
    store: &Store,
    ns: &Namespace,
    q: &[f32],
    mode: Mode,
) -> Vec<RecordId> {
    let snap = store.snapshot().unwrap();
    let mut query = Query::new(SPACE, ns, q, 5);
    query.mode = mode;
    index.search(&snap, &query).unwrap().hits.iter().map(|h| h.record.id).collect()
}

#[test]
fn a_published_index_is_reloaded_not_rebuilt_and_catches_up() {
    for engine in [Engine::Mnemon, Engine::HnswRs] {
        reload_with(engine);
    }
}

fn reload_with(engine: Engine) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("p.redb");
    let idx_dir = IndexOptions::dir_beside(&db);
    assert_eq!(idx_dir.file_name().unwrap(), "p.redb.index");
    let store = open(&db);
    let ns = Namespace::new("p").unwrap();
    let data = clustered(3_000, 24, 12, 11);
    load(&store, &ns, &data, |_| Vec::new());
    let with =
        |opts: IndexOptions| mnemon_index::VectorIndexes::new(store.clone(), IndexOptions { engine, ..opts });
    let first = with(options(Some(idx_dir.clone())));
    let report = first.build(SPACE, &ns).unwrap();
    assert_eq!((report.graph_points, report.generation), (3_000, Some(1)));
    // The graph file(s) and the points file.
    let files: Vec<_> = std::fs::read_dir(&idx_dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    let per_publish = files.len();
    assert_eq!(per_publish, if engine == Engine::Mnemon { 2 } else { 3 }, "{files:?}");
    drop(first);

    // Records written after the publish: searched exactly until added to the graph (more
    // than one slice of the extension, which adds 64 at a time).
    let late = clustered(150, 24, 12, 12);
    let late_ids = load(&store, &ns, &late, |_| Vec::new());

    let second = with(options(Some(idx_dir.clone())));
    let status = second.open_segment(SPACE, &ns).unwrap().unwrap();
    assert_eq!(status.load_note, None);
    assert_eq!((status.generation, status.graph_points), (1, 3_000), "the graph was not reloaded");
    assert_eq!(status.unindexed, 150);
    let snap = store.snapshot().unwrap();
    let found = second.search(&snap, &Query::new(SPACE, &ns, &late[7], 1)).unwrap();
    assert_eq!(found.plan.path, SearchPath::Graph);
    assert_eq!(found.plan.unindexed, 150);
    assert_eq!(found.hits[0].record.id, late_ids[7]);
    // The reloaded graph answers like a fresh one. The graph is approximate (and hnsw_rs
    // places its points at random levels), so the recall is counted over many queries, not
    // required of each: now and then one query misses two of its five (40 queries: 198-200 of
    // 200 found in twenty runs).
    let queries = clustered(40, 24, 12, 13);
    let mut found = 0;
    for q in &queries {
        let exact = top_ids(&second, &store, &ns, q, Mode::Exact);
        let graph = top_ids(&second, &store, &ns, q, Mode::Graph);
        found += exact.iter().filter(|i| graph.contains(i)).count();
    }
    assert!(found * 10 >= queries.len() * 5 * 9, "{engine:?}: recall@5 {found} of {}", queries.len() * 5);

    // Maintenance publishes the next generation and removes the old files.
    let mut opts = options(Some(idx_dir.clone()));
    opts.tail_max = 10;
    let third = with(opts);
    third.open_segment(SPACE, &ns).unwrap();
    let reports = third.maintain().unwrap();
    assert_eq!(reports[0].generation, Some(2));
    assert_eq!(reports[0].graph_points, 3_150);
    let status = third.open_segment(SPACE, &ns).unwrap().unwrap();
    assert_eq!((status.unindexed, status.graph_points), (0, 3_150), "every late point is in the graph");
    let files: Vec<String> = std::fs::read_dir(&idx_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into())
        .collect();
    assert_eq!(files.len(), per_publish, "{files:?}");
    assert!(files.iter().all(|f| f.contains(".g2.")), "{files:?}");
}

#[test]
fn damaged_or_mismatched_index_files_are_rebuilt_never_trusted() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("d.redb");
    let idx_dir = IndexOptions::dir_beside(&db);
    let store = open(&db);
    let ns = Namespace::new("d").unwrap();
    let data = clustered(1_500, 16, 8, 21);
    load(&store, &ns, &data, |_| Vec::new());
    index(&store, Some(idx_dir.clone())).build(SPACE, &ns).unwrap();
    let graph_file = std::fs::read_dir(&idx_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with(".mnhnsw"))
        .unwrap();

    // One flipped byte.
    let mut bytes = std::fs::read(&graph_file).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0xFF;
    std::fs::write(&graph_file, &bytes).unwrap();
    let idx = index(&store, Some(idx_dir.clone()));
    let status = idx.open_segment(SPACE, &ns).unwrap().unwrap();
    assert!(status.load_note.as_deref().unwrap().contains("checksum"), "{status:?}");
    assert_eq!(status.graph_points, 0);
    // Still correct (exact), and maintenance rebuilds and republishes.
    let q = &data[3];
    let found = idx.search(&store.snapshot().unwrap(), &Query::new(SPACE, &ns, q, 1)).unwrap();
    assert_eq!(found.plan.path, SearchPath::Exact);
    // The query is a stored vector: it finds itself.
    assert!(found.hits[0].score > 0.9999, "{:?}", found.hits[0].score);
    let reports = idx.maintain().unwrap();
    assert_eq!(reports[0].generation, Some(2));

    // A missing file.
    for e in std::fs::read_dir(&idx_dir).unwrap() {
        let p = e.unwrap().path();
        if p.to_string_lossy().ends_with(".points") {
            std::fs::remove_file(p).unwrap();
        }
    }
    let status = index(&store, Some(idx_dir.clone())).open_segment(SPACE, &ns).unwrap().unwrap();
    assert!(status.load_note.is_some() && status.graph_points == 0, "{status:?}");

    // A manifest that disagrees with the database's dimension.
    index(&store, Some(idx_dir.clone())).build(SPACE, &ns).unwrap();
    let snap = store.snapshot().unwrap();
    let (key, bytes) = snap.aux_prefix("index/").unwrap().pop().unwrap();
    let mut m: Manifest = serde_json::from_slice(&bytes).unwrap();
    m.dimension = 7;
    store.write(vec![WriteOp::PutAux { key, value: Some(serde_json::to_vec(&m).unwrap()) }]).unwrap();
    let status = index(&store, Some(idx_dir)).open_segment(SPACE, &ns).unwrap().unwrap();
    assert!(status.load_note.as_deref().unwrap().contains("dimension 7"), "{status:?}");
}

#[test]
fn a_graph_file_of_format_1_is_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("f.redb");
    let idx_dir = IndexOptions::dir_beside(&db);
    let store = open(&db);
    let ns = Namespace::new("f").unwrap();
    let data = clustered(1_500, 16, 8, 31);
    load(&store, &ns, &data, |_| Vec::new());
    index(&store, Some(idx_dir.clone())).build(SPACE, &ns).unwrap();
    // The published graph file as format 1 would have begun, with a manifest that agrees
    // with it (length and checksum): only the format tells.
    let snap = store.snapshot().unwrap();
    let (key, bytes) = snap.aux_prefix("index/").unwrap().pop().unwrap();
    let mut m: Manifest = serde_json::from_slice(&bytes).unwrap();
    let file = m.files.iter_mut().find(|f| f.name.ends_with(".mnhnsw")).unwrap();
    let path = idx_dir.join(&file.name);
    let mut graph = std::fs::read(&path).unwrap();
    graph[..8].copy_from_slice(b"MNHNSW01");
    std::fs::write(&path, &graph).unwrap();
    file.blake3 = blake3::hash(&graph).to_hex().to_string();
    store.write(vec![WriteOp::PutAux { key, value: Some(serde_json::to_vec(&m).unwrap()) }]).unwrap();
    let idx = index(&store, Some(idx_dir));
    let status = idx.open_segment(SPACE, &ns).unwrap().unwrap();
    assert!(status.load_note.as_deref().unwrap().contains("format 1"), "{status:?}");
    assert_eq!(status.graph_points, 0);
    // Maintenance rebuilds it in the current format, and the graph answers.
    let reports = idx.maintain().unwrap();
    assert_eq!(reports[0].graph_points, 1_500);
    let found = idx.search(&store.snapshot().unwrap(), &Query::new(SPACE, &ns, &data[9], 1)).unwrap();
    assert!(found.hits[0].score > 0.9999, "{:?}", found.hits[0].score);
}
