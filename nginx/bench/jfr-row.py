#!/usr/bin/env python3
"""jfr-row.py DIR [row conns]: allocation (JFR ObjectAllocationSample weights) per request of one bench row, per role;
GC pauses of each role in that row (from its -Xlog:gc file is not timestamped in epoch: uses JFR jdk.GarbageCollection)."""
import json, subprocess, sys, os, collections, datetime
d = sys.argv[1]; row = sys.argv[2] if len(sys.argv) > 2 else "levee"; conns = sys.argv[3] if len(sys.argv) > 3 else "32"
jfr = os.path.join(os.environ.get("JAVA_HOME", "/usr"), "bin", "jfr")
t0 = t1 = reqs = None
for line in open(os.path.join(d, "rows.txt")):
    n, c, a, b, r = line.split()
    if n == row and c == conns:
        t0, t1, reqs = int(a), int(b), int(r)
def ns(ts):
    # 2026-12-01T17:18:59.123456789Z or with offset
    main, frac = ts.rstrip("Z").split(".") if "." in ts else (ts.rstrip("Z"), "0")
    frac = frac.split("+")[0].split("-")[0]
    dt = datetime.datetime.fromisoformat(main).replace(tzinfo=datetime.timezone.utc)
    return int(dt.timestamp()) * 10**9 + int((frac + "000000000")[:9])
def ev(f, name, depth=1):
    out = subprocess.run([jfr, "print", "--json", "--stack-depth", str(depth), "--events", name, f], capture_output=True, text=True, check=True).stdout
    return json.loads(out)["recording"]["events"]
print(f"row {row} at {conns} connections: {reqs} requests in {(t1 - t0) / 1e9:.1f} s")
for role in ["client", "limiter-1", "limiter-2"]:
    f = os.path.join(d, role + ".jfr")
    if not os.path.exists(f): continue
    tot = 0; byThread = collections.Counter()
    for e in ev(f, "jdk.ObjectAllocationSample"):
        t = ns(e["values"]["startTime"])
        if t0 <= t <= t1:
            w = e["values"]["weight"]; tot += w
            th = (e["values"].get("eventThread") or {}).get("javaName") or "?"
            byThread["logger" if "Log4j" in th else "event loops" if "eventloop" in th else "other"] += w
    pauses = []
    for e in ev(f, "jdk.GarbageCollection"):
        t = ns(e["values"]["startTime"])
        if t0 <= t <= t1:
            dur = e["values"]["longestPause"]
            pauses.append(dur)
    def ms(x):
        # JFR JSON durations like "PT0.002345S"
        return float(x[2:-1]) * 1000 if isinstance(x, str) else x / 1e6
    p = sorted(ms(x) for x in pauses)
    share = reqs if role == "client" else reqs / 2
    hist = collections.Counter("<1 ms" if x < 1 else "1-2 ms" if x < 2 else "2-5 ms" if x < 5 else "5-10 ms" if x < 10 else "10-20 ms" if x < 20 else ">=20 ms" for x in p)
    print(f"{role:10s} {tot / share:7.0f} B/check ({', '.join(f'{k} {v / share:.0f}' for k, v in byThread.most_common())});"
          f" {len(p)} GC pauses, max {p[-1] if p else 0:.1f} ms, {dict(sorted(hist.items()))}")
