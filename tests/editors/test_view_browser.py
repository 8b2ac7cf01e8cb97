"""``kdd view`` in a real browser: Debian's chromium driven by Playwright loads the page of a shipped
example, edits the file on disk and sees the IR and the register-pressure plot change; assembly is shown,
or the server's reason why it cannot be; clicks lead from the IR to the config and back."""
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from editor_tools import EXAMPLES, KDD, SCREENSHOTS, View, need
from protocol_schemas import validator

# The editor clients' own tests (node, Neovim, chromium): the whole suite's, not make test-fast's.
pytestmark = pytest.mark.slow

playwright = pytest.importorskip("playwright.sync_api", reason="run tools/setup_editors.sh (make test runs it)")


def _cli(path: Path, emit: str) -> dict:
    """What ``kdd compile --json`` says of the file (asked of the CLI, not of the page)."""
    out = subprocess.run([KDD, "compile", str(path), "--emit", emit, "--json"], capture_output=True, text=True)
    return json.loads(out.stdout)


def _estimate(path: Path) -> int:
    """What the register plot totals without assembly: the compile's figure, or its floor where that is more."""
    registers = _cli(path, "stats")["stats"]["registers"]
    return max(registers["estimate"], sum(registers["floor"].values()))


@pytest.fixture
def page_and_view(tmp_path):
    path = tmp_path / "resnet.kernel.toml"
    shutil.copy(EXAMPLES / "resnet50_3x3.kernel.toml", path)
    view = View(path, tmp_path / "cache")
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=need("chromium"), args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1500, "height": 900})
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        try:
            page.goto(view.url)
            yield page, view, path
            assert not errors, errors
        finally:
            browser.close()
            view.close()


def _wait_version(page, version: int) -> None:
    page.wait_for_selector(f'body[data-version="{version}"]', timeout=120_000)


def test_page_follows_the_file(page_and_view):
    page, view, path = page_and_view
    _wait_version(page, 1)
    assert page.inner_text("#file") == str(path)
    assert page.inner_text("#ir").startswith("kernel {")
    assert "iter = \"mb16oc32ic16\"" in page.inner_text("#config")
    plot = page.locator("#pressure svg")
    first = _cli(path, "asm")
    asm = view.rpc("kdd/assembly")
    if "error" in asm:  # no code generator for the target: the server's reason, verbatim; the estimate by label
        assert page.inner_text("#asm-error") == f"Assembly unavailable: {asm['error']['message']}"
        assert page.locator("#asm div").count() == 0
        assert plot.get_attribute("data-kind") == "estimate"
        assert int(plot.get_attribute("data-total")) == _estimate(path)
    else:  # live registers per assembly line, the mix per pipe, the roofline point
        listing = first["asm"]
        assert asm["result"]["asm"]["lines"] == listing["lines"]
        assert page.locator("#asm div").count() == len(listing["lines"])
        assert page.locator("#asm-error").is_hidden()
        assert plot.get_attribute("data-kind") == "per-line"
        assert int(plot.get_attribute("data-points")) == len(listing["lines"])
        assert int(plot.get_attribute("data-peak")) == max(l["live_regs"] for l in listing["lines"])
        assert int(plot.get_attribute("data-budget")) == listing["registers"]["budget"]
        assert page.locator("#mix tr").count() == 1 + len(listing["mix"]["static"])
        assert page.locator("#roofline svg").get_attribute("data-bound") == listing["roofline"]["bound"]
        assert page.inner_text("#asm div >> nth=0").endswith(listing["lines"][0]["text"])
    before_ir, before_asm = page.inner_text("#ir"), page.inner_text("#asm")
    before_estimate = _estimate(path)
    path.write_text(path.read_text().replace('iter = "mb16oc32ic16"', 'iter = "mb16oc16ic16"'))
    # write_text truncates, then writes: the view may see an empty version before the new text
    page.wait_for_function("document.querySelector('#config').innerText.includes('mb16oc16ic16')", timeout=120_000)
    latest = view.rpc("kdd/document")["result"]["version"]
    assert latest >= 2
    _wait_version(page, latest)
    assert page.inner_text("#ir") != before_ir
    plot = page.locator("#pressure svg")
    second = _cli(path, "asm")
    if second["ok"]:
        assert page.inner_text("#asm") != before_asm
        assert int(plot.get_attribute("data-points")) == len(second["asm"]["lines"])
        assert int(plot.get_attribute("data-peak")) == max(l["live_regs"] for l in second["asm"]["lines"])
    else:
        assert int(plot.get_attribute("data-total")) == _estimate(path) < before_estimate


def test_pass_picker_diff_and_click_through(page_and_view):
    page, view, path = page_and_view
    _wait_version(page, 1)
    answer = view.rpc("kdd/passes")["result"]
    validator("lsp.schema.json", "passes").validate(answer)  # the page reads the language server's shapes
    passes = answer["passes"]
    changed = [p["name"] for p in passes if p["changed"]]
    options = page.locator("#pass option").all_inner_texts()
    assert options == ["build", *changed, "final"]
    page.uncheck("#only-changed")
    assert page.locator("#pass option").all_inner_texts() == ["build", *[p["name"] for p in passes], "final"]

    page.select_option("#pass", changed[0])
    page.check("#diff")
    page.wait_for_function(f"document.querySelector('#ir').innerText.startsWith('--- before {changed[0]}')")
    assert page.locator("#ir div.add").count() + page.locator("#ir div.del").count() > 0
    page.uncheck("#diff")
    page.select_option("#pass", "final")
    page.wait_for_function("document.querySelector('#ir').innerText.startsWith('kernel {')")

    # IR line -> config line: the config line of the entry's origin range lights up.
    ir = view.rpc("kdd/irAfterPass", {"pass": "final"})["result"]
    validator("lsp.schema.json", "irAfterPass").validate(ir)
    index = next(i for i, e in enumerate(ir["lines"]) if e.get("origin", {}).get("range"))
    target = ir["lines"][index]["origin"]["range"]["start"]["line"]
    page.locator("#ir div").nth(index).click()
    assert page.locator("#config div.hl").get_attribute("data-line") == str(target)
    # config line -> every IR line that came from it.
    page.locator("#config div").nth(target).click()
    expected = [i for i, e in enumerate(ir["lines"])
                if (r := e.get("origin", {}).get("range")) and r["start"]["line"] <= target <= r["end"]["line"]]
    lit = page.eval_on_selector_all("#ir div", "rows => rows.flatMap((r, i) => r.classList.contains('hl') ? [i] : [])")
    assert lit == expected and expected


def test_diagnostics_check_plot_colours_bands_docs_and_widths(page_and_view):
    """What the page shows beyond the listing: the compile's diagnostics (message, severity, position; a click
    shows the config line), the check and its button, the pressure plot's axes, colours and hover, syntax
    colours, colour bands linking the config to the IR and the assembly, instruction docs, the roofline's
    axes, and panes that fit the window."""
    page, view, path = page_and_view
    _wait_version(page, 1)
    listing = view.rpc("kdd/assembly")["result"]["asm"]
    # syntax colours in all three panes
    for pane, cls in (("#config", "t-key"), ("#config", "t-str"), ("#ir", "t-type"), ("#asm", "t-op"), ("#asm", "t-reg")):
        assert page.locator(f"{pane} .{cls}").count() > 0, (pane, cls)
    # bands: a config line and the IR and assembly lines from it share one band
    ir = view.rpc("kdd/irAfterPass", {"pass": "final"})["result"]
    index = next(i for i, e in enumerate(ir["lines"]) if e.get("origin", {}).get("range"))
    line = ir["lines"][index]["origin"]["range"]["start"]["line"]
    band = lambda sel: [c for c in page.locator(sel).get_attribute("class").split() if c.startswith("band")]
    assert band(f"#ir div >> nth={index}") == band(f"#config div >> nth={line}") != []
    at = next(i for i, l in enumerate(listing["lines"]) if (l.get("config_range") or {}).get("start", {}).get("line") == line)
    assert band(f"#asm div >> nth={at}") == band(f"#config div >> nth={line}")
    # the pressure plot: axes with values, one fixed colour per category, distinct for all
    plot = page.locator("#pressure svg")
    assert plot.locator("line.axis").count() >= 2 and plot.locator("text.tick").count() >= 4
    fills = page.eval_on_selector_all("#pressure rect", "rs => rs.map(r => [r.dataset.category, r.getAttribute('fill')])")
    by_category = {}
    for category, fill in fills:
        by_category.setdefault(category, set()).add(fill)
    assert all(len(f) == 1 for f in by_category.values())
    colours = [next(iter(f)) for f in by_category.values()]
    assert len(set(colours)) == len(colours) == len({a["category"] for a in listing["registers"]["allocations"]})
    # hovering a column names its line and scrolls the listing to it
    box = plot.bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.6, box["y"] + 40)
    page.wait_for_function("document.querySelector('#pressure-info').innerText.startsWith('line ')")
    shown = int(page.locator("#pressure-info").get_attribute("data-line"))
    assert page.locator(f"#asm div >> nth={shown}").get_attribute("class").split().count("hl") == 1
    total = listing["lines"][shown]["live_regs"]
    assert page.inner_text("#pressure-info").startswith(f"line {shown + 1}: {total} registers live")
    # the instruction docs of an assembly line, with its live buffers
    dpas = next(i for i, l in enumerate(listing["lines"]) if "dpas" in l["text"])
    page.locator(f"#asm div >> nth={dpas}").hover()
    page.wait_for_function(f"document.querySelector('#asm-doc').dataset.line === '{dpas}'")
    doc = page.inner_text("#asm-doc")
    regs = listing["registers"]
    acc = next(a["bytes"] // regs["reg_bytes"] for a in regs["allocations"] if a["label"] == "c_acc")
    assert doc.startswith("dpas — systolic") and "pipe: xmx" in doc and "live: " in doc and f"c_acc {acc}" in doc
    # the register figure is the allocator's, named, with the IR model beside it
    compiled = _cli(path, "stats")["stats"]["registers"]
    assert page.inner_text("#asm-summary") == (f"registers {compiled['allocated']}/{compiled['budget']} "
                                               f"(allocator · IR model {compiled['ir']})")
    assert f"regs {compiled['allocated']}/{compiled['budget']} allocator" in page.inner_text("#status")
    # the roofline has values on both axes
    assert page.locator("#roofline text.tick").count() >= 4
    assert "x: ops/byte" in page.inner_text("#roofline")
    # the check: none yet, then the button's verdict
    assert page.inner_text("#check") == ""
    page.click("#run-check")
    page.wait_for_function("document.querySelector('#check').innerText === 'check ✓'", timeout=120_000)
    # panes fit the window: nothing wider than the viewport, the assembly the widest pane
    for width in (1100, 1500):
        page.set_viewport_size({"width": width, "height": 900})
        widths = page.eval_on_selector_all(".pane", "ps => ps.map(p => p.getBoundingClientRect().right)")
        assert max(widths) <= width
        sizes = page.eval_on_selector_all(".pane", "ps => ps.map(p => p.getBoundingClientRect().width)")
        assert sizes[2] == max(sizes)
        page.wait_for_function(f"document.querySelector('#pressure svg').getAttribute('width') <= {sizes[2]}")
    if SCREENSHOTS:
        page.set_viewport_size({"width": 1500, "height": 900})
        page.locator(f"#asm div >> nth={dpas}").hover()
        page.wait_for_timeout(500)
        page.screenshot(path=str(Path(SCREENSHOTS) / "view.png"))

    # an error: listed with severity, position and message; a click shows its line; the check is pending
    path.write_text(path.read_text().replace('fma = "dpas"', 'fma = "dpass"'))
    page.wait_for_selector("#diagnostics li.diag.sev-error", timeout=120_000)
    item = page.locator("#diagnostics li.diag.sev-error").first
    typo = next(i for i, l in enumerate(path.read_text().splitlines()) if l.startswith("fma"))
    column = path.read_text().splitlines()[typo].index('"dpass"')
    assert item.locator(".sev").inner_text() == "error"
    assert item.locator(".pos").inner_text() == f"{typo + 1}:{column + 1}"
    assert "did you mean 'dpas'" in item.inner_text()
    item.click()
    assert page.locator("#config div.hl").get_attribute("data-line") == str(typo)
    page.wait_for_function("document.querySelector('#check').innerText === 'check …'")
    assert page.inner_text("#asm-summary") == ""  # no stale figure once the compile fails
    if SCREENSHOTS:
        page.screenshot(path=str(Path(SCREENSHOTS) / "view-error.png"))


def test_view_refuses_other_hosts_and_unknown_methods_and_streams_compiles(tmp_path):
    import urllib.request

    path = tmp_path / "gemm.kernel.toml"
    shutil.copy(EXAMPLES / "gemm_f16.kernel.toml", path)
    view = View(path, tmp_path / "cache")
    try:
        assert view.url.startswith("http://127.0.0.1:")
        assert view.rpc("kdd/nothing")["error"]["code"] == -32601
        request = urllib.request.Request(view.url, headers={"Host": "example.com"})
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(request, timeout=30)
        assert err.value.code == 403
        assert view.rpc("kdd/document")["result"]["text"] == path.read_text()
        with urllib.request.urlopen(view.url + "events", timeout=120) as stream:
            def next_event() -> dict:
                while (line := stream.readline()) != b"event: kdd/compiled\n":
                    assert line in (b": keep-alive\n", b"\n"), line
                return json.loads(stream.readline().removeprefix(b"data: "))

            event = next_event()
            validator("lsp.schema.json", "compiled").validate(event)
            assert event["ok"] and event["uri"] == path.as_uri() and event["version"] == 1
            path.unlink()  # a deleted file is a compile that says why, not a dead view
            gone = next_event()
            assert gone["version"] == 2 and not gone["ok"] and gone["error"].startswith(f"cannot read {path}")
    finally:
        view.close()


def test_view_without_a_file_says_so(tmp_path):
    out = subprocess.run([KDD, "view", "--no-browser"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "no FILE given and no *.kernel.toml in the current directory" in out.stderr
    out = subprocess.run([KDD, "view", str(tmp_path / "missing.kernel.toml"), "--no-browser"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 2 and "no such file" in out.stderr


# The VS Code side of the page's postMessage transport, as the extension's PreviewBridge plays it
# (that bridge is tested against the real kdd lsp in editor-clients/vscode/src/test/protocol.test.ts):
# requests are answered by the running kdd view, events come from its stream, reveals are recorded.
_VSCODE_HOST = """
window.__revealed = [];
window.acquireVsCodeApi = () => ({
  postMessage(m) {
    if (m.type === "ready") {
      new EventSource("events").addEventListener("kdd/compiled", (e) =>
        window.postMessage({ type: "event", event: "kdd/compiled", params: JSON.parse(e.data) }, "*"));
    } else if (m.type === "request") {
      fetch("rpc", { method: "POST", headers: { "Content-Type": "application/json" },
                     body: JSON.stringify({ method: m.method, params: m.params }) })
        .then((r) => r.json())
        .then((a) => window.postMessage({ type: "response", id: m.id, result: a.result, error: a.error }, "*"));
    } else if (m.type === "reveal") {
      window.__revealed.push(m.range);
    }
  },
});
"""


def test_page_inside_vscode_uses_the_message_transport(page_and_view):
    page, view, path = page_and_view
    page.add_init_script(_VSCODE_HOST)
    page.reload()
    _wait_version(page, 1)
    assert "embedded" in page.evaluate("document.body.className")
    assert not page.locator("#config-pane").is_visible()  # the config is VS Code's own editor
    assert page.inner_text("#ir").startswith("kernel {")
    asm = view.rpc("kdd/assembly")
    if "error" in asm:
        assert page.inner_text("#asm-error") == f"Assembly unavailable: {asm['error']['message']}"
    if SCREENSHOTS:
        page.set_viewport_size({"width": 1000, "height": 800})
        page.wait_for_function("document.querySelector('#pressure svg').getAttribute('width') <= "
                               "document.querySelector('#pressure').clientWidth")
        page.screenshot(path=str(Path(SCREENSHOTS) / "vscode-preview.png"))

    # the check button asks through the bridge too
    page.click("#run-check")
    page.wait_for_function("document.querySelector('#check').innerText === 'check ✓'", timeout=120_000)

    ir = view.rpc("kdd/irAfterPass", {"pass": "final"})["result"]
    index = next(i for i, e in enumerate(ir["lines"]) if e.get("origin", {}).get("range"))
    page.locator("#ir div").nth(index).click()
    assert page.evaluate("window.__revealed") == [ir["lines"][index]["origin"]["range"]]
    # the editor's cursor on a config line lights up the IR lines from it
    line = ir["lines"][index]["origin"]["range"]["start"]["line"]
    page.evaluate(f"window.postMessage({{type: 'event', event: 'kdd/cursor', params: {{line: {line}}}}}, '*')")
    page.wait_for_function("document.querySelectorAll('#ir div.hl').length > 0")
    lit = page.eval_on_selector_all("#ir div", "rows => rows.flatMap((r, i) => r.classList.contains('hl') ? [i] : [])")
    assert index in lit


def test_a_kernel_without_assembly_shows_the_servers_reason(tmp_path):
    """A kernel the code generator cannot lower (sm_90 has no PTX rule for gelu_erf yet): the page says why,
    verbatim, and plots the register estimate."""
    path = tmp_path / "sm90.kernel.toml"
    classic = EXAMPLES.parent / "tests" / "data" / "sm90_conv_classic.kernel.toml"   # TMA refuses gelu earlier
    path.write_text(classic.read_text().replace('post_ops = ["relu"]', 'post_ops = ["gelu_erf"]'))
    reason = _cli(path, "asm")
    assert not reason["ok"] and reason["failure"]["stage"] == "codegen"
    view = View(path, tmp_path / "cache")
    try:
        with playwright.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=need("chromium"), args=["--no-sandbox"])
            try:
                page = browser.new_page()
                page.goto(view.url)
                _wait_version(page, 1)
                assert page.inner_text("#asm-error") == f"Assembly unavailable: {reason['error']}"
                assert page.locator("#asm div").count() == 0
                plot = page.locator("#pressure svg")
                assert plot.get_attribute("data-kind") == "estimate"
                assert int(plot.get_attribute("data-total")) == _estimate(path)
                assert page.inner_text("#mix") == "needs the assembly"
            finally:
                browser.close()
    finally:
        view.close()
