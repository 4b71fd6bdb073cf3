"""Renders an HTML file in headless Chromium (Debian's chromium package) and checks it.

render(html_path, workdir) returns a Rendering: the DOM Chromium built, its log (stderr with
--enable-logging) and a screenshot. problems(html_path, rendering) lists what is wrong with a
page that must open offline: console messages, failed loads, external references, a blank
screenshot, and <svg> elements that are not well-formed XML.
"""
import dataclasses
import pathlib
import re
import shutil
import struct
import subprocess
import xml.etree.ElementTree as ET
import zlib

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")
FLAGS = ["--headless", "--disable-gpu", "--no-sandbox", "--hide-scrollbars", "--enable-logging=stderr", "--v=0",
         "--no-first-run", "--disable-extensions", "--disable-background-networking"]


def find_chromium():
    for name in CHROMIUM_NAMES:
        if path := shutil.which(name):
            return path
    return None


@dataclasses.dataclass
class Rendering:
    dom: str
    log: str
    screenshot: pathlib.Path


def render(html_path, workdir, width=1100, height=1400, timeout=120):
    chromium = find_chromium()
    if chromium is None:
        raise RuntimeError("chromium is not installed: run scripts/setup")
    html_path = pathlib.Path(html_path).resolve()
    workdir = pathlib.Path(workdir)
    # A profile folder of its own, so parallel runs do not share a browser.
    profile = workdir / "chromium-profile"
    common = [chromium, *FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}"]
    dom = subprocess.run([*common, "--dump-dom", html_path.as_uri()], capture_output=True, text=True,
                         timeout=timeout, check=True)
    shot = workdir / "screenshot.png"
    snap = subprocess.run([*common, f"--screenshot={shot}", html_path.as_uri()], capture_output=True, text=True,
                          timeout=timeout, check=True)
    return Rendering(dom.stdout, dom.stderr + snap.stderr, shot)


def png_ink(path):
    """The fraction of pixels of an 8-bit RGB(A) PNG that are not near-white."""
    data = pathlib.Path(path).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, color = header[:4]
    assert depth == 8 and color in (2, 6), f"unsupported PNG (depth {depth}, colour type {color})"
    bpp = 3 if color == 2 else 4
    raw, stride = zlib.decompress(idat), width * bpp
    prev, ink = bytearray(stride), 0
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):  # undo the PNG row filter
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + a) & 255
            elif kind == 2:
                line[i] = (line[i] + b) & 255
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        ink += sum(1 for x in range(0, stride, bpp) if min(line[x:x + 3]) < 200)
        prev = line
    return ink / (width * height)


def svg_elements(html):
    return re.findall(r"<svg\b.*?</svg>", html, flags=re.S)


def problems(html_path, rendering):
    """Everything wrong with the rendered page, as readable lines (empty: clean)."""
    html = pathlib.Path(html_path).read_text()
    found = []
    for line in rendering.log.splitlines():
        if ":CONSOLE" in line or "Failed to load resource" in line or "net::ERR_" in line:
            found.append(f"browser log: {line.strip()}")
    for pattern, what in [(r"<script\b", "a script"), (r"<link\b", "a <link>"), (r"@import", "a CSS @import"),
                          (r"\bsrc\s*=", "a src= attribute"), (r"url\(\s*['\"]?(?!#)", "a CSS url() outside the page"),
                          (r"(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}", "an external address")]:
        if m := re.search(pattern, html, flags=re.I):
            found.append(f"{what}: {html[max(0, m.start() - 30):m.end() + 30]!r}")
    for i, svg in enumerate(svg_elements(html)):
        try:
            ET.fromstring(svg)
        except ET.ParseError as e:
            found.append(f"svg #{i} is not well-formed XML: {e}")
    if "<body" not in rendering.dom:
        found.append("chromium dumped no DOM")
    ink = png_ink(rendering.screenshot)
    if ink < 0.01:
        found.append(f"the screenshot is blank ({ink:.2%} of pixels drawn)")
    return found
