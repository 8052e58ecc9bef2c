"""A headless Chromium (Debian's package) driven over the Chrome DevTools Protocol, for the web view's tests: open
a page, run a script in it, wait for what it shows, record every response and server-sent event it received, and
take a screenshot. The protocol is spoken over aiohttp's WebSocket client (no browser-automation package)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp

from ..support.chromium import chromium_binary
from ..support.waiting import wait_until


class Page:
    """One tab: `evaluate` a script, `wait_for` a condition, and everything the page received (`traffic`)."""

    def __init__(self, socket: aiohttp.ClientWebSocketResponse) -> None:
        self._socket = socket
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[Any]] = {}
        self.traffic: list[str] = []
        """The body of every response and the data of every server-sent event the page received."""
        self.errors: list[str] = []
        """Exceptions thrown in the page's scripts and its console errors."""
        self.paused: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        """The requests held by the browser (``Fetch.requestPaused``, once ``Fetch.enable`` names them), in order."""
        self._bodies: list[asyncio.Task[None]] = []
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        async for message in self._socket:
            data = json.loads(message.data)
            if "id" in data:
                future = self._waiting.pop(data["id"], None)
                if future is not None and not future.done():
                    if "error" in data:
                        future.set_exception(RuntimeError(str(data["error"])))
                    else:
                        future.set_result(data.get("result", {}))
                continue
            method, params = data.get("method"), data.get("params", {})
            if method == "Network.eventSourceMessageReceived":
                self.traffic.append(params.get("data", ""))
            elif method == "Network.loadingFinished":
                self._bodies.append(asyncio.create_task(self._body(params["requestId"])))
            elif method == "Fetch.requestPaused":
                self.paused.put_nowait(params)
            elif method == "Runtime.exceptionThrown":
                self.errors.append(json.dumps(params.get("exceptionDetails", {}))[:2000])
            elif method == "Runtime.consoleAPICalled" and params.get("type") == "error":
                self.errors.append(json.dumps(params.get("args", []))[:2000])

    async def _body(self, request_id: str) -> None:
        with contextlib.suppress(Exception):
            found = await self.send("Network.getResponseBody", requestId=request_id)
            body = found.get("body", "")
            self.traffic.append(base64.b64decode(body).decode(errors="replace") if found.get("base64Encoded") else body)

    async def send(self, method: str, **params: Any) -> Any:
        n = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[n] = future
        await self._socket.send_str(json.dumps({"id": n, "method": method, "params": params}))
        return await asyncio.wait_for(future, timeout=30)

    async def goto(self, url: str) -> None:
        await self.send("Page.navigate", url=url)

    async def evaluate(self, expression: str) -> Any:
        found = await self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in found:
            raise AssertionError(f"the page's script failed: {found['exceptionDetails']}")
        return found.get("result", {}).get("value")

    async def wait_for(self, expression: str, timeout: float, what: str) -> Any:
        """Wait until ``expression`` is truthy in the page; its value (a failure says what the page shows)."""

        async def shows() -> str:
            text = await self.evaluate("document.body ? document.body.innerText.slice(0, 2000) : ''")
            return f"the page shows:\n{text}"

        return await wait_until(
            lambda: self.evaluate(expression), f"the page to show {what}", seconds=timeout, every=0.25, explain=shows
        )

    async def settle(self) -> None:
        """Let the bodies of the responses received so far be read."""
        await asyncio.gather(*self._bodies, return_exceptions=True)

    async def screenshot(self, path: Path, width: int, height: int) -> None:
        await self.send(
            "Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=width < 500
        )
        await asyncio.sleep(0.5)
        shot = await self.send("Page.captureScreenshot", format="png")
        path.write_bytes(base64.b64decode(shot["data"]))


@contextlib.asynccontextmanager
async def browser(width: int = 1200, height: int = 900) -> AsyncIterator[Page]:
    """A headless Chromium with one page open on about:blank."""
    profile = tempfile.mkdtemp(prefix="paiju-chromium-")
    process = subprocess.Popen(
        [
            chromium_binary(),
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--remote-debugging-port=0",
            f"--user-data-dir={profile}",
            f"--window-size={width},{height}",
            "about:blank",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        port = await asyncio.to_thread(_devtools_port, process)
        async with aiohttp.ClientSession() as session:
            async with session.get(f"http://127.0.0.1:{port}/json/list") as answer:
                targets = await answer.json()
            target = next(t for t in targets if t.get("type") == "page")
            async with session.ws_connect(target["webSocketDebuggerUrl"], max_msg_size=0) as socket:
                page = Page(socket)
                for domain in ("Page", "Runtime", "Network"):
                    await page.send(f"{domain}.enable")
                try:
                    yield page
                finally:
                    page._reader.cancel()
    finally:
        process.kill()
        process.wait()
        shutil.rmtree(profile, ignore_errors=True)


def _devtools_port(process: subprocess.Popen[str]) -> int:
    assert process.stderr is not None
    deadline = time.monotonic() + 60
    seen = []
    while time.monotonic() < deadline:
        line = process.stderr.readline()
        if not line and process.poll() is not None:
            break
        seen.append(line)
        found = re.search(r"DevTools listening on ws://[^:]+:(\d+)/", line)
        if found:
            return int(found.group(1))
    raise AssertionError("chromium did not open its DevTools port: " + "".join(seen)[-2000:])
