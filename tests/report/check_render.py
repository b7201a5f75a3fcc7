#!/usr/bin/env python3
"""Renders reports in headless Chromium: the page must load with no console message (no script
error, no failed resource) with the network shut off, and its screenshot must not be blank.
Also times each page's load inside the browser (navigation start to the end of the load event,
median of three runs) on a copy that logs it."""
import argparse
import os
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import re
import time
import zlib

TIMER = ("<script>window.addEventListener('load', function () { setTimeout(function () { "
         "var n = performance.getEntriesByType('navigation')[0]; "
         "console.log('SOUFFLE_LOAD_MS=' + n.loadEventEnd.toFixed(0)); }, 0); });</script>")


def png_pixels(path):
    """(width, height, rows of RGB(A) bytes) of an 8-bit, non-interlaced PNG."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"{path}: not a PNG")
    pos, idat, width, height, channels = 8, b"", 0, 0, 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or interlace != 0 or colour not in (2, 6):
                raise ValueError(f"{path}: unsupported PNG (depth {depth}, colour {colour})")
            channels = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, prev, at = [], bytearray(stride), 0
    for _ in range(height):
        filt, line = raw[at], bytearray(raw[at + 1:at + 1 + stride])
        at += 1 + stride
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b = prev[i]
            c = prev[i - channels] if i >= channels else 0
            if filt == 1:
                line[i] = (line[i] + a) & 255
            elif filt == 2:
                line[i] = (line[i] + b) & 255
            elif filt == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif filt == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, channels, rows


def ink(path):
    """Fraction of pixels that are not the page background, and how many colours there are."""
    w, h, ch, rows = png_pixels(path)
    background = rows[0][0:3]
    other, colours = 0, set()
    for y in range(0, h, 2):
        row = rows[y]
        for x in range(0, w, 2):
            px = row[x * ch:x * ch + 3]
            if px != background:
                other += 1
            if len(colours) < 5000:
                colours.add(px)
    return other / ((w // 2) * (h // 2)), len(colours)


def chromium_run(chromium, url, png, size):
    cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
           "--no-first-run", "--disable-extensions", "--enable-logging=stderr", "--v=0",
           "--host-resolver-rules=MAP * ~NOTFOUND", f"--window-size={size}",
           f"--screenshot={png}", url]
    t0 = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    seconds = time.monotonic() - t0
    console = [line for line in r.stderr.splitlines() if ":CONSOLE" in line]
    return r.returncode, seconds, console, r.stderr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--chromium", default="")
    ap.add_argument("--keep", default="", help="copy the screenshots into this folder")
    ap.add_argument("--max-load-s", type=float, default=2.0)
    ap.add_argument("--runs", type=int, default=3, help="timed loads per page (the median counts)")
    ap.add_argument("--page", action="append", default=[],
                    help="also render this HTML file (a report made elsewhere)")
    a = ap.parse_args()
    chromium = a.chromium or shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        sys.exit("check_render: chromium not found (scripts/setup.sh installs it)")
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        # The detector must see a script error, or a clean run proves nothing.
        bad = os.path.join(tmp, "bad.html")
        with open(bad, "w") as f:
            f.write("<!DOCTYPE html><html><body><p>x</p><script>notDefined();</script></body></html>")
        _, _, console, _ = chromium_run(chromium, "file://" + bad, os.path.join(tmp, "bad.png"),
                                        "400,300")
        if not console:
            sys.exit("check_render: a page with a script error showed no console message; the "
                     "check cannot see errors with this chromium")

        model = os.path.join(a.source, "sample_models", "bert", "model.onnx")
        pages = []
        report = os.path.join(tmp, "bert.html")
        subprocess.run([a.cli, "report", model, "--strategy", "all", "--compare", "souffle",
                        "--out", report], check=True, capture_output=True)
        pages.append(("report", report))
        steps = os.path.join(tmp, "steps.html")
        subprocess.run([a.cli, "report", model, "--steps", "--layer", "layers.0", "--out", steps],
                       check=True, capture_output=True)
        pages.append(("walk-through index", steps))
        pages.append(("walk-through partition", os.path.join(tmp, "steps-8-partition.html")))
        pages.append(("walk-through emit", os.path.join(tmp, "steps-12-emit.html")))
        swin = os.path.join(a.source, "sample_models", "swin", "model.onnx")
        big = os.path.join(tmp, "swin.html")
        subprocess.run([a.cli, "report", swin, "--strategy", "all", "--out", big], check=True,
                       capture_output=True)
        pages.append(("swin report, every strategy (CUDA packed)", big))
        # Packed listings unpack in the browser: opening them all fills every one, silently.
        with open(big) as f:
            listings = f.read().count('<details class="code" data-code=')
        if listings == 0:
            print("swin report: its CUDA listings were expected to be packed")
            failures += 1
        r = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu",
                            "--enable-logging=stderr", "--v=0", "--virtual-time-budget=20000",
                            "--dump-dom", "file://" + big + "#open-all-code"],
                           capture_output=True, text=True, timeout=180)
        filled = r.stdout.count('data-filled="1"')
        console = [line for line in r.stderr.splitlines() if ":CONSOLE" in line]
        print(f"swin report: {filled} of {listings} packed CUDA listings unpacked when opened")
        if filled != listings or console:
            print("swin report: unpacking failed:\n  " + "\n  ".join(console[:10]))
            failures += 1
        for extra in a.page:
            pages.append((os.path.basename(extra), os.path.abspath(extra)))

        for label, path in pages:
            png = os.path.join(tmp, os.path.basename(path) + ".png")
            rc, seconds, console, err = chromium_run(chromium, "file://" + path, png, "1280,1600")
            if rc != 0 or not os.path.exists(png):
                print(f"{label}: chromium exited {rc}:\n{err[-2000:]}")
                failures += 1
                continue
            if console:
                print(f"{label}: console messages:\n  " + "\n  ".join(console[:10]))
                failures += 1
            # The load time, from a copy of the page that logs it (so the page itself stays
            # silent); beside the original, so its links still resolve.
            timed = path[:-5] + ".timed.html"
            with open(path) as f, open(timed, "w") as g:
                g.write(f.read().replace("</body>", TIMER + "</body>"))
            times = []
            for _ in range(a.runs):
                _, _, log, _ = chromium_run(chromium, "file://" + timed,
                                            os.path.join(tmp, "t.png"), "1280,1600")
                found = [int(m.group(1)) for line in log
                         for m in [re.search(r"SOUFFLE_LOAD_MS=(\d+)", line)] if m]
                if found:
                    times.append(found[0] / 1000)
            os.remove(timed)
            if not times:
                print(f"{label}: the load time was not reported")
                failures += 1
                continue
            if not os.path.exists(png):
                continue
            share, colours = ink(png)
            load = statistics.median(times)
            size_kb = os.path.getsize(path) / 1024
            print(f"{label}: {size_kb:.0f} kB, loaded in {load:.2f} s (median of "
                  f"{len(times)}), screenshot {share * 100:.1f}% ink, {colours} colours")
            if share < 0.02 or colours < 8:
                print(f"{label}: the screenshot is blank")
                failures += 1
            if load > a.max_load_s:
                print(f"{label}: loads in {load:.2f} s, more than {a.max_load_s} s")
                failures += 1
            if a.keep:
                os.makedirs(a.keep, exist_ok=True)
                shutil.copy(png, os.path.join(a.keep, os.path.basename(png)))
    if failures:
        sys.exit(f"check_render: {failures} problems")
    print("check_render: every page rendered without console messages")


if __name__ == "__main__":
    main()
