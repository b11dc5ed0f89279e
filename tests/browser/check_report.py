#!/usr/bin/env python3
"""Renders a tracefuse HTML report in a real browser (headless Chromium, networking disabled) and
checks it against the JSON report of the same run:

  network  no request left the page (Chromium's net log: every request made for the file:// page
           that is not itself a file: or data: URL)
  console  the page logged nothing (Chromium's console log on stderr: CSP violations, failed loads)
  DOM      the DOM Chromium built holds the Content-Security-Policy of the contract, no script,
           and the figures of the JSON report: compare: both traces' label, platform, GPU, kernel
           count and kernel time, the top category's times (largest time1 + time2) and those of
           every category row shown, every fusion opportunity (up to 50) in order, the mappings,
           sequences and drilldown sections; breakdown: the GPU, every category row shown and the
           top category's time; ops: both traces (as compare, and the share of kernel time linked
           to an op), the op rows shown (the first --top matched ops with kernel time, in order,
           with both sides' times), the fusion differences' count and, for those shown, their
           kinds, who fuses (that side's label) and savings in order, each with its example
           instance's kernels aligned (every kernel once, in order; a column's two cells of one
           category unless it is marked as differing), the instances and unmatched sections;
           merge: every complete pair's row with both sides' kernel counts
  sections every section of the text report of the same command and options (a title underlined
           by dashes) has its HTML counterpart, an <h2> of the same title (parentheses aside), in
           the same order
  pixels   the screenshot is not blank: more than one colour, at least MIN_INK of its pixels
           differ from the background, and (compare, ops) each colour of the first chart's bars
           (compare: kernel time per category; ops: the ops that differ most) is on screen

Expected figures come from `tracefuse COMMAND ... --format json` (sections: `--format text`) of
the same traces and options, never from this file. One Chromium run gives both the DOM (--dump-dom) and the screenshot.

usage: check_report.py [--keep DIR] [--mutate KIND --expect-failure LINE]
                       CHROMIUM TRACEFUSE compare TRACE1 TRACE2 [tracefuse options...]
       check_report.py [...] CHROMIUM TRACEFUSE ops TRACE1 TRACE2 [tracefuse options...]
       check_report.py [...] CHROMIUM TRACEFUSE breakdown TRACE [tracefuse options...]
       check_report.py [...] CHROMIUM TRACEFUSE merge BATCH_DIR [tracefuse options...]

  --keep DIR             leave report.html, report.json, report.txt, dom.html, screenshot.png,
                         net-log.json and console.txt in DIR (default: a temporary directory, removed)
  --mutate KIND          alter the HTML tracefuse wrote before rendering it (negative controls):
                         external-image         an <img> of http://example.invalid/x.png
                         external-image-no-csp  the same, and the Content-Security-Policy removed
                         swap-sides             the traces table's rows swapped (data-side)
                         empty-body             the body emptied
                         hidden-body            the body made invisible (visibility: hidden)
                         rename-section         the section "Why the GPU is idle" renamed
  --expect-failure LINE  pass only when the check fails with exactly LINE (its first line)

Prints one line: "ok: ..." or the first check that failed (then "also: ..." for any other).
Exit 0 when every check holds, 1 otherwise, 77 (skipped) when a trace is not on this machine.
"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from html.parser import HTMLParser

CSP = ("default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; "
       "form-action 'none'")
WINDOW = (1280, 2400)
CHROMIUM_TIMEOUT_S = 60
MIN_INK = 0.01  # share of the screenshot's pixels that are not the background colour
MAX_OPPORTUNITIES = 50
OPS_TOP = 20  # `tracefuse ops --top`'s default
MAX_ALIGNED_COLUMNS = 300  # the ops page's strips show no more
MAX_MERGE_PAIRS = 200  # the merge page's pairs table shows no more
EXTERNAL_IMAGE = '<img src="http://example.invalid/x.png" alt="">'


class Failure(Exception):
    """A check that cannot go on (tracefuse or Chromium did not run)."""


# --- DOM -------------------------------------------------------------------------------------

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr"}


class Node:
    def __init__(self, tag, attrs, parent):
        self.tag, self.attrs, self.parent, self.children = tag, dict(attrs), parent, []

    def iter(self):
        yield self
        for child in self.children:
            if isinstance(child, Node):
                yield from child.iter()

    def find_all(self, tag, **attrs):
        """Descendants (self included) with this tag whose attributes hold these values; an
        attribute value of True only asks that the attribute is there; class matches one class."""
        for node in self.iter():
            if node.tag != tag:
                continue
            ok = True
            for name, value in attrs.items():
                name = name.rstrip("_").replace("_", "-")
                if name not in node.attrs:
                    ok = False
                elif value is True:
                    pass
                elif name == "class":
                    ok = ok and value in (node.attrs[name] or "").split()
                else:
                    ok = ok and node.attrs[name] == value
            if ok:
                yield node

    def find(self, tag, **attrs):
        return next(self.find_all(tag, **attrs), None)

    def text(self):
        parts = []

        def walk(node):
            for child in node.children:
                if isinstance(child, Node):
                    walk(child)
                else:
                    parts.append(child)
        walk(self)
        return " ".join("".join(parts).split())


class TreeBuilder(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {}, None)
        self.current = self.root

    def handle_starttag(self, tag, attrs):
        node = Node(tag, attrs, self.current)
        self.current.children.append(node)
        if tag not in VOID:
            self.current = node

    def handle_startendtag(self, tag, attrs):
        self.current.children.append(Node(tag, attrs, self.current))

    def handle_endtag(self, tag):
        node = self.current
        while node is not None and node.tag != tag:
            node = node.parent
        if node is not None and node.parent is not None:
            self.current = node.parent

    def handle_data(self, data):
        self.current.children.append(data)


def parse_dom(text):
    builder = TreeBuilder()
    builder.feed(text)
    builder.close()
    return builder.root


def ms(us):
    """The contract's milliseconds: microseconds / 1000 with 3 decimals."""
    return "%.3f" % (us / 1000)


def gpu_name(gpu):
    return gpu if gpu else "(GPU not named)"


def check_common_dom(dom, command):
    html = dom.find("html")
    if html is None or html.attrs.get("data-report") != command:
        got = None if html is None else html.attrs.get("data-report")
        return f'DOM: <html data-report="{command}"> expected, got data-report={got!r}'
    metas = [m for m in dom.find_all("meta", http_equiv=True)
             if m.attrs["http-equiv"].lower() == "content-security-policy"]
    if [m.attrs.get("content") for m in metas] != [CSP]:
        return f"DOM: one Content-Security-Policy <meta> with {CSP!r} expected, got " \
               f"{[m.attrs.get('content') for m in metas]!r}"
    if dom.find("script") is not None:
        return "DOM: the report holds a <script>"
    return None


def check_traces_table(dom, traces):
    """The traces table of compare and ops: each side's label, platform, GPU, kernel count and
    kernel time."""
    table = dom.find("table", class_="traces")
    if table is None:
        return 'DOM: no <table class="traces">'
    for side, trace in enumerate(traces, 1):
        row = table.find("tr", data_side=str(side))
        if row is None:
            return f'DOM: no <tr data-side="{side}"> in the traces table'
        expected = {"label": trace["label"], "platform": trace["platform"],
                    "gpu": gpu_name(trace["gpu"]),
                    "kernel-time": ms(trace["kernel_time_us"]) + " ms"}
        for cell, value in expected.items():
            td = row.find("td", class_=cell)
            got = None if td is None else td.text()
            if got != value:
                return f"DOM: trace {side} {cell}: expected {value!r}, got {got!r}"
        td = row.find("td", class_="kernels")
        got = None if td is None else td.text()
        # The contract leaves the count's digit grouping open: its digits must be the count's.
        if got is None or re.sub(r"[^0-9]", "", got) != str(trace["kernels"]):
            return f"DOM: trace {side} kernels: expected {trace['kernels']}, got {got!r}"
    return None


def check_compare_dom(dom, report, options):
    traces = report["tracefuse"]["traces"]
    problem = check_traces_table(dom, traces)
    if problem:
        return problem
    section = dom.find("section", id="categories")
    if section is None:
        return 'DOM: no <section id="categories">'
    if section.find("svg") is None:
        return "DOM: no <svg> chart in the categories section"
    by_category = [t["kernel_time_us_by_category"] for t in traces]
    names = sorted(set(by_category[0]) | set(by_category[1]),
                   key=lambda n: -(by_category[0].get(n, 0.0) + by_category[1].get(n, 0.0)))
    if not names:
        return "JSON: no category in either trace"
    top = names[0]
    table = section.find("table", class_="categories")
    if table is None:
        return 'DOM: no <table class="categories"> in the categories section'
    rows = {r.attrs["data-category"]: r for r in table.find_all("tr", data_category=True)}
    if top not in rows:
        return f'DOM: no row for the top category {top!r} in <table class="categories">'
    for name, row in rows.items():
        if name not in names:
            return f"DOM: category row {name!r} is in neither trace's JSON"
        for column, side in (("time1", 0), ("time2", 1)):
            expected = ms(by_category[side].get(name, 0.0))
            td = row.find("td", class_=column)
            got = None if td is None else td.text()
            if got != expected:
                return f"DOM: category {name!r} {column}: expected {expected!r}, got {got!r}"

    section = dom.find("section", id="opportunities")
    if section is None:
        return 'DOM: no <section id="opportunities">'
    expected = [o["kernel_type"] for o in report["fusion_opportunities"]][:MAX_OPPORTUNITIES]
    got = [li.attrs["data-kernel-type"] for li in section.find_all("li", data_kernel_type=True)]
    if got != expected:
        return f"DOM: opportunities: expected {expected!r}, got {got!r}"
    for name in ("mappings", "sequences", "drilldown"):
        if dom.find("section", id=name) is None:
            return f'DOM: no <section id="{name}">'
    return None


def check_breakdown_dom(dom, report, options):
    body = dom.find("body")
    gpu = gpu_name(report["gpu"])
    if body is None or gpu not in body.text():
        return f"DOM: the GPU {gpu!r} is not in the page's text"
    categories = {c["category"]: c["time_us"] for c in report["categories"]}
    if not categories:
        return "JSON: no category"
    top = max(categories, key=lambda n: categories[n])
    table = dom.find("table", class_="categories")
    if table is None:
        return 'DOM: no <table class="categories">'
    rows = {r.attrs["data-category"]: r for r in table.find_all("tr", data_category=True)}
    if top not in rows:
        return f"DOM: no row for the top category {top!r}"
    for name, row in rows.items():
        if name not in categories:
            return f"DOM: category row {name!r} is not in the JSON"
        td = row.find("td", class_="time")
        got = None if td is None else td.text()
        if got != ms(categories[name]):
            return f"DOM: category {name!r} time: expected {ms(categories[name])!r}, got {got!r}"
    return None


def check_merge_dom(dom, report, options):
    """Every complete pair has its row in the pairs table (up to the page's 200), with both
    sides' kernel counts."""
    complete = [p for p in report["pairs"] if p["state"] == "complete"]
    rows = {row.attrs["data-pair"]: row for row in dom.find_all("tr", data_pair=True)}
    for pair in complete[:MAX_MERGE_PAIRS]:
        row = rows.get(pair["label"])
        if row is None:
            return f"DOM: pair {pair['label']!r}: no row in the pairs table"
        kernels = " / ".join(f"{t['kernels']:,}" for t in pair["traces"])
        cells = row.find_all("td")
        got = [c.text() for c in cells]
        if len(got) < 2 or got[1] != kernels:
            return f"DOM: pair {pair['label']!r} kernels: expected {kernels!r}, got " \
                   f"{got[1] if len(got) > 1 else None!r}"
    return None


def section_key(title):
    """A section title without its parenthesis: the text report's "Fusion opportunities (by
    impact)" and the HTML's "Fusion opportunities" (then its muted note) are one section."""
    return " ".join(title.split(" (", 1)[0].split())


def text_sections(text):
    """The text report's section titles: each line underlined by as many dashes."""
    lines = text.splitlines()
    # As many dashes as the title has bytes (the report counts bytes), up to its 100 columns.
    return [title for title, rule in zip(lines, lines[1:])
            if title.strip() and rule and set(rule) == {"-"}
            and len(rule) in (len(title.encode()), min(len(title.encode()), 100))]


SECTIONED = ("compare", "ops", "merge")  # breakdown's text has no titled sections


def check_sections(dom, text, command):
    """Every section of the text report of the same run has its HTML counterpart (an <h2> with the
    same title), in the same order; the HTML may have more."""
    html = [section_key(h2.text()) for h2 in dom.find_all("h2")]
    titles = text_sections(text)
    if not titles and command in SECTIONED:
        return "sections: the text report has no section titles (nothing to check)"
    at = 0
    for title in titles:
        key = section_key(title)
        try:
            at = html.index(key, at) + 1
        except ValueError:
            return f"sections: the text report's section {key!r} has no HTML counterpart after " \
                   f"{html[at - 1] if at else 'the top'!r}"
    return None


def option_value(options, name, default):
    """The value of `name VALUE` or `name=VALUE` among the tracefuse options, else default."""
    for i, option in enumerate(options):
        if option == name and i + 1 < len(options):
            return options[i + 1]
        if option.startswith(name + "="):
            return option[len(name) + 1:]
    return default


def us1(us):
    """The ops page's microseconds: one decimal."""
    return "%.1f" % us


def saving_text(us):
    return (f"saves {us1(us)} us" if us >= 0
            else f"the fused kernel is slower: {us1(-us)} us more")


def cell_text(row, cell):
    td = row.find("td", class_=cell)
    return None if td is None else td.text()


def check_linked_share(dom, traces):
    """Each side's share of kernel time linked to an op, to the page's one decimal (the page
    divides nanoseconds, the JSON holds microseconds: a last-digit tie may round either way)."""
    table = dom.find("table", class_="traces")
    for side, trace in enumerate(traces, 1):
        got = cell_text(table.find("tr", data_side=str(side)), "linked")
        total = trace["kernel_time_us"]
        expected = 100 * trace["linked_kernel_time_us"] / total if total > 0 else 0.0
        match = re.fullmatch(r"([0-9.]+)%", got or "")
        if match is None or abs(float(match.group(1)) - expected) > 0.05 + 1e-9:
            return f"DOM: trace {side} linked: expected {expected:.1f}%, got {got!r}"
    return None


def check_op_rows(dom, report, top):
    section = dom.find("section", id="ops")
    if section is None:
        return 'DOM: no <section id="ops">'
    expected = [r for r in report["ops"]
                if r["matched"] and (r["trace1"]["time_us"] or r["trace2"]["time_us"])][:top]
    if expected and section.find("svg") is None:
        return "DOM: no <svg> chart in the ops section"
    table = section.find("table", class_="ops")
    rows = [] if table is None else list(table.find_all("tr", data_op=True))
    got = [(r.attrs["data-op"], r.attrs.get("data-scope")) for r in rows]
    if got != [(r["op"], r["scope"]) for r in expected]:
        return (f"DOM: op rows: expected {[(r['op'], r['scope']) for r in expected]!r}, "
                f"got {got!r}")
    for row, op in zip(rows, expected):
        for cell, side in (("time1", "trace1"), ("time2", "trace2")):
            if cell_text(row, cell) != us1(op[side]["time_us"]):
                return (f"DOM: op {op['op']!r} {cell}: expected {us1(op[side]['time_us'])!r}, "
                        f"got {cell_text(row, cell)!r}")
    return None


def cell_category(cell):
    """The category in a strip cell's title, "name (Category, 1.2 us)"."""
    match = re.search(r"\(([^()]*), -?[0-9.]+ us\)$", cell.attrs.get("title") or "")
    return None if match is None else match.group(1)


def check_example(article, difference, n):
    """The example instance's kernels in the strip: every kernel of each side once, in start
    order, and a column's two cells of one category unless it is marked as differing."""
    strip = article.find("div", class_="seq")
    if strip is None:
        return f"DOM: fusion difference {n}: no aligned strip (<div class=\"seq\">)"
    columns = [c for c in strip.children if isinstance(c, Node) and c.tag == "span"]
    example = difference["example"]
    if len(example["trace1"]) + len(example["trace2"]) > MAX_ALIGNED_COLUMNS:
        return None  # the strip shows the first columns only
    sides = ([], [])
    for column in columns:
        cells = [c for c in column.children if isinstance(c, Node) and c.tag == "b"]
        if len(cells) != 2:
            return f"DOM: fusion difference {n}: a strip column of {len(cells)} cells, not 2"
        categories = [None if "gap" in (c.attrs.get("class") or "").split() else cell_category(c)
                      for c in cells]
        for side, category in enumerate(categories):
            if category is not None:
                sides[side].append(category)
        differs = "diff" in (column.attrs.get("class") or "").split()
        if not differs and (categories[0] is None or categories[0] != categories[1]):
            return (f"DOM: fusion difference {n}: an aligned column holds {categories[0]!r} "
                    f"and {categories[1]!r}")
    for side, key in enumerate(("trace1", "trace2")):
        expected = [k["type"] for k in example[key]]
        if sides[side] != expected:
            return (f"DOM: fusion difference {n} example {key}: expected {expected!r}, "
                    f"got {sides[side]!r}")
    return None


def check_fusion_differences(dom, report, top):
    section = dom.find("section", id="fusion-differences")
    if section is None:
        return 'DOM: no <section id="fusion-differences">'
    differences = report["fusion_differences"]
    if section.attrs.get("data-count") != str(len(differences)):
        return (f"DOM: fusion differences: expected {len(differences)} in all, got "
                f"{section.attrs.get('data-count')!r}")
    if not differences:
        return None if section.find("p", class_="none") else \
            "DOM: no fusion difference, and the page does not say so"
    labels = {"trace1": report["traces"][0]["label"], "trace2": report["traces"][1]["label"]}
    shown = differences[:top]
    rows = list(section.find_all("tr", data_kind=True))
    expected = [(d["kind"], labels[d["fused_by"]], saving_text(d["saving_us"])) for d in shown]
    got = [(r.attrs["data-kind"], cell_text(r, "fused-by"), cell_text(r, "saving")) for r in rows]
    if got != expected:
        return f"DOM: fusion differences: expected {expected!r}, got {got!r}"
    articles = list(section.find_all("article", class_="example"))
    if len(articles) != len(shown):
        return f"DOM: fusion differences: {len(shown)} examples expected, got {len(articles)}"
    for n, (article, difference) in enumerate(zip(articles, shown), 1):
        problem = check_example(article, difference, n)
        if problem:
            return problem
    return None


def check_ops_dom(dom, report, options):
    top = int(option_value(options, "--top", OPS_TOP))
    for check in (lambda: check_traces_table(dom, report["traces"]),
                  lambda: check_linked_share(dom, report["traces"]),
                  lambda: check_op_rows(dom, report, top),
                  lambda: check_fusion_differences(dom, report, top)):
        problem = check()
        if problem:
            return problem
    for name in ("instances", "one-side", "unmatched"):
        if dom.find("section", id=name) is None:
            return f'DOM: no <section id="{name}">'
    return None


def hex_colour(value):
    value = (value or "").strip().lower()
    if re.fullmatch(r"#[0-9a-f]{3}", value):
        value = "#" + "".join(c * 2 for c in value[1:])
    return value if re.fullmatch(r"#[0-9a-f]{6}", value) else None


def class_fills(dom):
    """Class name -> fill colour, from the page's style sheets: rules whose selector ends in a
    class (".bar1", "svg .side2", ...), outside @media blocks (the screenshot is of the light
    scheme), var(--name) taken from the :root rules."""
    rules = []
    for style in dom.find_all("style"):
        css = re.sub(r"/\*.*?\*/", "", style.text())
        css = re.sub(r"@[^{};]*\{(?:[^{}]*\{[^{}]*\})*[^{}]*\}", "", css)
        rules += re.findall(r"([^{}]+)\{([^{}]*)\}", css)
    variables = {}
    for selectors, body in rules:
        if ":root" in selectors:
            variables.update(re.findall(r"(--[\w-]+)\s*:\s*([^;]+)", body))

    def resolve(value):
        for _ in range(8):  # var() of a var()
            value = re.sub(r"var\(\s*(--[\w-]+)\s*(?:,\s*([^)]*))?\)",
                           lambda m: variables.get(m.group(1), m.group(2) or ""), value)
        return hex_colour(value)

    fills = {}
    for selectors, body in rules:
        fill = re.findall(r"(?:^|;)\s*fill\s*:\s*([^;]+)", body)
        if not fill or resolve(fill[-1]) is None:
            continue
        for selector in selectors.split(","):
            last = (selector.split() or [""])[-1]
            for name in re.findall(r"\.([\w-]+)", last):
                fills[name] = resolve(fill[-1])
    return fills


def bar_colours(dom, section_id):
    """The fill colours (#rrggbb) of the shapes in the chart of the section `section_id`: each
    shape's inline style, its classes' style rules or its fill attribute, else its parent's
    (inherited)."""
    section = dom.find("section", id=section_id)
    svg = None if section is None else section.find("svg")
    colours = set()
    if svg is None:
        return colours
    by_class = class_fills(dom)

    def fill_of(node):
        while node is not None:
            inline = re.findall(r"(?:^|;)\s*fill\s*:\s*([^;]+)", node.attrs.get("style") or "")
            if inline:
                return hex_colour(inline[-1])
            for name in reversed((node.attrs.get("class") or "").split()):
                if name in by_class:
                    return by_class[name]
            if node.attrs.get("fill"):
                return hex_colour(node.attrs["fill"])
            if node is svg:
                return None
            node = node.parent
        return None

    for node in svg.iter():
        if node.tag in ("rect", "path", "polygon"):
            colour = fill_of(node)
            if colour:
                colours.add(colour)
    return colours


# --- pixels ----------------------------------------------------------------------------------

def check_pixels(png, colours):
    from PIL import Image
    with Image.open(png) as image:
        rgb = image.convert("RGB")
    if rgb.size != WINDOW:
        width, height = rgb.size
        return f"screenshot: {width}x{height} pixels, {WINDOW[0]}x{WINDOW[1]} asked", None
    counts = rgb.getcolors(maxcolors=1 << 24)
    if len(counts) == 1:
        return "screenshot: blank (a single colour)", None
    total = rgb.size[0] * rgb.size[1]
    background_count, _ = max(counts)
    ink = 1 - background_count / total
    if ink < MIN_INK:
        return (f"screenshot: blank ({ink:.2%} of its pixels differ from the background, "
                f"under {MIN_INK:.0%})"), ink
    by_colour = {"#%02x%02x%02x" % c: n for n, c in counts}
    for colour in sorted(colours):
        # Anti-aliased edges aside, a bar at least a few pixels wide shows its exact colour.
        if by_colour.get(colour, 0) < 20:
            return f"screenshot: the chart's bar colour {colour} is not on screen", ink
    return None, ink


# --- running ---------------------------------------------------------------------------------

def run_tracefuse(tracefuse, command, traces, options, fmt, out):
    args = [tracefuse, command, *traces, *options, "--format", fmt, "-o", out]
    try:
        run = subprocess.run(args, capture_output=True, text=True, check=False)
    except OSError as error:
        raise Failure(f"cannot run {tracefuse}: {error.strerror}")
    if run.returncode != 0:
        first = (run.stderr.strip().splitlines() or ["(no message)"])[0]
        raise Failure(f"tracefuse {command} --format {fmt} failed (exit {run.returncode}): {first}")


def mutate(path, kind):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    body = re.search(r"<body[^>]*>", text)
    if body is None:
        raise Failure(f"--mutate {kind}: the report has no <body>")
    if kind in ("external-image", "external-image-no-csp"):
        text = text[:body.end()] + EXTERNAL_IMAGE + text[body.end():]
        if kind == "external-image-no-csp":
            text = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", text)
    elif kind == "swap-sides":
        text = (text.replace('data-side="1"', 'data-side="swap"')
                .replace('data-side="2"', 'data-side="1"')
                .replace('data-side="swap"', 'data-side="2"'))
    elif kind == "empty-body":
        end = text.rindex("</body>")
        text = text[:body.end()] + text[end:]
    elif kind == "rename-section":
        text = text.replace("<h2>Why the GPU is idle", "<h2>Why the GPU idles", 1)
    elif kind == "hidden-body":
        text = text.replace("</head>", "<style>body{visibility:hidden}</style></head>", 1)
    else:
        raise Failure(f"--mutate {kind}: unknown kind")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def run_chromium(chromium, html, work):
    """One headless run: the DOM (returned), the screenshot, the net log and the console log."""
    paths = {name: os.path.join(work, name)
             for name in ("dom.html", "screenshot.png", "net-log.json", "console.txt")}
    with tempfile.TemporaryDirectory(prefix="tracefuse-chromium-",
                                     ignore_cleanup_errors=True) as profile:
        args = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                f"--user-data-dir={profile}", "--no-first-run", "--disable-extensions",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                # Networking off: every host name fails to resolve, every proxied request goes
                # to a closed port. The net log then shows any request the page still made.
                "--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=127.0.0.1:9",
                f"--log-net-log={paths['net-log.json']}",
                "--enable-logging=stderr", "--v=0",
                f"--window-size={WINDOW[0]},{WINDOW[1]}",
                f"--screenshot={paths['screenshot.png']}", "--dump-dom",
                "file://" + os.path.abspath(html)]
        with open(paths["dom.html"], "wb") as dom, open(paths["console.txt"], "wb") as log:
            try:
                process = subprocess.Popen(args, stdout=dom, stderr=log,
                                           stdin=subprocess.DEVNULL, start_new_session=True)
            except OSError as error:
                raise Failure(f"cannot run {chromium}: {error.strerror}")
            try:
                returncode = process.wait(timeout=CHROMIUM_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
                raise Failure(f"chromium did not finish within {CHROMIUM_TIMEOUT_S} s (killed)")
            finally:
                # Helper processes left behind (renderer, GPU, zygote) go with their group.
                try:
                    os.killpg(process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
    with open(paths["console.txt"], encoding="utf-8", errors="replace") as f:
        console = f.read()
    if returncode != 0:
        lines = [l for l in console.splitlines() if ":ERROR:" in l or ":FATAL:" in l]
        raise Failure(f"chromium failed (exit {returncode}): "
                      f"{(lines or console.strip().splitlines() or ['(no message)'])[-1]}")
    with open(paths["dom.html"], encoding="utf-8", errors="replace") as f:
        dom = f.read()
    if not dom.strip():
        raise Failure("chromium dumped an empty DOM")
    if not os.path.exists(paths["screenshot.png"]):
        raise Failure("chromium wrote no screenshot")
    if not os.path.exists(paths["net-log.json"]):
        raise Failure("chromium wrote no net log")
    return dom, console, paths


def page_requests(net_log):
    """URLs requested on behalf of a file:// page (its network isolation key or its site for
    cookies is file://), other than file: and data: URLs. Chromium's own background requests
    (update checks, sign-in) have other keys; they fail too, networking being off."""
    with open(net_log, encoding="utf-8", errors="replace") as f:
        text = f.read()
    try:
        log = json.loads(text)
    except json.JSONDecodeError:
        # Chromium ends the file at exit; a log cut short still holds whole events before.
        log = json.loads(text.rstrip().rstrip(",") + "]}")
    types = {value: name for name, value in log["constants"]["logEventTypes"].items()}
    urls = []
    for event in log.get("events", []):
        if types.get(event.get("type")) != "URL_REQUEST_START_JOB":
            continue
        params = event.get("params") or {}
        url = params.get("url", "")
        from_page = ("file://" in params.get("network_isolation_key", "")
                     or "site=file://" in params.get("site_for_cookies", "")
                     or params.get("initiator") == "null")
        if from_page and not url.startswith(("file:", "data:")) and url not in urls:
            urls.append(url)
    return urls


CONSOLE = re.compile(r':CONSOLE[^\]]*\]\s*"(.*)", source: (.*)$')
CSP_BLOCKED = re.compile(r"Loading the \w+ '([^']*)' violates the following Content Security "
                         r"Policy|Refused to load the \w+ '([^']*)'")


def console_messages(console):
    messages = []
    for line in console.splitlines():
        match = CONSOLE.search(line)
        if match:
            text = match.group(1)
            blocked = CSP_BLOCKED.search(text)
            if blocked:
                messages.append("blocked by the Content-Security-Policy: "
                                + (blocked.group(1) or blocked.group(2)))
            else:
                messages.append(text)
        elif "Refused to" in line:
            messages.append(line.split("] ", 1)[-1])
    return messages


DOM_CHECKS = {"compare": check_compare_dom, "ops": check_ops_dom,
              "breakdown": check_breakdown_dom, "merge": check_merge_dom}
TRACE_COUNTS = {"compare": 2, "ops": 2, "breakdown": 1, "merge": 1}  # merge: a batch directory
CHART_SECTIONS = {"compare": "categories", "ops": "ops"}  # whose bar colours must show


def check(chromium, tracefuse, command, traces, options, work, mutation):
    if not chromium or chromium.endswith("NOTFOUND") or not os.path.exists(chromium):
        raise Failure(f"chromium not found ({chromium or 'no path'}); scripts/setup installs the "
                      "Debian package chromium")
    try:
        import PIL  # noqa: F401
    except ImportError:
        raise Failure(f"PIL not importable by {sys.executable}; scripts/setup installs the "
                      "Debian package python3-pil (for /usr/bin/python3)")
    html = os.path.join(work, "report.html")
    json_path = os.path.join(work, "report.json")
    run_tracefuse(tracefuse, command, traces, options, "html", html)
    run_tracefuse(tracefuse, command, traces, options, "json", json_path)
    text_path = os.path.join(work, "report.txt")
    run_tracefuse(tracefuse, command, traces, options, "text", text_path)
    with open(text_path, encoding="utf-8") as f:
        text = f.read()
    with open(json_path, encoding="utf-8") as f:
        report = json.load(f)
    if mutation:
        mutate(html, mutation)
    dom_text, console, paths = run_chromium(chromium, html, work)

    failures = []
    for url in page_requests(paths["net-log.json"]):
        failures.append(f"network: a request left the page: {url}")
    for message in console_messages(console):
        failures.append(f"console: {message}")
    dom = parse_dom(dom_text)
    problem = check_common_dom(dom, command)
    if problem is None:
        problem = DOM_CHECKS[command](dom, report, options)
    if problem:
        failures.append(problem)
    problem = check_sections(dom, text, command)
    if problem:
        failures.append(problem)
    colours = bar_colours(dom, CHART_SECTIONS[command]) if command in CHART_SECTIONS else set()
    problem, ink = check_pixels(paths["screenshot.png"], colours)
    if problem:
        failures.append(problem)
    if failures:
        return failures, None
    summary = f"{ink:.1%} of the screenshot inked"
    if command in CHART_SECTIONS:
        summary += f", bar colours {' '.join(sorted(colours)) or '(none in the SVG)'}"
    if command == "compare":
        summary += f", {len(report['fusion_opportunities'][:MAX_OPPORTUNITIES])} opportunities"
    if command == "ops":
        summary += f", {len(report['fusion_differences'])} fusion differences"
    return [], summary


def main(argv):
    keep = mutation = expect = None
    while argv and argv[0].startswith("--"):
        flag = argv.pop(0)
        if not argv:
            print(f"check_report: {flag} needs a value")
            return 2
        if flag == "--keep":
            keep = argv.pop(0)
        elif flag == "--mutate":
            mutation = argv.pop(0)
        elif flag == "--expect-failure":
            expect = argv.pop(0)
        else:
            print(f"check_report: unknown option {flag}")
            return 2
    if len(argv) < 4 or argv[2] not in TRACE_COUNTS:
        print("usage: check_report.py [--keep DIR] [--mutate KIND --expect-failure LINE] "
              "CHROMIUM TRACEFUSE compare|ops|breakdown|merge TRACE...|BATCH_DIR "
              "[tracefuse options...]")
        return 2
    chromium, tracefuse, command = argv[0], argv[1], argv[2]
    count = TRACE_COUNTS[command]
    traces, options = argv[3:3 + count], argv[3 + count:]
    if len(traces) < count:
        print(f"check_report: {command} needs {count} trace(s)")
        return 2
    for trace in traces:
        if not os.path.exists(trace):
            print(f"skipped: {trace} is not present on this machine")
            return 77

    started = time.monotonic()
    if keep:
        os.makedirs(keep, exist_ok=True)
        work_context = None
        work = keep
    else:
        work_context = tempfile.TemporaryDirectory(prefix="tracefuse-browser-")
        work = work_context.name
    try:
        try:
            failures, summary = check(chromium, tracefuse, command, traces, options, work,
                                      mutation)
        except Failure as failure:
            failures, summary = [str(failure)], None
    finally:
        if work_context is not None:
            work_context.cleanup()
    elapsed = time.monotonic() - started

    if expect is not None:
        got = failures[0] if failures else None
        if got == expect:
            print(f"ok: {command} with {mutation or 'the report as written'} fails as expected: "
                  f"{got} ({elapsed:.1f} s)")
            return 0
        print(f"expected the failure {expect!r}, got "
              + (repr(got) if got else "a pass") + f" ({elapsed:.1f} s)")
        return 1
    if failures:
        print(failures[0])
        for other in failures[1:]:
            print(f"also: {other}")
        return 1
    print(f"ok: {command} {' '.join(os.path.basename(t) for t in traces)}: {summary} "
          f"({elapsed:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
