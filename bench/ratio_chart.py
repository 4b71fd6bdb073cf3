"""A small dependency-free SVG bar chart of throughput per batch size and engine, for reports."""
from html import escape

from compare_tables import NAMES as LABELS

COLORS = {"fusor": "#2b7bb9", "unfused": "#8fc1e3", "baseline": "#5a9bd0", "ort-all": "#e08a2c",
          "ort-disabled": "#9a9a9a", "openvino": "#7b4fa6"}


def throughput_svg(title, rows, engines):
    """rows: compare-ort summary rows ({"batch": b, engine: {"throughput_per_s": x}, ...})."""
    bar_h, gap, left, width = 16, 14, 150, 420
    peak = max((r[e]["throughput_per_s"] for r in rows for e in engines if r.get(e)), default=1.0)
    height = 50 + len(rows) * (len(engines) * bar_h + gap) + 20
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 220}" height="{height}" '
           'font-family="sans-serif" font-size="12">',
           f'<text x="10" y="20" font-size="14" font-weight="bold">{escape(title)}</text>']
    y = 40
    for r in rows:
        out.append(f'<text x="10" y="{y + bar_h * len(engines) / 2 + 4}">batch {r["batch"]}</text>')
        for e in engines:
            v = r.get(e)
            if v:
                w = width * v["throughput_per_s"] / peak
                out.append(f'<rect x="{left}" y="{y}" width="{w:.1f}" height="{bar_h - 2}" '
                           f'fill="{COLORS.get(e, "#555")}"/>')
                ratio = "" if e == "fusor" or not r.get(f"ratio_{e}") else f'  (fusor {r[f"ratio_{e}"]:.2f}x)'
                out.append(f'<text x="{left + w + 6:.1f}" y="{y + bar_h - 5}">'
                           f'{escape(LABELS.get(e, e))} {v["throughput_per_s"]:.1f}/s{escape(ratio)}</text>')
            y += bar_h
        y += gap
    out.append("</svg>")
    return "\n".join(out) + "\n"
