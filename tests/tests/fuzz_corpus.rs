//! The fuzz targets' corpora and the inputs that once failed them (`fuzz/corpus/TARGET`,
//! `fuzz/regressions/TARGET`, kept in the repository) run through the same entry points on
//! every `cargo test`: each must pass (no panic, round trips intact) without cargo-fuzz.
#![allow(missing_docs, clippy::unwrap_used, clippy::panic, reason = "tests")]

use std::path::Path;

type Target = fn(&[u8]) -> Result<(), String>;

const TARGETS: [(&str, Target); 14] = [
    ("stored_record", mnemon::fuzzing::stored_record),
    ("segment_block", mnemon::fuzzing::segment_block),
    ("lexical_rows", mnemon::fuzzing::lexical_rows),
    ("vector_value", mnemon::fuzzing::vector_value),
    ("commit_entry", mnemon::fuzzing::commit_entry),
    ("time_text", mnemon::fuzzing::time_text),
    ("import_line", mnemon::fuzzing::import_line),
    ("record_json", mnemon::fuzzing::record_json),
    ("markdown", mnemon::fuzzing::markdown),
    ("index_files", mnemon::fuzzing::index_files),
    ("crewly", mnemon::fuzzing::crewly),
    ("assistant", mnemon::fuzzing::assistant),
    ("mcp_jsonl", mnemon::fuzzing::mcp_jsonl),
    ("operation_call", mnemon::fuzzing::operation_call),
];

#[test]
fn every_kept_input_passes_its_target() {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz");
    let mut ran = 0;
    for (name, target) in TARGETS {
        assert!(fuzz.join("fuzz_targets").join(format!("{name}.rs")).is_file(), "no target {name}");
        for dir in ["corpus", "regressions"] {
            let Ok(files) = std::fs::read_dir(fuzz.join(dir).join(name)) else { continue };
            for f in files {
                let path = f.unwrap().path();
                let data = std::fs::read(&path).unwrap();
                if let Err(e) = target(&data) {
                    panic!("{}: {e}", path.display());
                }
                ran += 1;
            }
        }
    }
    assert!(ran > 0, "no kept inputs under {}", fuzz.display());
    remove_scratch();
}

/// The targets that need a database share one in the temporary directory, named by the
/// process (see `mnemon::fuzzing`); the open handle keeps working once it is unlinked.
fn remove_scratch() {
    let _ =
        std::fs::remove_file(std::env::temp_dir().join(format!("mnemon-fuzz-{}.redb", std::process::id())));
}

/// Inputs built by hand for each target: well-formed values (which must round-trip) and
/// their damaged forms.
#[test]
fn hand_made_inputs_pass_their_targets() {
    let good_record = br#"{"kind":"decision","title":"Use redb","valid_from":"2024-01-01","tags":["db"]}"#;
    // A points file claiming more slots than a usize can count bytes for (its length check
    // overflowed).
    let mut points = b"MNPOINT1".to_vec();
    points.extend_from_slice(&0u64.to_le_bytes());
    points.extend_from_slice(&u64::MAX.to_le_bytes());
    let manifest = br#"{"version":1,"generation":2,"basename":"b","engine":"mnemon","space":"s","namespace":"n","dimension":3,"m":16,"ef_construction":200,"slots":0,"graph_points":0,"covered_seq":0,"files":[]}"#;
    let crewly: &[u8] = b"[{\"id\":\"p1\",\"name\":\"Retry\",\"description\":\"retry with backoff\"}]\xff[{\"title\":\"Use redb\",\"rationale\":\"embedded\"}]\xff{\"title\":\"one\"}\xff[1,2]\xff[]\xff[{\"key\":\"editor\",\"value\":\"vim\"}]\xff{}\xff# Learnings\n\n- a learning\n";
    let assistant: &[u8] = b"[{\"id\":\"d1\",\"title\":\"Use redb\",\"supersededBy\":\"d2\"},{\"id\":\"d2\",\"title\":\"Use redb 4\"}]\xff[{\"id\":\"t1\",\"title\":\"Ship\",\"dependsOn\":[\"t1\",\"t9\"]}]\xff[{\"name\":\"Ada\",\"type\":\"person\"}]\xff[{\"id\":\"c1\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}]";
    let graph: &[u8] = b"{\"type\":\"entity\",\"name\":\"Ada\",\"entityType\":\"person\",\"observations\":[\"wrote notes\",\"wrote notes\"]}\n{\"type\":\"relation\",\"from\":\"Ada\",\"to\":\"Babbage\",\"relationType\":\"knew\"}\n{\"type\":\"entity\",\"name\":\"Babbage\",\"entityType\":\"person\",\"observations\":[]}\n";
    let cases: [(Target, &[&[u8]]); 10] = [
        (mnemon::fuzzing::crewly, &[crewly, b"", b"\xff\xff\xff", b"{\"id\":[]}"]),
        (mnemon::fuzzing::assistant, &[assistant, b"", b"[{\"id\":\"x\",\"supersededBy\":\"x\"}]", b"[null]"]),
        (mnemon::fuzzing::mcp_jsonl, &[graph, b"", b"{\"type\":\"relation\"}\n", b"not json\n"]),
        (mnemon::fuzzing::operation_call, &[
            b"\x00{\"kind\":\"learning\",\"data\":{\"text\":\"x\"}}",
            b"\x01{\"query\":\"x\",\"limit\":18446744073709551615}",
            b"\x02{\"budget\":0}",
            b"\x03{\"id\":\"nope\"}",
            b"\x04{\"namespace\":\"agent:other\"}",
            b"\x05{}",
            b"\x09{\"id\":\"00000000-0000-0000-0000-000000000000\",\"erase\":true}",
        ]),
        (mnemon::fuzzing::index_files, &[&points, manifest, b"{}", b"MNPOINT1"]),
        (mnemon::fuzzing::time_text, &[b"2024-05-07", b"2024-05-07T10:00:00+02:00", b"9999-99-99", b""]),
        (mnemon::fuzzing::import_line, &[good_record, b"{", b"[]", b"{\"kind\":\"nope\"}"]),
        (mnemon::fuzzing::record_json, &[good_record, b"{\"text\":\"x\",\"data\":{}}", b"null"]),
        (mnemon::fuzzing::markdown, &[
            b"# Learnings\n\n## 2024-05-07T00:00:00Z | importance:4 | ttl:30 | id:a1\nline one\n\\## not a heading\n",
            b"## 2024-05-07 | importance:9 | id:x\ntext",
            b"## \n",
        ]),
        (mnemon::fuzzing::stored_record, &[b"", b"\x01", b"\x02\x01\x00", &[1, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]]),
    ];
    for (target, inputs) in cases {
        for input in inputs {
            target(input).unwrap();
        }
    }
    remove_scratch();
}
