"""Headless Chromium driven over the DevTools protocol on a pipe
(`--remote-debugging-pipe`: JSON messages, NUL-terminated, on fds 3 and 4),
with the standard library only. Tests load a page, evaluate JavaScript in it
to read the rendered DOM (what is laid out and visible, not just what is in
the source), and take screenshots."""

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time


def find_browser():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    return None


class Browser:
    def __init__(self, path, width=1200, height=900, timeout_s=60):
        self.timeout_s = timeout_s
        self._profile = tempfile.mkdtemp(prefix="magneton-chromium-")
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        def wire_pipes():  # in the child: its fd 3 reads our commands, its fd 4 writes replies
            a, b = os.dup(to_browser_r), os.dup(from_browser_w)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self._proc = subprocess.Popen(
            [path, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe", "--no-first-run",
             f"--user-data-dir={self._profile}", f"--window-size={width},{height}", "about:blank"],
            preexec_fn=wire_pipes, pass_fds=(3, 4), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buf = b""
        self._next_id = 0
        self._size = (width, height)
        self._session = None

    def _send(self, method, params=None, session=True):
        self._next_id += 1
        msg = {"id": self._next_id, "method": method, "params": params or {}}
        if session and self._session:
            msg["sessionId"] = self._session
        os.write(self._to_browser, json.dumps(msg).encode() + b"\0")
        while True:
            while b"\0" not in self._buf:
                chunk = os.read(self._from_browser, 1 << 16)
                if not chunk:
                    raise RuntimeError(f"chromium closed the pipe: {self._stderr_tail()}")
                self._buf += chunk
            raw, self._buf = self._buf.split(b"\0", 1)
            reply = json.loads(raw)
            if reply.get("id") == self._next_id:  # events and other replies are not needed
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]

    def _stderr_tail(self):
        if self._proc.poll() is None:
            return "(still running)"
        return self._proc.stderr.read().decode(errors="replace")[-2000:]

    def open(self, url):
        """Opens `url` in a fresh tab and waits until it has loaded."""
        target = self._send("Target.createTarget", {"url": "about:blank"}, session=False)
        self._session = self._send("Target.attachToTarget", {"targetId": target["targetId"], "flatten": True},
                                   session=False)["sessionId"]
        w, h = self._size
        self._send("Emulation.setDeviceMetricsOverride", {"width": w, "height": h, "deviceScaleFactor": 1,
                                                          "mobile": False})
        self._send("Page.navigate", {"url": url})
        deadline = time.monotonic() + self.timeout_s
        while self.evaluate("document.readyState") != "complete":
            if time.monotonic() > deadline:
                raise TimeoutError(f"{url} did not load within {self.timeout_s} s")
            time.sleep(0.05)

    def evaluate(self, expression):
        """The value of a JavaScript expression in the page (JSON-serialisable)."""
        r = self._send("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in r:
            raise RuntimeError(f"JavaScript error: {r['exceptionDetails']}")
        return r["result"].get("value")

    def hover(self, x, y):
        """Moves the mouse to (x, y) in the viewport: CSS :hover rules apply as for a reader's pointer."""
        self._send("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y})

    def screenshot(self, path, full_page=True):
        params = {"format": "png"}
        if full_page:
            params["captureBeyondViewport"] = True
            w = self._size[0]
            h = self.evaluate("document.documentElement.scrollHeight")
            params["clip"] = {"x": 0, "y": 0, "width": w, "height": h, "scale": 1}
        data = self._send("Page.captureScreenshot", params)["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def close(self):
        try:
            if self._proc.poll() is None:
                self._send("Browser.close", session=False)
                self._proc.wait(timeout=30)
        except (RuntimeError, OSError, subprocess.TimeoutExpired):
            self._proc.kill()
            self._proc.wait()
        finally:
            os.close(self._to_browser)
            os.close(self._from_browser)
            self._proc.stderr.close()
            shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
