"""MCP over Streamable HTTP at `mnemon serve`'s /mcp, driven by the official MCP Python SDK.

Run by crates/cli/tests/mcp_sdk.rs as `python http_session.py MNEMON_EXE WORK_DIR`, with the
SDK installed by scripts/fetch-mcp-sdk.sh (pinned, hash-checked). Exits non-zero on the first
failed check. Steps: the same tools as on stdio; a session in the namespace `?ns=` names,
writing and reading; a read-only token refused a write tool; a token outside the namespace,
no token, and a foreign Origin refused; the REST API sees what MCP wrote.
"""

import asyncio
import json
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request

import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

EXE, WORK = sys.argv[1], sys.argv[2]
DB = os.path.join(WORK, "served.redb")


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def mnemon(*args):
    out = subprocess.run([EXE, "--db", DB, *args], capture_output=True, text=True, check=True)
    return out.stdout.strip()


def token(name, ns, scope):
    return json.loads(mnemon("--json", "token", "create", "--name", name, "--allow-ns", ns, "--scope", scope))["token"]


class Session:
    """An SDK session on /mcp with a token."""

    def __init__(self, url, tok, headers=None):
        self.url, self.tok, self.headers = url, tok, headers or {}

    async def __aenter__(self):
        headers = dict(self.headers)
        if self.tok:
            headers["Authorization"] = f"Bearer {self.tok}"
        self.client = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=60.0))
        self.transport = streamable_http_client(self.url, http_client=self.client)
        read, write = await self.transport.__aenter__()
        self.session = ClientSession(read, write)
        await self.session.__aenter__()
        await self.session.initialize()
        return self

    async def __aexit__(self, *exc):
        await self.session.__aexit__(*exc)
        await self.transport.__aexit__(*exc)
        await self.client.aclose()

    async def call(self, tool, args):
        res = await self.session.call_tool(tool, args)
        text = res.content[0].text if res.content else ""
        check(not res.is_error, f"{tool} {args}: {text}")
        return res.structured_content

    async def error(self, tool, args):
        res = await self.session.call_tool(tool, args)
        check(res.is_error, f"{tool} {args} should fail")
        return res.content[0].text


def status(url, tok, headers=None):
    """The HTTP status of an MCP `initialize` posted to `url`."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}).encode()
    h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", **(headers or {})}
    if tok:
        h["Authorization"] = f"Bearer {tok}"
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=body, headers=h), timeout=30) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


async def main():
    writer = token("writer", "project:*", "write")
    reader = token("reader", "project:*", "read")
    server = subprocess.Popen([EXE, "--db", DB, "serve", "--listen", "127.0.0.1:0"],
                              stderr=subprocess.PIPE, text=True)
    try:
        line = server.stderr.readline()
        addr = line.split("http://")[1].split()[0]
        url = f"http://{addr}/mcp?ns=project:web"

        async with Session(url, writer) as s:
            tools = [t.name for t in (await s.session.list_tools()).tools]
            for name in ["create_entities", "read_graph", "remember", "recall", "context", "task"]:
                check(name in tools, f"{name} in {tools}")
            made = await s.call("remember", {"kind": "gotcha", "data": {
                "title": "Origin header", "problem": "browsers send Origin", "solution": "check it"}})
            await s.call("create_entities", {"entities": [{"name": "axum", "entityType": "crate", "observations": ["serves /mcp"]}]})
            hits = await s.call("recall", {"query": "origin header browsers"})
            check(hits["hits"][0]["id"] == made["id"], hits)
            graph = await s.call("read_graph", {})
            check([e["name"] for e in graph["entities"]] == ["axum"], graph)
            # The session's namespace is the one ?ns= named; another is out of the token's reach.
            err = await s.error("remember", {"kind": "learning", "text": "x", "namespace": "agent:other"})
            check("outside" in err or "scope" in err, err)
        print("ok session over HTTP")

        async with Session(url, reader) as s:
            err = await s.error("remember", {"kind": "learning", "text": "x"})
            check("scope" in err, err)
            hits = await s.call("recall", {"query": "origin header"})
            check(len(hits["hits"]) == 1, hits)
        print("ok read-only token")

        check(status(url, writer) == 200, "a token reaching the namespace starts a session")
        check(status(url, None) == 401, "no token")
        check(status(url, "mnemon_0000000000000000_" + "0" * 64) == 401, "unknown token")
        check(status(f"http://{addr}/mcp?ns=agent:x", writer) == 403, "namespace outside the token")
        check(status(url, writer, {"Origin": "https://evil.example"}) == 403, "foreign origin")
        check(status(url, writer, {"Host": "evil.example"}) == 403, "foreign host")
        print("ok refusals")

        # What MCP wrote, the REST API reads.
        req = urllib.request.Request(f"http://{addr}/v1/ns/project:web/records?kinds=gotcha",
                                     headers={"Authorization": f"Bearer {reader}"})
        with urllib.request.urlopen(req, timeout=30) as r:
            records = json.load(r)["records"]
        check(len(records) == 1 and records[0]["id"] == made["id"], records)
        print("ok REST sees MCP's writes")
    finally:
        server.send_signal(signal.SIGTERM)
        code = server.wait(timeout=30)
        check(code == 0, f"server exit code {code}: {server.stderr.read()}")
    print("ok graceful stop")


asyncio.run(main())
