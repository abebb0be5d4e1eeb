"""The web page's one stylesheet, served at /style.css.

All of the page's look is here and nowhere else: the Content-Security-Policy the server
sends (``style-src 'self'``) refuses ``<style>`` blocks and ``style=`` attributes, which
is also what keeps a hostile title from restyling the page. System fonts, one readable
column that fits a phone, a dark palette when the system asks for one (no script, no
toggle), and the chart's colours (feedsync/serve/chart.py: classes c0..c7), chosen to
stay apart for the common colour-vision deficiencies (Okabe and Ito's palette) and
readable on both backgrounds.
"""

from __future__ import annotations

STYLE = """\
:root {
  color-scheme: light dark;
  --fg: #1b1b1b; --bg: #fdfdfc; --dim: #5f6368; --line: #d9d9d6; --link: #0b57d0;
  --ok: #17703a; --warn: #8a5a00; --bad: #b3261e; --mark: #ffe98a; --panel: #f2f2ef;
  --c0: #0072b2; --c1: #e69f00; --c2: #009e73; --c3: #cc79a7; --c4: #56b4e9;
  --c5: #d55e00; --c6: #b8a200; --c7: #8d8d8d;
}
@media (prefers-color-scheme: dark) {
  :root {
    --fg: #e6e6e3; --bg: #161616; --dim: #a3a3a0; --line: #3a3a38; --link: #8ab4f8;
    --ok: #6dd58c; --warn: #f2c14e; --bad: #ff8a80; --mark: #6b5900; --panel: #222220;
    --c0: #56a8e0; --c1: #f0b43c; --c2: #3cc79c; --c3: #e39ac4; --c4: #8fd0f5;
    --c5: #ff8a4c; --c6: #e0cf4a; --c7: #9e9e9b;
  }
}
* { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; text-size-adjust: 100%; }
body {
  margin: 0; color: var(--fg); background: var(--bg);
  font: 1rem/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", sans-serif;
}
a { color: var(--link); }
header { border-bottom: 1px solid var(--line); background: var(--panel); }
header nav, main { max-width: 42rem; margin: 0 auto; padding: 0.5rem 1rem; }
header nav { display: flex; flex-wrap: wrap; gap: 0.25rem 1rem; align-items: center; }
header nav a { text-decoration: none; font-weight: 600; }
header nav a.here { color: var(--fg); border-bottom: 2px solid var(--fg); }
header nav .brand { color: var(--fg); margin-right: auto; }
form#search { display: flex; gap: 0.25rem; order: 1; flex: 1 1 100%; }
form#search input { flex: 1; min-width: 0; font: inherit; padding: 0.2rem 0.4rem; }
form#search button { font: inherit; }
/* text from feeds and pages: an unclosed right-to-left override stays inside it */
a.title, .feed, .author, .last-error, .reason, h1, ul.legend li { unicode-bidi: isolate; }
h1 { font-size: 1.4rem; line-height: 1.25; margin: 1rem 0 0.5rem; }
h2 { font-size: 1.1rem; margin: 1.5rem 0 0.25rem; }
ol.items, ul.items { list-style: none; padding: 0; margin: 0; }
li.item { padding: 0.6rem 0; border-bottom: 1px solid var(--line); overflow-wrap: anywhere; }
li.item a.title { font-weight: 600; text-decoration: none; }
li.item a.title:hover { text-decoration: underline; }
.meta, .dim, time { color: var(--dim); font-size: 0.9rem; }
p.lead, p.snippet, p.reason { margin: 0.2rem 0 0; }
mark { background: var(--mark); color: inherit; padding: 0 0.1em; }
nav.pages { display: flex; justify-content: space-between; margin: 1rem 0 2rem; }
article#text p { margin: 0 0 1rem; overflow-wrap: anywhere; }
article#text { font-size: 1.05rem; line-height: 1.6; }
.ok { color: var(--ok); } .warn { color: var(--warn); } .bad { color: var(--bad); }
section.feed { border-bottom: 1px solid var(--line); padding: 0.5rem 0; overflow-wrap: anywhere; }
section.feed h2 { margin-top: 0.5rem; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 0.15rem 1rem;
  margin: 0.25rem 0; }
dl.facts dt { color: var(--dim); }
dl.facts dd { margin: 0; overflow-wrap: anywhere; }
meter { width: 100%; max-width: 16rem; height: 1rem; vertical-align: middle; }
.alert { color: var(--bad); font-weight: 600; }
figure.chart { margin: 1rem 0; }
svg.chart { width: 100%; height: auto; display: block; }
svg.chart text { fill: var(--dim); font-size: 12px; font-family: inherit; }
svg.chart text.end { text-anchor: end; }
svg.chart line.axis { stroke: var(--dim); stroke-width: 1; }
svg.chart line.grid { stroke: var(--line); stroke-width: 1; stroke-dasharray: 2 2; }
ul.legend { list-style: none; padding: 0; margin: 0.25rem 0 0; display: flex; flex-wrap: wrap;
  gap: 0.25rem 1rem; font-size: 0.9rem; }
.swatch { display: inline-block; width: 0.8rem; height: 0.8rem; margin-right: 0.3rem;
  vertical-align: -0.05rem; border-radius: 2px; }
ul.legend .count { color: var(--dim); }
.c0 { fill: var(--c0); background: var(--c0); } .c1 { fill: var(--c1); background: var(--c1); }
.c2 { fill: var(--c2); background: var(--c2); } .c3 { fill: var(--c3); background: var(--c3); }
.c4 { fill: var(--c4); background: var(--c4); } .c5 { fill: var(--c5); background: var(--c5); }
.c6 { fill: var(--c6); background: var(--c6); } .c7 { fill: var(--c7); background: var(--c7); }
"""
