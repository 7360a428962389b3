"""The HTML report's fact explorer: every probe, filterable by scenario, variant, budget, kind and
verdict, with the turn that planted the fact, every summary it passed through and the answer,
the fact's value highlighted wherever it appears.

The data travels inside the page as JSON (one copy of each scenario's turns and each case's
summaries, however many probes refer to them) and is rendered by a few lines of plain JavaScript
that only ever set text (`textContent`), so model text can never become markup. No network.
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

from ..errors import plural

PROBE_FIELDS = [
    "case",
    "scenario",
    "variant",
    "budget",
    "kind",
    "fact",
    "verdict",
    "location",
    "expected",
    "question",
    "answer",
    "planted_turn",
    "changed_turn",
    "error",
    "constraint",
    "summary_reading",
]


def _plain(value: Any) -> Any:
    """JSON-ready: pandas' missing values become null."""
    return None if value is None or (isinstance(value, float) and value != value) else value


def explorer_data(
    records: pd.DataFrame, compactions: pd.DataFrame, retention: pd.DataFrame, turns: dict[str, list[str]]
) -> dict[str, Any]:
    probes = [{k: _plain(row.get(k)) for k in PROBE_FIELDS} for row in records.to_dict("records")]
    cases = {p["case"] for p in probes}
    summaries: dict[str, list[dict[str, Any]]] = {}
    for row in compactions[compactions["case"].isin(cases)].to_dict("records"):
        summaries.setdefault(row["case"], []).append(
            {
                "before_turn": _plain(row.get("before_turn")),
                "first_verbatim_turn": _plain(row.get("first_verbatim_turn")),
                "summary": _plain(row.get("summary")),
            }
        )
    # Each summary's word on each fact: retained, and a rule's reading (kept, weakened, contradicted, dropped).
    kept: dict[str, dict[str, dict[int, dict[str, Any]]]] = {}
    for row in retention[retention["case"].isin(cases) & retention["retained"].notna()].to_dict("records"):
        if _plain(row.get("compaction")) is not None:
            kept.setdefault(row["case"], {}).setdefault(row["fact"], {})[int(row["compaction"])] = {
                "retained": bool(row["retained"]),
                "reading": _plain(row.get("reading")),
            }
    used = {p["scenario"] for p in probes}
    return {
        "probes": probes,
        "summaries": summaries,
        "kept": kept,
        "turns": {s: texts for s, texts in turns.items() if s in used},
    }


def explorer_html(data: dict[str, Any]) -> str:
    # "<" escaped inside the JSON, so no text in it can close the script element.
    payload = json.dumps(data, ensure_ascii=False).replace("<", "\\u003c")
    return (
        f'<h2 id="explorer">Fact explorer ({plural(len(data["probes"]), "probe")})</h2>'
        '<div id="filters"></div><p id="shown"></p><div id="facts"></div>'
        f'<script type="application/json" id="explorer-data">{payload}</script>'
        f"<style>{STYLE}</style><script>{SCRIPT}</script>"
    )


STYLE = (
    "#filters label{margin-right:1em;font-size:13px}#facts details{border:1px solid #ccc;margin:4px 0;"
    "padding:4px 8px}#facts summary{cursor:pointer;font-size:13px}.turn,.sum,.ans{white-space:pre-wrap;"
    "background:#f6f6f6;padding:4px;margin:4px 0;font-size:12px;max-height:18em;overflow:auto}"
    "mark{background:#ffe066}.v-recalled{color:#1a7f37}.v-error{color:#b35900}.k{font-weight:bold}"
)

SCRIPT = r"""
(() => {
  const data = JSON.parse(document.getElementById('explorer-data').textContent);
  const el = (tag, text, cls) => { const e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text); if (cls) e.className = cls; return e; };
  // A value as it may be written: any case, any spacing, digits with or without separators (2,800).
  const pattern = needle => new RegExp(String(needle).trim().replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
    .replace(/\s+/g, '\\s+').replace(/(\d)(?=\d)/g, "$1[,.'\\s\u202f\u00a0]?"), 'gi');
  // The text with every occurrence of the value marked; built from text nodes only.
  const marked = (text, needle, cls) => { const box = el('div', null, cls); text = String(text ?? '');
    if (!needle) { box.textContent = text; return box; }
    let at = 0;
    for (const m of text.matchAll(pattern(needle))) {
      if (!m[0]) break;
      box.append(document.createTextNode(text.slice(at, m.index)), el('mark', m[0])); at = m.index + m[0].length; }
    box.append(document.createTextNode(text.slice(at))); return box; };
  const fields = [['scenario', 'scenario'], ['variant', 'variant'], ['budget', 'budget'], ['kind', 'kind'],
                  ['verdict', 'verdict'], ['fact', 'fact']];
  const filters = document.getElementById('filters'), selects = {};
  for (const [key, label] of fields) {
    const values = [...new Set(data.probes.map(p => String(p[key] ?? '-')))].sort();
    const select = el('select'); select.id = 'filter-' + key; select.append(el('option', 'all'));
    for (const v of values) select.append(el('option', v));
    const wrap = el('label', label + ' '); wrap.append(select); filters.append(wrap); selects[key] = select;
    select.addEventListener('change', render);
  }
  function body(p, box) {
    const turns = data.turns[p.scenario] || [];
    box.append(el('div', `planted in turn ${p.planted_turn}` + (p.changed_turn !== p.planted_turn ?
      `, last changed in turn ${p.changed_turn}` : ''), 'k'));
    box.append(turns.length ? marked(turns[p.changed_turn], p.expected, 'turn')
                            : el('div', '(turn text not recorded)'));
    const all = data.summaries[p.case] || [], kept = (data.kept[p.case] || {})[p.fact] || {};
    const through = all.map((c, i) => [c, i])
      .filter(([c]) => c.summary !== null && c.first_verbatim_turn > p.changed_turn);
    box.append(el('div', `summaries it passed through: ${through.length}`, 'k'));
    for (const [c, i] of through) {
      const rule = {kept: 'keeps the rule', weakened: 'weakens the rule', contradicted: 'contradicts the rule',
                    dropped: 'does not state the rule'};
      const state = i in kept ? (rule[kept[i].reading] || (kept[i].retained ? 'states the fact'
                                                                              : 'does not state the fact')) : '';
      box.append(el('div', `before turn ${c.before_turn} ${state ? '(' + state + ')' : ''}`));
      box.append(marked(c.summary, p.expected, 'sum'));
    }
    box.append(el('div', 'probe', 'k'), el('div', p.question ?? '(question not recorded)', 'ans'));
    box.append(el('div', `answer: ${p.verdict}` + (p.location ? ` (fact was ${p.location} at probe time` +
      (p.summary_reading ? `; the last summary's reading of the rule: ${p.summary_reading})` : ')') : ''), 'k'));
    box.append(p.error ? el('div', p.error, 'ans') : marked(p.answer, p.expected, 'ans'));
  }
  function render() {
    const shown = data.probes.filter(p => fields.every(([key]) =>
      selects[key].value === 'all' || String(p[key] ?? '-') === selects[key].value));
    const list = document.getElementById('facts'); list.replaceChildren();
    const limit = 200;
    document.getElementById('shown').textContent =
      `${shown.length} ${shown.length === 1 ? 'probe matches' : 'probes match'}` +
      (shown.length > limit ? `; the first ${limit} are listed, filter to see others` : '');
    for (const p of shown.slice(0, limit)) {
      const details = el('details'); details.dataset.fact = p.fact;
      const head = el('summary'); head.append(el('span', `${p.scenario}/${p.fact} (${p.kind}` +
        (p.constraint ? ', negative constraint' : '') + `) · ${p.variant} · ` +
        `budget ${p.budget ?? '-'} · expected ${p.expected ?? '(abstain)'} · `),
        el('span', p.verdict, 'v-' + p.verdict));
      details.append(head);
      details.addEventListener('toggle', () => {
        if (details.open && details.children.length === 1) body(p, details);
      });
      list.append(details);
    }
  }
  render();
})();
"""
