"""A coding agent's session with `mnemon mcp`, driven by the official MCP Python SDK.

Run by crates/cli/tests/mcp_sdk.rs as `python session.py MNEMON_EXE WORK_DIR`, with the
SDK installed by scripts/fetch-mcp-sdk.sh (pinned, hash-checked). Exits non-zero on the
first failed check. Steps: a realistic session (graph and mnemon's own tools), concurrent
calls, two servers on one file at once, a restart, and SIGKILL right after acknowledged
writes.
"""

import asyncio
import os
import signal
import sys
from contextlib import AsyncExitStack

from mcp import Client, ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

EXE, WORK = sys.argv[1], sys.argv[2]
DB = os.path.join(WORK, "memory.redb")

REFERENCE_TOOLS = [
    "create_entities", "create_relations", "add_observations", "delete_entities",
    "delete_observations", "delete_relations", "read_graph", "search_nodes", "open_nodes",
]
OWN_TOOLS = [
    "remember", "recall", "context", "get", "list", "supersede", "history", "chain", "task", "forget",
    "memory_add", "memory_show", "memory_context", "episode_store", "episode_query",
    "knowledge_learn", "knowledge_reinforce", "knowledge_list", "project_relate", "project_knowledge",
]


def check(cond, what):
    if not cond:
        raise AssertionError(what)


class Server:
    """One `mnemon mcp` process and an SDK session on it."""

    def __init__(self, ns="proj"):
        self.ns = ns
        self.stack = AsyncExitStack()
        self.session = None

    async def __aenter__(self):
        before = children()
        params = StdioServerParameters(command=EXE, args=["--db", DB, "--ns", self.ns, "mcp"],
                                       env={"PATH": os.environ.get("PATH", "")})
        read, write = await self.stack.enter_async_context(stdio_client(params))
        self.session = await self.stack.enter_async_context(ClientSession(read, write))
        await self.session.initialize()
        new = children() - before
        check(len(new) == 1, f"one new server process, got {new}")
        self.pid = new.pop()
        return self

    async def __aexit__(self, *exc):
        try:
            await self.stack.aclose()
        except BaseException:  # a killed server leaves the transport broken
            if not exc[0]:
                raise

    async def call(self, tool, args):
        res = await self.session.call_tool(tool, args)
        text = res.content[0].text if res.content else ""
        check(not res.is_error, f"{tool} {args}: {text}")
        return res.structured_content

    async def error(self, tool, args):
        res = await self.session.call_tool(tool, args)
        check(res.is_error, f"{tool} {args} should fail")
        return res.content[0].text


def children():
    """The pids of this process's children (Linux /proc)."""
    me, out = os.getpid(), set()
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    stat = f.read()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == me:
                out.add(int(d))
    return out


async def realistic_session():
    async with Server() as s:
        tools = await s.session.list_tools()
        names = [t.name for t in tools.tools]
        check(names == REFERENCE_TOOLS + OWN_TOOLS, names)
        check(all(t.description for t in tools.tools), "every tool is described")
        # Starting a task: ask for context and earlier work (nothing yet).
        ctx = await s.call("context", {"query": "add a retry to the HTTP embedder", "budget_tokens": 500})
        check(ctx["tokens"] <= 500, ctx)
        check((await s.call("recall", {"query": "HTTP embedder retry"}))["hits"] == [], "empty at first")
        # Working: it learns about the code base and records what it decides.
        await s.call("create_entities", {"entities": [
            {"name": "HttpEmbedder", "entityType": "component", "observations": ["calls an OpenAI-compatible server"]},
            {"name": "reqwest", "entityType": "crate", "observations": ["uses rustls"]},
        ]})
        await s.call("create_relations", {"relations": [
            {"from": "HttpEmbedder", "to": "reqwest", "relationType": "depends_on"}]})
        added = await s.call("add_observations", {"observations": [
            {"entityName": "HttpEmbedder", "contents": ["retries 429 with backoff", "calls an OpenAI-compatible server"]}]})
        check(added["results"][0]["addedObservations"] == ["retries 429 with backoff"], added)
        d = await s.call("remember", {"kind": "decision", "data": {
            "title": "Retry policy", "decision": "3 retries, exponential backoff", "rationale": "servers rate-limit"},
            "tags": ["embedder"]})
        g = await s.call("remember", {"kind": "gotcha", "data": {
            "title": "Retry-After header", "problem": "servers send Retry-After in seconds",
            "solution": "honour it before backing off", "severity": "critical"}})
        t = await s.call("remember", {"kind": "task", "text": "Add retry tests"})
        # `text` beside data's title, as the tool's description invites: the text becomes
        # the description.
        both = await s.call("remember", {"kind": "decision", "text": "Because servers rate-limit",
                                         "data": {"title": "Retry budget"}})
        got = await s.call("get", {"id": both["id"]})
        check(got["record"]["body"]["title"] == "Retry budget"
              and got["record"]["body"]["description"] == "Because servers rate-limit", got)
        await s.call("task", {"id": t["id"], "action": "start"})
        found = await s.call("search_nodes", {"query": "BACKOFF"})
        check([e["name"] for e in found["entities"]] == ["HttpEmbedder"], found)
        check(found["relations"] == [{"from": "HttpEmbedder", "to": "reqwest", "relationType": "depends_on"}], found)
        # The decision changes; the chain and time travel keep the story.
        new = await s.call("supersede", {"id": d["id"], "data": {
            "title": "Retry policy", "decision": "5 retries, honour Retry-After", "rationale": "fewer failures"}})
        chain = await s.call("chain", {"id": new["new"]})
        check([r["id"] for r in chain["chain"]] == [d["id"], new["new"]], chain)
        hits = await s.call("recall", {"query": "retry policy", "kinds": ["decision"]})
        check(hits["hits"][0]["id"] == new["new"], hits)
        await s.call("task", {"id": t["id"], "action": "complete"})
        refused = await s.error("task", {"id": t["id"], "action": "start"})
        check("completed" in refused, refused)
        ctx = await s.call("context", {"query": "HTTP embedder retries", "budget_tokens": 400})
        check("Retry-After header" in ctx["context"] and g["id"] in ctx["ids"], ctx)
        res = await s.session.read_resource("memory://knowledge-graph")
        check('"HttpEmbedder"' in res.contents[0].text, res)
        # Bad calls are errors; the session goes on.
        await s.error("add_observations", {"observations": [{"entityName": "Nobody", "contents": ["x"]}]})
        await s.error("remember", {"text": "no kind"})
        await s.error("no_such_tool", {})
        check(len((await s.call("read_graph", {}))["entities"]) == 2, "intact")
    print("ok realistic session")


async def agent_memory():
    """Seed 003's memory server: entries routed into the current project's sections, episodes
    with their access counts, role knowledge learned and reinforced, project knowledge; and
    nothing outside the server's namespace."""
    async with Server(ns="project:1a2b3c4d-app") as s:
        routed = await s.call("memory_add", {"content": "Build error E0308 -> annotate the closure", "importance": 4})
        check(routed["section"] == "errors" and routed["namespace"] == "project:1a2b3c4d-app", routed)
        p = await s.call("memory_add", {"content": "Repository pattern: one store per aggregate"})
        check(p["section"] == "patterns" and p["outcome"] == "written", p)
        again = await s.call("memory_add", {"content": "Repository pattern: one store per aggregate"})
        check(again["outcome"] == "existing" and again["id"] == p["id"], again)
        changed = await s.call("memory_add", {"section": "patterns", "content": "Repository pattern: a store per table"})
        check(changed["outcome"] == "superseded", changed)
        await s.call("memory_add", {"content": "Uses Zustand for state", "section": "learnings"})
        shown = await s.call("memory_show", {})
        by = {x["section"]: [e["line"] for e in x["entries"]] for x in shown["sections"]}
        check(by["errors"] == ["Build error E0308 → annotate the closure"], by)
        check(by["patterns"] == ["Repository pattern: a store per table"], by)
        check(by["learnings"] == ["Uses Zustand for state"], by)
        block = await s.call("memory_context", {"query": "zustand state", "budget_tokens": 300})
        check("Zustand" in block["context"] and "E0308" not in block["context"], block)
        refused = await s.error("memory_add", {"content": "x", "scope": "project:/elsewhere"})
        check("outside this session's scope" in refused, refused)
        e = await s.call("episode_store", {"content": "Fixed the flaky retry test by seeding the clock",
                                           "type": "error_fix", "task": "retry-tests", "importance": 4})
        first = await s.call("episode_query", {"query": "flaky retry test"})
        check(first["episodes"][0]["record"]["id"] == e["id"], first)
        second = await s.call("episode_query", {"query": "retry test clock"})
        check(second["episodes"][0]["access_count"] == first["episodes"][0]["access_count"] + 1, second)
        k = await s.call("knowledge_learn", {"category": "testing", "content": "seed the clock in time-based tests"})
        check(k["reinforced"] is False, k)
        k2 = await s.call("knowledge_learn", {"category": "testing", "content": "Seed the clock in time based tests"})
        check(k2["reinforced"] is True and k2["id"] == k["id"], k2)
        r = await s.call("knowledge_reinforce", {"id": k["id"]})
        check(abs(r["record"]["confidence"] - 0.7) < 1e-6, r)
        listed = await s.call("knowledge_list", {"category": "testing"})
        check([x["id"] for x in listed["entries"]] == [k["id"]], listed)
        await s.call("project_relate", {"from": "RetryPolicy", "relation": "depends_on", "to": "Clock"})
        cycle = await s.error("project_relate", {"from": "Clock", "relation": "depends_on", "to": "RetryPolicy"})
        check("cycle" in cycle, cycle)
        know = await s.call("project_knowledge", {})
        check("RetryPolicy" in know["context"] and "Clock" in know["context"], know)
    print("ok agent memory")


async def high_level_client():
    """The SDK's high-level `mcp.Client` in its default mode, which probes `server/discover`
    and speaks the newest protocol both sides offer (2026-07-28), then in legacy mode."""
    params = StdioServerParameters(command=EXE, args=["--db", DB, "--ns", "hl", "mcp"],
                                   env={"PATH": os.environ.get("PATH", "")})
    for mode in ("auto", "legacy"):
        async with Client(params, mode=mode) as c:
            tools = await c.list_tools()
            names = [t.name for t in tools.tools]
            check(names == REFERENCE_TOOLS + OWN_TOOLS, names)
            made = await c.call_tool("remember", {"kind": "learning", "text": f"spoken in {mode} mode"})
            check(not made.is_error, made)
            hits = await c.call_tool("recall", {"query": f"spoken {mode}"})
            check(hits.structured_content["hits"][0]["id"] == made.structured_content["id"], hits)
            bad = await c.call_tool("get", {"id": "not-an-id"})
            check(bad.is_error and "invalid record id" in bad.content[0].text, bad)
            await c.call_tool("create_entities", {"entities": [{"name": f"E-{mode}", "entityType": "t", "observations": []}]})
            graph = await c.read_resource("memory://knowledge-graph")
            check(f"E-{mode}" in graph.contents[0].text, graph)
    print("ok high-level client")


async def resource_subscriptions():
    """Told when memory changes: `subscriptions/listen` (2026-07-28) through the high-level
    client, and the legacy `resources/subscribe` with notifications to a message handler;
    each time another process (the command line) writes."""
    from mcp.client.subscriptions import ResourceUpdated
    import subprocess

    def write(ns, text):
        done = subprocess.run([EXE, "--db", DB, "--ns", ns, "add", "learning", "--data", '{"text": "%s"}' % text],
                              capture_output=True, text=True, env={"PATH": os.environ.get("PATH", "")})
        check(done.returncode == 0, done.stderr)

    params = StdioServerParameters(command=EXE, args=["--db", DB, "--ns", "watched", "mcp"],
                                   env={"PATH": os.environ.get("PATH", "")})
    uri = "mnemon://memory/watched"
    async with Client(params) as c:
        listed = [r.uri for r in (await c.list_resources()).resources]
        check(uri in [str(u) for u in listed], listed)
        async with c.listen(resource_subscriptions=[uri, "memory://knowledge-graph"]) as sub:
            check(uri in (sub.honored.resource_subscriptions or []), sub.honored)
            write("watched", "written by another process")
            event = await asyncio.wait_for(sub.__anext__(), 10)
            check(isinstance(event, ResourceUpdated) and str(event.uri) == uri, event)
            text = (await c.read_resource(uri)).contents[0].text
            check("written by another process" in text, text)
    updated = asyncio.Queue()

    async def handler(message):
        if getattr(message, "method", "") == "notifications/resources/updated":
            await updated.put(str(message.params.uri))

    async with AsyncExitStack() as stack:
        read, write_stream = await stack.enter_async_context(stdio_client(params))
        session = await stack.enter_async_context(ClientSession(read, write_stream, message_handler=handler))
        await session.initialize()
        await session.subscribe_resource(uri)
        write("watched", "written again")
        got = await asyncio.wait_for(updated.get(), 10)
        check(got == uri, got)
        write("elsewhere", "not watched")
        await asyncio.sleep(0.3)
        check(updated.empty(), "a write elsewhere was notified")
    print("ok resource subscriptions")


async def concurrent_calls():
    async with Server() as s:
        writes = [s.call("create_entities", {"entities": [{"name": f"c{i}", "entityType": "t", "observations": [f"o{i}"]}]})
                  for i in range(30)]
        reads = [s.call("search_nodes", {"query": "c1"}) for _ in range(10)]
        notes = [s.call("remember", {"kind": "learning", "text": f"concurrent note {i}"}) for i in range(10)]
        await asyncio.gather(*writes, *reads, *notes)
        g = await s.call("read_graph", {})
        check(sum(1 for e in g["entities"] if e["name"].startswith("c")) == 30, g)
        ls = await s.call("list", {"kinds": ["learning"], "limit": 100})
        check(len(ls["records"]) == 10, ls)
    print("ok concurrent calls")


async def two_servers_one_file():
    async with Server() as a, Server() as b:
        await asyncio.gather(
            *[a.call("create_entities", {"entities": [{"name": f"a{i}", "entityType": "t", "observations": []}]}) for i in range(15)],
            *[b.call("create_entities", {"entities": [{"name": f"b{i}", "entityType": "t", "observations": []}]}) for i in range(15)],
        )
        # Each sees the other's writes.
        check(len((await a.call("search_nodes", {"query": "b1"}))["entities"]) >= 1, "a sees b")
        check(len((await b.call("search_nodes", {"query": "a1"}))["entities"]) >= 1, "b sees a")
    print("ok two servers on one file")


async def restart():
    async with Server() as s:
        g = await s.call("read_graph", {})
        names = {e["name"] for e in g["entities"]}
        check({"HttpEmbedder", "reqwest", "c0", "c29", "a14", "b14"} <= names, names)
        hits = await s.call("recall", {"query": "Retry policy", "kinds": ["decision"]})
        check("Retry-After" in hits["hits"][0]["text"], hits)
    print("ok restart")


async def sigkill_after_acknowledged_writes():
    acked = []
    async with Server(ns="crash") as s:
        for i in range(20):
            await s.call("create_entities", {"entities": [{"name": f"k{i}", "entityType": "t", "observations": [f"obs {i}"]}]})
            acked.append(f"k{i}")
        r = await s.call("remember", {"kind": "learning", "text": "written just before the kill"})
        os.kill(s.pid, signal.SIGKILL)
        await asyncio.sleep(0.2)
    async with Server(ns="crash") as s:
        g = await s.call("read_graph", {})
        names = [e["name"] for e in g["entities"]]
        check(names == acked, names)
        check(all(e["observations"] for e in g["entities"]), g)
        got = await s.call("get", {"id": r["id"]})
        check(got["record"]["text"] == "written just before the kill", got)
    print("ok SIGKILL after acknowledged writes")


async def main():
    await realistic_session()
    await agent_memory()
    await high_level_client()
    await resource_subscriptions()
    await concurrent_calls()
    await two_servers_one_file()
    await restart()
    await sigkill_after_acknowledged_writes()


asyncio.run(main())
