"""Small bar charts drawn as inline SVG on the server (no script, nothing the CSP has to allow)."""

from datetime import datetime, timezone

from markupsafe import Markup, escape

WIDTH, HEIGHT, PAD = 240, 64, 12


def _label(ms: int, bucket_s: int) -> str:
    moment = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    return moment.strftime("%H:%M") if bucket_s < 86400 else moment.strftime("%d %b")


def bars(series: list[dict], *, bucket_s: int, name: str) -> Markup:
    """A bar per bucket of `series` ([{t, count}]), with a text alternative that says what it shows."""
    counts = [int(point["count"]) for point in series]
    peak = max(counts, default=0)
    total = sum(counts)
    if not counts:
        return Markup("")
    step = (WIDTH - 2) / len(counts)
    parts = []
    for i, count in enumerate(counts):
        h = 0 if peak == 0 else max(1.0, (HEIGHT - PAD - 2) * count / peak)
        x = 1 + i * step
        parts.append(
            f'<rect class="bar" x="{x:.1f}" y="{HEIGHT - PAD - h:.1f}" width="{max(step - 1, 1):.1f}" height="{h:.1f}">'
            f"<title>{escape(_label(series[i]['t'], bucket_s))} UTC: {count}</title></rect>")
    busiest = counts.index(peak)
    summary = f"{name}: {total} in all, at most {peak} per bucket"
    if peak:
        summary += f" (at {_label(series[busiest]['t'], bucket_s)} UTC)"
    first, last = _label(series[0]["t"], bucket_s), _label(series[-1]["t"], bucket_s)
    return Markup(f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{escape(summary)}" '
                  f'preserveAspectRatio="none" focusable="false">'
                  f'<line class="axis" x1="0" y1="{HEIGHT - PAD}" x2="{WIDTH}" y2="{HEIGHT - PAD}"/>' + "".join(parts) +
                  f'<text x="1" y="{HEIGHT - 1}">{escape(first)}</text>'
                  f'<text x="{WIDTH - 1}" y="{HEIGHT - 1}" text-anchor="end">{escape(last)}</text></svg>')
