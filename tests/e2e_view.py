#!/usr/bin/env python3
"""End-to-end tests of the recording as a picture (docs/view.md), in a real browser.

Usage: e2e_view.py VXREPLAY BUILD_ROOT SOURCE_ROOT CHECK ARTIFACT_DIR
  CHECK is one of:
    pages   a recording of each example kernel named below and of a host program with two launches:
            `vxreplay view` writes a page that Debian's chromium (headless, driven by selenium and
            chromedriver) opens; its warp rows are the recording's warp slots, its marks are
            `info checkpoints`, a click on a mark shows the stop's source line, registers and C
            variables as `goto N` shows them at the prompt; the page logs no error. A screenshot of
            each page is kept in ARTIFACT_DIR.
    export  `vxreplay export --trace`: Chrome Trace Event JSON with the same rows and marks
    errors  a directory that is no recording, a damaged recording, an unwritable page: clear
            errors with docs/cli.md's statuses
    nondet  `vxreplay diff --html`: the two runs' rows, the first divergence marked on both where
            the text diff puts it, with the write behind each read; `run --races --html`: an arc
            per race between its two accesses; `sweep --html`: the outcome classes and the first
            divergence between the two largest
    serve   `vxreplay view --serve`: a click on a warp's row between two marks shows the state
            there, the registers and C variables as `goto LAUNCH:INSTRUCTION` shows them at the
            prompt (and another lane's, as `focus` shows them), and memory as `x` shows it; requests for points outside the recording and
            malformed requests get errors and the server goes on; SIGINT ends it with status 0
    origin  `vxreplay view --serve` of offbyone stopped after its stores: GET /origin answers what
            `goto L:I` then `origin EXPR` answer at the prompt (table[4]: thread 0's store at the
            loop, 0x00000004 over 0x00000064), and refuses bad questions; in the page, a click on a
            register's or a C variable's value, on a byte of memory, and the form's expression show
            who wrote it under the stop panel (or why that cannot be said) with a marker at each
            writer's point on its row, and a click on a marker opens the writer's point; the page
            written with -o has no clickable values
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

from e2e_common import EXIT_BAD_INPUT, EXIT_USAGE, check, failures, line_of, run_cmd, stop_server

VX, BUILD, SRC, CHECK, ARTIFACTS = sys.argv[1:6]
EXAMPLES = os.path.join(BUILD, "examples")


def run(cmd, timeout=300):
    return run_cmd(cmd, timeout=timeout)


# (name, the kernel's line to stop at, how many continues): stops in each kernel.
KERNELS = [
    ("sgemm", "for (uint32_t k = 0; k < T; k++) acc +=", 3),
    ("reduce", "__syncthreads", 2),
    ("histogram", "atomic", 2),
    ("diverge", "if", 2),
]


def record_kernel(tmp, name, text, continues):
    src = os.path.join(SRC, "examples", name + ".c")
    line = line_of(src, text)
    db = os.path.join(tmp, name)
    cmd = [VX, "run", os.path.join(EXAMPLES, name + ".elf"), "--db", db, "--batch", "-ex", f"break {name}.c:{line}"]
    cmd += ["-ex", "continue"] * continues + ["-ex", "checkpoint", "-ex", "delete", "-ex", "continue"]
    rc, out, err = run(cmd)
    check(rc == 0, f"{name}: the recording session: status {rc}: {err[-300:]!r}")
    subdirs = [os.path.join(db, d) for d in os.listdir(db)] if os.path.isdir(db) else []
    return subdirs[0] if subdirs else db


# Every other example: a recording run to its end (or its device stop), its page's rows and marks.
OTHER_KERNELS = ["assert", "branchy", "cta_race", "cycles", "fault", "hang", "hello", "legacy_tls", "lmem_race",
                 "racy", "rare", "saxpy", "vecadd"]


def check_plain_page(driver, name, tmp):
    from selenium.webdriver.common.by import By
    db = os.path.join(tmp, "plain-" + name)
    rc, _, err = run([VX, "run", os.path.join(EXAMPLES, name + ".elf"), "--db", db, "--watchdog", "200000", "--batch",
                      "-ex", "continue"])
    check(rc < 64 or rc == 66, f"{name}: the recording session: status {rc}: {err[-300:]!r}")
    if not check(os.path.isdir(db) and os.listdir(db), f"{name}: a recording"):
        return
    rec = os.path.join(db, os.listdir(db)[0])
    page, trace_file = os.path.join(tmp, name + ".html"), os.path.join(tmp, name + ".json")
    rc, _, err = run([VX, "view", rec, "-o", page])
    rc2, _, err2 = run([VX, "export", rec, "--trace", trace_file])
    if not check(rc == 0 and rc2 == 0, f"{name}: view {rc} {err[-200:]!r}, export {rc2} {err2[-200:]!r}"):
        return
    with open(trace_file) as f:
        slots = warp_slots(json.load(f))
    marks = info_checkpoints(rec, (0, 66))
    check(open_page(driver, page), f"{name}: the page draws")
    rows = driver.find_elements(By.CSS_SELECTOR, ".row-label")
    check(len(rows) == len(slots) > 0, f"{name}: {len(rows)} warp rows on the page, the recording has {len(slots)}")
    els = driver.find_elements(By.CSS_SELECTOR, "#marks .mark")
    check(len(els) == len(marks), f"{name}: {len(els)} marks on the page, info checkpoints lists {len(marks)}")
    keep(driver, name)


def record_host(tmp):
    prog = os.path.join(EXAMPLES, "host", "pipeline")
    db = os.path.join(tmp, "host")
    cmd = [VX, "run", "--db", db, "--batch", "-ex", "break scale", "-ex", "continue", "-ex", "continue", "-ex",
           "delete", "-ex", "continue", "--", prog]
    rc, out, err = run(cmd)
    check(rc == 0, f"pipeline: the recording session: status {rc}: {err[-300:]!r}")
    subdirs = [os.path.join(db, d) for d in os.listdir(db)] if os.path.isdir(db) else []
    return subdirs[0] if subdirs else db


def info_checkpoints(rec, statuses=(0,)):
    """The recording's marks as `info checkpoints` lists them (statuses: what replay may answer: a
    recording that ended in a device stop replays to it, 66)."""
    rc, out, err = run([VX, "replay", rec, "--batch", "--json", "-ex", "info checkpoints"])
    check(rc in statuses, f"replay {rec}: status {rc}: {err[-300:]!r}")
    marks = []
    for line in out.splitlines():
        e = json.loads(line)
        if e.get("command") == "info checkpoints":
            marks = e["checkpoints"]
    return marks


def prompt_answers(rec):
    """What the prompt says of the recording: its marks, and for each its stop, locals, registers."""
    marks = info_checkpoints(rec)
    answers = {}
    for m in marks:
        n = m["number"]
        rc, out, err = run([VX, "replay", rec, "--batch", "--json", "-ex", f"goto {n}", "-ex", "info locals",
                            "-ex", "info args", "-ex", "info registers"])
        stop, locals_, args, regs = None, [], [], {}
        for line in out.splitlines():
            e = json.loads(line)
            if e.get("event") == "stop":
                stop = e
            if e.get("command") == "info locals":
                locals_ = e.get("variables", [])
            if e.get("command") == "info args":
                args = e.get("variables", [])
            if e.get("command") == "info registers":
                regs = e.get("registers", {})
        answers[n] = (stop, locals_, args, regs)
    return marks, answers


def warp_slots(trace):
    return {(e["pid"], e["tid"]) for e in trace["traceEvents"] if e.get("ph") == "X"}


def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    o = Options()
    for a in ["--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,1000", "--disable-dev-shm-usage"]:
        o.add_argument(a)
    o.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    o.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(shutil.which("chromedriver") or "/usr/bin/chromedriver"), options=o)


def open_page(driver, url):
    """Opens a page (a file's path, or an http URL) and waits until it has drawn; False when it never did."""
    driver.get(url if url.startswith("http") else "file://" + url)
    for _ in range(50):
        if driver.execute_script("return window.vxreplayView && window.vxreplayView.ready"):
            return True
        time.sleep(0.1)
    return False


def started_browser():
    """The browser, or None with the failure said."""
    try:
        return browser()
    except Exception as e:  # noqa: BLE001 (the reason is what the failure says)
        check(False, f"cannot start chromium through selenium (scripts/test.sh installs them): {e}")
        return None


def keep(driver, name, fit=True):
    """A screenshot of the page as a test artifact; the page logged no error."""
    from selenium.webdriver.common.by import By
    os.makedirs(ARTIFACTS, exist_ok=True)
    if fit:
        driver.find_element(By.ID, "fit").click()
    driver.save_screenshot(os.path.join(ARTIFACTS, f"view-{name}.png"))
    errors = [l for l in driver.get_log("browser") if l.get("level") == "SEVERE"]
    check(not errors, f"{name}: the page logged errors: {errors}")


def check_page(driver, name, rec, tmp):
    from selenium.webdriver.common.by import By
    page = os.path.join(tmp, name + ".html")
    rc, out, err = run([VX, "view", rec, "-o", page])
    if not check(rc == 0 and os.path.exists(page), f"{name}: view: status {rc}: {err[-300:]!r}"):
        return
    with open(page) as f:
        html = f.read()
    check("http://" not in html and "https://" not in html, f"{name}: the page loads nothing from the network")
    trace_file = os.path.join(tmp, name + ".json")
    rc, out, err = run([VX, "export", rec, "--trace", trace_file])
    check(rc == 0, f"{name}: export: status {rc}: {err[-300:]!r}")
    with open(trace_file) as f:
        trace = json.load(f)
    slots = {tid for (_, tid) in warp_slots(trace)}
    marks, answers = prompt_answers(rec)
    check(len(marks) >= 2, f"{name}: the recording has {len(marks)} marks (the session stopped and marked)")

    check(open_page(driver, page), f"{name}: the page draws")
    rows = driver.find_elements(By.CSS_SELECTOR, ".row-label")
    check(len(rows) == len(slots) and len(rows) > 0,
          f"{name}: {len(rows)} warp rows on the page, the recording has {len(slots)} warp slots")
    els = driver.find_elements(By.CSS_SELECTOR, "#marks .mark")
    check(len(els) == len(marks), f"{name}: {len(els)} marks on the page, info checkpoints lists {len(marks)}")
    for m in marks:
        n = m["number"]
        stop, locals_, args, regs = answers[n]
        # Bring the mark into view (the list centers the timeline on it), then click the mark itself.
        driver.find_element(By.CSS_SELECTOR, f'#mark-list li[data-number="{n}"]').click()
        el = driver.find_element(By.CSS_SELECTOR, f'#marks .mark[data-number="{n}"]')
        driver.execute_script("arguments[0].classList.remove('selected')", el)
        el.click()
        check("selected" in el.get_attribute("class"), f"{name}: mark {n} is selected after a click on it")
        title = driver.find_element(By.ID, "stop-title").text
        check(title.startswith(f"#{n} "), f"{name}: mark {n}: the pane shows {title!r}")
        if stop and stop.get("file"):
            where = driver.find_element(By.ID, "stop-where").text
            check(f"{stop['file']}:{stop['line']}" in where,
                  f"{name}: mark {n}: the pane says {where!r}, goto {n} stops at {stop['file']}:{stop['line']}")
            current = driver.find_elements(By.CSS_SELECTOR, "#stop-source div.current")
            check(len(current) == 1 and current[0].get_attribute("data-line") == str(stop["line"]),
                  f"{name}: mark {n}: the source pane highlights line {stop['line']}")
        for table, want_list in (("locals", locals_), ("args", args)):
            cells = driver.find_elements(By.CSS_SELECTOR, f"#{table} tr")
            shown = {r.find_elements(By.TAG_NAME, "td")[0].text: r.find_elements(By.TAG_NAME, "td")[1].text
                     for r in cells if r.find_elements(By.TAG_NAME, "td")}
            want = {v["name"]: v["text"] for v in want_list}
            check(shown == want, f"{name}: mark {n}: {table} {shown} on the page, {want} at the prompt")
        if regs:
            cells = driver.find_elements(By.CSS_SELECTOR, "#registers tr")
            shown = {r.find_elements(By.TAG_NAME, "td")[0].text: int(r.find_elements(By.TAG_NAME, "td")[1].text, 16)
                     for r in cells if r.find_elements(By.TAG_NAME, "td")}
            check(shown == {k: v & 0xFFFFFFFF for k, v in regs.items()},
                  f"{name}: mark {n}: registers on the page differ from info registers at the prompt")
        reopen = driver.find_element(By.ID, "reopen").text
        check(f"goto {n}" in reopen and rec in reopen, f"{name}: mark {n}: the reopen command is {reopen!r}")
    # Console output: the lines the recording holds, each marked by the point it is known to be out.
    printed = [e["name"] for e in trace["traceEvents"] if e.get("cat") == "console"]
    driver.find_element(By.ID, "fit").click()
    consoles = driver.find_elements(By.CSS_SELECTOR, ".console-mark")
    check(sum(int(c.get_attribute("data-lines")) for c in consoles) == len(printed),
          f"{name}: {len(consoles)} console markers for the {len(printed)} lines the recording holds")
    if consoles:
        from selenium.webdriver.common.action_chains import ActionChains
        ActionChains(driver).move_to_element(consoles[-1]).perform()
        tip = driver.find_element(By.ID, "tooltip").text
        check(printed[-1] in tip, f"{name}: hovering the last console marker shows {tip!r}, not {printed[-1]!r}")
    if name == "reduce":
        check(any("total" in p for p in printed), f"reduce: its printed total is among the console lines {printed}")
    keep(driver, name, fit=False)


def check_pages():
    driver = started_browser()
    if not driver:
        return
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for name, text, continues in KERNELS:
                check_page(driver, name, record_kernel(tmp, name, text, continues), tmp)
            check_page(driver, "pipeline", record_host(tmp), tmp)
            for name in OTHER_KERNELS:
                check_plain_page(driver, name, tmp)
    finally:
        driver.quit()


def check_export():
    with tempfile.TemporaryDirectory() as tmp:
        rec = record_kernel(tmp, "sgemm", "for (uint32_t k = 0; k < T; k++) acc +=", 2)
        # Opened at the prompt first: the session derives the stops recorded by their marks alone
        # (docs/store.md, "Stops") and keeps the checkpoints and timeline samples it takes, so the
        # export and the page below read the same recording.
        marks, _ = prompt_answers(rec)
        out = os.path.join(tmp, "t.json")
        rc, _, err = run([VX, "export", rec, "--trace", out])
        if not check(rc == 0, f"export: status {rc}: {err!r}"):
            return
        with open(out) as f:
            trace = json.load(f)
        events = trace["traceEvents"]
        xs = [e for e in events if e["ph"] == "X"]
        check(len(xs) > 0 and all(e["dur"] > 0 and e["name"] in ("running", "diverged", "barrier", "spawn", "ready")
                                  for e in xs), "export: warp intervals with a state and a length")
        names = {e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
        check(names == {"launch 1 (sgemm)"}, f"export: the launches are {names}")
        stops = [e for e in events if e["ph"] == "i" and e["cat"] == "stop"]
        check(len(stops) == len(marks), f"export: {len(stops)} stops, info checkpoints lists {len(marks)}")
        check(all("sgemm.c:" in e["name"] for e in stops if "breakpoint" in e["name"]),
              f"export: the stops name their line: {[e['name'] for e in stops]}")
        # The format's documented fields (no reader of the format runs offline here: Debian packages none,
        # and the perfetto Python package needs the network): every event has ph, name, pid; X has tid,
        # ts and dur in microseconds; i has ts and a scope g, p or t; M names a process or a thread.
        for e in events:
            ok = isinstance(e.get("name"), str) and isinstance(e.get("pid"), int) and e.get("ph") in ("X", "i", "M")
            if e.get("ph") == "X":
                ok = ok and isinstance(e.get("tid"), int) and e.get("ts", -1) >= 0 and e.get("dur", -1) >= 0
            elif e.get("ph") == "i":
                ok = ok and e.get("ts", -1) >= 0 and e.get("s") in ("g", "p", "t")
            elif e.get("ph") == "M":
                ok = ok and e["name"] in ("process_name", "thread_name") and isinstance(e.get("args", {}).get("name"), str)
            if not check(ok, f"export: an event without the format's fields: {e}"):
                break
        # Every warp, state and mark accounted for: the trace's intervals are the page's, one for one.
        page = os.path.join(tmp, "p.html")
        rc, _, err = run([VX, "view", rec, "-o", page])
        if check(rc == 0, f"view: status {rc}: {err!r}"):
            with open(page) as f:
                html = f.read()
            start = html.index('<script id="data" type="application/json">') + len('<script id="data" type="application/json">')
            data = json.loads(html[start:html.index("</script>", start)].replace("<\\/", "</"))
            want = set()
            for launch in data["launches"]:
                for r in launch["rows"]:
                    for iv in r["iv"]:
                        want.add((launch["launch"], r["core"] * 1000 + r["slot"], iv[1] - iv[0], data["activities"][iv[2]]))
            got = {(e["pid"], e["tid"], e["dur"], e["name"]) for e in xs}
            check(got == want and len(xs) == sum(len(r["iv"]) for l in data["launches"] for r in l["rows"]),
                  f"export: {len(xs)} intervals in the trace, the page draws {len(want)}")
            threads = {(e["pid"], e["tid"]) for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
            check(threads == {(l["launch"], r["core"] * 1000 + r["slot"]) for l in data["launches"] for r in l["rows"]},
                  "export: one named thread per warp row of the page")
            check(len(stops) == len(data["marks"]), f"export: {len(stops)} stops, the page has {len(data['marks'])} marks")
        rc, _, err = run([VX, "export", rec])
        check(rc == EXIT_USAGE, f"export without --trace: status {rc}, want {EXIT_USAGE}")


def check_errors():
    with tempfile.TemporaryDirectory() as tmp:
        rc, _, err = run([VX, "view", os.path.join(tmp, "nothing")])
        check(rc == EXIT_BAD_INPUT and "nothing" in err, f"view of no recording: status {rc}: {err!r}")
        rec = record_kernel(tmp, "sgemm", "for (uint32_t k = 0; k < T; k++) acc +=", 1)
        rc, _, err = run([VX, "view", rec, "-o", os.path.join(tmp, "no-such-dir", "p.html")])
        check(rc == 74 and "cannot write the page" in err, f"view into a missing directory: status {rc}: {err!r}")
        # A damaged recording: the second half of data.mdb overwritten.
        data = os.path.join(rec, "data.mdb")
        with open(data, "r+b") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(size // 2)
            f.write(b"\xff" * (size - size // 2))
        rc, _, err = run([VX, "view", rec, "-o", os.path.join(tmp, "p.html")])
        check(rc == EXIT_BAD_INPUT and err.strip() != "", f"view of a damaged recording: status {rc}: {err!r}")


def prompt_at(rec, launch, instret, core, warp, lane, addr):
    """What the prompt shows at a point: the stop, the focus lane's registers and locals, memory."""
    rc, out, err = run([VX, "replay", rec, "--batch", "--json", "-ex", f"goto {launch}:{instret}", "-ex",
                        f"focus core {core} warp {warp} lane {lane}", "-ex", "info registers", "-ex", "info locals",
                        "-ex", f"x/16xb {addr}"])
    check(rc == 0, f"replay {rec} at {launch}:{instret}: status {rc}: {err[-300:]!r}")
    got = {"stop": None, "registers": {}, "locals": [], "memory": None}
    for line in out.splitlines():
        e = json.loads(line)
        if e.get("event") == "stop":
            got["stop"] = e
        elif e.get("event") == "error":
            check(False, f"the prompt at {launch}:{instret}: {e.get('message')}")
        elif e.get("command") == "info registers":
            got["registers"] = e.get("registers", {})
        elif e.get("command") == "info locals":
            got["locals"] = e.get("variables", [])
        elif e.get("command", "").startswith("x/"):
            got["memory"] = e.get("text")
    return got


def http_get(base, path):
    try:
        with urllib.request.urlopen(base + path, timeout=60) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def raw_request(port, data):
    with socket.create_connection(("127.0.0.1", port), timeout=30) as c:
        try:
            c.sendall(data)
            c.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # the server answered and closed before reading all of it (a request too large)
        out = b""
        while True:
            chunk = c.recv(4096)
            if not chunk:
                return out.decode(errors="replace")
            out += chunk


def opened_point(driver, tries):
    """The point the served page opened (its stop title), or its error, waiting up to tries/10 s."""
    from selenium.webdriver.common.by import By
    for _ in range(tries):
        found = driver.find_elements(By.CSS_SELECTOR, "#stop-title[data-instret], #point-error")
        if found:
            return found[0]
        time.sleep(0.1)
    return None


def check_served_page(driver, rec, base):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    marks, _ = prompt_answers(rec)
    # Two marks of one launch far enough apart that a click lands strictly between them.
    pairs = [(a, b) for a, b in zip(marks, marks[1:]) if a["launch"] == b["launch"] and b["instret"] - a["instret"] > 8]
    if not check(pairs, f"serve: the recording has two marks far apart: {marks}"):
        return
    a, b = pairs[0]
    if not check(open_page(driver, base), "serve: the served page draws"):
        return
    check(driver.execute_script("return window.vxreplayView.data.serve") is True, "serve: the page knows it is served")
    row = driver.execute_script("return window.vxreplayView.rows[0]")
    # The mark list centers the timeline on a mark, zoomed so that its neighbours stand apart.
    driver.find_element(By.CSS_SELECTOR, f'#mark-list li[data-number="{a["number"]}"]').click()
    mid = (a["instret"] + b["instret"]) // 2
    timeline = driver.find_element(By.ID, "timeline")
    x = driver.execute_script("return window.vxreplayView.xOf(arguments[0], arguments[1])", a["launch"], mid)
    y = driver.execute_script("return window.vxreplayView.yOf(arguments[0], arguments[1])", row["core"], row["slot"])
    size = timeline.size
    ActionChains(driver).move_to_element_with_offset(timeline, int(x - size["width"] / 2),
                                                     int(y - size["height"] / 2)).click().perform()
    title = opened_point(driver, 300)
    if not check(title is not None and title.get_attribute("id") == "stop-title",
                 f"serve: a click between marks {a['number']} and {b['number']} shows a point: "
                 f"{title.text if title else 'nothing'}"):
        return
    launch, instret = int(title.get_attribute("data-launch")), int(title.get_attribute("data-instret"))
    check(launch == a["launch"] and a["instret"] < instret < b["instret"],
          f"serve: the click went to {launch}:{instret}, between {a['instret']} and {b['instret']} of launch {a['launch']}")
    where = driver.find_element(By.ID, "stop-where").text
    lane = int(where.split("lane ")[1].split(" ")[0])
    core = int(where.split("core ")[1].split(",")[0])
    warp = int(where.split("warp ")[1].split(",")[0])
    regs = {r.find_elements(By.TAG_NAME, "td")[0].text: int(r.find_elements(By.TAG_NAME, "td")[1].text, 16)
            for r in driver.find_elements(By.CSS_SELECTOR, "#registers tr") if r.find_elements(By.TAG_NAME, "td")}
    locals_ = {r.find_elements(By.TAG_NAME, "td")[0].text: r.find_elements(By.TAG_NAME, "td")[1].text
               for r in driver.find_elements(By.CSS_SELECTOR, "#locals tr") if r.find_elements(By.TAG_NAME, "td")}
    pc = regs.get("pc", 0)  # memory there: the kernel's code, known and not zero
    want = prompt_at(rec, launch, instret, core, warp, lane, pc)
    check(want["stop"] is not None and want["stop"].get("instructions") == instret,
          f"serve: goto {launch}:{instret} at the prompt stops at {want['stop'] and want['stop'].get('instructions')}")
    check(regs and regs == {k: v & 0xFFFFFFFF for k, v in want["registers"].items()},
          f"serve: core {core} warp {warp} lane {lane} at {launch}:{instret}: the page shows registers {regs}, "
          f"the prompt {want['registers']}")
    check(locals_ == {v["name"]: v["text"] for v in want["locals"]},
          f"serve: locals {locals_} on the page, {want['locals']} at the prompt")
    if want["stop"] and want["stop"].get("file"):
        check(f"{want['stop']['file']}:{want['stop']['line']}" in where, f"serve: the page says {where!r}")
    reopen = driver.find_element(By.ID, "reopen").text
    check(f"goto {launch}:{instret}" in reopen and f"focus core {core} warp {warp} lane {lane}" in reopen,
          f"serve: the reopen command is {reopen!r}")
    # Another lane of the warp: its own C variables and registers, as `focus ... lane N` shows them.
    others = [b for b in driver.find_elements(By.CSS_SELECTOR, "#lanes button") if int(b.get_attribute("data-lane")) != lane]
    if check(others, f"serve: the pane offers the warp's other lanes (focus lane {lane})"):
        other = int(others[-1].get_attribute("data-lane"))
        others[-1].click()
        for _ in range(300):
            shown = driver.find_elements(By.ID, "stop-where")  # none while the pane waits for the server
            if shown and f"lane {other}" in shown[0].text:
                break
            time.sleep(0.1)
        regs_o = {r.find_elements(By.TAG_NAME, "td")[0].text: int(r.find_elements(By.TAG_NAME, "td")[1].text, 16)
                  for r in driver.find_elements(By.CSS_SELECTOR, "#registers tr") if r.find_elements(By.TAG_NAME, "td")}
        want_o = prompt_at(rec, launch, instret, core, warp, other, pc)
        check(regs_o == {k: v & 0xFFFFFFFF for k, v in want_o["registers"].items()},
              f"serve: lane {other}: the page shows registers {regs_o}, the prompt {want_o['registers']}")
    # Memory at that point, through the page's form.
    driver.find_element(By.ID, "memory-addr").send_keys(hex(pc))
    driver.find_element(By.ID, "memory-len").clear()
    driver.find_element(By.ID, "memory-len").send_keys("16")
    driver.find_element(By.CSS_SELECTOR, "#memory-form button").click()
    shown = ""
    for _ in range(300):
        shown = driver.find_element(By.ID, "memory").text
        if shown:
            break
        time.sleep(0.1)
    check(want["memory"] and shown.split() == want["memory"].split() and "0x00 0x00 0x00 0x00" not in shown,
          f"serve: memory at pc {hex(pc)}: the page shows {shown!r}, the prompt {want['memory']!r}")
    keep(driver, "serve", fit=False)


def check_serve():
    with tempfile.TemporaryDirectory() as tmp:
        rec = record_kernel(tmp, "sgemm", "for (uint32_t k = 0; k < T; k++) acc +=", 3)
        for args, why in ((["--serve", "1.2.3.4:0"], "not a loopback address"), (["--serve", "x"], "[HOST:]PORT"),
                          (["--serve", "0", "-o", os.path.join(tmp, "p.html")], "give one")):
            rc, _, err = run([VX, "view", rec] + args)
            check(rc == EXIT_USAGE and why in err, f"view {args}: status {rc}: {err!r}")
        server = subprocess.Popen([VX, "view", rec, "--serve", "0"], stderr=subprocess.PIPE, text=True)
        try:
            line = server.stderr.readline()
            if not check("http://127.0.0.1:" in line, f"serve: the server says where it listens: {line!r}"):
                return
            base = line.split("http://")[1].split("/")[0]
            port = int(base.split(":")[1])
            base = "http://" + base + "/"
            # Bad requests: each answered, none ends the server.
            for path, status, why in (("state?launch=1&instret=999999999", 404, "past the end"),
                                      ("state?launch=7&instret=10", 404, "launch 7"),
                                      ("state?launch=x&instret=1", 400, "launch=x"),
                                      ("state?instret=1", 400, "launch="),
                                      ("state?launch=1&instret=5&core=0", 400, "together"),
                                      ("memory?launch=1&instret=5&addr=0&len=99999", 400, "len="),
                                      ("memory?launch=1&instret=5&addr=0x10&len=4", 404, "not mapped"),
                                      ("state?launch=1&instret=%zz", 400, "URL-encoded"),
                                      ("state?launch=1&instret=5&core=0&warp=99", 400, "not a lane"),
                                      ("state?launch=1&instret=5&lane=1", 400, "needs core"),
                                      ("nothing-here", 404, "no such page")):
                got, body = http_get(base, path)
                check(got == status and why in json.loads(body).get("error", ""),
                      f"serve: GET /{path}: {got} {body!r}, want {status} naming {why!r}")
            for data, status in ((b"garbage\r\n\r\n", "400"), (b"POST / HTTP/1.1\r\n\r\n", "405"),
                                 (b"GET / HTTP/9.9\r\n\r\n", "505"), (b"GET / HTTP/1.0\n\n", "200"),
                                 (b"GET /" + b"a" * 40000, "413"), (b"", None)):
                answer = raw_request(port, data)
                check(status is None and answer == "" or status is not None and answer.startswith("HTTP/1.1 " + status),
                      f"serve: {data[:30]!r}: the server answered {answer[:80]!r}")
            # Clients that connect and send nothing hold no one up.
            idle = [socket.create_connection(("127.0.0.1", port), timeout=30) for _ in range(4)]
            t0 = time.time()
            got, _ = http_get(base, "state?launch=1&instret=5")
            check(got == 200 and time.time() - t0 < 4, f"serve: with idle clients a request took {time.time() - t0:.1f} s")
            for c in idle:
                c.close()
            check(server.poll() is None, "serve: the server is still running after the bad requests")
            driver = started_browser()
            if not driver:
                return
            try:
                check_served_page(driver, rec, base)
            finally:
                driver.quit()
        finally:
            rc = stop_server(server, "serve")
            check(rc is None or rc == 0, f"serve: SIGINT ends the server with status {rc}, want 0")


def prompt_origin(rec, launch, instret, expr, focus=None):
    """`origin EXPR` at a point as the prompt answers it with --json (focus: (core, warp, lane))."""
    cmd = [VX, "replay", rec, "--batch", "--json", "-ex", f"goto {launch}:{instret}"]
    if focus:
        cmd += ["-ex", "focus core %d warp %d lane %d" % tuple(focus)]
    rc, out, err = run(cmd + ["-ex", "origin " + expr])
    check(rc == 0, f"origin: replay {rec} -ex 'origin {expr}': status {rc}: {err[-300:]!r}")
    answer = None
    for line in out.splitlines():
        e = json.loads(line)
        if e.get("event") == "error":
            check(False, f"origin: the prompt at {launch}:{instret}: {e.get('message')}")
        elif e.get("command") == "origin " + expr:
            answer = e
    return answer


def same_origin(got, want, what):
    """The server's answer is the prompt's, but for what reading the history cost and the lane it adds."""
    def strip(a):
        return {k: v for k, v in (a or {}).items() if k not in ("history", "focus", "note")}
    check(want is not None and got is not None and strip(got) == strip(want),
          f"origin: {what}: the server answered {strip(got)}, the prompt {strip(want)}")


def origin_shown(driver, before):
    """The page's answer under the stop panel once it replaced `before` (its title, or an error)."""
    from selenium.webdriver.common.by import By
    for _ in range(600):
        found = driver.find_elements(By.CSS_SELECTOR, "#origin-title, #origin-error")
        if found and driver.find_element(By.ID, "origin").text != before:
            return found[0].get_attribute("id"), driver.find_element(By.ID, "origin").text
        time.sleep(0.1)
    return None, ""


def origin_marks(driver):
    """The page's origin markers: their point and lane, and where each stands against xOf/yOf."""
    from selenium.webdriver.common.by import By
    out = []
    for d in driver.find_elements(By.CSS_SELECTOR, ".origin-mark"):
        m = {k: int(d.get_attribute("data-" + k)) for k in ("launch", "instret", "core", "warp", "lane")}
        m["el"] = d
        m["x"], m["y"] = driver.execute_script(
            "const d = arguments[0]; return [parseFloat(d.style.left), parseFloat(d.style.top)]", d)
        m["want_x"] = driver.execute_script("return window.vxreplayView.xOf(arguments[0], arguments[1])",
                                            m["launch"], m["instret"])
        m["want_y"] = driver.execute_script("return window.vxreplayView.yOf(arguments[0], arguments[1])",
                                            m["core"], m["warp"])
        m["shown"] = d.is_displayed()
        out.append(m)
    return out


def ask_in_page(driver, expr=None, cell=None):
    """Asks the page who wrote a value: a click on `cell`, or `expr` through the form."""
    from selenium.webdriver.common.by import By
    before = driver.find_element(By.ID, "origin").text
    if cell is not None:
        cell.click()
    else:
        box = driver.find_element(By.ID, "origin-expr")
        box.clear()
        box.send_keys(expr)
        driver.find_element(By.CSS_SELECTOR, "#origin-form button").click()
    return origin_shown(driver, before)


def check_marks_at(driver, writes, what):
    """One marker per distinct write, each at the write's point on its warp's row."""
    marks = origin_marks(driver)
    want = sorted({(w["launch"], w["instret"], w["core"], w["warp"], w["lane"]) for w in writes})
    got = sorted((m["launch"], m["instret"], m["core"], m["warp"], m["lane"]) for m in marks)
    check(got == want, f"origin: {what}: markers at {got}, the writers are {want}")
    for m in marks:
        check(m["shown"] and abs(m["x"] - m["want_x"]) < 0.1 and m["want_y"] is not None and abs(m["y"] - m["want_y"]) < 0.1,
              f"origin: {what}: the marker of {m['launch']}:{m['instret']} stands at ({m['x']}, {m['y']}), "
              f"its point and row at ({m['want_x']}, {m['want_y']}), shown {m['shown']}")
    return marks


def check_origin():
    from selenium.webdriver.common.by import By
    src = os.path.join(SRC, "examples", "offbyone.c")
    stop = line_of(src, "VX_IF(table[i * ROW] != i * 100u)")
    loop = line_of(src, "for (uint32_t j = 0; j <= ROW; j++)")
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "obo")
        rc, _, err = run([VX, "run", os.path.join(EXAMPLES, "offbyone.elf"), "--db", db, "--batch", "-ex",
                          f"break offbyone.c:{stop}", "-ex", "continue", "-ex", "delete", "-ex", "continue"])
        if not check(rc == 0 and os.path.isdir(db), f"origin: the recording session: status {rc}: {err[-300:]!r}"):
            return
        rec = os.path.join(db, os.listdir(db)[0])
        marks, answers = prompt_answers(rec)
        if not check(len(marks) == 1, f"origin: one mark, the stop after the stores: {marks}"):
            return
        mark = marks[0]
        L, I = mark["launch"], mark["instret"]
        stop_ev, locals_, _, _ = answers[mark["number"]]
        focus = (stop_ev["core"], stop_ev["warp"], stop_ev["lane"])
        server = subprocess.Popen([VX, "view", rec, "--serve", "0"], stderr=subprocess.PIPE, text=True)
        try:
            line = server.stderr.readline()
            if not check("http://127.0.0.1:" in line, f"origin: the server says where it listens: {line!r}"):
                return
            base = "http://" + line.split("http://")[1].split("/")[0] + "/"
            # Over HTTP: what the prompt answers; table[4] holds thread 0's last store (j == ROW) over
            # thread 1's own first entry, 1 * 100.
            got, body = http_get(base, f"origin?launch={L}&instret={I}&expr=table%5B4%5D")
            table4 = json.loads(body)
            check(got == 200, f"origin: GET /origin table[4]: {got} {body[:300]!r}")
            same_origin(table4, prompt_origin(rec, L, I, "table[4]"), "table[4]")
            parts = table4.get("origin", [])
            w4 = parts[0].get("write", {}) if len(parts) == 1 else {}
            check(w4.get("thread") == "CTA (0,0,0) thread (0,0,0)" and w4.get("file") == "offbyone.c" and
                  w4.get("line") == loop and w4.get("after") == 4 and w4.get("before") == 100,
                  f"origin: table[4] over HTTP: {parts}")
            check(table4.get("focus") == dict(zip(("core", "warp", "lane"), focus)),
                  f"origin: asked in lane {table4.get('focus')}, the stop's is {focus}")
            # A register of another lane of the stop's warp ($a0 holds i there): that lane's own.
            other = (focus[0], focus[1], focus[2] + 1)
            got, body = http_get(base, f"origin?launch={L}&instret={I}&core={other[0]}&warp={other[1]}"
                                       f"&lane={other[2]}&expr={urllib.parse.quote('$a0')}")
            a0 = json.loads(body)
            check(got == 200 and a0.get("register") == "a0" and a0.get("write", {}).get("instret", 0) > 0,
                  f"origin: GET /origin $a0 in lane {other}: {got} {body[:300]!r}")
            check(a0.get("focus") == dict(zip(("core", "warp", "lane"), other)),
                  f"origin: $a0 asked in lane {a0.get('focus')}, not {other}")
            same_origin(a0, prompt_origin(rec, L, I, "$a0", other), f"$a0 in lane {other}")
            # Bad questions: each refused with its reason, and the server goes on.
            for path, status, why in ((f"origin?launch={L}&instret={I}", 400, "expr="),
                                      (f"origin?launch={L}&instret={I}&expr=", 400, "empty"),
                                      (f"origin?launch={L}&instret={I}&expr=1%20%2B%202", 400, "not a place"),
                                      (f"origin?launch={L}&instret={I}&expr=-goto%20table%5B4%5D", 400, "not an option"),
                                      (f"origin?launch={L}&instret={I}&expr=a%0Ab", 400, "control character"),
                                      (f"origin?launch={L}&instret=999999999&expr=table%5B4%5D", 404, "past the end"),
                                      (f"origin?instret={I}&expr=table%5B4%5D", 400, "launch=")):
                got, body = http_get(base, path)
                check(got == status and why in json.loads(body).get("error", ""),
                      f"origin: GET /{path}: {got} {body!r}, want {status} naming {why!r}")
            check(server.poll() is None, "origin: the server is still running after the bad questions")
            driver = started_browser()
            if not driver:
                return
            try:
                check_origin_page(driver, rec, base, mark, focus, locals_, table4, loop, tmp)
            finally:
                driver.quit()
        finally:
            stop_server(server, "origin")


def check_origin_page(driver, rec, base, mark, focus, locals_, table4, loop, tmp):
    from selenium.webdriver.common.by import By
    L, I = mark["launch"], mark["instret"]
    if not check(open_page(driver, base), "origin: the served page draws"):
        return
    driver.find_element(By.CSS_SELECTOR, f'#mark-list li[data-number="{mark["number"]}"]').click()
    # The C variables are clickable; the compiler kept none of them at this line: the prompt's reason.
    cells = {c.get_attribute("data-expr"): c for c in driver.find_elements(By.CSS_SELECTOR, "#locals td.origin-able")}
    if check(locals_ and set(cells) == {v["name"] for v in locals_} and "i" in cells,
             f"origin: the stop's C variables are clickable: {sorted(cells)}, the prompt's {locals_}"):
        kind, text = ask_in_page(driver, cell=cells["i"])
        check(kind == "origin-error" and "i is optimized out" in text, f"origin: a click on i's value: {text!r}")
        check(not origin_marks(driver), "origin: no marker for a question with no answer")
        # The browser logs the refusal (a 400) and nothing else.
        logged = [l["message"] for l in driver.get_log("browser") if l.get("level") == "SEVERE"]
        check(len(logged) == 1 and "expr=i " in logged[0] and "400" in logged[0],
              f"origin: the page logged {logged}, want the 400 of the question about i")
    # A register's value ($a0 holds i): the instruction of the lane's own thread that set it.
    regs = {c.get_attribute("data-expr"): c for c in driver.find_elements(By.CSS_SELECTOR, "#registers td.origin-able")}
    check("$a0" in regs and "$s0" in regs and "$pc" not in regs, f"origin: clickable registers {sorted(regs)}")
    if "$a0" in regs:
        want = prompt_origin(rec, L, I, "$a0", focus)
        kind, text = ask_in_page(driver, cell=regs["$a0"])
        w = (want or {}).get("write")
        if check(kind == "origin-title" and w, f"origin: a click on $a0: {text!r}, the prompt {want}"):
            w = dict({"core": focus[0], "warp": focus[1], "lane": focus[2]}, **w)  # the lane's own thread
            check(f"Origin of $a0 (register a0 of core {focus[0]} warp {focus[1]} lane {focus[2]})" in text and
                  f"launch {w['launch']}, instruction {w['instret']}, pc 0x{w['pc']:08x} at {w['file']}:{w['line']}" in text
                  and w["source"] in text, f"origin: $a0: the page says {text!r}, the prompt {want.get('text')!r}")
            check_marks_at(driver, [w], "$a0")
    if "$s0" in regs:  # the launch started the thread with it
        kind, text = ask_in_page(driver, cell=regs["$s0"])
        check(kind == "origin-title" and "not written in this launch by the thread" in text and not origin_marks(driver),
              f"origin: a click on $s0: {text!r}")
    # table[4] through the form: thread 0's store at the loop, 0x00000004 over 0x00000064.
    kind, text = ask_in_page(driver, expr="table[4]")
    check(kind == "origin-title" and "written by CTA (0,0,0) thread (0,0,0) (core " in text and
          f"offbyone.c:{loop}" in text and "it wrote 0x00000004 over 0x00000064" in text,
          f"origin: table[4] in the page: {text!r}")
    w4 = table4["origin"][0]["write"]
    check_marks_at(driver, [w4], "table[4]")
    # Bytes of memory: table[4] and table[5] read at the stop, each byte a click away.
    driver.find_element(By.ID, "memory-addr").send_keys(hex(table4["addr"]))
    driver.find_element(By.ID, "memory-len").clear()
    driver.find_element(By.ID, "memory-len").send_keys("8")
    driver.find_element(By.CSS_SELECTOR, "#memory-form button").click()
    spans = []
    for _ in range(300):
        spans = driver.find_elements(By.CSS_SELECTOR, "#memory span.origin-able")
        if spans:
            break
        time.sleep(0.1)
    if check(len(spans) == 8, f"origin: 8 clickable bytes of memory, {len(spans)} shown"):
        check(spans[0].get_attribute("data-expr") == "*(unsigned char *)" + "0x%08x" % table4["addr"],
              f"origin: the first byte asks {spans[0].get_attribute('data-expr')!r}")
        kind, text = ask_in_page(driver, cell=spans[0])
        check(kind == "origin-title" and "CTA (0,0,0) thread (0,0,0)" in text and "it wrote 0x04 over 0x64" in text,
              f"origin: table[4]'s first byte in the page: {text!r}")
        check_marks_at(driver, [w4], "table[4]'s first byte")
        # table[5] (thread 1's second entry, 1 * 100 + 1) over the zero it started as.
        kind, text = ask_in_page(driver, cell=spans[4])
        check(kind == "origin-title" and "CTA (0,0,0) thread (1,0,0)" in text and "it wrote 0x65 over 0x00" in text,
              f"origin: table[5]'s first byte in the page: {text!r}")
    # Two writers: two markers.
    both = prompt_origin(rec, L, I, "*(unsigned long long *)&table[4]")
    kind, text = ask_in_page(driver, expr="*(unsigned long long *)&table[4]")
    writes = [p["write"] for p in (both or {}).get("origin", []) if "write" in p]
    check(kind == "origin-title" and len(writes) == 2 and "bytes 0..3: written by CTA (0,0,0) thread (0,0,0)" in text and
          "bytes 4..7: written by CTA (0,0,0) thread (1,0,0)" in text, f"origin: table[4..5]: {text!r}, the prompt {both}")
    marks = check_marks_at(driver, writes, "table[4..5]")
    # A marker opens its writer's point with the writing lane in focus.
    if marks:
        m = [x for x in marks if x["lane"] == w4["lane"] and x["instret"] == w4["instret"]] or marks
        m = m[0]
        m["el"].click()
        title = opened_point(driver, 600)
        if check(title is not None and title.get_attribute("id") == "stop-title",
                 f"origin: the marker opens a point: {title.text if title else 'nothing'}"):
            where = driver.find_element(By.ID, "stop-where").text
            check((int(title.get_attribute("data-launch")), int(title.get_attribute("data-instret"))) ==
                  (m["launch"], m["instret"]) and f"core {m['core']}, warp {m['warp']}, lane {m['lane']}" in where,
                  f"origin: the writer's point is {title.text!r} {where!r}, want {m['launch']}:{m['instret']} in "
                  f"core {m['core']} warp {m['warp']} lane {m['lane']}")
            check(driver.find_elements(By.CSS_SELECTOR, ".origin-mark.selected"), "origin: the opened marker is selected")
    keep(driver, "origin", fit=False)
    # The page written with -o has no server behind it: its values are plain text.
    page = os.path.join(tmp, "obo.html")
    rc, _, err = run([VX, "view", rec, "-o", page])
    if check(rc == 0 and open_page(driver, page), f"origin: view -o: status {rc}: {err[-200:]!r}"):
        driver.find_element(By.CSS_SELECTOR, f'#mark-list li[data-number="{mark["number"]}"]').click()
        check(driver.find_elements(By.CSS_SELECTOR, "#locals td") and
              not driver.find_elements(By.CSS_SELECTOR, ".origin-able, #origin-form"),
              "origin: the written page shows its values as plain text")


def page_points(driver):
    from selenium.webdriver.common.by import By
    return {p.get_attribute("data-id"): {k: int(p.get_attribute("data-" + k)) for k in
                                         ("run", "launch", "instret", "core", "warp", "lane")}
            for p in driver.find_elements(By.CSS_SELECTOR, ".point")}


def check_divergence_marked(driver, what, report):
    """The page's points are the first divergence of the text diff's JSON, in both runs."""
    from selenium.webdriver.common.by import By
    points = page_points(driver)
    fd = report.get("first_divergence")
    if not check(fd, f"{what}: the runs diverge (the diff's JSON: {str(report)[:200]})"):
        return
    for run, side in ((0, "a"), (1, "b")):
        o = fd.get(side)
        if not o:
            continue
        tag = side.upper()
        want = {"run": run, "launch": fd["launch"], "instret": o["instret"], "core": o["core"], "warp": o["warp"],
                "lane": o["lane"]}
        check(points.get(tag + "-read") == want, f"{what}: run {tag}'s divergent read on the page is "
                                                 f"{points.get(tag + '-read')}, the text diff says {want}")
        w = o.get("writer")
        if w:
            want_w = {"run": run, "launch": w["launch"], "instret": w["instret"], "core": w["core"],
                      "warp": w["warp"], "lane": w["lane"]}
            check(points.get(tag + "-write") == want_w,
                  f"{what}: run {tag}'s write on the page is {points.get(tag + '-write')}, the diff says {want_w}")
        else:
            check(tag + "-write" not in points, f"{what}: run {tag} has a write point, the diff names no writer")
        # Clicking the read shows what was read and where.
        el = driver.find_element(By.CSS_SELECTOR, f'.point[data-id="{tag}-read"]')
        if el.is_displayed():
            el.click()
            text = driver.find_element(By.ID, "point-text").text
            check(f"0x{o['value']:08x}" in text and o["instruction"] in text,
                  f"{what}: the pane of run {tag}'s read says {text!r}")
            where = driver.find_element(By.ID, "stop-where").text
            check(f":{fd['line']}" in where, f"{what}: the pane of run {tag}'s read is at {where!r}, want line {fd['line']}")
    marks = [m.get_attribute("data-number") for m in driver.find_elements(By.CSS_SELECTOR, "#marks .mark")]
    check(sorted(marks) == sorted(s.upper() for s in ("a", "b") if fd.get(s)),
          f"{what}: the divergence marks on the page are {marks}")
    labels = [l.text for l in driver.find_elements(By.CSS_SELECTOR, ".row-label")]
    check(any(l.startswith("A ") for l in labels) and any(l.startswith("B ") for l in labels),
          f"{what}: rows of both runs: {labels[:4]}...")


def check_nondet():
    from selenium.webdriver.common.by import By
    driver = started_browser()
    if not driver:
        return
    racy = os.path.join(EXAMPLES, "racy.elf")
    try:
        with tempfile.TemporaryDirectory() as tmp:
            # diff: the page and the text name the same divergence.
            page = os.path.join(tmp, "diff.html")
            rc, out, err = run([VX, "diff", racy, "--seeds", "3,7", "--json"])
            report = json.loads(out) if out.strip() else {}
            check(rc == 1, f"diff --json: status {rc}: {err[-300:]!r}")
            rc, out, err = run([VX, "diff", racy, "--seeds", "3,7", "--html", page])
            check(rc == 1 and "First divergence" in out, f"diff --html: status {rc}, the text report still printed")
            if check(os.path.exists(page) and open_page(driver, page), "diff --html: the page opens"):
                check_divergence_marked(driver, "diff", report)
                check(driver.find_element(By.ID, "report").text.strip().startswith("The runs differ"),
                      "diff: the page carries the text report")
                keep(driver, "diff")
            # Two recordings: the same.
            recs = []
            for seed in (3, 7):
                db = os.path.join(tmp, f"rec{seed}")
                rc, _, err = run([VX, "run", racy, "--seed", str(seed), "--db", db, "--batch", "-ex", "continue"])
                check(rc == 0, f"recording racy seed {seed}: status {rc}: {err[-200:]!r}")
                recs.append(os.path.join(db, os.listdir(db)[0]) if os.path.isdir(db) and os.listdir(db) else db)
            page = os.path.join(tmp, "diff-rec.html")
            rc, out, err = run([VX, "diff"] + recs + ["--json"])
            report = json.loads(out) if out.strip() else {}
            rc, out, err = run([VX, "diff"] + recs + ["--html", page])
            if check(rc == 1 and os.path.exists(page) and open_page(driver, page),
                     f"diff of two recordings --html: status {rc}: {err[-300:]!r}"):
                check_divergence_marked(driver, "diff of recordings", report)
            # Races: an arc per race, its two accesses on their rows.
            page = os.path.join(tmp, "races.html")
            rc, out, err = run([VX, "run", racy, "--races", "--html", page])
            races = out.count("Race (")
            check(rc == 67 and races > 0, f"run --races --html: status {rc}, {races} races")
            if check(os.path.exists(page) and open_page(driver, page), "races: the page opens"):
                data = driver.execute_script("return window.vxreplayView.data")
                check(len(data["links"]) == races and all(k["kind"] == "race" for k in data["links"]),
                      f"races: {len(data['links'])} arcs, the text reports {races} races")
                pts = page_points(driver)
                ends = {l["launch"]: l["end"] for l in data["launches"]}
                for k in data["links"]:
                    a, b = pts.get(k["from"]), pts.get(k["to"])
                    check(a and b and a["instret"] <= b["instret"] <= ends.get(b["launch"], -1),
                          f"races: the arc {k} joins {a} and {b} inside the launch")
                rows = {(r["core"], r["slot"]) for l in data["launches"] for r in l["rows"]}
                check(all((p["core"], p["warp"]) in rows for p in pts.values()), "races: every access is on a warp's row")
                keep(driver, "races")
            # Sweep: the classes, and the first divergence between the two largest.
            page = os.path.join(tmp, "sweep.html")
            rc, out, err = run([VX, "sweep", racy, "--seeds", "1-6", "--json"])
            sweep = json.loads(out) if out.strip() else {}
            rc, out, err = run([VX, "sweep", racy, "--seeds", "1-6", "--html", page])
            if check(os.path.exists(page) and open_page(driver, page), f"sweep --html: status {rc}: {err[-300:]!r}"):
                rows = driver.find_elements(By.CSS_SELECTOR, "#classes tr")[1:]
                classes = sweep.get("classes", [])
                check(len(rows) == len(classes) > 1, f"sweep: {len(rows)} classes on the page, {len(classes)} in the JSON")
                for r, c in zip(rows, classes):
                    cells = [td.text for td in r.find_elements(By.TAG_NAME, "td")]
                    check(cells[1] == str(c["count"]) and cells[3].startswith(str(c["seeds"][0])),
                          f"sweep: class row {cells}, the JSON's {c['count']} runs from seed {c['seeds'][0]}")
                if sweep.get("divergence"):
                    check_divergence_marked(driver, "sweep", sweep["divergence"])
                keep(driver, "sweep")
            rc, _, err = run([VX, "diff", racy, "--seeds", "3,7", "--html", os.path.join(tmp, "none", "p.html")])
            check(rc == 74 and "cannot write" in err, f"diff --html into a missing directory: status {rc}: {err!r}")
    finally:
        driver.quit()


CHECKS = {"pages": check_pages, "export": check_export, "errors": check_errors, "serve": check_serve,
          "origin": check_origin, "nondet": check_nondet}

if __name__ == "__main__":
    if CHECK not in CHECKS:
        print("unknown check", CHECK, file=sys.stderr)
        sys.exit(2)
    CHECKS[CHECK]()
    if failures:
        print(f"{len(failures)} failure(s)", file=sys.stderr)
        sys.exit(1)
    print("ok")
