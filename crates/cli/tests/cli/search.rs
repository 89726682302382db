//! `vector`, `index`, `search`, `reindex` and the embedders.

use super::*;

#[test]
fn vectors_put_search_explain_and_index() {
    let env = Env::new();
    env.init();
    let a = env.add("learning", r#"{"text":"bounded queues"}"#, &[]);
    let b = env.add("learning", r#"{"text":"retry with jitter"}"#, &["--tag", "net"]);
    env.run(&["vector", "put", &a, "--space", "toy", "--vector", "[1, 0, 0.1]"]).ok();
    let put = env.run(&["--json", "vector", "put", &b, "--space", "toy", "--vector", "[0, 1, 0.2]"]).json();
    assert_eq!(put["rev"], 0);

    let found = env
        .run(&[
            "--json",
            "vector",
            "search",
            "--space",
            "toy",
            "--vector",
            "[0.9, 0.1, 0]",
            "-k",
            "1",
            "--explain",
        ])
        .json();
    assert_eq!(found["hits"][0]["record"]["id"], a.as_str());
    assert_eq!(found["plan"]["path"], "exact");
    let tagged = env
        .run(&["--json", "vector", "search", "--space", "toy", "--vector", "[0.9, 0.1, 0]", "--tag", "net"])
        .json();
    assert_eq!(tagged["hits"].as_array().unwrap().len(), 1);
    assert_eq!(tagged["hits"][0]["record"]["id"], b.as_str());
    let text = env
        .run(&["vector", "search", "--space", "toy", "--vector", "[0.9, 0.1, 0]", "--explain"])
        .ok()
        .to_string();
    assert!(text.contains("answered by the exact path"), "{text}");

    // Time travel: retired now, still found as of before.
    let before = env.run(&["--json", "get", &a]).json()["recorded_at"].as_str().unwrap().to_string();
    env.run(&["retire", &a]).ok();
    let now =
        env.run(&["--json", "vector", "search", "--space", "toy", "--vector", "[1, 0, 0]", "-k", "1"]).json();
    assert_eq!(now["hits"][0]["record"]["id"], b.as_str());
    let then = env
        .run(&[
            "--json",
            "vector",
            "search",
            "--space",
            "toy",
            "--vector",
            "[1, 0, 0]",
            "-k",
            "1",
            "--as-of",
            &before,
        ])
        .json();
    assert_eq!(then["hits"][0]["record"]["id"], a.as_str());

    // Bad vectors: usage errors (exit 2), one line, nothing written.
    env.run(&["vector", "put", &b, "--space", "toy", "--vector", "[1, 2]"]).fails(2, "dimension mismatch");
    env.run(&["vector", "put", &b, "--space", "toy", "--vector", "[0, 0, 0]"]).fails(2, "zero vector");
    env.run(&["vector", "put", &b, "--space", "toy", "--vector", "[1, \"x\", 0]"])
        .fails(2, "component 1 is not a number");
    env.run(&["vector", "put", &b, "--space", "toy", "--vector", "[1, 0"]).fails(2, "not valid JSON");
    env.run(&["vector", "search", "--space", "toy", "--vector", "[1, 0]"])
        .fails(2, "dimension 2 does not match");
    env.run(&["vector", "search", "--space", "toy", "--vector", "[1,0,0]", "--mode", "fast"])
        .fails(2, "unknown mode");
    let unknown = "0190f3a2-0000-7000-8000-000000000000";
    env.run(&["vector", "put", unknown, "--space", "toy", "--vector", "[1, 0, 0]"]).fails(1, "no record");

    // Index status and build (two vectors: the graph is tiny but real), then check.
    env.run(&["index", "build", "--space", "toy"]).ok();
    let status = env.run(&["--json", "index", "status"]).json_lines();
    let toy = status.iter().find(|s| s["space"] == "toy").unwrap();
    assert_eq!(toy["generation"], 1);
    assert_eq!(toy["vectors"], 2);
    // Every record was also embedded with the default (offline) embedder as it was written.
    let hash = status.iter().find(|s| s["space"] == "mnemon-hash-v1-384").unwrap();
    assert_eq!(hash["vectors"], 2);
    assert!(env.db().with_file_name("m.redb.index").is_dir());
    let found = env
        .run(&[
            "--json",
            "vector",
            "search",
            "--space",
            "toy",
            "--vector",
            "[0, 1, 0]",
            "--mode",
            "graph",
            "--explain",
        ])
        .json();
    assert_eq!(found["hits"][0]["record"]["id"], b.as_str());
    assert_eq!(found["plan"]["path"], "graph");
    env.run(&["check"]).ok();
}

#[test]
fn search_hybrid_lexical_batch_and_reindex() {
    let env = Env::new();
    env.init();
    let a = env.add("learning", r#"{"text":"Retry with exponential backoff and jitter"}"#, &[]);
    let b = env.add(
        "gotcha",
        r#"{"title":"parseHTTPResponse drops chunked bodies","problem":"chunked","solution":"buffer"}"#,
        &["--tag", "http"],
    );
    env.add("decision", r#"{"title":"Use bounded queues","rationale":"avoid memory blowups"}"#, &[]);
    let hits = env.run(&["--json", "search", "backoff retry"]).json_lines();
    assert_eq!(hits[0]["id"], a.as_str());
    assert_eq!(hits[0]["lexical_rank"], 1);
    let lex = env.run(&["--json", "search", "response", "--mode", "lexical"]).json_lines();
    assert_eq!(lex.len(), 1);
    assert_eq!(lex[0]["id"], b.as_str());
    let tagged = env.run(&["--json", "search", "chunked backoff", "--tag", "http"]).json_lines();
    assert!(tagged.iter().all(|h| h["id"] == b.as_str()));
    let text = env.run(&["search", "bounded queues", "--kind", "decision"]).ok().to_string();
    assert!(text.contains("Use bounded queues"), "{text}");
    env.run(&["search", "x", "--mode", "fuzzy"]).fails(2, "unknown search mode");
    // Another namespace is searched only when asked for.
    env.run(&["--ns", "other", "add", "learning", "--data", r#"{"text":"backoff in the other project"}"#])
        .ok();
    let here = env.run(&["--json", "search", "backoff"]).json_lines();
    assert!(here.iter().all(|h| h["namespace"] == "default"));
    let both = env.run(&["--json", "search", "backoff", "--in", "other"]).json_lines();
    assert!(
        both.iter().any(|h| h["namespace"] == "other") && both.iter().any(|h| h["namespace"] == "default")
    );
    env.run(&["search", "backoff", "--in", " bad"]).fails(2, "invalid namespace");
    env.run(&["search"]).fails(2, "give a query");

    let batch = env.dir.path().join("q.jsonl");
    std::fs::write(&batch, "{\"query\":\"backoff\",\"limit\":1}\nnot json\n{\"query\":\"queues\",\"kinds\":[\"nope\"]}\n{\"query\":\"queues\",\"mode\":\"lexical\"}\n").unwrap();
    let out = env.run(&["--json", "search", "--batch", batch.to_str().unwrap()]).json_lines();
    assert_eq!(out.len(), 4, "one line per query, in order");
    assert_eq!(out[0]["results"].as_array().unwrap().len(), 1);
    assert_eq!(out[0]["results"][0]["id"], a.as_str());
    assert!(out[1]["error"].is_string() && out[2]["error"].as_str().unwrap().contains("unknown kind"));
    assert_eq!(out[3]["results"][0]["kind"], "decision");

    let r = env.run(&["--json", "reindex"]).json();
    assert_eq!(r["embedded"], 0, "everything was embedded on write: {r}");
    assert_eq!(r["embedder"], "mnemon-hash-v1-384");
}

/// Without the local-minilm feature, asking for MiniLM is a clear usage error.
#[cfg(not(feature = "local-minilm"))]
#[test]
fn minilm_needs_the_feature() {
    let env = Env::new();
    env.run(&["--embedder", "minilm", "init"]).fails(2, "local-minilm");
    env.run(&["--embedder", "bert", "init"]).fails(2, "unknown embedder");
}

/// `init` picks the local model when it is installed (`local` names it too), and otherwise
/// the hashing embedder with a note saying how to install the model.
#[cfg(feature = "local-minilm")]
#[test]
fn init_picks_the_local_model_when_installed() {
    let bare = Env::new();
    let r = bare.run(&["--json", "init"]);
    assert_eq!(r.json()["embedder"], "mnemon-hash-v1-384");
    assert!(r.stderr.contains("mnemon model fetch"), "{}", r.stderr);
    bare.run(&["--embedder", "local", "search", "x"]).fails(1, "mnemon model fetch");
    let env = Env::new();
    env.install_model();
    let r = env.run(&["--json", "init"]);
    assert_eq!(r.json()["embedder"], "all-MiniLM-L6-v2");
    assert!(r.stderr.is_empty(), "{}", r.stderr);
    // Remembered: later commands use it without being told, and `local` is the same model.
    env.add("learning", r#"{"text":"The deploy failed because the database migration timed out"}"#, &[]);
    env.run(&["--embedder", "local", "search", "deploy"]).ok();
    let stats = env.run(&["--json", "stats"]).json();
    assert!(stats.to_string().contains("all-MiniLM-L6-v2"), "{stats}");
}

/// The local MiniLM end to end: chosen at init, remembered by the database, used by search,
/// refused when another embedder is asked for, switched with reindex.
#[cfg(feature = "local-minilm")]
#[test]
fn minilm_is_remembered_and_searches_by_meaning() {
    let env = Env::new();
    env.install_model();
    env.run(&["--embedder", "minilm", "init"]).ok();
    let a =
        env.add("learning", r#"{"text":"The deploy failed because the database migration timed out"}"#, &[]);
    env.add("learning", r#"{"text":"My cat likes to sleep in the sun"}"#, &[]);
    // No shared words: only the meaning connects the query to the record, at a cosine
    // (about 0.36) below what a result needs on its own by default, so a floor of its own is
    // asked for; the unrelated record scores 0.
    let query = "schema change too slow broke release";
    let hits = env.run(&["--json", "search", query, "--mode", "vector", "--min-score", "0.05"]).json_lines();
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(hits[0]["id"], a.as_str(), "{hits:?}");
    assert!(env.run(&["--json", "search", query]).json_lines().is_empty());
    let all = env.run(&["--json", "search", query, "--mode", "vector", "--min-score", "0"]).json_lines();
    assert_eq!((all.len(), all[0]["id"].as_str()), (2, Some(a.as_str())), "{all:?}");
    // A query that matches nothing returns nothing.
    assert!(env.run(&["--json", "search", "kubernetes"]).json_lines().is_empty());
    let stats = env.run(&["--json", "stats"]).json();
    assert!(stats.to_string().contains("all-MiniLM-L6-v2"), "{stats}");
    env.run(&["--embedder", "hash", "search", "x"]).fails(2, "all-MiniLM-L6-v2");
    let r = env.run(&["--json", "--embedder", "hash", "reindex"]).json();
    assert_eq!((r["embedder"].as_str(), r["embedded"].as_u64()), (Some("mnemon-hash-v1-384"), Some(2)));
    env.run(&["--embedder", "minilm:/nonexistent/dir", "init"]).fails(1, "mnemon model fetch");
}
