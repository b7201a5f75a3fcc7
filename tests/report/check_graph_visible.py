#!/usr/bin/env python3
"""Renders pages in headless Chromium and checks that their drawings are painted: every element
matching a selector (the report's graph; in a lesson also its memory pictures) is measured in
the page, the screenshot is cropped to it, and the crop must not be one flat colour.

The sample EfficientNet's report has a graph about 7,400 pt tall: a graph that big was left
unpainted (blank) in headless Chromium while the report's CSS asked for `content-visibility:
auto` on it. With --lesson the BERT lesson (`report --steps --lesson`) is rendered too: its
graphs, and its memory pictures (the heat maps of what the shown kernel touches, inline SVG),
which lie far down the page: for them the page is shown with everything but the pictures'
section hidden, so that they start within the window."""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_render import png_pixels  # noqa: E402

# Logs each drawing's rectangle in page coordinates; the page is not scrolled, so a window as
# tall as the page's first drawings captures them as a reader scrolling there would see them.
PROBE = ("<script>window.addEventListener('load', function () {{ "
         "document.querySelectorAll('{sel}').forEach(function (g, i) {{ "
         "var r = g.getBoundingClientRect(); if (r.top + window.scrollY > {limit}) return; "
         "console.log('SOUFFLE_RECT=' + i + ',' + [r.left, r.top + window.scrollY, r.width, "
         "r.height].map(Math.round).join(',')); }}); }});</script>")
WINDOW_W, WINDOW_H = 1280, 4000


# Shows only the memory pictures' section of a lesson (the page's own style otherwise).
FOCUS_MEMORY = ("<style>body > :not(section.step) {display: none !important} "
                "section.step:not(:has(div.mempic)) {display: none !important} "
                "section.step > :not(div.mempic) {display: none !important}</style>")


def shoot(chromium, page, png, selector, focus=""):
    """The rectangles of the drawings (those starting within the window) and the screenshot."""
    probe = page[:-5] + ".probe.html"
    with open(page) as f, open(probe, "w") as g:
        g.write(f.read().replace("</body>", focus +
                                 PROBE.format(sel=selector, limit=WINDOW_H - 200) + "</body>"))
    cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
           "--no-first-run", "--disable-extensions", "--enable-logging=stderr", "--v=0",
           "--host-resolver-rules=MAP * ~NOTFOUND", f"--window-size={WINDOW_W},{WINDOW_H}",
           f"--screenshot={png}", "file://" + probe]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    os.remove(probe)
    rects = []
    for line in r.stderr.splitlines():
        at = line.find("SOUFFLE_RECT=")
        if at >= 0:
            parts = line[at + len("SOUFFLE_RECT="):].split('"')[0].split(",")
            rects.append(tuple(int(p) for p in parts[1:5]))
    return rects


def ink(png, rect):
    """Share of the rectangle's pixels (inside a margin) not of its top-left pixel's colour."""
    w, h, ch, rows = png_pixels(png)
    x0, y0, rw, rh = rect
    x0, y0, rw, rh = x0 + 8, y0 + 8, rw - 16, rh - 16
    x1, y1 = min(w, x0 + rw), min(h, y0 + rh)
    if x1 <= x0 or y1 <= y0:
        return 0.0
    background = rows[y0][x0 * ch:x0 * ch + 3]
    other = total = 0
    for y in range(y0, y1, 2):
        row = rows[y]
        for x in range(x0, x1, 2):
            total += 1
            other += row[x * ch:x * ch + 3] != background
    return other / max(total, 1)


def check(chromium, label, page, selector, tmp, minimum, keep, focus=""):
    png = os.path.join(tmp, os.path.basename(page) + (".memory" if focus else "") + ".png")
    rects = shoot(chromium, page, png, selector, focus)
    if not rects or not os.path.exists(png):
        print(f"{label}: no '{selector}' element measured (or no screenshot)")
        return minimum
    bad = 0
    for i, rect in enumerate(rects[:minimum] if minimum else rects):
        share = ink(png, rect)
        print(f"{label}: '{selector}' #{i} at {rect}: {share * 100:.1f}% of its pixels drawn")
        if share < 0.01:
            print(f"{label}: '{selector}' #{i} is blank")
            bad += 1
    if len(rects) < minimum:
        print(f"{label}: {len(rects)} '{selector}' elements, expected at least {minimum}")
        bad += 1
    if keep:
        os.makedirs(keep, exist_ok=True)
        shutil.copy(png, os.path.join(keep, os.path.basename(png)))
    return bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--chromium", default="")
    ap.add_argument("--lesson", action="store_true", help="also render the BERT lesson")
    ap.add_argument("--keep", default="", help="copy the screenshots into this folder")
    a = ap.parse_args()
    chromium = a.chromium or shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        sys.exit("check_graph_visible: chromium not found (scripts/setup.sh installs it)")
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(a.source, "sample_models", "efficientnet", "model.onnx")
        report = os.path.join(tmp, "efficientnet.html")
        subprocess.run([a.cli, "report", model, "--out", report], check=True,
                       capture_output=True)
        failures += check(chromium, "efficientnet report", report, "div.graph", tmp, 1, a.keep)
        if a.lesson:
            bert = os.path.join(a.source, "sample_models", "bert", "model.onnx")
            lesson = os.path.join(tmp, "lesson.html")
            subprocess.run([a.cli, "report", bert, "--steps", "--lesson", "--out", lesson],
                           check=True, capture_output=True)
            failures += check(chromium, "bert lesson", lesson, "div.graph", tmp, 2, a.keep)
            # The memory pictures: the whole kernel and one frame of its animation.
            failures += check(chromium, "bert lesson memory pictures", lesson, "div.mempic svg",
                              tmp, 2, a.keep, FOCUS_MEMORY)
    if failures:
        sys.exit(f"check_graph_visible: {failures} problems")
    print("check_graph_visible: every drawing measured is painted")


if __name__ == "__main__":
    main()
