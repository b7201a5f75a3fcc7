#!/usr/bin/env python3
"""Runs clang-tidy (the committed .clang-tidy) over the project's C++ sources and fails on any
finding that scripts/tidy_baseline.json does not already hold. See docs/lint.md.

A finding is known by its file, its check and a key that does not depend on its line number: a
hash of the message and of the text of the line it points at, whitespace removed. Moving code,
editing other lines or reformatting leaves every key as it was; a new finding, or one more of a
kind already present on an identical line, is new.

A full run takes some 20-30 minutes of one core here, so a check lints only what can have changed
since the baseline was written: the translation units whose content hash differs from the one the
baseline recorded (or that it does not know), and for each changed header one translation unit
that includes it (the build's dependency list says which). When the clang-tidy version or the
configuration differs from the baseline's, every file counts as changed.
"""
import argparse
import concurrent.futures
import hashlib
import json
import os
import re
import shlex
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
# tests/ since 2026-12-07, its headers too (.clang-tidy's HeaderFilterRegex names tests/).
DIRS = ("core/", "views/", "app/", "python/", "tests/")
SOURCE_EXT = (".cpp", ".cc")
HEADER_EXT = (".h", ".hpp")
FINDING = re.compile(r"^(/[^:]+):(\d+):(\d+): (warning|error): (.*) \[([^\]]+)\]$")


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def read(rel: str) -> bytes:
    try:
        with open(os.path.join(ROOT, rel), "rb") as f:
            return f.read()
    except OSError:
        return b""


def tracked_files() -> list:
    out = subprocess.run(["git", "ls-files", "--", *DIRS], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout.split("\n")
    return [p for p in out if p.endswith(SOURCE_EXT + HEADER_EXT)
            and os.path.exists(os.path.join(ROOT, p)) and not p.startswith("resources/")]


def translation_units(build: str, tracked: set) -> list:
    with open(os.path.join(build, "compile_commands.json")) as f:
        entries = json.load(f)
    units = []
    for e in entries:
        rel = os.path.relpath(os.path.join(e["directory"], e["file"]), ROOT)
        if rel in tracked and rel not in units:
            units.append(rel)
    return sorted(units)


def includers(build: str, units: list):
    """header -> translation units that include it (directly or not), and each unit's number of
    included files (a measure of its cost), from ninja's dependency log."""
    try:
        out = subprocess.run(["ninja", "-C", build, "-t", "deps"], capture_output=True, text=True,
                             check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return {}, {}
    unit_set = set(units)
    result = {}
    size = {}
    deps = []

    def flush():
        rels = [os.path.relpath(d, ROOT) for d in deps if d.startswith(ROOT + "/")]
        tu = next((r for r in rels if r in unit_set), None)
        if tu:
            size[tu] = len(deps)
            for r in rels:
                if r.endswith(HEADER_EXT):
                    result.setdefault(r, set()).add(tu)

    for line in out.splitlines():
        if line and not line.startswith(" "):
            flush()
            deps = []
        elif line.strip():
            deps.append(line.strip())
    flush()
    return result, size


def tool_version(tidy: list) -> str:
    out = subprocess.run(tidy + ["--version"], capture_output=True, text=True).stdout
    m = re.search(r"LLVM version (\S+)", out)
    return m.group(1) if m else out.strip()


def config_hash() -> str:
    # Comment lines and blank lines do not change what is checked.
    with open(os.path.join(ROOT, ".clang-tidy")) as f:
        lines = [l.rstrip() for l in f if l.strip() and not l.lstrip().startswith("#")]
    return sha("\n".join(lines).encode())


def line_text(rel: str, line: int, cache: dict) -> str:
    # `cache` holds the files as they were read before linting (their hashes are of that text).
    if rel not in cache:
        cache[rel] = read(rel)
    if isinstance(cache[rel], bytes):
        cache[rel] = cache[rel].decode("utf-8", errors="replace").split("\n")
    lines = cache[rel]
    return lines[line - 1] if 0 < line <= len(lines) else ""


def lint(tidy: list, build: str, unit: str):
    start = time.monotonic()
    proc = subprocess.run(tidy + ["-p", build, "--quiet", os.path.join(ROOT, unit)],
                          capture_output=True, text=True, cwd=ROOT)
    found = set()
    for line in (proc.stdout + "\n" + proc.stderr).splitlines():
        m = FINDING.match(line)
        if not m:
            continue
        path = os.path.normpath(m.group(1))
        if not path.startswith(ROOT + "/"):
            continue
        rel = os.path.relpath(path, ROOT)
        if rel.startswith("build/"):
            continue
        found.add((rel, int(m.group(2)), int(m.group(3)), m.group(6), m.group(5)))
    return unit, found, time.monotonic() - start


def key_of(rel, line, check, message, cache) -> str:
    text = re.sub(r"\s+", "", line_text(rel, line, cache))
    return sha(f"{check}\n{message}\n{text}".encode())


def load_baseline(path: str) -> dict:
    if not os.path.exists(path):
        return {"clang_tidy": "", "config": "", "files": {}, "findings": []}
    with open(path) as f:
        return json.load(f)


def write_baseline(path: str, base: dict) -> None:
    # One finding and one file per line, sorted, so a refresh reads as a short diff.
    lines = ["{", f'  "clang_tidy": {json.dumps(base["clang_tidy"])},',
             f'  "config": {json.dumps(base["config"])},', '  "files": {']
    files = sorted(base["files"].items())
    lines += [f"    {json.dumps(k)}: {json.dumps(v)}" + ("," if i + 1 < len(files) else "")
              for i, (k, v) in enumerate(files)]
    lines += ["  },", '  "findings": [']
    fs = sorted(base["findings"], key=lambda x: (x["file"], x["check"], x["message"], x["key"]))
    lines += ["    " + json.dumps(x, sort_keys=True) + ("," if i + 1 < len(fs) else "")
              for i, x in enumerate(fs)]
    lines += ["  ]", "}"]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("paths", nargs="*", help="lint only files under these paths")
    ap.add_argument("--update", action="store_true",
                    help="write what is linted into the baseline instead of failing on it")
    ap.add_argument("--all", action="store_true", help="lint every translation unit")
    ap.add_argument("-j", type=int, default=os.cpu_count() or 1, help="parallel clang-tidy runs")
    ap.add_argument("--build", default=os.environ.get("BUILD_DIR", "build"))
    ap.add_argument("--baseline", default=os.path.join(ROOT, "scripts", "tidy_baseline.json"))
    args = ap.parse_args()
    build = os.path.join(ROOT, args.build) if not os.path.isabs(args.build) else args.build
    tidy = shlex.split(os.environ.get("CLANG_TIDY", "clang-tidy"))
    if not os.path.exists(os.path.join(build, "compile_commands.json")):
        print(f"tidy: {build}/compile_commands.json is missing (configure the build first)")
        return 1

    tracked = tracked_files()
    units = translation_units(build, set(tracked))
    prefixes = [os.path.relpath(os.path.abspath(p), ROOT) for p in args.paths]

    def wanted(rel):
        return not prefixes or any(rel == p or rel.startswith(p.rstrip("/") + "/") for p in prefixes)

    base = load_baseline(args.baseline)
    version, config = tool_version(tidy), config_hash()
    stale = base["clang_tidy"] != version or base["config"] != config
    known = {} if stale else base["files"]
    cache = {rel: read(rel) for rel in tracked}
    hashes = {rel: sha(text) for rel, text in cache.items()}
    changed = {rel for rel in tracked if wanted(rel) and known.get(rel) != hashes[rel]}

    if args.all:
        to_lint = [u for u in units if wanted(u)]
    else:
        to_lint = [u for u in units if u in changed]
        covered = set(to_lint)
        deps, size = (includers(build, units) if any(h.endswith(HEADER_EXT) for h in changed)
                      else ({}, {}))
        for h in sorted(x for x in changed if x.endswith(HEADER_EXT)):
            users = deps.get(h, set())
            if users & covered:
                continue
            if not users:
                print(f"tidy: {h} changed but no built translation unit includes it; not linted")
                continue
            # The header's own source when it includes it, else the cheapest includer.
            own = os.path.splitext(h)[0] + ".cpp"
            pick = own if own in users else min(users, key=lambda u: (size.get(u, 0), u))
            to_lint.append(pick)
            covered.add(pick)
    to_lint = sorted(set(to_lint))

    why = ("every file: the clang-tidy version or .clang-tidy differs from the baseline's"
           if stale else f"{len(changed)} files changed since the baseline")
    print(f"tidy: clang-tidy {version}; linting {len(to_lint)} of {len(units)} translation units"
          + ("" if args.all else f" ({why})"), flush=True)
    start = time.monotonic()
    found = set()
    slowest = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.j)) as pool:
        for i, (unit, f, secs) in enumerate(pool.map(lambda u: lint(tidy, build, u), to_lint)):
            found |= f
            slowest.append((secs, unit))
            if len(to_lint) > 20 and (i + 1) % 20 == 0:
                print(f"tidy: {i + 1}/{len(to_lint)} linted, {time.monotonic() - start:.0f} s",
                      flush=True)
    elapsed = time.monotonic() - start
    # A file edited while it was linted: its findings' lines may not be the text hashed above.
    moved = sorted(rel for rel in set(to_lint) | {r for r, *_ in found}
                   if rel in hashes and sha(read(rel)) != hashes[rel])
    for rel in moved:
        print(f"tidy: {rel} changed while it was linted; its findings may be misplaced"
              + (" (its hash is not recorded: the next run lints it again)" if args.update else ""))

    current = {}
    where = {}
    for rel, line, col, check, message in sorted(found):
        k = (rel, check, key_of(rel, line, check, message, cache))
        current[k] = current.get(k, 0) + 1
        where.setdefault(k, []).append((line, col, message))
    baseline_counts = {}
    for x in base["findings"]:
        k = (x["file"], x["check"], x["key"])
        baseline_counts[k] = baseline_counts.get(k, 0) + x.get("count", 1)

    # Files whose findings this run speaks for: the linted units and the changed headers.
    covered_files = set(to_lint) | {h for h in changed if h.endswith(HEADER_EXT)}
    if args.all:
        covered_files |= {h for h in tracked if h.endswith(HEADER_EXT) and wanted(h)}

    if args.update:
        kept = [x for x in base["findings"] if x["file"] not in covered_files
                and x["file"] in hashes]
        fresh = [{"file": k[0], "check": k[1], "key": k[2], "count": n,
                  "message": where[k][0][2]} for k, n in current.items()
                 if k[0] in covered_files]
        files = {rel: h for rel, h in known.items() if rel in hashes}
        for rel in covered_files:
            files[rel] = hashes[rel]
        for rel in moved:
            files.pop(rel, None)
        write_baseline(args.baseline, {"clang_tidy": version, "config": config, "files": files,
                                       "findings": kept + fresh})
        print(f"tidy: baseline {os.path.relpath(args.baseline, ROOT)} updated: "
              f"{sum(x['count'] for x in kept + fresh)} findings in "
              f"{len({x['file'] for x in kept + fresh})} files ({elapsed:.0f} s)")
        return 0

    new = [(k, n - baseline_counts.get(k, 0)) for k, n in sorted(current.items())
           if n > baseline_counts.get(k, 0)]
    slowest.sort(reverse=True)
    if slowest:
        print(f"tidy: {elapsed:.0f} s; slowest {slowest[0][1]} ({slowest[0][0]:.0f} s)")
    if new:
        total = sum(n for _, n in new)
        print(f"tidy: {total} new finding(s) not in the baseline:")
        for (rel, check, _), n in new:
            for line, col, message in where[(rel, check, _)]:
                print(f"  {rel}:{line}:{col}: {message} [{check}]")
                print(f"      {line_text(rel, line, cache).strip()}")
            if n < len(where[(rel, check, _)]):
                print(f"    ({n} more than the baseline's {len(where[(rel, check, _)]) - n} "
                      "on identical lines above)")
        print("tidy: fix them (preferred), or accept them with scripts/check_tidy.sh --update "
              "(docs/lint.md)")
        return 1
    print(f"tidy: {sum(current.values())} findings in the linted files, all in the baseline")
    return 0


if __name__ == "__main__":
    sys.exit(main())
