"""compare-ort's summary over rounds and its tables (plain text or markdown)."""
import statistics

# Every engine compare-ort can measure, by its --engines name, with the name tables show.
NAMES = {"fusor": "fusor", "unfused": "fusor unfused", "baseline": "fusor baseline",
         "ort-all": "ORT all", "ort-disabled": "ORT disabled", "openvino": "OpenVINO"}
# The engines that are not fusor: "best peer" is the fastest of those measured.
PEERS = ("ort-all", "ort-disabled", "openvino")


def median_of(rs, key):
    vals = [key(r) for r in rs if r is not None]
    return statistics.median(vals) if vals else None


def summarize(engines, results, batches):
    """Per batch: each engine's median throughput / p50 / p99 and spread over rounds, the ratio
    fusor / engine for every other engine, and the best peer with fusor's ratio to it."""
    rows = []
    for b in batches:
        row = {"batch": b}
        for e in engines:
            rs = [r for r in results[e][b] if r is not None]
            if not rs:
                row[e] = None
                continue
            tp = [r["throughput_per_s"] for r in rs]
            row[e] = {"throughput_per_s": statistics.median(tp),
                      "p50": median_of(rs, lambda r: r["latency_ms"]["p50"]),
                      "p99": median_of(rs, lambda r: r["latency_ms"]["p99"]),
                      "spread": (max(tp) - min(tp)) / statistics.median(tp),
                      "rounds": len(rs)}
            if "kernels_per_inference" in rs[0]:
                row[e]["kernels"] = rs[0]["kernels_per_inference"]
            if "peak_rss_bytes" in rs[0]:
                row[e]["peak_rss_mib"] = max(r["peak_rss_bytes"] for r in rs) / 2**20
        f = row.get("fusor")
        for e in engines:
            if e != "fusor":
                o = row.get(e)
                row[f"ratio_{e}"] = (f["throughput_per_s"] / o["throughput_per_s"]
                                     if f and o else None)
        measured = [e for e in engines if e in PEERS and row.get(e)]
        best = max(measured, key=lambda e: row[e]["throughput_per_s"], default=None)
        row["best_peer"] = best
        row["ratio_best_peer"] = row.get(f"ratio_{best}") if best else None
        rows.append(row)
    return rows


def render(head, body, markdown):
    if markdown:
        out = ["| " + " | ".join(head) + " |", "|" + "---:|" * len(head)]
        return "\n".join(out + ["| " + " | ".join(l) + " |" for l in body])
    w = [max(len(h), *(len(l[i]) for l in body)) for i, h in enumerate(head)]
    out = ["  ".join(h.rjust(w[i]) for i, h in enumerate(head))]
    return "\n".join(out + ["  ".join(c.rjust(w[i]) for i, c in enumerate(l)) for l in body])


def ratio_text(v):
    return "n/a" if v is None else f"{v:.2f}x"


def tables(engines, rows, markdown=False):
    """(throughput and ratio table, latency table) as text."""
    ratios = [e for e in engines if e != "fusor"] if "fusor" in engines else []
    best = "fusor" in engines and sum(e in PEERS for e in engines) > 1
    head = (["batch"] + [f"{NAMES[e]} /s" for e in engines] + [f"fusor / {NAMES[e]}" for e in ratios]
            + (["fusor / best peer"] if best else []))
    body = []
    for r in rows:
        line = [str(r["batch"])]
        for e in engines:
            x = r.get(e)
            sp = f" ±{x['spread'] * 50:.0f}%" if x and x["rounds"] > 1 else ""
            line.append("n/a" if x is None else f"{x['throughput_per_s']:.1f}{sp}")
        line += [ratio_text(r.get(f"ratio_{e}")) for e in ratios]
        if best:
            v = r.get("ratio_best_peer")
            line.append("n/a" if v is None else f"{v:.2f}x ({NAMES[r['best_peer']]})")
        body.append(line)
    t1 = render(head, body, markdown)

    head = ["batch"]
    for e in engines:
        head += [f"{NAMES[e]} p50 ms", f"{NAMES[e]} p99 ms"]
    if "fusor" in engines:
        head += ["fusor kernels", "fusor peak RSS MiB"]
    body = []
    for r in rows:
        line = [str(r["batch"])]
        for e in engines:
            x = r.get(e)
            line += ["n/a", "n/a"] if x is None else [f"{x['p50']:.2f}", f"{x['p99']:.2f}"]
        if "fusor" in engines:
            x = r.get("fusor") or {}
            line += [str(x.get("kernels", "n/a")),
                     f"{x['peak_rss_mib']:.0f}" if "peak_rss_mib" in x else "n/a"]
        body.append(line)
    return t1, render(head, body, markdown)
