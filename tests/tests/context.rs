//! The context builder: sections in order, the budget never exceeded (a property over random
//! contents and budgets), counted with the real BPE tokenizer, deterministic.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "tests")]

use mnemon::body::{Brief, Decision, Gotcha, Learning, Severity, Task, TaskStatus};
use mnemon::context::{ContextRequest, Format, count_tokens};
use mnemon::{Db, Ns};
use proptest::prelude::*;

fn fill(ns: &Ns, texts: &[String]) {
    let p = ns.project();
    for (i, t) in texts.iter().enumerate() {
        match i % 5 {
            0 => {
                let sev = if i % 2 == 0 { Severity::Critical } else { Severity::Low };
                p.add_gotcha(Gotcha {
                    title: format!("g{i}"),
                    problem: t.clone(),
                    solution: "fix".into(),
                    severity: sev,
                })
                .unwrap();
            }
            1 => {
                ns.decisions()
                    .create(Decision { title: format!("d{i}"), rationale: t.clone(), ..Default::default() })
                    .unwrap();
            }
            2 => {
                ns.tasks()
                    .create(Task { title: t.clone(), status: TaskStatus::Planned, ..Default::default() })
                    .unwrap();
            }
            3 => {
                ns.add(Learning { text: t.clone(), ..Default::default() }).unwrap();
            }
            _ => {
                ns.record(Learning { text: format!("{t} (important)"), ..Default::default() })
                    .importance(5)
                    .insert()
                    .unwrap();
            }
        }
    }
}

#[test]
fn sections_in_order_with_agent_knowledge_and_task_first() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::create(dir.path().join("m.redb")).unwrap();
    let ns = db.ns("project").unwrap();
    ns.add(Brief { text: "A memory database for agents.".into() }).unwrap();
    ns.project()
        .add_gotcha(Gotcha {
            title: "One writer".into(),
            problem: "deadlock".into(),
            solution: "group commit".into(),
            severity: Severity::Critical,
        })
        .unwrap();
    ns.decisions()
        .create(Decision { title: "Use redb".into(), rationale: "embedded".into(), ..Default::default() })
        .unwrap();
    let t = ns.tasks().create(Task { title: "Write the MCP server".into(), ..Default::default() }).unwrap();
    ns.record(Learning { text: "rmcp needs tokio".into(), ..Default::default() })
        .task(t.to_string())
        .insert()
        .unwrap();
    ns.add(Learning { text: "redb commits are durable by default".into(), ..Default::default() }).unwrap();
    let agent_ns = db.ns("agent:dev-1").unwrap();
    let agent = agent_ns.agent();
    let (k, _) = agent.learn("rust", "Prefer thiserror for library errors").unwrap();
    agent.reinforce(k).unwrap();
    agent.set_preferences(&serde_json::json!({"indent": 4})).unwrap();
    let req = ContextRequest {
        query: "redb durability".into(),
        task: Some(t.to_string()),
        agent: Some("dev-1".into()),
        budget: 2000,
        format: Format::Markdown,
        ..Default::default()
    };
    let b = ns.context(&req).unwrap();
    let order: Vec<usize> = [
        "## critical gotchas",
        "## brief",
        "## active decisions",
        "## active tasks",
        "## relevant",
        "## preferences",
        "## role knowledge",
    ]
    .iter()
    .map(|h| b.text.find(h).unwrap_or_else(|| panic!("{h} missing in {}", b.text)))
    .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{}", b.text);
    assert!(b.text.contains("- Use redb (because embedded) ["), "{}", b.text);
    let rel = &b.text[b.text.find("## relevant").unwrap()..];
    assert!(
        rel.find("rmcp needs tokio").unwrap() < rel.find("redb commits").unwrap(),
        "the task's own first: {rel}"
    );
    assert!(b.text.contains("[rust] Prefer thiserror") && b.text.contains("indent: 4"), "{}", b.text);
    assert_eq!(b.tokens, count_tokens(&b.text));
    let xml = ns.context(&ContextRequest { format: Format::Xml, ..req.clone() }).unwrap();
    assert!(
        xml.text.starts_with("<mnemon-context namespace=\"project\">")
            && xml.text.contains("<section name=\"brief\">"),
        "{}",
        xml.text
    );
    assert!(xml.text.contains("<item kind=\"decision\""));
    // A tight budget keeps the first sections and reports what was left out.
    let small = ns.context(&ContextRequest { budget: 30, ..req }).unwrap();
    assert!(small.tokens <= 30 && small.left_out > 0 && small.text.contains("One writer"), "{small:?}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
    #[test]
    fn never_over_budget_and_deterministic(
        texts in proptest::collection::vec("[a-zA-Z0-9 éü日本<>&\"_.,-]{0,120}", 1..25),
        budget in 0usize..400,
        xml in any::<bool>(),
        query in "[a-z ]{0,20}",
    ) {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::create(dir.path().join("m.redb")).unwrap();
        let ns = db.ns("p").unwrap();
        let texts: Vec<String> = texts.into_iter().map(|t| if t.trim().is_empty() { "x".to_string() } else { t }).collect();
        fill(&ns, &texts);
        let req = ContextRequest { query, budget, format: if xml { Format::Xml } else { Format::Markdown }, ..Default::default() };
        let a = ns.context(&req).unwrap();
        prop_assert!(a.tokens <= budget, "{} > {budget}", a.tokens);
        prop_assert_eq!(a.tokens, count_tokens(&a.text));
        let b = ns.context(&req).unwrap();
        prop_assert_eq!(a, b);
    }
}
