#!/usr/bin/env python3
"""Aggregates a JFR recording: allocation weight (bytes) by 'owner' frame and execution samples by top frame.
usage: jfr-profile.py FILE.jfr [checks]"""
import json, subprocess, sys, os, collections
jfr = os.path.join(os.environ.get("JAVA_HOME", "/usr"), "bin", "jfr")
f = sys.argv[1]; checks = int(sys.argv[2]) if len(sys.argv) > 2 else 0
def events(name, depth=64):
    out = subprocess.run([jfr, "print", "--json", "--stack-depth", str(depth), "--events", name, f],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)["recording"]["events"]
def frames(e):
    st = e["values"].get("stackTrace") or {}
    return [(fr["method"]["type"]["name"] + "." + fr["method"]["name"]) for fr in st.get("frames", [])]
def owner(fs):
    for i, fr in enumerate(fs):
        if fr.replace("/", ".").startswith("dev.levee.") and "$$Lambda" not in fr:
            callee = fs[i - 1] if i > 0 else "-"
            j = i - 1
            while j > 0 and ("$$Lambda" in fs[j] or "impl.future" in fs[j]):
                j -= 1
            return fr + "  -> " + (fs[j] if j >= 0 else "-")
    return "(no levee frame) " + (fs[0] if fs else "?")
alloc = collections.Counter(); top = collections.Counter(); total = 0
byThread = collections.Counter()
for e in events("jdk.ObjectAllocationSample"):
    w = e["values"]["weight"]; total += w
    fs = frames(e)
    alloc[owner(fs)] += w
    top[fs[0] if fs else "?"] += w
    t = e["values"].get("eventThread") or {}
    byThread[(t.get("javaName") or "?").rstrip("0123456789")] += w
print(f"sampled allocation weight: {total/1e6:.1f} MB" + (f", {total/checks:.0f} B per check over {checks} checks" if checks else ""))
print("-- by thread (name without digits)")
for k, v in byThread.most_common(6): print(f"{100*v/total:6.1f}%  {k}" + (f"  {v/checks:.0f} B/check" if checks else ""))
print("-- by first dev.levee frame on the stack")
for k, v in alloc.most_common(25): print(f"{100*v/total:6.1f}%  {k}" + (f"  {v/checks:.0f} B/check" if checks else ""))
print("-- by allocating frame")
for k, v in top.most_common(15): print(f"{100*v/total:6.1f}%  {k}")
ex = collections.Counter(); exo = collections.Counter(); n = 0
for e in events("jdk.ExecutionSample"):
    fs = frames(e); n += 1
    ex[fs[0] if fs else "?"] += 1
    exo[owner(fs)] += 1
print(f"-- execution samples: {n}; top frames")
for k, v in ex.most_common(20): print(f"{100*v/n:6.1f}%  {k}")
print("-- execution samples by first dev.levee frame")
for k, v in exo.most_common(15): print(f"{100*v/n:6.1f}%  {k}")
