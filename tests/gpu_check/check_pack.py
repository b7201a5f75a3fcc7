#!/usr/bin/env python3
"""scripts/gpu_check.sh --prepare, then the pack moved elsewhere and read with readelf: no C
library or C++ runtime packed, the archive that travels holding the same files (and, through
--prepare, the checkout with it within the 64 MiB a copy to a GPU machine may hold), nothing needing a glibc newer than this machine's, every binary
and library finding the packed libraries through its own run path (no library path set).

    check_pack.py BUILD_DIR WORK_DIR     leaves the moved pack at WORK_DIR/moved
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NEVER = re.compile(r"^(libc|libm|libdl|libpthread|librt|ld-linux.*|libstdc\+\+|libgcc_s)\.so")


def version_key(v):
    return tuple(int(x) for x in v.split(".") if x.isdigit())


def needed_versions(path, prefix):
    out = subprocess.run(["readelf", "-V", "--wide", path], capture_output=True, text=True).stdout
    return sorted(set(re.findall(r"Name: %s_([0-9.]+)" % prefix, out)), key=version_key)


def problems(folder, glibc_here):
    """What is wrong with the pack in `folder`, one line each."""
    bad = []
    for sub in ("bin", "lib"):
        for name in sorted(os.listdir(os.path.join(folder, sub))):
            path = os.path.join(folder, sub, name)
            if sub == "lib" and NEVER.match(name):
                bad.append("%s is packed: the device's own must serve (C library or C++ runtime)" % name)
            for v in needed_versions(path, "GLIBC"):
                if version_key(v) > version_key(glibc_here):
                    bad.append("%s needs GLIBC_%s, newer than this machine's %s" % (name, v, glibc_here))
            dyn = subprocess.run(["readelf", "-d", path], capture_output=True, text=True).stdout
            want = "$ORIGIN/../lib" if sub == "bin" else "$ORIGIN"
            if "(RUNPATH)" not in dyn and "(RPATH)" not in dyn or "[%s]" % want not in dyn:
                bad.append("%s has no run path %s" % (name, want))
    return bad


def main(build, work):
    glibc_here = os.confstr("CS_GNU_LIBC_VERSION").split()[-1]
    packed = os.path.join(work, "packed")
    moved = os.path.join(work, "moved")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    env = dict(os.environ, BUILD_DIR=build)
    subprocess.run([os.path.join(ROOT, "scripts", "gpu_check.sh"), "--prepare", "--no-build", "--pack", packed],
                   check=True, env=env)
    # The archive that travels holds exactly the folder's files.
    archive = packed + ".tar.xz"
    failures = []
    if not os.path.isfile(archive):
        failures.append("--prepare wrote no %s" % os.path.basename(archive))
    else:
        listed = subprocess.run(["tar", "-tJf", archive], capture_output=True, text=True, check=True).stdout.split()
        in_archive = sorted(os.path.normpath(n) for n in listed if not n.endswith("/") and n != ".")
        in_folder = sorted(os.path.relpath(os.path.join(d, f), packed) for d, _, fs in os.walk(packed) for f in fs)
        if in_archive != in_folder:
            failures.append("the archive holds %d files, the pack %d" % (len(in_archive), len(in_folder)))
    os.rename(packed, moved)
    failures += problems(moved, glibc_here)
    with open(os.path.join(moved, "pack.json")) as f:
        info = json.load(f)
    for lib in ("libstdc++.so.6", "libgcc_s.so.1"):
        if lib in info["packed"]:
            failures.append("pack.json lists %s as packed" % lib)
    if version_key(info["glibc_needed"]) > version_key(glibc_here):
        failures.append("pack.json: needs glibc %s" % info["glibc_needed"])
    # Every packed library is found in the moved pack, by the run paths alone.
    clean = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "LD_PRELOAD")}
    libs = set(os.listdir(os.path.join(moved, "lib")))
    for exe in os.listdir(os.path.join(moved, "bin")):
        out = subprocess.run(["ldd", os.path.join(moved, "bin", exe)], capture_output=True, text=True, env=clean).stdout
        for line in out.splitlines():
            m = re.match(r"\s*(\S+) => (.*?) \(", line)
            if "not found" in line:
                failures.append("%s: %s" % (exe, line.strip()))
            elif m and m.group(1) in libs and not os.path.normpath(m.group(2)).startswith(os.path.join(moved, "lib") + "/"):
                failures.append("%s loads %s from %s, not from the pack" % (exe, m.group(1), m.group(2)))
        flag = "--version" if exe == "souffle-runner" else "--help"
        rc = subprocess.run([os.path.join(moved, "bin", exe), flag], capture_output=True, env=clean).returncode
        if rc != 0:
            failures.append("%s %s exits %d from the moved pack" % (exe, flag, rc))
    # The check above can fail: a pack with the C++ runtime in it is refused.
    with tempfile.TemporaryDirectory() as t:
        shutil.copytree(moved, os.path.join(t, "p"), symlinks=True)
        libstdcxx = subprocess.run(["sh", "-c", "ldconfig -p | awk '/libstdc\\+\\+.so.6 .*x86-64/ {print $NF; exit}'"],
                                   capture_output=True, text=True).stdout.strip()
        if libstdcxx:
            shutil.copy(libstdcxx, os.path.join(t, "p", "lib", "libstdc++.so.6"))
            if not any("libstdc++.so.6 is packed" in p for p in problems(os.path.join(t, "p"), glibc_here)):
                failures.append("the check does not notice a packed libstdc++")
    if version_key("2.99") <= version_key(glibc_here) or version_key("2.3.4") > version_key(glibc_here):
        failures.append("version comparison broken")
    print("pack: %s packed (%s), needs glibc %s, GLIBCXX %s; this machine has glibc %s"
          % (len(info["packed"]), " ".join(info["packed"]), info["glibc_needed"], info["glibcxx_needed"], glibc_here))
    for f in failures:
        print("FAIL: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
