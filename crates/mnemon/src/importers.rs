//! Importers of other memory formats: the reference knowledge-graph server's `memory.jsonl`
//! (`mcp-jsonl`) and the scoped markdown files (`markdown`, a file or a directory laid out as
//! `global/*.md` and `projects/<id>/*.md`). Each line or entry is written on its own, so a
//! bad one is reported (file and line) and the rest imported; importing the same file again
//! creates no duplicates.

use std::path::Path;

use mnemon_storage::body::{Entity, Observation, Relation};
use mnemon_storage::{AsOf, Body, NewRecord, OnConflict, Outcome};
use serde_json::Value;

use crate::db::{Db, Ns};
use crate::error::{LineError, Result, invalid};
use crate::scoped::{Scope, Section};

/// What an import did.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct ImportSummary {
    /// Records written.
    pub imported: usize,
    /// Lines or entries already present (nothing written).
    pub skipped: usize,
    /// Lines or entries refused, with file and line.
    #[serde(serialize_with = "as_strings", deserialize_with = "from_strings")]
    #[schemars(with = "Vec<String>")]
    pub errors: Vec<LineError>,
}

pub(crate) fn as_strings<S: serde::Serializer>(
    errors: &[LineError],
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    s.collect_seq(errors.iter().map(ToString::to_string))
}

/// Errors back from their text (`SOURCE:LINE: REASON`, as a server answered them); a text of
/// another form is kept whole as the reason.
pub(crate) fn from_strings<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> std::result::Result<Vec<LineError>, D::Error> {
    let texts = <Vec<String> as serde::Deserialize>::deserialize(d)?;
    Ok(texts.into_iter().map(|t| parse_line_error(&t)).collect())
}

fn parse_line_error(text: &str) -> LineError {
    let parsed = text.match_indices(':').find_map(|(i, _)| {
        let rest = &text[i + 1..];
        let digits = rest.find(": ").filter(|&n| n > 0 && rest[..n].bytes().all(|b| b.is_ascii_digit()))?;
        let line = rest[..digits].parse().ok()?;
        Some(LineError { source: text[..i].to_string(), line, reason: rest[digits + 2..].to_string() })
    });
    parsed.unwrap_or_else(|| LineError { source: String::new(), line: 0, reason: text.to_string() })
}

/// Import the knowledge-graph JSONL format into `ns`: entity lines (`{"type":"entity","name",
/// "entityType","observations":[...]}`) become entities (found by name) and one observation
/// record per observation; relation lines (`{"type":"relation","from","to","relationType"}`)
/// become relations. Observations and relations already present are skipped.
pub fn import_mcp_jsonl(ns: &Ns, text: &str, source: &str) -> Result<ImportSummary> {
    let mut sum = ImportSummary::default();
    let mut known_obs: std::collections::BTreeSet<(String, String)> = ns
        .list_of::<Observation>(AsOf::now())?
        .into_iter()
        .filter_map(|r| match r.body {
            Body::Observation(o) => Some((mnemon_storage::body::normalise_key(&o.entity), o.content)),
            _ => None,
        })
        .collect();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let err = |reason: String| LineError { source: source.to_string(), line: i as u64 + 1, reason };
        let v: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => {
                sum.errors.push(err(format!("invalid JSON: {e}")));
                continue;
            }
        };
        let r = match v["type"].as_str() {
            Some("entity") => import_entity(ns, &v, &mut known_obs, &mut sum),
            Some("relation") => import_relation(ns, &v, &mut sum),
            _ => Err(invalid("expected \"type\": \"entity\" or \"relation\"")),
        };
        if let Err(e) = r {
            sum.errors.push(err(e.to_string()));
        }
    }
    Ok(sum)
}

fn import_entity(
    ns: &Ns,
    v: &Value,
    known: &mut std::collections::BTreeSet<(String, String)>,
    sum: &mut ImportSummary,
) -> Result<()> {
    let name = v["name"]
        .as_str()
        .filter(|n| !n.trim().is_empty())
        .ok_or_else(|| invalid("an entity needs a name"))?;
    let etype = v["entityType"].as_str().unwrap_or("other");
    let obs: Vec<&str> = match &v["observations"] {
        Value::Null => Vec::new(),
        Value::Array(a) => a
            .iter()
            .map(|o| o.as_str().ok_or_else(|| invalid("observations must be strings")))
            .collect::<Result<_>>()?,
        _ => return Err(invalid("observations must be a list of strings")),
    };
    let before = sum.imported;
    let (_, created) = ns.entities().find_or_create(Entity {
        name: name.to_string(),
        entity_type: etype.into(),
        ..Default::default()
    })?;
    if created {
        sum.imported += 1;
    }
    let key = mnemon_storage::body::normalise_key(name);
    for o in obs {
        if !known.insert((key.clone(), o.to_string())) {
            continue;
        }
        ns.add(Observation { entity: name.to_string(), content: o.to_string() })?;
        sum.imported += 1;
    }
    if sum.imported == before {
        sum.skipped += 1;
    }
    Ok(())
}

fn import_relation(ns: &Ns, v: &Value, sum: &mut ImportSummary) -> Result<()> {
    let (Some(from), Some(to), Some(rt)) = (v["from"].as_str(), v["to"].as_str(), v["relationType"].as_str())
    else {
        return Err(invalid("a relation needs from, to and relationType"));
    };
    let mut rec = NewRecord::new(
        ns.name().clone(),
        Relation {
            from: from.to_string(),
            relation_type: rt.to_string(),
            to: to.to_string(),
            description: String::new(),
        },
    );
    rec.on_conflict = OnConflict::ReturnExisting;
    match ns.insert(rec)? {
        Outcome::Existing { .. } => sum.skipped += 1,
        _ => sum.imported += 1,
    }
    Ok(())
}

/// Import scoped markdown memory: one file (its section from its name: `learnings.md`,
/// `errors.md`, `patterns.md`, `preferences.md`, `brief.md`) into `scope`, or a directory
/// laid out as `global/*.md` and `projects/<id>/*.md`.
pub fn import_markdown_path(db: &Db, path: &Path, scope: &Scope) -> Result<ImportSummary> {
    let mut sum = ImportSummary::default();
    if path.is_dir() {
        let read = |p: &Path| {
            std::fs::read_dir(p).map_err(|e| crate::Error::Io { path: p.to_path_buf(), source: e })
        };
        let global = path.join("global");
        if global.is_dir() {
            for f in sorted(read(&global)?) {
                import_markdown_file(db, &f, &Scope::Global, &mut sum)?;
            }
        }
        let projects = path.join("projects");
        if projects.is_dir() {
            for dir in sorted(read(&projects)?) {
                let Some(id) = dir.file_name().and_then(|n| n.to_str()).map(str::to_string) else { continue };
                if dir.is_dir() {
                    for f in sorted(read(&dir)?) {
                        import_markdown_file(db, &f, &Scope::Project(id.clone()), &mut sum)?;
                    }
                }
            }
        }
        return Ok(sum);
    }
    import_markdown_file(db, path, scope, &mut sum)?;
    Ok(sum)
}

fn sorted(rd: std::fs::ReadDir) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    v.sort();
    v
}

fn import_markdown_file(db: &Db, file: &Path, scope: &Scope, sum: &mut ImportSummary) -> Result<()> {
    let source = file.display().to_string();
    let Some(stem) = file.file_stem().and_then(|s| s.to_str()) else { return Ok(()) };
    if file.extension().and_then(|e| e.to_str()) != Some("md") {
        return Ok(());
    }
    let text = std::fs::read_to_string(file)
        .map_err(|e| crate::Error::Io { path: file.to_path_buf(), source: e })?;
    let mem = db.memory();
    if stem == "brief" {
        let brief = text.trim();
        if brief.is_empty() || mem.brief(scope)?.as_deref() == Some(brief) {
            sum.skipped += 1;
        } else {
            mem.set_brief(scope, brief)?;
            sum.imported += 1;
        }
        return Ok(());
    }
    let section = match Section::parse(stem) {
        Ok(s) => s,
        Err(e) => {
            sum.errors.push(LineError { source, line: 0, reason: e.to_string() });
            return Ok(());
        }
    };
    match mem.import_markdown(scope, section, &text) {
        Ok((i, s)) => {
            sum.imported += i;
            sum.skipped += s;
        }
        Err(e) => sum.errors.push(LineError { source, line: 0, reason: e.to_string() }),
    }
    Ok(())
}

/// Import the project assistant's JSON files (`decisions.json`, `tasks.json`,
/// `entities.json`, `conversations.json`, arrays of objects with camelCase fields) from a
/// directory into `ns`. Their string ids become new record ids (references between them are
/// carried over); the original id is kept in `metadata.source_id`, so a second import of
/// the same files skips what is there. `validFrom` / `validUntil` become the valid time.
pub fn import_assistant_dir(ns: &Ns, dir: &Path) -> Result<ImportSummary> {
    use mnemon_storage::body::{Conversation, Decision, Mention, Message, Role, StatusChange, Task};
    use mnemon_storage::{RecordId, Timestamp};
    let mut sum = ImportSummary::default();
    let files = ["decisions.json", "tasks.json", "entities.json", "conversations.json"];
    let mut docs: Vec<(String, Vec<Value>)> = Vec::new();
    for f in files {
        let p = dir.join(f);
        if !p.exists() {
            continue;
        }
        let source = p.display().to_string();
        let text =
            std::fs::read_to_string(&p).map_err(|e| crate::Error::Io { path: p.clone(), source: e })?;
        match serde_json::from_str::<Value>(&text) {
            Ok(Value::Array(items)) => docs.push((source, items)),
            Ok(_) => sum.errors.push(LineError { source, line: 1, reason: "expected a JSON array".into() }),
            Err(e) => sum.errors.push(LineError {
                source,
                line: e.line() as u64,
                reason: format!("invalid JSON: {e}"),
            }),
        }
    }
    // Ids already imported, then new ids for the rest (so that references resolve forwards).
    let mut ids: std::collections::BTreeMap<String, RecordId> = std::collections::BTreeMap::new();
    let mut present = std::collections::BTreeSet::new();
    ns.db().snapshot()?.for_each_revision(Some(ns.name()), |r| {
        if let Some(s) = r.envelope.metadata.value()["source_id"].as_str() {
            ids.insert(s.to_string(), r.id);
            present.insert(s.to_string());
        }
        Ok(())
    })?;
    for (_, items) in &docs {
        for it in items {
            if let Some(s) = it["id"].as_str() {
                ids.entry(s.to_string()).or_default(); // a new UUIDv7
            }
        }
    }
    // Supersessions named by `supersededBy` (old -> new), among the items of these files:
    // each successor goes in after its predecessor, superseding it, so the chain is kept.
    let mut successor: std::collections::BTreeMap<String, String> = std::collections::BTreeMap::new();
    for (_, items) in &docs {
        for it in items {
            if let (Some(old), Some(new)) = (it["id"].as_str(), it["supersededBy"].as_str())
                && ids.contains_key(new)
            {
                successor.insert(old.to_string(), new.to_string());
            }
        }
    }
    let predecessor: std::collections::BTreeMap<String, String> =
        successor.iter().map(|(o, n)| (n.clone(), o.clone())).collect();
    // How many predecessors an item has (bounded: a cycle of supersessions is cut).
    let depth = |id: Option<&str>| -> usize {
        let mut d = 0;
        let mut at = id.map(str::to_string);
        while let Some(p) = at.and_then(|a| predecessor.get(&a).cloned()) {
            d += 1;
            if d > predecessor.len() {
                break;
            }
            at = Some(p);
        }
        d
    };
    let time = |v: &Value| v.as_str().and_then(|s| Timestamp::parse(s).ok());
    let refs = |v: &Value| -> Vec<RecordId> {
        v.as_array()
            .into_iter()
            .flatten()
            .filter_map(|x| x.as_str().and_then(|s| ids.get(s).copied()))
            .collect()
    };
    let strs = |v: &Value| -> Vec<String> {
        v.as_array().into_iter().flatten().filter_map(|x| x.as_str().map(str::to_string)).collect()
    };
    let enum_of = |v: &Value, what: &str| -> Result<Value> {
        match v {
            Value::Null => Ok(Value::Null),
            Value::String(_) => Ok(v.clone()),
            _ => Err(invalid(format!("{what} must be a string"))),
        }
    };
    for (source, items) in &docs {
        // In the file's order, each successor after its predecessor (errors keep naming
        // the item's place in the file).
        let mut order: Vec<usize> = (0..items.len()).collect();
        order.sort_by_key(|&i| depth(items[i]["id"].as_str()));
        for (i, it) in order.into_iter().map(|i| (i, &items[i])) {
            let err = |reason: String| LineError {
                source: source.clone(),
                line: i as u64 + 1,
                reason: format!("item {}: {reason}", i + 1),
            };
            let Some(old) = it["id"].as_str() else {
                sum.errors.push(err("no id".into()));
                continue;
            };
            if present.contains(old) {
                sum.skipped += 1;
                continue;
            }
            let body: Result<Body> = (|| {
                Ok(
                    // Without a `type`, the file says what its items are.
                    match it["type"].as_str().unwrap_or_else(|| {
                        let file = source.rsplit(['/', '\\']).next().unwrap_or_default();
                        match file {
                            "decisions.json" => "decision",
                            "tasks.json" => "task",
                            "entities.json" => "entity",
                            "conversations.json" => "conversation",
                            _ => "",
                        }
                    }) {
                        "decision" => Decision {
                            title: it["title"].as_str().unwrap_or_default().to_string(),
                            description: it["description"].as_str().unwrap_or_default().to_string(),
                            rationale: it["rationale"].as_str().unwrap_or_default().to_string(),
                            context: it["context"].as_str().unwrap_or_default().to_string(),
                            status: serde_json::from_value(enum_of(&it["status"], "status")?)
                                .unwrap_or_default(),
                            alternatives: strs(&it["alternatives"]),
                            consequences: strs(&it["consequences"]),
                            related_decisions: refs(&it["relatedDecisions"]),
                            related_tasks: refs(&it["relatedTasks"]),
                        }
                        .into(),
                        "task" => Task {
                            title: it["title"].as_str().unwrap_or_default().to_string(),
                            description: it["description"].as_str().unwrap_or_default().to_string(),
                            status: serde_json::from_value(enum_of(&it["status"], "status")?)
                                .map_err(|e| invalid(format!("status: {e}")))?,
                            priority: serde_json::from_value(enum_of(&it["priority"], "priority")?)
                                .unwrap_or_default(),
                            assignee: it["assignee"].as_str().map(Into::into),
                            due: time(&it["dueDate"]),
                            completed_at: time(&it["completedAt"]),
                            dependencies: refs(&it["dependencies"]),
                            blocked_by: it["blockedBy"].as_str().map(str::to_string),
                            related_decisions: refs(&it["relatedDecisions"]),
                            status_history: it["statusHistory"]
                                .as_array()
                                .into_iter()
                                .flatten()
                                .filter_map(|c| {
                                    Some(StatusChange {
                                        from: serde_json::from_value(c["from"].clone()).ok()?,
                                        to: serde_json::from_value(c["to"].clone()).ok()?,
                                        at: time(&c["timestamp"])?,
                                        reason: c["reason"].as_str().map(str::to_string),
                                    })
                                })
                                .collect(),
                        }
                        .into(),
                        "entity" => Entity {
                            name: it["name"]
                                .as_str()
                                .filter(|n| !n.trim().is_empty())
                                .ok_or_else(|| invalid("an entity needs a name"))?
                                .to_string(),
                            entity_type: it["entityType"].as_str().unwrap_or("other").into(),
                            description: it["description"].as_str().unwrap_or_default().to_string(),
                            properties: mnemon_storage::JsonText::from_value(
                                if it["properties"].is_object() { &it["properties"] } else { &Value::Null },
                            ),
                            mentions: it["mentions"]
                                .as_array()
                                .into_iter()
                                .flatten()
                                .filter_map(|m| {
                                    Some(Mention {
                                        context: m["context"].as_str()?.to_string(),
                                        at: time(&m["timestamp"])?,
                                        source: m["source"].as_str().unwrap_or("manual").into(),
                                    })
                                })
                                .collect(),
                            related_entities: refs(&it["relatedEntities"]),
                        }
                        .into(),
                        "conversation" => Conversation {
                            title: it["title"].as_str().unwrap_or_default().to_string(),
                            summary: it["summary"].as_str().map(str::to_string),
                            ended_at: time(&it["endedAt"]),
                            extracted_decisions: refs(&it["extractedDecisions"]),
                            extracted_tasks: refs(&it["extractedTasks"]),
                            extracted_entities: refs(&it["extractedEntities"]),
                        }
                        .into(),
                        other => return Err(invalid(format!("unknown type {other:?}"))),
                    },
                )
            })();
            let body = match body {
                Ok(b) => b,
                Err(e) => {
                    sum.errors.push(err(e.to_string()));
                    continue;
                }
            };
            let is_conv = matches!(body, Body::Conversation(_));
            let mut rec = NewRecord::new(ns.name().clone(), body);
            rec.id = ids[old];
            rec.valid_from =
                time(&it["validFrom"]).or_else(|| time(&it["startedAt"])).or_else(|| time(&it["createdAt"]));
            // A record superseded here ends where its successor begins.
            if !successor.contains_key(old) {
                rec.valid_until = time(&it["validUntil"]);
            }
            rec.envelope.tags = strs(&it["tags"]).into_iter().map(Into::into).collect();
            rec.envelope.metadata =
                mnemon_storage::JsonText::from_value(&serde_json::json!({"source_id": old}));
            rec.envelope.importance = Some(5); // imported history is not subject to TTLs
            rec.on_conflict = OnConflict::ReturnExisting;
            let written = match predecessor.get(old).and_then(|p| ids.get(p)) {
                Some(&before) => {
                    ns.supersede_with(before, rec).map(|new| Outcome::Superseded { old: before, new })
                }
                None => ns.insert(rec),
            };
            match written {
                Ok(Outcome::Existing { .. }) => sum.skipped += 1,
                Ok(_) => {
                    sum.imported += 1;
                    if is_conv {
                        for m in it["messages"].as_array().into_iter().flatten() {
                            let role: Role = serde_json::from_value(m["role"].clone()).unwrap_or_default();
                            let mut mr = NewRecord::new(
                                ns.name().clone(),
                                Message {
                                    conversation: Some(ids[old]),
                                    role,
                                    content: m["content"].as_str().unwrap_or_default().to_string(),
                                },
                            );
                            mr.valid_from = time(&m["timestamp"]);
                            mr.envelope.task = Some(ids[old].to_string().into());
                            mr.envelope.importance = Some(5);
                            ns.insert(mr)?;
                        }
                    }
                }
                Err(e) => sum.errors.push(err(e.to_string())),
            }
        }
    }
    Ok(sum)
}

/// The `metadata.source_id` of every record of `ns` (imported records remember their origin).
fn source_ids(ns: &Ns) -> Result<std::collections::BTreeSet<String>> {
    let mut out = std::collections::BTreeSet::new();
    ns.db().snapshot()?.for_each_revision(Some(ns.name()), |r| {
        if let Some(s) = r.envelope.metadata.value()["source_id"].as_str() {
            out.insert(s.to_string());
        }
        Ok(())
    })?;
    Ok(out)
}

/// Import crewly's knowledge files into `ns` from a directory: a project's knowledge
/// (`patterns.json`, `decisions.json`, `gotchas.json`, `relationships.json`, `learnings.md`)
/// and/or an agent's (`role-knowledge.json`, `preferences.json`, `performance.json` with
/// `taskCompletions` and `errorPatterns`). JSON entries keep their id in
/// `metadata.source_id`; learnings are identified by a hash of the entry. A second import
/// skips what is there.
pub fn import_crewly_dir(ns: &Ns, dir: &Path) -> Result<ImportSummary> {
    use mnemon_storage::Timestamp;
    use mnemon_storage::body::{
        Decision, ErrorFix, Gotcha, Knowledge, Learning, Metrics, Pattern, Preference,
    };
    let mut sum = ImportSummary::default();
    let mut present = source_ids(ns)?;
    let time = |v: &Value| v.as_str().and_then(|s| Timestamp::parse(s).ok());
    let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
    let read_array = |name: &str, sum: &mut ImportSummary| -> Result<Option<(String, Vec<Value>)>> {
        let p = dir.join(name);
        if !p.exists() {
            return Ok(None);
        }
        let source = p.display().to_string();
        let text =
            std::fs::read_to_string(&p).map_err(|e| crate::Error::Io { path: p.clone(), source: e })?;
        match serde_json::from_str::<Value>(&text) {
            Ok(Value::Array(a)) => Ok(Some((source, a))),
            Ok(Value::Object(o)) => Ok(Some((source, vec![Value::Object(o)]))),
            Ok(_) => {
                sum.errors.push(LineError {
                    source,
                    line: 1,
                    reason: "expected a JSON array or object".into(),
                });
                Ok(None)
            }
            Err(e) => {
                sum.errors.push(LineError {
                    source,
                    line: e.line() as u64,
                    reason: format!("invalid JSON: {e}"),
                });
                Ok(None)
            }
        }
    };
    let mut write = |rec: NewRecord, source_id: String, sum: &mut ImportSummary, err: LineError| {
        if present.contains(&source_id) {
            sum.skipped += 1;
            return;
        }
        let mut rec = rec;
        let mut meta = rec.envelope.metadata.value();
        if !meta.is_object() {
            meta = serde_json::json!({});
        }
        meta["source_id"] = Value::String(source_id.clone());
        rec.envelope.metadata = mnemon_storage::JsonText::from_value(&meta);
        if rec.envelope.importance.is_none() {
            rec.envelope.importance = Some(5);
        }
        match ns.insert(rec) {
            Ok(Outcome::Existing { .. }) => sum.skipped += 1,
            Ok(_) => {
                sum.imported += 1;
                present.insert(source_id);
            }
            Err(e) => sum.errors.push(LineError { reason: e.to_string(), ..err }),
        }
    };
    let files =
        ["patterns.json", "decisions.json", "gotchas.json", "relationships.json", "role-knowledge.json"];
    for f in files {
        let Some((source, items)) = read_array(f, &mut sum)? else { continue };
        for (i, it) in items.iter().enumerate() {
            let err = LineError { source: source.clone(), line: i as u64 + 1, reason: String::new() };
            let id = it["id"].as_str().map_or_else(
                || format!("{f}#{}", blake3::hash(it.to_string().as_bytes()).to_hex()),
                |x| format!("{f}#{x}"),
            );
            let body: Body = match f {
                "patterns.json" => Pattern {
                    title: s(&it["title"]),
                    description: s(&it["description"]),
                    category: s(&it["category"]).into(),
                    example: it["example"].as_str().map(str::to_string),
                }
                .into(),
                "decisions.json" => Decision {
                    title: s(&it["title"]),
                    description: s(&it["decision"]),
                    rationale: s(&it["rationale"]),
                    alternatives: it["alternatives"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|x| x.as_str().map(str::to_string))
                        .collect(),
                    ..Default::default()
                }
                .into(),
                "gotchas.json" => Gotcha {
                    title: s(&it["title"]),
                    problem: s(&it["problem"]),
                    solution: s(&it["solution"]),
                    severity: serde_json::from_value(it["severity"].clone()).unwrap_or_default(),
                }
                .into(),
                "relationships.json" => Relation {
                    from: s(&it["from"]),
                    relation_type: it["relationshipType"]
                        .as_str()
                        .or(it["type"].as_str())
                        .unwrap_or_default()
                        .to_string(),
                    to: s(&it["to"]),
                    description: s(&it["description"]),
                }
                .into(),
                _ => Knowledge {
                    category: s(&it["category"]).into(),
                    content: s(&it["content"]),
                    last_used: time(&it["lastUsed"]),
                }
                .into(),
            };
            if let Err(e) = body.validate() {
                sum.errors.push(LineError { reason: e.to_string(), ..err });
                continue;
            }
            let mut rec = NewRecord::new(ns.name().clone(), body);
            rec.valid_from = time(&it["createdAt"]).or_else(|| time(&it["decidedAt"]));
            rec.envelope.source = it["discoveredBy"].as_str().or(it["decidedBy"].as_str()).map(Into::into);
            if f == "role-knowledge.json" {
                rec.envelope.confidence =
                    it["confidence"].as_f64().map(|c| c.clamp(0.0, 1.0) as f32).or(Some(0.5));
            }
            rec.on_conflict = OnConflict::ReturnExisting;
            write(rec, id, &mut sum, err);
        }
    }
    // Preferences: one object, each key a preference.
    if let Some((source, items)) = read_array("preferences.json", &mut sum)? {
        for (k, v) in items.first().and_then(Value::as_object).into_iter().flatten() {
            let err = LineError { source: source.clone(), line: 1, reason: String::new() };
            let body = Preference {
                key: k.as_str().into(),
                value: mnemon_storage::JsonText::from_value(v),
                text: String::new(),
            };
            let mut rec = NewRecord::new(ns.name().clone(), body);
            rec.on_conflict = OnConflict::Supersede;
            write(rec, format!("preferences.json#{k}={v}"), &mut sum, err);
        }
    }
    // Performance: task completions and error patterns.
    if let Some((source, items)) = read_array("performance.json", &mut sum)? {
        let perf = items.first().cloned().unwrap_or_default();
        for (i, m) in perf["taskCompletions"].as_array().into_iter().flatten().enumerate() {
            let err = LineError { source: source.clone(), line: i as u64 + 1, reason: String::new() };
            let body = Metrics {
                task: s(&m["taskId"]).into(),
                iterations: m["iterations"].as_u64().and_then(|n| u32::try_from(n).ok()).unwrap_or(0),
                quality_gate_passed: m["qualityGatePassed"].as_bool().unwrap_or(false),
                duration_ms: m["durationMs"].as_u64(),
                errors: m["errors"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|x| x.as_str().map(str::to_string))
                    .collect(),
            };
            let mut rec = NewRecord::new(ns.name().clone(), body);
            rec.valid_from = time(&m["completedAt"]);
            write(
                rec,
                format!("performance.json#task#{}", blake3::hash(m.to_string().as_bytes()).to_hex()),
                &mut sum,
                err,
            );
        }
        for (i, e) in perf["errorPatterns"].as_array().into_iter().flatten().enumerate() {
            let err = LineError { source: source.clone(), line: i as u64 + 1, reason: String::new() };
            let pattern = s(&e["pattern"]);
            let body =
                ErrorFix { error: pattern.clone(), solution: s(&e["resolution"]), context: String::new() };
            let mut rec = NewRecord::new(ns.name().clone(), body);
            rec.envelope.key =
                Some(format!("error:{}", mnemon_storage::body::normalise_key(&pattern)).into());
            rec.envelope.metadata = mnemon_storage::JsonText::from_value(
                &serde_json::json!({"occurrences": e["occurrences"].as_u64().unwrap_or(1)}),
            );
            rec.on_conflict = OnConflict::ReturnExisting;
            write(rec, format!("performance.json#error#{pattern}"), &mut sum, err);
        }
    }
    // The learnings log: `## date`, `### [agent] time`, text, optional files and type, `---`.
    let lp = dir.join("learnings.md");
    if lp.exists() {
        let text =
            std::fs::read_to_string(&lp).map_err(|e| crate::Error::Io { path: lp.clone(), source: e })?;
        let source = lp.display().to_string();
        let (mut date, mut line_no) = (String::new(), 0u64);
        for (n, chunk) in text.split("\n---").enumerate() {
            let mut agent = String::from("unknown");
            let mut time_of_day = String::new();
            let mut body = Vec::new();
            let (mut files, mut kind) = (Vec::new(), None);
            for l in chunk.lines() {
                line_no += 1;
                if let Some(d) = l.strip_prefix("## ") {
                    date = d.trim().to_string();
                } else if let Some(h) = l.strip_prefix("### [") {
                    if let Some((a, t)) = h.split_once("] ") {
                        agent = a.to_string();
                        time_of_day = t.trim().to_string();
                    }
                } else if let Some(f) = l.strip_prefix("**Related files:** ") {
                    files = f.split(", ").map(|x| x.trim().to_string()).collect();
                } else if let Some(t) = l.strip_prefix("**Type:** ") {
                    kind = Some(t.trim().to_string());
                } else if !l.starts_with("# ") && !l.trim().is_empty() {
                    body.push(l);
                }
            }
            let content = body.join("\n").trim().to_string();
            if content.is_empty() {
                continue;
            }
            let err = LineError { source: source.clone(), line: line_no, reason: String::new() };
            let at = Timestamp::parse(&format!("{date}T{time_of_day}Z"))
                .ok()
                .or_else(|| Timestamp::parse(&date).ok());
            let mut rec = NewRecord::new(
                ns.name().clone(),
                Learning {
                    text: content.clone(),
                    related_files: files.iter().map(|f| f.as_str().into()).collect(),
                },
            );
            rec.valid_from = at;
            rec.envelope.source = Some(agent.as_str().into());
            let mut meta = serde_json::json!({});
            if let Some(k) = &kind {
                meta["type"] = Value::String(k.clone());
            }
            if !files.is_empty() {
                meta["related_files"] = serde_json::json!(files);
            }
            rec.envelope.metadata = mnemon_storage::JsonText::from_value(&meta);
            let sid = format!(
                "learnings.md#{}",
                blake3::hash(format!("{date} {time_of_day} {agent} {content} {n}").as_bytes()).to_hex()
            );
            write(rec, sid, &mut sum, err);
        }
    }
    Ok(sum)
}

/// The current knowledge graph of `ns` in the reference server's `memory.jsonl` format,
/// byte for byte as it writes it: entity lines first (`{"type":"entity","name","entityType",
/// "observations"}`, in creation order, observations in the order they were added), then
/// relation lines (`{"type":"relation","from","to","relationType"}`), joined by `\n` with no
/// newline at the end.
pub fn export_mcp_jsonl(ns: &Ns) -> Result<String> {
    let mut entities = ns.list_of::<Entity>(AsOf::now())?;
    entities.sort_by_key(|r| r.id);
    let mut observations = ns.list_of::<Observation>(AsOf::now())?;
    observations.sort_by_key(|r| r.id);
    let mut by_entity: std::collections::HashMap<String, Vec<String>> = std::collections::HashMap::new();
    for r in observations {
        if let Body::Observation(o) = r.body {
            by_entity.entry(mnemon_storage::body::normalise_key(&o.entity)).or_default().push(o.content);
        }
    }
    let mut relations = ns.list_of::<Relation>(AsOf::now())?;
    relations.sort_by_key(|r| r.id);
    let mut lines = Vec::with_capacity(entities.len() + relations.len());
    for r in &entities {
        if let Body::Entity(e) = &r.body {
            let obs = by_entity.remove(&mnemon_storage::body::normalise_key(&e.name)).unwrap_or_default();
            // Field order as the reference writes it (serde_json keeps insertion order only
            // with preserve_order, so the line is assembled by hand).
            lines.push(format!(
                "{{\"type\":\"entity\",\"name\":{},\"entityType\":{},\"observations\":{}}}",
                json_str(&e.name)?,
                json_str(e.entity_type.as_str())?,
                serde_json::to_string(&obs).map_err(|e| invalid(e.to_string()))?
            ));
        }
    }
    for r in &relations {
        if let Body::Relation(x) = &r.body {
            lines.push(format!(
                "{{\"type\":\"relation\",\"from\":{},\"to\":{},\"relationType\":{}}}",
                json_str(&x.from)?,
                json_str(&x.to)?,
                json_str(&x.relation_type)?
            ));
        }
    }
    Ok(lines.join("\n"))
}

fn json_str(s: &str) -> Result<String> {
    serde_json::to_string(s).map_err(|e| invalid(e.to_string()))
}
