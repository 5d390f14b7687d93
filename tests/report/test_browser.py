"""The smoke run's report in headless Chromium at 1400 px, as a reader sees it: the index and one
notebook page load with no console error, show no NaN / None / <NA>, draw every image, do not
scroll sideways, and leave a screenshot in build/test-artifacts/ (``PINPATH_TEST_ARTIFACTS`` elsewhere).

Chromium is driven through its DevTools protocol (tornado's websocket client, which Jupyter
brings); the test is skipped, with the reason, where no Chromium is installed."""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

CHROMIUM = next((c for c in ("chromium", "chromium-browser", "google-chrome") if shutil.which(c)), None)
ARTIFACTS = Path(os.environ.get("PINPATH_TEST_ARTIFACTS", Path(__file__).resolve().parents[2] / "build" / "test-artifacts"))
WIDTH_PX = 1400
# a missing value as a reader would see it: a word of its own, not part of another
MISSING = re.compile(r"(?<![\w.])(NaN|None|<NA>|nan)(?![\w.])")

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium on this machine (CI installs it with apt-get)")


class _Page:
    """One tab of a headless Chromium, through the DevTools protocol."""

    def __init__(self, ws, session: str):
        self.ws, self.session, self.ids = ws, session, itertools.count(1)
        self.events: list[dict] = []

    async def call(self, method: str, **params) -> dict:
        i = next(self.ids)
        await self.ws.write_message(json.dumps({"id": i, "method": method, "params": params, "sessionId": self.session}))
        while True:
            msg = json.loads(await asyncio.wait_for(self.ws.read_message(), 30))
            if msg.get("id") == i:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)

    async def settle(self, seconds: float = 1.0) -> None:
        """Collect the events that arrive within ``seconds``."""
        try:
            while True:
                msg = json.loads(await asyncio.wait_for(self.ws.read_message(), seconds))
                if "method" in msg:
                    self.events.append(msg)
        except asyncio.TimeoutError:
            return

    async def until(self, method: str, seconds: float = 10.0) -> None:
        """Collect events until one named ``method`` has come (it may have come already), at most ``seconds``."""
        loop = asyncio.get_running_loop()
        end = loop.time() + seconds
        while not any(e["method"] == method for e in self.events) and (left := end - loop.time()) > 0:
            try:
                msg = json.loads(await asyncio.wait_for(self.ws.read_message(), left))
            except asyncio.TimeoutError:
                return
            if "method" in msg:
                self.events.append(msg)

    def errors(self) -> list[str]:
        out = []
        for e in self.events:
            p = e.get("params", {})
            if e["method"] == "Runtime.exceptionThrown":
                out.append(p["exceptionDetails"].get("text", "exception"))
            elif e["method"] == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append(" ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", [])))
            elif e["method"] == "Log.entryAdded" and p["entry"].get("level") == "error":
                out.append(p["entry"].get("text", ""))
        return out


async def _look(url: str, shot: Path, profile: Path, width: int = WIDTH_PX, height: int = 900) -> dict:
    from tornado.websocket import websocket_connect
    proc = subprocess.Popen([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                             "--host-resolver-rules=MAP * ~NOTFOUND", "--hide-scrollbars", "--remote-debugging-port=0",
                             f"--window-size={width},{height}", f"--user-data-dir={profile}", "about:blank"],
                            stderr=subprocess.PIPE, text=True)
    try:
        line = ""
        for line in proc.stderr:
            if "DevTools listening on" in line:
                break
        ws_url = line.split("listening on", 1)[-1].strip()
        assert ws_url.startswith("ws://"), line
        ws = await websocket_connect(ws_url, max_message_size=64 << 20)
        await ws.write_message(json.dumps({"id": 1, "method": "Target.createTarget", "params": {"url": "about:blank"}}))
        while (target := json.loads(await ws.read_message())).get("id") != 1:
            pass
        await ws.write_message(json.dumps({"id": 2, "method": "Target.attachToTarget",
                                           "params": {"targetId": target["result"]["targetId"], "flatten": True}}))
        while True:
            msg = json.loads(await ws.read_message())
            if msg.get("id") == 2:
                break
        page = _Page(ws, msg["result"]["sessionId"])
        for domain in ("Page", "Runtime", "Log"):
            await page.call(f"{domain}.enable")
        await page.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1,
                        mobile=False)
        await page.call("Page.navigate", url=url)
        await page.until("Page.loadEventFired")   # the page and its images loaded
        await page.settle(0.5)                     # what its scripts log just after
        res = await page.call("Runtime.evaluate", returnByValue=True, expression="""({
            text: document.body.innerText,
            overflow: document.documentElement.scrollWidth - window.innerWidth,
            wide: [...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > window.innerWidth + 1
                   && getComputedStyle(e).display !== 'none').slice(0, 5).map(e => e.tagName + '.' + e.className),
            height: document.documentElement.scrollHeight,
            claim_rows: [...document.querySelectorAll('table.claims tbody tr')].map(r => r.getBoundingClientRect().height),
            links: [...document.querySelectorAll('a[href]')].map(a => a.href),
            clipped: [...document.querySelectorAll('td, th, p, li, dd, span, code, table, div')].filter(e => e.scrollWidth > e.clientWidth + 1
                      && e.clientWidth > 0 && getComputedStyle(e).overflowX !== 'visible').slice(0, 5).map(e => e.tagName + ': ' + e.innerText.slice(0, 60)),
            first_screen: document.elementFromPoint(10, window.innerHeight - 5) ? [...document.querySelectorAll('#at-a-glance li')]
                          .filter(e => e.getBoundingClientRect().bottom <= window.innerHeight).length : 0,
            broken: [...document.images].filter(i => !i.complete || i.naturalWidth === 0).map(i => i.alt)})""")
        value = res["result"]["value"]
        shot_png = await page.call("Page.captureScreenshot", format="png", captureBeyondViewport=True, clip={
            "x": 0, "y": 0, "width": width, "height": min(value["height"], 6000), "scale": 1})
        shot.parent.mkdir(parents=True, exist_ok=True)
        shot.write_bytes(base64.b64decode(shot_png["data"]))
        await page.settle(0.3)
        value["errors"] = page.errors()
        ws.close()
        return value
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("page", ["index", "03_c6_c7_c9_lock_cost"])
def test_report_page_reads_cleanly_in_chromium(smoke_run, page, tmp_path):
    run_dir = smoke_run[0]
    path = run_dir / "report" / f"{page}.html"
    assert path.is_file(), path
    shot = ARTIFACTS / f"{page}.png"
    seen = asyncio.run(_look(path.as_uri(), shot, tmp_path / "profile"))
    assert seen["errors"] == [], seen["errors"]
    missing = sorted({m.group(0) for m in MISSING.finditer(seen["text"])})
    assert not missing, [seen["text"][max(0, m.start() - 60): m.end() + 60] for m in MISSING.finditer(seen["text"])][:5]
    assert seen["overflow"] <= 0, (seen["overflow"], seen["wide"])
    assert not [w for w in seen["wide"] if w.startswith(("TABLE", "IMG"))], seen["wide"]   # nothing cut at the edge
    assert seen["broken"] == [], seen["broken"]          # every figure drawn
    assert shot.stat().st_size > 10_000
