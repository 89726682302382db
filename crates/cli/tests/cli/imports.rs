//! Imports of other tools' formats and `mnemon mcp` speaking the reference contract.

use super::*;

#[test]
fn import_formats_mcp_jsonl_and_markdown() {
    let env = Env::new();
    env.init();
    let kg = env.dir.path().join("memory.jsonl");
    std::fs::write(
        &kg,
        "{\"type\":\"entity\",\"name\":\"Alice\",\"entityType\":\"person\",\"observations\":[\"likes Rust\",\"works on mnemon\"]}\n\
         not json\n\
         {\"type\":\"relation\",\"from\":\"Alice\",\"to\":\"mnemon\",\"relationType\":\"works_on\"}\n\
         {\"type\":\"entity\",\"observations\":[]}\n",
    )
    .unwrap();
    let r = env.run(&["--json", "import", "--format", "mcp-jsonl", kg.to_str().unwrap()]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("memory.jsonl:2: invalid JSON") && r.stderr.contains("memory.jsonl:4:"),
        "{}",
        r.stderr
    );
    let sum: Value = serde_json::from_str(r.stdout.trim()).unwrap();
    assert_eq!(sum["imported"], 4, "an entity, two observations, a relation: {sum}");
    // Again: nothing new.
    let again = env.run(&["--json", "import", "--format", "mcp-jsonl", kg.to_str().unwrap()]);
    let sum: Value = serde_json::from_str(again.stdout.trim()).unwrap();
    assert_eq!((sum["imported"].as_u64(), sum["skipped"].as_u64()), (Some(0), Some(2)), "{sum}");
    assert_eq!(env.run(&["--json", "list", "observation"]).json_lines().len(), 2);

    let dir = env.dir.path().join("mem");
    std::fs::create_dir_all(dir.join("global")).unwrap();
    std::fs::create_dir_all(dir.join("projects/7e2aaa07-yume")).unwrap();
    std::fs::write(dir.join("global/preferences.md"), "# Preferences\n\n## 2026-01-28T10:00:00Z | importance:5 | ttl:permanent | id:p1\nPrefers strict mode\n").unwrap();
    std::fs::write(dir.join("projects/7e2aaa07-yume/brief.md"), "Tauri 2 with React 19.\n").unwrap();
    std::fs::write(
        dir.join("projects/7e2aaa07-yume/learnings.md"),
        "# Learnings\n\n## 2026-01-28T10:00:00Z | importance:5 | ttl:permanent | id:abc\nUses Zustand\n",
    )
    .unwrap();
    let sum = env.run(&["--json", "import", "--format", "markdown", dir.to_str().unwrap()]).json();
    assert_eq!(sum["imported"], 3, "{sum}");
    let sum = env.run(&["--json", "import", "--format", "markdown", dir.to_str().unwrap()]).json();
    assert_eq!((sum["imported"].as_u64(), sum["skipped"].as_u64()), (Some(0), Some(3)), "{sum}");
    let shown = env.run(&["memory", "show", "--scope", "project-id:7e2aaa07-yume"]).ok().to_string();
    assert!(shown.contains("Tauri 2") && shown.contains("Uses Zustand"), "{shown}");
    env.run(&["import", "--format", "yaml", kg.to_str().unwrap()]).fails(2, "unknown import format");
}

#[test]
fn import_assistant_json_files() {
    let env = Env::new();
    env.init();
    let dir = env.dir.path().join("assistant");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("decisions.json"), r#"[
      {"id":"1714000000-abc","type":"decision","title":"Use SQLite","description":"","rationale":"simple","context":"","status":"superseded","tags":["db"],"relatedTasks":["1714000001-def"],"supersededBy":"1714000002-ghi","createdAt":"2024-04-25T00:00:00Z","updatedAt":"2024-04-26T00:00:00Z","validFrom":"2024-04-25T00:00:00Z","validUntil":"2024-04-26T00:00:00Z"},
      {"id":"1714000002-ghi","type":"decision","title":"Use redb","rationale":"embedded","status":"accepted","tags":["db"],"relatedDecisions":["1714000000-abc"],"validFrom":"2024-04-26T00:00:00Z"},
      {"type":"decision","title":"no id"}
    ]"#).unwrap();
    std::fs::write(dir.join("tasks.json"), r#"[
      {"id":"1714000001-def","type":"task","title":"Port the store","status":"in_progress","priority":"high","dependencies":[],"relatedDecisions":["1714000000-abc"],"tags":[],"statusHistory":[{"from":"backlog","to":"in_progress","timestamp":"2024-04-25T10:00:00Z"}],"validFrom":"2024-04-25T00:00:00Z"},
      {"id":"1714000003-jkl","type":"task","title":"Bad status","status":"someday"},
      {"id":"1714000004-mno","title":"No type: the file says task","status":"backlog"}
    ]"#).unwrap();
    std::fs::write(dir.join("entities.json"), r#"[{"id":"e1","type":"entity","entityType":"technology","name":"redb","description":"a store","properties":{"version":"4"},"mentions":[{"context":"we use redb","timestamp":"2024-04-26T00:00:00Z","source":"conversation"}],"tags":[]}]"#).unwrap();
    std::fs::write(dir.join("conversations.json"), r#"[{"id":"c1","startedAt":"2024-04-26T00:00:00Z","endedAt":"2024-04-26T01:00:00Z","summary":"chose redb","messages":[{"role":"user","content":"redb?","timestamp":"2024-04-26T00:00:01Z"},{"role":"assistant","content":"yes","timestamp":"2024-04-26T00:00:02Z"}],"extractedDecisions":["1714000002-ghi"]}]"#).unwrap();
    let r = env.run(&["--json", "import", "--format", "assistant", dir.to_str().unwrap()]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("decisions.json:3: item 3: no id") && r.stderr.contains("tasks.json:2:"),
        "{}",
        r.stderr
    );
    let sum: Value = serde_json::from_str(r.stdout.trim()).unwrap();
    assert_eq!(sum["imported"], 6, "{sum}");
    // References carried over to the new ids; time travel sees the old decision.
    let tasks = env.run(&["--json", "task", "list"]).json_lines();
    assert_eq!(tasks[0]["body"]["status_history"][0]["to"], "in_progress");
    let old = env.run(&["--json", "list", "decision", "--as-of", "2024-04-25T12:00:00Z"]).json_lines();
    assert_eq!(old[0]["body"]["title"], "Use SQLite");
    assert_eq!(tasks[0]["body"]["related_decisions"][0], old[0]["id"]);
    let now = env.run(&["--json", "list", "decision"]).json_lines();
    assert_eq!(now.len(), 1);
    assert_eq!(now[0]["body"]["related_decisions"][0], old[0]["id"]);
    // supersededBy is a supersession: the chain leads from the old decision to the new one.
    let chain = env.run(&["--json", "chain", now[0]["id"].as_str().unwrap()]).json_lines();
    let titles: Vec<&str> = chain.iter().map(|r| r["body"]["title"].as_str().unwrap()).collect();
    assert_eq!(titles, ["Use SQLite", "Use redb"], "{chain:?}");
    assert!(env.run(&["task", "list"]).ok().contains("No type: the file says task"));
    let conv = env.run(&["--json", "conversation", "recent"]).json_lines();
    let shown = env.run(&["--json", "conversation", "show", conv[0]["id"].as_str().unwrap()]).json_lines();
    assert_eq!(shown.len(), 3);
    // Again: nothing new.
    let again = env.run(&["--json", "import", "--format", "assistant", dir.to_str().unwrap()]);
    let sum: Value = serde_json::from_str(again.stdout.trim()).unwrap();
    assert_eq!((sum["imported"].as_u64(), sum["skipped"].as_u64()), (Some(0), Some(6)), "{sum}");
}

#[test]
fn import_crewly_knowledge_and_agent_files() {
    let env = Env::new();
    env.init();
    let k = env.dir.path().join("knowledge");
    std::fs::create_dir_all(&k).unwrap();
    std::fs::write(k.join("patterns.json"), r#"[{"id":"p1","title":"Errors as values","description":"Return Result","category":"rust","example":"fn f() -> Result<()>","discoveredBy":"dev-1","createdAt":"2025-01-01T00:00:00Z"},{"id":"p2","title":"","description":"no title"}]"#).unwrap();
    std::fs::write(k.join("decisions.json"), r#"[{"id":"d1","title":"Use redb","decision":"redb 4","rationale":"embedded","decidedAt":"2025-01-02T00:00:00Z"}]"#).unwrap();
    std::fs::write(k.join("gotchas.json"), r#"[{"id":"g1","title":"One writer","problem":"deadlock","solution":"group commit","severity":"high"}]"#).unwrap();
    std::fs::write(
        k.join("relationships.json"),
        r#"[{"id":"r1","from":"api","to":"storage","relationshipType":"depends_on"}]"#,
    )
    .unwrap();
    std::fs::write(k.join("learnings.md"), "# Project Learnings\n\n\n## 2025-01-03\n### [dev-2] 10:00:00\nIndex files live beside the db\n\n**Type:** note\n---\n\n## 2025-01-04\n### [dev-1] 11:30:00\nredb commits fsync\n---\n").unwrap();
    let r = env.run(&["--ns", "project:x", "--json", "import", "--format", "crewly", k.to_str().unwrap()]);
    assert_eq!(r.code, 1, "one pattern has no title: {}", r.stderr);
    assert!(r.stderr.contains("patterns.json:2:"), "{}", r.stderr);
    let sum: Value = serde_json::from_str(r.stdout.trim()).unwrap();
    assert_eq!(sum["imported"], 6, "{sum}");
    let md = env.run(&["--ns", "project:x", "project", "learnings"]).ok().to_string();
    assert!(
        md.contains("## 2025-01-03\n### [dev-2] 10:00:00\nIndex files live beside the db")
            && md.contains("**Type:** note"),
        "{md}"
    );
    let ctx = env.run(&["--ns", "project:x", "project", "context"]).ok().to_string();
    assert!(
        ctx.contains("**One writer**") && ctx.contains("api depends_on storage") && ctx.contains("Use redb"),
        "{ctx}"
    );
    let again =
        env.run(&["--ns", "project:x", "--json", "import", "--format", "crewly", k.to_str().unwrap()]);
    let sum: Value = serde_json::from_str(again.stdout.trim()).unwrap();
    assert_eq!((sum["imported"].as_u64(), sum["skipped"].as_u64()), (Some(0), Some(6)), "{sum}");

    let a = env.dir.path().join("agent");
    std::fs::create_dir_all(&a).unwrap();
    std::fs::write(a.join("role-knowledge.json"), r#"[{"id":"k1","category":"testing","content":"Run the tests first","confidence":0.8,"createdAt":"2025-01-01T00:00:00Z"}]"#).unwrap();
    std::fs::write(a.join("preferences.json"), r#"{"indent": 4, "verbosity": "terse"}"#).unwrap();
    std::fs::write(a.join("performance.json"), r#"{"taskCompletions":[{"taskId":"T-1","iterations":2,"qualityGatePassed":true}],"errorPatterns":[{"pattern":"E0502","resolution":"clone","occurrences":3}]}"#).unwrap();
    let sum = env
        .run(&["--ns", "agent:dev-1", "--json", "import", "--format", "crewly", a.to_str().unwrap()])
        .json();
    assert_eq!(sum["imported"], 5, "{sum}");
    let ctx = env.run(&["--ns", "agent:dev-1", "--json", "agent", "context"]).json();
    let text = ctx["context"].as_str().unwrap();
    assert!(
        text.contains("[testing] Run the tests first")
            && text.contains("E0502 → clone")
            && text.contains("indent: 4"),
        "{text}"
    );
    let perf = env.run(&["--ns", "agent:dev-1", "--json", "agent", "performance"]).json();
    assert_eq!(perf["common_errors"][0][2], 3);
}

/// `tests/data/reference-memory.jsonl` was written by the reference server's own saveGraph
/// code (`reference-memory.gen.mjs` beside it, run with node): import then export gives it
/// back byte for byte.
#[test]
fn mcp_jsonl_round_trip_is_byte_identical() {
    let env = Env::new();
    env.init();
    let reference = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/reference-memory.jsonl");
    let sum = env
        .run(&["--ns", "kg", "--json", "import", "--format", "mcp-jsonl", reference.to_str().unwrap()])
        .json();
    assert_eq!(sum["imported"], 3 + 7 + 2, "{sum}");
    let out = env.run(&["--ns", "kg", "export", "--format", "mcp-jsonl"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout, std::fs::read_to_string(&reference).unwrap());
    env.run(&["export", "--format", "mcp-jsonl", "--all"]).fails(2, "one namespace");
    env.run(&["export", "--format", "csv"]).fails(2, "unknown export format");
    // An empty graph is an empty file, as the reference writes it.
    assert_eq!(env.run(&["--ns", "empty", "export", "--format", "mcp-jsonl"]).stdout, "");
}

/// `mnemon mcp` as a real child process speaking JSON-RPC on stdio (a raw client; the official
/// SDK drives it in mcp_sdk.rs): the reference's tool list, results, errors, the resource,
/// and a clean exit on EOF with the writes durable.
#[test]
fn mcp_server_speaks_the_reference_contract() {
    let env = Env::new();
    env.init();
    let msgs = [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"create_entities","arguments":{"entities":[{"name":"Alice","entityType":"person","observations":["likes Rust"]}]}}}"#,
    ];
    let out = env.run_in(&["--ns", "kg", "mcp"], Some(&(msgs.join("\n") + "\n")));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines: Vec<Value> =
        out.stdout.lines().map(|l| serde_json::from_str(l).expect("stdout is only JSON-RPC")).collect();
    let by_id = |id: u64| {
        lines.iter().find(|l| l["id"] == id).unwrap_or_else(|| panic!("no reply {id}: {lines:?}")).clone()
    };
    assert_eq!(by_id(1)["result"]["serverInfo"]["name"], "mnemon");
    let tools = by_id(2)["result"]["tools"].as_array().unwrap().clone();
    let reference: Value =
        serde_json::from_str(include_str!("../../../server/src/mcp/reference-tools.json")).unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names[..9],
        [
            "create_entities",
            "create_relations",
            "add_observations",
            "delete_entities",
            "delete_observations",
            "delete_relations",
            "read_graph",
            "search_nodes",
            "open_nodes"
        ]
    );
    assert_eq!(
        names[9..],
        [
            "remember",
            "recall",
            "context",
            "get",
            "list",
            "supersede",
            "history",
            "chain",
            "task",
            "forget",
            "memory_add",
            "memory_show",
            "memory_context",
            "episode_store",
            "episode_query",
            "knowledge_learn",
            "knowledge_reinforce",
            "knowledge_list",
            "project_relate",
            "project_knowledge"
        ]
    );
    for (ours, theirs) in tools.iter().zip(reference.as_array().unwrap()) {
        assert_eq!(ours["inputSchema"], theirs["inputSchema"]);
        assert_eq!(ours["outputSchema"], theirs["outputSchema"]);
        assert_eq!(ours["annotations"], theirs["annotations"]);
    }
    let created = by_id(3)["result"].clone();
    assert_eq!(created["structuredContent"]["entities"][0]["name"], "Alice");
    assert!(
        created["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("[\n  {\n    \"name\": \"Alice\",\n    \"entityType\""),
        "{created}"
    );
    // A new process sees the write (durable at EOF); errors are results and the server lives on.
    let msgs = [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add_observations","arguments":{"observations":[{"entityName":"Nobody","contents":["x"]}]}}}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"search_nodes","arguments":{"query":42}}}"#,
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"no_such_tool","arguments":{}}}"#,
        r#"{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"memory://knowledge-graph"}}"#,
    ];
    let out = env.run_in(&["--ns", "kg", "mcp"], Some(&(msgs.join("\n") + "\n")));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines: Vec<Value> = out.stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let by_id = |id: u64| lines.iter().find(|l| l["id"] == id).unwrap().clone();
    assert_eq!(by_id(2)["result"]["isError"], true);
    assert!(
        by_id(2)["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Entity with name Nobody not found")
    );
    assert_eq!(by_id(3)["result"]["isError"], true);
    assert!(
        by_id(4)["result"]["content"][0]["text"].as_str().unwrap().contains("Tool no_such_tool not found")
    );
    let graph: Value =
        serde_json::from_str(by_id(5)["result"]["contents"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(graph["entities"][0]["observations"][0], "likes Rust");
}

/// Bad requests to `mnemon mcp` get errors and the server keeps serving with its data intact:
/// a request before initialize, a line that is not JSON, wrongly typed arguments, NUL bytes
/// and a 2 MB string.
#[test]
fn mcp_server_survives_bad_requests() {
    let env = Env::new();
    env.init();
    let big = "x".repeat(2_000_000);
    let create = serde_json::json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"create_entities",
        "arguments":{"entities":[{"name":"Nul\u{0}Name","entityType":"p","observations":["a\u{0}b", big]}]}}});
    let msgs = [
        r#"{"jsonrpc":"2.0","id":0,"method":"tools/list"}"#.to_string(),
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#.to_string(),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_string(),
        create.to_string(),
        "this is not json".to_string(),
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"create_entities","arguments":{"entities":"nope"}}}"#.to_string(),
    ];
    let out = env.run_in(&["--ns", "kg", "mcp"], Some(&(msgs.join("\n") + "\n")));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines: Vec<Value> =
        out.stdout.lines().map(|l| serde_json::from_str(l).expect("stdout is only JSON-RPC")).collect();
    let by_id =
        |id: u64| lines.iter().find(|l| l["id"] == id).unwrap_or_else(|| panic!("no reply {id}")).clone();
    assert!(by_id(0)["error"].is_object(), "a request before initialize is refused");
    assert_eq!(by_id(2)["result"]["isError"], false);
    assert_eq!(by_id(3)["result"]["isError"], true);
    // The data is intact: the next process reads it back, NUL bytes and all.
    let graph = env.run(&["--ns", "kg", "export", "--format", "mcp-jsonl"]).stdout;
    let entity: Value = serde_json::from_str(graph.lines().next().unwrap()).unwrap();
    assert_eq!(entity["name"], "Nul\u{0}Name");
    assert_eq!(entity["observations"][1].as_str().unwrap().len(), 2_000_000);
}

/// An import's lines are bounded: a line longer than any record could be is skipped unread
/// (not held in memory), a record over the size a record may have is refused like any write
/// of it, and a line that is not UTF-8 is a line error; with `--partial` the good lines go in.
#[test]
fn import_lines_are_bounded_and_checked() {
    let env = Env::new();
    env.init();
    let file = env.dir.path().join("big.jsonl");
    let mut bytes = b"{\"kind\":\"learning\",\"text\":\"a small note\"}\n".to_vec();
    bytes.extend_from_slice(
        format!("{{\"kind\":\"learning\",\"text\":\"{}\"}}\n", "x".repeat(7 << 20)).as_bytes(),
    );
    bytes.extend_from_slice(
        format!("{{\"kind\":\"learning\",\"text\":\"{}\"}}\n", "y".repeat(5 << 20)).as_bytes(),
    );
    bytes.extend_from_slice(b"{\"kind\":\"learning\",\"text\":\"\xff\xfe\"}\n");
    bytes.extend_from_slice(b"{\"kind\":\"learning\",\"text\":\"another small note\"}");
    std::fs::write(&file, &bytes).unwrap();
    let r = env.run(&["import", file.to_str().unwrap()]);
    // Invalid input, each line named; nothing imported.
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("big.jsonl:2: the line is over"), "{}", r.stderr);
    assert!(!env.run(&["list"]).ok().contains("small note"), "nothing goes in without --partial");
    let r = env.run(&["--json", "import", "--partial", file.to_str().unwrap()]);
    let out = format!("{}{}", r.stdout, r.stderr);
    assert!(out.contains("more than the 4194304 a record may hold"), "{out}");
    assert!(out.contains("not UTF-8"), "{out}");
    let listed = env.run(&["list"]).ok().to_string();
    assert!(listed.contains("a small note") && listed.contains("another small note"), "{listed}");
    assert!(!listed.contains("xxxx") && !listed.contains("yyyy"), "{listed}");
}
