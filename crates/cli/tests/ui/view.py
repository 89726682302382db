"""The web view in a real browser (Debian's chromium, driven by Playwright): what a person
running agents sees and does. Run by crates/cli/tests/ui.rs:

    view.py MNEMON_BINARY WORK_DIR

Every step prints `ok: <step>`; any failure raises. Screenshots of the main pages go to
$MNEMON_UI_SHOTS (docs/ui/ for the docs) or WORK_DIR/shots.
"""

import datetime
import json
import os
import re
import subprocess
import sys
import time
import urllib.parse
import urllib.request

from playwright.sync_api import sync_playwright

MNEMON, WORK = sys.argv[1], sys.argv[2]
SHOTS = os.environ.get("MNEMON_UI_SHOTS") or os.path.join(WORK, "shots")
os.makedirs(SHOTS, exist_ok=True)
DB = os.path.join(WORK, "memory.redb")
ENV = {k: v for k, v in os.environ.items() if not k.startswith("MNEMON_")}
ENV.update(MNEMON_DB=DB, MNEMON_MINILM_DIR=os.path.join(WORK, "model"))
NS = "project:demo"
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


def step(name):
    print(f"ok: {name}", flush=True)


def cli(*args):
    r = subprocess.run([MNEMON, "--json", *args], env=ENV, capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError(f"mnemon {args}: {r.stderr}")
    return json.loads(r.stdout) if r.stdout.strip() else None


def shot(page, name):
    page.screenshot(path=os.path.join(SHOTS, f"{name}.png"), full_page=True)


def main_text(page):
    return page.inner_text("main")


def start(args, marker):
    """A `mnemon` child and the URL it announces (stdout for `ui`, stderr for `serve`)."""
    proc = subprocess.Popen([MNEMON, *args], env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    stream = proc.stdout if marker == "stdout" else proc.stderr
    deadline = time.time() + 30
    while time.time() < deadline:
        line = stream.readline()
        if not line:
            raise AssertionError(f"mnemon {args} stopped: {proc.stderr.read()}")
        m = re.search(r"https?://[^\s]+", line)
        if m and (marker == "stdout" or "listening on" in line):
            return proc, m.group(0).rstrip(")")
    raise AssertionError(f"mnemon {args} did not start")


def main():
    cli("init")
    # A known history: a decision made in January and superseded on 1 March, a task, and an
    # entry whose text is markup.
    old = cli("--ns", NS, "add", "decision", "--data", json.dumps({"title": "Store agent memory in SQLite", "status": "accepted"}),
              "--valid-from", "2024-01-10", "--tag", "storage")["id"]
    cli("--ns", NS, "supersede", old, "--data", json.dumps({"title": "Store agent memory in redb"}), "--at", "2024-03-01")
    xss = "<script>window.__xss = 1</script><img src=x onerror=\"window.__xss = 2\"> bounded queues need backpressure"
    cli("--ns", NS, "add", "learning", "--data", json.dumps({"text": xss}), "--importance", "3", "--tag", "perf")
    task = cli("--ns", NS, "add", "task", "--data", json.dumps({"title": "Benchmark inserts", "priority": "high"}))["id"]
    cli("--ns", "global", "add", "learning", "--data", json.dumps({"text": "Always run cargo fmt"}))
    cli("--ns", "agent:dev-1", "add", "preference", "--data", json.dumps({"key": "style", "text": "short answers"}))
    time.sleep(0.01)
    began = datetime.datetime.now(datetime.timezone.utc).isoformat().replace("+00:00", "Z")
    time.sleep(0.01)

    ui, login = start(["ui"], "stdout")
    base = login.split("/ui/")[0]
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1200, "height": 850})
            dialogs = []
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            errors = []
            page.on("pageerror", lambda e: errors.append(str(e)))

            # Sign in with the one-time link; the link does not work twice.
            page.goto(login)
            assert page.url == f"{base}/ui/", page.url
            text = main_text(page)
            for ns in ("global", NS, "agent:dev-1"):
                assert ns in text, text
            shot(page, "namespaces")
            other = browser.new_context().new_page()
            other.goto(login)
            assert "used already" in other.inner_text("main"), other.inner_text("main")
            other.close()
            step("signed in once, the namespaces listed")

            # A namespace in sections; markup in memory shows as text, never runs.
            page.click(f"a:text-is('{NS}')")
            assert "Learnings" in main_text(page) and "Decisions" in main_text(page)
            assert page.get_by_text("<script>window.__xss = 1</script>", exact=False).count() == 1
            assert page.evaluate("window.__xss") is None and not dialogs, dialogs
            shot(page, "namespace")
            step("a <script> entry stays text")

            # Add an entry through the form.
            page.select_option("select[name=kind]", "learning")
            page.fill("textarea[name=text]", "Added from the browser")
            page.fill("#add input[name=tags]", "ui, browser")
            page.click("#add button[type=submit]")
            page.wait_for_url(re.compile(r"/r/"))
            assert page.inner_text("h1") == "Added from the browser"
            added = page.url
            step("add")

            # Edit it: a new revision; the diff of the two shows what changed.
            page.click("summary:text('Edit')")
            fields = json.loads(page.input_value("textarea[name=fields]"))
            fields["text"] = "Edited in the browser"
            page.fill("textarea[name=fields]", json.dumps(fields))
            page.click("form[action$='/revise'] button[type=submit]")
            page.wait_for_load_state()
            assert page.inner_text("h1") == "Edited in the browser"
            assert page.locator("ol.timeline li").count() == 2
            diff = page.inner_text("table.diff")
            assert "Added from the browser" in diff and "Edited in the browser" in diff, diff
            shot(page, "record")
            step("edit, with the difference of two revisions")

            # Supersede it: a new record, and a chain of two.
            page.click("summary:text('Supersede')")
            page.fill("form[action$='/supersede'] textarea[name=text]", "Superseded from the browser")
            page.click("form[action$='/supersede'] button[type=submit]")
            page.wait_for_load_state()
            assert page.inner_text("h1") == "Superseded from the browser"
            assert page.locator("ol.chain li").count() == 2
            step("supersede")

            # Retire the task.
            page.goto(f"{base}/ui/ns/{NS}/r/{task}")
            page.click("form[action$='/retire'] button")
            page.wait_for_load_state()
            assert "retired" in main_text(page), main_text(page)
            step("retire")

            # Time travel: valid at 1 February 2024, the SQLite decision was accepted; the
            # redb one did not hold yet. The URL holds the pair.
            page.goto(f"{base}/ui/ns/{NS}")
            page.fill("#as_of", "2024-02-01")
            page.click("form.time button[type=submit]")
            page.wait_for_url(re.compile(r"as_of=2024-02-01"))
            text = main_text(page)
            assert "Store agent memory in SQLite" in text and "redb" not in text, text
            sqlite = page.locator("li.entry", has_text="Store agent memory in SQLite")
            badges = sqlite.locator(".badge").all_inner_texts()
            assert badges == ["accepted", "active"], badges
            shot(page, "as-of-february")
            past = page.url
            fresh = browser.new_context().new_page()
            fresh.goto(past)
            assert "/ui/login" in fresh.url  # a link needs a session; signed in, it shows the same past
            fresh.close()
            # Known at a transaction time before the browser's writes: they are not there.
            page.fill("#as_of", "")
            page.fill("#known_at", began)
            page.click("form.time button[type=submit]")
            page.wait_for_load_state()
            text = main_text(page)
            assert "Superseded from the browser" not in text and "Benchmark inserts" in text, text
            step("time controls on both axes")

            # The slider moves valid time.
            page.goto(f"{base}/ui/ns/{NS}")
            page.eval_on_selector("#slider", "s => { s.value = s.min; s.dispatchEvent(new Event('change')); }")
            page.wait_for_url(re.compile(r"as_of="))
            step("the slider")

            # Search, with scores and their explanation.
            page.goto(f"{base}/ui/ns/{NS}")
            page.fill("#q", "backpressure queues")
            page.click("form.search button")
            page.wait_for_load_state()
            hits = page.inner_text("ol.hits")
            assert "bounded queues need backpressure" in hits and "score" in hits and "words: rank 1" in hits, hits
            shot(page, "search")
            step("search")

            # Live: an agent writes from another process; the open page shows it, no reload.
            page.goto(f"{base}/ui/ns/{NS}")
            page.wait_for_function("document.body.dataset.connected === '1'", timeout=10000)
            page.evaluate("window.__same_page = true")
            t0 = time.time()
            cli("--ns", NS, "add", "gotcha", "--data", json.dumps({"title": "Written by an agent while you watch", "severity": "high"}))
            page.wait_for_selector("text=Written by an agent while you watch", timeout=10000)
            live_ms = (time.time() - t0) * 1000
            assert page.evaluate("window.__same_page") is True, "the page was reloaded"
            step(f"an agent's write appears live ({live_ms:.0f} ms)")

            # What changed since the history began: the browser's and the agent's writes.
            page.goto(f"{base}/ui/ns/{NS}/changes?from={urllib.parse.quote(began)}")
            summary = page.inner_text("p.summary")
            for part in ("6 change(s)", "2 insert", "1 revise", "1 supersede,", "1 superseded", "1 retire"):
                assert part in summary, summary
            shot(page, "changes")
            step("what changed")

            # Forget, after a confirmation naming what is erased.
            page.goto(added)
            page.click("a:text('Forget')")
            assert "erases every revision (3)" in main_text(page), main_text(page)
            page.click("button.danger")
            page.wait_for_url(re.compile(rf"/ui/ns/{re.escape(NS)}$"))
            page.goto(added)
            assert page.locator("section.problem").count() == 1
            step("forget, after a confirmation")

            # A narrow window still reads.
            page.set_viewport_size({"width": 390, "height": 800})
            page.goto(f"{base}/ui/ns/{NS}")
            assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
            shot(page, "narrow")
            step("narrow window")
            assert not errors, errors
            browser.close()
    finally:
        ui.terminate()
        ui.wait(timeout=30)

    # A server: a read token gets a view without write controls, and its writes are refused.
    read = cli("token", "create", "--name", "reader", "--allow-ns", "project:*", "--scope", "read")["token"]
    write = cli("token", "create", "--name", "writer", "--allow-ns", "project:*", "--scope", "write")["token"]
    server, url = start(["serve", "--listen", "127.0.0.1:0"], "stderr")
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1200, "height": 850})
            page.goto(f"{url}/ui/")
            assert "/ui/login" in page.url
            page.fill("input[name=token]", "mnemon_0000000000000000_wrong")
            page.click("button[type=submit]")
            assert "not valid" in main_text(page)
            page.fill("input[name=token]", read)
            page.click("button[type=submit]")
            page.wait_for_url(f"{url}/ui/")
            text = main_text(page)
            assert NS in text and "global" not in text and "agent:dev-1" not in text, text
            page.click(f"a:text-is('{NS}')")
            assert page.locator("main form[method=post]").count() == 0
            assert "reads only" in main_text(page)
            shot(page, "read-only")
            csrf = page.input_value("form.logout input[name=csrf]")
            status = page.evaluate(
                """async ([ns, csrf]) => (await fetch('/ui/ns/' + ns + '/add', {method: 'POST',
                    headers: {'Content-Type': 'application/x-www-form-urlencoded'},
                    body: 'csrf=' + csrf + '&kind=learning&text=forged'})).status""",
                [NS, csrf],
            )
            assert status == 403, status
            listed = subprocess.run([MNEMON, "--ns", NS, "list"], env=ENV, capture_output=True, text=True, check=True)
            assert "forged" not in listed.stdout and "Superseded from the browser" in listed.stdout
            # Out of the token's reach: refused.
            page.goto(f"{url}/ui/ns/global")
            assert page.locator("section.problem").count() == 1
            step("a read-only token finds no way to write")

            other = browser.new_page()
            other.goto(f"{url}/ui/login")
            other.fill("input[name=token]", write)
            other.click("button[type=submit]")
            other.goto(f"{url}/ui/ns/{NS}")
            assert other.locator("#add form").count() == 1
            # A form posted without the session's CSRF token is refused.
            status = other.evaluate(
                """async (ns) => (await fetch('/ui/ns/' + ns + '/add', {method: 'POST',
                    headers: {'Content-Type': 'application/x-www-form-urlencoded'},
                    body: 'csrf=nope&kind=learning&text=forged'})).status""",
                NS,
            )
            assert status == 403, status
            step("a write token writes; CSRF is checked")
            browser.close()
        # From another origin: refused by the server before any page.
        req = urllib.request.Request(f"{url}/ui/", headers={"Origin": "http://evil.example"})
        try:
            urllib.request.urlopen(req)
            raise AssertionError("a foreign origin was served")
        except urllib.error.HTTPError as e:
            assert e.code == 403, e.code
        head = urllib.request.urlopen(f"{url}/ui/login")
        csp = head.headers["Content-Security-Policy"]
        assert "script-src 'self'" in csp and "unsafe-inline" not in csp, csp
        step("Origin and Content-Security-Policy")
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
