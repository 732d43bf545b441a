// canaryd's live page. Everything it shows comes from the /v1 API; the
// charts are the report's SVG, drawn by the server. No dependencies, no
// build step, no inline script (the Content-Security-Policy forbids it).
'use strict';

(() => {
  // How often the list of analyses is read again while it is shown, and
  // how often an analysis is, when its stream cannot be followed.
  const LIST_REFRESH_MS = 5000;
  const POLL_MS = 2000;
  // Analyses a page of the list holds (the API allows up to 1000).
  const PAGE_SIZE = 50;
  // Backtests offered on a template's page and for a tried template: the
  // window, and an analysis started every so long within it.
  const BACKTESTS = [
    { label: '6 h', start: '-6h', every: '10m' },
    { label: '24 h', start: '-24h', every: '30m' },
    { label: '7 d', start: '-168h', every: '4h' },
  ];
  const PHASES = ['Running', 'Successful', 'Failed', 'Inconclusive', 'Error'];
  const TOKEN_KEY = 'canaryd.token';
  // The API, relative to the page: /ui/ → /v1/, also behind a path prefix.
  const API = new URL('../v1/', document.baseURI);

  const view = document.getElementById('view');
  const status = document.getElementById('status');
  const tokenForm = document.getElementById('token-form');
  const tokenInput = document.getElementById('token');
  const tokenError = document.getElementById('token-error');
  const forget = document.getElementById('forget');

  // The token: sessionStorage, so it stays in this tab only.
  function getToken() {
    try { return sessionStorage.getItem(TOKEN_KEY) || ''; } catch (e) { return ''; }
  }
  function setToken(t) {
    try {
      if (t) sessionStorage.setItem(TOKEN_KEY, t); else sessionStorage.removeItem(TOKEN_KEY);
    } catch (e) { /* storage refused: the token lasts until the page is left */ }
    memoryToken = t;
    forget.hidden = !t;
  }
  let memoryToken = getToken();
  forget.hidden = !memoryToken;

  class Unauthorized extends Error {}
  class APIError extends Error {
    constructor(status, problem) {
      super((problem && (problem.detail || problem.title)) || ('HTTP ' + status));
      this.status = status;
      this.problem = problem || {};
    }
  }

  // A route's work (requests, streams, timers) ends when the route
  // changes: each route gets a controller of its own.
  let current = null;

  // api sends a request to the API with the token; 401 asks for one.
  async function api(path, opts = {}) {
    const headers = { Accept: opts.accept || 'application/json' };
    const t = memoryToken || getToken();
    if (t) headers.Authorization = 'Bearer ' + t;
    if (opts.contentType) headers['Content-Type'] = opts.contentType;
    const resp = await fetch(new URL(path, API), {
      method: opts.method || 'GET', headers, body: opts.body,
      signal: opts.signal || (current && current.signal), cache: 'no-store', credentials: 'omit',
    });
    if (resp.status === 401) {
      askToken(t !== '');
      throw new Unauthorized('a token is needed');
    }
    return resp;
  }

  // json reads a JSON answer, or throws the problem.
  async function json(resp) {
    const body = await resp.json().catch(() => null);
    if (!resp.ok) throw new APIError(resp.status, body);
    return body;
  }

  // html reads an HTML answer (a report), or throws the problem.
  async function html(resp) {
    if (!resp.ok) throw new APIError(resp.status, await resp.json().catch(() => null));
    return resp.text();
  }

  function askToken(refused) {
    if (current) current.abort();
    view.replaceChildren();
    tokenForm.hidden = false;
    tokenError.textContent = refused ? 'The token was refused; give another.' : '';
    tokenInput.value = '';
    tokenInput.focus();
  }

  tokenForm.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const t = tokenInput.value.trim();
    if (!t) return;
    setToken(t);
    tokenForm.hidden = true;
    tokenInput.value = '';
    render();
  });
  forget.addEventListener('click', () => { setToken(''); render(); });

  // el builds an element: attributes, then children (strings become text,
  // never markup).
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else if (k === 'text') e.textContent = v;
      else e.setAttribute(k, v === true ? '' : v);
    }
    for (const c of children.flat()) {
      if (c === undefined || c === null || c === false) continue;
      e.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return e;
  }

  function say(text) { status.textContent = text; }

  // fail shows an error of the API (or the network) in place of a view.
  function problemNode(err) {
    if (err instanceof Unauthorized || (err && err.name === 'AbortError')) return null;
    const p = (err && err.problem) || {};
    return el('div', { class: 'problem', role: 'alert' },
      el('p', null, el('strong', null, err.status ? 'Refused (' + err.status + '): ' : 'Failed: '), err.message),
      (p.errors || []).length ? el('ul', null, p.errors.map((e) =>
        el('li', null, e.line ? 'line ' + e.line + ': ' : '', e.field ? el('code', null, e.field) : '', e.field ? ': ' : '', e.message))) : null);
  }

  // The report of an analysis or a backtest, as the server draws it: its
  // body, with the report's main element turned into a division (the page
  // has its own) and the footer of the file left out.
  function reportNode(text) {
    // The body alone is parsed: the file's head holds its own inline
    // stylesheet and policy, which this page's policy would refuse (its
    // styles are at report.css).
    const open = text.search(/<body[^>]*>/i);
    const close = text.lastIndexOf('</body>');
    const body = open < 0 ? text : text.slice(text.indexOf('>', open) + 1, close > open ? close : undefined);
    const doc = new DOMParser().parseFromString('<!DOCTYPE html><html><head></head><body>' + body + '</body></html>', 'text/html');
    const wrap = el('div', { class: 'report' });
    for (const n of Array.from(doc.body.children)) {
      if (n.tagName === 'FOOTER' || n.tagName === 'SCRIPT') continue;
      if (n.tagName === 'MAIN') {
        const div = el('div', { class: 'report-main' });
        div.append(...Array.from(n.childNodes).map((c) => document.importNode(c, true)));
        wrap.append(div);
      } else {
        wrap.append(document.importNode(n, true));
      }
    }
    // The report's own links within itself (a strip cell to the analysis
    // it stands for, a metric's tile to its section) would change the
    // page's route: they are followed within the report instead.
    wrap.addEventListener('click', (ev) => {
      const a = ev.target.closest && ev.target.closest('a');
      const href = a && a.getAttribute('href');
      if (!href || !/^#[^/]/.test(href)) return;
      ev.preventDefault();
      const target = wrap.querySelector('[id="' + CSS.escape(decodeURIComponent(href.slice(1))) + '"]');
      if (!target) return;
      if (target.classList.contains('run')) {
        wrap.querySelectorAll('.run.shown').forEach((r) => r.classList.remove('shown'));
        target.classList.add('shown');
      }
      target.scrollIntoView({ block: 'nearest' });
    });
    return wrap;
  }

  // replaceReport puts a new rendering in place of the old, keeping which
  // lists of measurements were opened or closed.
  function replaceReport(container, node) {
    const open = Array.from(container.querySelectorAll('details')).map((d) => d.open);
    if (open.length) {
      node.querySelectorAll('details').forEach((d, i) => { if (i < open.length) d.open = open[i]; });
    }
    container.replaceChildren(node);
  }

  function fmtTime(s) {
    if (!s) return '';
    const d = new Date(s);
    return isNaN(d) ? s : d.toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
  }

  function fmtDuration(ms) {
    if (!(ms >= 0)) return '';
    if (ms < 1000) return Math.round(ms) + ' ms';
    const s = Math.round(ms / 1000);
    if (s < 60) return s + ' s';
    const m = Math.floor(s / 60);
    if (m < 60) return m + ' m ' + (s % 60) + ' s';
    const h = Math.floor(m / 60);
    if (h < 48) return h + ' h ' + (m % 60) + ' m';
    return Math.floor(h / 24) + ' d ' + (h % 24) + ' h';
  }

  function argsText(args) {
    return Object.keys(args || {}).sort().map((k) => k + '=' + args[k]).join(' ');
  }

  function badge(phase) {
    return el('span', { class: 'badge p-' + (phase || 'Pending') }, phase || 'Pending');
  }

  // Routes: #/ (the analyses, ?phase=&template=&cursor=),
  // #/analyses/ID, #/series/KEY (?cursor=), #/templates,
  // #/templates/NAME, #/try.
  function parseHash() {
    const h = location.hash.replace(/^#/, '') || '/';
    const [path, query] = h.split('?');
    return { path, query: new URLSearchParams(query || '') };
  }

  function render() {
    if (current) current.abort();
    current = new AbortController();
    const ctx = current;
    tokenForm.hidden = true;
    say('');
    const { path, query } = parseHash();
    let m;
    document.querySelectorAll('nav.top a').forEach((a) => a.removeAttribute('aria-current'));
    const mark = (id) => document.getElementById(id).setAttribute('aria-current', 'page');
    let work;
    if (path === '/' || path === '') {
      mark('nav-analyses');
      work = showList(ctx, query);
    } else if ((m = path.match(/^\/analyses\/([^/]+)$/))) {
      mark('nav-analyses');
      work = showAnalysis(ctx, decodeURIComponent(m[1]));
    } else if ((m = path.match(/^\/series\/([a-z2-7]+)$/))) {
      mark('nav-analyses');
      work = showSeries(ctx, m[1], query);
    } else if (path === '/templates') {
      mark('nav-templates');
      work = showTemplates(ctx);
    } else if ((m = path.match(/^\/templates\/([^/]+)$/))) {
      mark('nav-templates');
      work = showTemplate(ctx, decodeURIComponent(m[1]));
    } else if (path === '/try') {
      mark('nav-try');
      work = showTry(ctx);
    } else {
      view.replaceChildren(el('p', null, 'Nothing here. ', el('a', { href: '#/' }, 'The analyses')));
      return;
    }
    work.catch((err) => {
      if (ctx.signal.aborted) return;
      const n = problemNode(err);
      if (n) view.replaceChildren(n);
    });
  }

  // sleep waits ms, or until the route changes.
  function sleep(ctx, ms) {
    return new Promise((resolve) => {
      const t = setTimeout(resolve, ms);
      ctx.signal.addEventListener('abort', () => { clearTimeout(t); resolve(); }, { once: true });
    });
  }

  // The analyses: a page of the list, read again every LIST_REFRESH_MS
  // while the tab is visible.
  async function showList(ctx, query) {
    const phase = query.get('phase') || '';
    const template = query.get('template') || '';
    const cursor = query.get('cursor') || '';
    const phaseSel = el('select', { id: 'filter-phase', name: 'phase' },
      el('option', { value: '' }, 'any'), PHASES.map((p) => el('option', { value: p, selected: p === phase }, p)));
    const tplIn = el('input', { id: 'filter-template', name: 'template', value: template, list: 'template-names', autocomplete: 'off' });
    const names = el('datalist', { id: 'template-names' });
    const form = el('form', { class: 'filters', role: 'search', onsubmit: (ev) => {
      ev.preventDefault();
      const q = new URLSearchParams();
      if (phaseSel.value) q.set('phase', phaseSel.value);
      if (tplIn.value.trim()) q.set('template', tplIn.value.trim());
      const next = '#/' + (q.toString() ? '?' + q : '');
      if (location.hash === next) render(); else location.hash = next;
    } },
    el('label', { for: 'filter-phase' }, 'Phase'), phaseSel,
    el('label', { for: 'filter-template' }, 'Template'), tplIn, names,
    el('button', { type: 'submit' }, 'Filter'));
    const body = el('div', { id: 'analyses' }, el('p', { class: 'muted' }, 'Loading…'));
    view.replaceChildren(el('h1', null, 'Analyses'), form, body);
    phaseSel.addEventListener('change', () => form.requestSubmit());

    // The template names, for the filter's suggestions.
    api('templates').then(json).then((l) => {
      names.replaceChildren(...(l.templates || []).filter((t) => t.name).map((t) => el('option', { value: t.name })));
    }).catch(() => {});

    const q = new URLSearchParams({ limit: String(PAGE_SIZE) });
    if (phase) q.set('phase', phase);
    if (template) q.set('template', template);
    if (cursor) q.set('cursor', cursor);
    while (!ctx.signal.aborted) {
      if (document.visibilityState !== 'hidden') {
        const list = await api('analyses?' + q).then(json);
        if (ctx.signal.aborted) return;
        body.replaceChildren(listTable(list, query));
      }
      await sleep(ctx, LIST_REFRESH_MS);
    }
  }

  // progress says how far an analysis without a message has come.
  function progress(a) {
    const results = a.metricResults || [];
    const n = results.reduce((sum, r) => sum + (r.count || 0) + (r.error || 0), 0);
    if (a.phase === 'Running') return n + (n === 1 ? ' measurement' : ' measurements') + ' so far';
    return '';
  }

  // reasonText is the sentence an analysis' report leads with (the
  // list's reason), else its message, else how far it has come.
  function reasonText(a) {
    return el('span', { class: 'list-reason' }, a.reason || a.message || progress(a));
  }

  // rowLink is the link that opens what a row of a list stands for: the
  // row's phase, and (stretched over the row by the stylesheet) the whole
  // row, so that a click anywhere on it follows the link, and Tab and
  // Enter reach it as any link. what names it for a screen reader.
  function rowLink(href, a, what) {
    return el('a', { class: 'row-link', href, title: what },
      badge(a.phase), el('span', { class: 'skip-text' }, ' ' + (a.template || 'posted') + ', ' + what));
  }

  // The letters of the list's `measured` phases.
  const PHASE_OF = { S: 'Successful', F: 'Failed', I: 'Inconclusive', E: 'Error', R: 'Running', P: 'Pending' };
  // Metrics whose dots a row shows; "+N metrics" says how many more.
  const DOT_METRICS = 4;

  // dots shows a dot per measurement of each metric, coloured by phase,
  // oldest first, as the list gives them (the newest 30 a metric; "+N"
  // before them counts those taken earlier). Each metric's dots are one
  // image whose label counts them by phase, for those who do not see the
  // colours.
  function dots(a) {
    const measured = a.measured || [];
    if (!measured.some((m) => m.phases || m.more)) return null;
    const named = measured.length > 1;
    const lines = measured.slice(0, DOT_METRICS).map((m) => {
      const counts = {};
      for (const c of m.phases) counts[PHASE_OF[c] || c] = (counts[PHASE_OF[c] || c] || 0) + 1;
      const said = Object.entries(counts).map(([p, n]) => n + ' ' + p).join(', ');
      const label = m.metric + ': ' + (said || 'none kept') + (m.more ? ', after ' + m.more + ' more' : '');
      return el('span', { class: 'metric-dots', role: 'img', 'aria-label': label, title: label },
        named ? el('span', { class: 'metric-name', 'aria-hidden': 'true' }, m.metric) : null,
        m.more ? el('span', { class: 'list-more', 'aria-hidden': 'true' }, '+' + m.more) : null,
        Array.from(m.phases).map((c) => el('span', { class: 'list-dot p-' + (PHASE_OF[c] || 'Pending'), 'aria-hidden': 'true' })));
    });
    if (measured.length > DOT_METRICS) {
      lines.push(el('span', { class: 'metric-dots list-more' }, '+' + (measured.length - DOT_METRICS) + ' metrics'));
    }
    return el('span', { class: 'list-dots' }, lines);
  }

  // relTime is a time as how long ago it was ("3 min ago"), the time
  // itself in its title; tick keeps it up to date as time passes.
  function relTime(s, now) {
    if (!s) return '';
    const at = Date.parse(s);
    if (isNaN(at)) return s;
    return el('time', { class: 'rel', datetime: s, title: fmtTime(s) }, ago(now - at));
  }

  function ago(ms) {
    const s = Math.floor(ms / 1000);
    if (s < 10) return 'just now';
    if (s < 60) return s + ' s ago';
    const m = Math.floor(s / 60);
    if (m < 60) return m + ' min ago';
    const h = Math.floor(m / 60);
    if (h < 48) return h + ' h ago';
    return Math.floor(h / 24) + ' d ago';
  }

  // The relative times shown are said again every REL_TICK_MS, without
  // reading the list again (it is not read while the tab is hidden).
  const REL_TICK_MS = 10000;
  function tick() {
    const now = Date.now();
    document.querySelectorAll('time.rel').forEach((t) => {
      const at = Date.parse(t.getAttribute('datetime'));
      if (!isNaN(at)) t.textContent = ago(now - at);
    });
  }
  setInterval(tick, REL_TICK_MS);
  document.addEventListener('visibilitychange', () => { if (document.visibilityState === 'visible') tick(); });

  // listTable shows a page of the list. The rounds (and gates) of one
  // series on the page are one row, for the newest of them: one analysis
  // over time, such as the rounds one Argo AnalysisRun sends, its phases
  // oldest first beside it; the row opens the series. The pages are the
  // list's, so a series that goes on past the page shows on the next too.
  function listTable(list, query) {
    const items = list.analyses || [];
    const now = Date.now();
    const series = new Map();
    for (const a of items) {
      if (!a.series) continue;
      if (!series.has(a.series)) series.set(a.series, []);
      series.get(a.series).push(a);
    }
    const rows = [];
    for (const a of items) {
      const members = a.series ? series.get(a.series) : null;
      if (members && members[0] !== a) continue;
      const started = a.startedAt ? Date.parse(a.startedAt) : NaN;
      const ended = a.completedAt ? Date.parse(a.completedAt) : now;
      if (members) {
        const first = members[members.length - 1];
        const from = first.startedAt ? Date.parse(first.startedAt) : NaN;
        rows.push(el('tr', { class: 'row', 'data-series': a.series, 'data-phase': a.phase },
          el('td', { 'data-label': 'Phase' }, rowLink('#/series/' + a.series, a, 'series of ' + kindText(a.kind, members.length))),
          el('td', { 'data-label': 'Template' }, a.template || el('span', { class: 'muted' }, 'posted'),
            ' ', el('span', { class: 'kind' }, kindText(a.kind, members.length))),
          el('td', { 'data-label': 'Arguments' }, el('code', null, argsText(a.args))),
          el('td', { 'data-label': 'Started' }, relTime(first.startedAt, now)),
          el('td', { 'data-label': 'Duration' }, fmtDuration(ended - from)),
          el('td', { 'data-label': 'Reason', class: 'reason-cell' }, strip(members.slice().reverse()), reasonText(a))));
        continue;
      }
      rows.push(el('tr', { class: 'row', 'data-id': a.id, 'data-phase': a.phase },
        el('td', { 'data-label': 'Phase' }, rowLink('#/analyses/' + encodeURIComponent(a.id), a, 'analysis ' + a.id)),
        el('td', { 'data-label': 'Template' }, a.template || el('span', { class: 'muted' }, 'posted')),
        el('td', { 'data-label': 'Arguments' }, el('code', null, argsText(a.args))),
        el('td', { 'data-label': 'Started' }, relTime(a.startedAt, now)),
        el('td', { 'data-label': 'Duration' }, fmtDuration(ended - started)),
        el('td', { 'data-label': 'Reason', class: 'reason-cell' }, dots(a), reasonText(a))));
    }
    const out = el('div', null);
    if (!rows.length) {
      out.append(el('p', { class: 'muted' }, 'No analysis here' + (query.toString() ? ' with these filters.' : ' yet.')));
    } else {
      out.append(el('table', { class: 'list' },
        el('thead', null, el('tr', null, ['Phase', 'Template', 'Arguments', 'Started', 'Duration', 'Reason'].map((h) => el('th', { scope: 'col' }, h)))),
        el('tbody', null, rows)));
    }
    out.append(pager(list, query, '#/'), el('p', { class: 'muted' }, 'Read ' + fmtTime(new Date().toISOString()) + '; read again every ' + LIST_REFRESH_MS / 1000 + ' s.'));
    return out;
  }

  // pager links the newest page and the next one of a list at base.
  function pager(list, query, base) {
    const nav = el('p', { class: 'pager' });
    if (query.get('cursor')) {
      const first = new URLSearchParams(query);
      first.delete('cursor');
      nav.append(el('a', { href: base + (first.toString() ? '?' + first : '') }, 'Newest'));
    }
    if (list.next) {
      const next = new URLSearchParams(query);
      next.set('cursor', list.next);
      nav.append(el('a', { href: base + '?' + next, id: 'older' }, 'Older'));
    }
    return nav;
  }

  // kindText names n calls of a kind: "3 rounds", "1 gate".
  function kindText(kind, n) {
    const word = kind === 'gate' ? 'gate' : 'round';
    return n + ' ' + word + (n === 1 ? '' : 's');
  }

  // strip is the phases of a series' calls, oldest first, each a link to
  // its analysis; the phase is in the link's text for those who do not see
  // the colour.
  function strip(calls) {
    return el('span', { class: 'calls' }, calls.map((a) => el('a', {
      href: '#/analyses/' + encodeURIComponent(a.id), class: 'tick p-' + a.phase,
      title: a.phase + ' at ' + fmtTime(a.startedAt),
    }, el('span', { class: 'skip-text' }, a.phase + ' at ' + fmtTime(a.startedAt)))));
  }

  // measured is what a round measured of each metric: its value, or its
  // phase when it has none.
  function measured(a) {
    return (a.metricResults || []).map((r) => {
      const ms = r.measurements || [];
      const last = ms[ms.length - 1];
      return r.name + ' ' + (last && last.value ? last.value : (last ? last.phase : r.phase));
    }).join('; ');
  }

  // One series: its calls over time, newest first, each with what it
  // measured, read again every LIST_REFRESH_MS while the tab is visible.
  async function showSeries(ctx, key, query) {
    const title = el('h1', null, 'Series');
    const body = el('div', { id: 'series' }, el('p', { class: 'muted' }, 'Loading…'));
    view.replaceChildren(el('p', { class: 'crumbs' }, el('a', { href: '#/' }, 'Analyses')), title, body);
    const q = new URLSearchParams({ series: key, limit: String(PAGE_SIZE), measurements: 'true' });
    if (query.get('cursor')) q.set('cursor', query.get('cursor'));
    while (!ctx.signal.aborted) {
      if (document.visibilityState !== 'hidden') {
        const list = await api('analyses?' + q).then(json);
        if (ctx.signal.aborted) return;
        const items = list.analyses || [];
        const a = items[0];
        if (a) title.textContent = (a.template || 'Posted') + ': ' + kindText(a.kind, items.length) + (list.next ? ' on this page' : '');
        const now = Date.now();
        const rows = items.map((r) => el('tr', { class: 'row', 'data-id': r.id, 'data-phase': r.phase },
          el('td', { 'data-label': 'Phase' }, rowLink('#/analyses/' + encodeURIComponent(r.id), r, 'analysis ' + r.id)),
          el('td', { 'data-label': 'Started' }, relTime(r.startedAt, now)),
          el('td', { 'data-label': 'Measured' }, el('code', null, measured(r))),
          el('td', { 'data-label': 'Reason', class: 'reason-cell' }, reasonText(r))));
        const out = el('div', null);
        if (!a) {
          out.append(el('p', { class: 'muted' }, 'No call of this series is held here (they go after the retention period).'));
        } else {
          out.append(el('p', null, el('code', null, argsText(a.args))),
            el('p', { class: 'timeline' }, 'Oldest ', strip(items.slice().reverse()), ' newest'),
            el('table', { class: 'list' },
              el('thead', null, el('tr', null, ['Phase', 'Started', 'Measured', 'Reason'].map((h) => el('th', { scope: 'col' }, h)))),
              el('tbody', null, rows)));
        }
        out.append(pager(list, query, '#/series/' + key),
          el('p', { class: 'muted' }, 'Read ' + fmtTime(new Date().toISOString()) + '; read again every ' + LIST_REFRESH_MS / 1000 + ' s.'));
        body.replaceChildren(out);
      }
      await sleep(ctx, LIST_REFRESH_MS);
    }
  }

  // One analysis: its report, drawn again on every event of its stream.
  async function showAnalysis(ctx, id) {
    const live = el('span', { class: 'live', id: 'live' }, '');
    const container = el('div', { id: 'report' }, el('p', { class: 'muted' }, 'Loading…'));
    view.replaceChildren(el('p', { class: 'crumbs' }, el('a', { href: '#/' }, '← Analyses'), ' ', live), container);
    const path = 'analyses/' + encodeURIComponent(id);

    // draw reads the report again: one read at a time, and one more when
    // events came while it read.
    let reading = null;
    let again = false;
    let phase = '';
    let draws = 0;
    const draw = async () => {
      if (reading) { again = true; return reading; }
      reading = (async () => {
        do {
          again = false;
          const text = await api(path, { accept: 'text/html' }).then(html);
          if (ctx.signal.aborted) return;
          const node = reportNode(text);
          const v = node.querySelector('#verdict');
          phase = v ? v.textContent.trim() : '';
          replaceReport(container, node);
          container.dataset.draws = String(++draws);
        } while (again && !ctx.signal.aborted);
      })().finally(() => { reading = null; });
      return reading;
    };

    await draw();
    if (phase !== 'Running' && phase !== 'Pending') {
      live.textContent = '';
      return;
    }
    live.textContent = '● live';
    live.className = 'live on';
    // Follow the stream (NDJSON, read with fetch: server-sent events' API cannot send
    // the token); poll when it cannot be followed (too many streams).
    while (!ctx.signal.aborted && (phase === 'Running' || phase === 'Pending')) {
      let followed = false;
      try {
        const resp = await api(path, { accept: 'application/x-ndjson' });
        if (resp.ok && resp.body) {
          followed = true;
          await readLines(resp.body, (line) => {
            let ev;
            try { ev = JSON.parse(line); } catch (e) { return; }
            if (ev.type === 'heartbeat') return;
            draw().catch(() => {});
          });
        } else {
          await resp.body?.cancel();
        }
      } catch (err) {
        if (ctx.signal.aborted || err instanceof Unauthorized) return;
      }
      if (ctx.signal.aborted) return;
      await draw().catch(() => {});
      // A stream that ended early is followed again, not at once.
      await sleep(ctx, followed ? 500 : POLL_MS);
    }
    live.textContent = '';
    live.className = 'live';
  }

  // readLines calls fn with each line of a stream until it ends.
  async function readLines(stream, fn) {
    const reader = stream.pipeThrough(new TextDecoderStream()).getReader();
    let buf = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += value;
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i).trim();
        buf = buf.slice(i + 1);
        if (line) fn(line);
      }
    }
    if (buf.trim()) fn(buf.trim());
  }

  // The templates served (--templates).
  async function showTemplates(ctx) {
    view.replaceChildren(el('h1', null, 'Templates'), el('p', { class: 'muted' }, 'Loading…'));
    const list = await api('templates').then(json);
    if (ctx.signal.aborted) return;
    const items = list.templates || [];
    const table = el('table', { class: 'list' },
      el('thead', null, el('tr', null, ['Name', 'Kind', 'Status', 'Arguments', 'File'].map((h) => el('th', { scope: 'col' }, h)))),
      el('tbody', null, items.map((t) => el('tr', null,
        el('td', { 'data-label': 'Name' }, t.name && t.status !== 'error' ? el('a', { href: '#/templates/' + encodeURIComponent(t.name) }, t.name) : (t.name || '—')),
        el('td', { 'data-label': 'Kind' }, t.kind || ''),
        el('td', { 'data-label': 'Status' }, t.status, (t.errors || []).length ? ' (' + t.errors.length + ' problems)' : ''),
        el('td', { 'data-label': 'Arguments' }, (t.args || []).map((a) => a.name + (a.required ? ' (required)' : '')).join(', ')),
        el('td', { 'data-label': 'File' }, el('code', null, t.file + (t.line ? ':' + t.line : '')))))));
    view.replaceChildren(el('h1', null, 'Templates'),
      items.length ? table : el('p', { class: 'muted' }, 'No template is served: start canaryd serve with --templates DIR.'),
      el('p', null, el('a', { href: '#/try' }, 'Try a template of your own')));
  }

  // backtestButtons are the "backtest over the last …" buttons; run is
  // called with the chosen window.
  function backtestButtons(run) {
    return el('div', { class: 'buttons', role: 'group', 'aria-label': 'Backtest over the last' },
      el('span', null, 'Backtest over the last'),
      BACKTESTS.map((b) => el('button', { type: 'button', 'data-window': b.start, onclick: () => run(b) }, b.label)));
  }

  // runBacktest posts a backtest and shows its report (the strip of
  // verdicts over time above the report of the first that fired).
  async function runBacktest(ctx, out, path, query, body, contentType, b) {
    query.set('start', b.start);
    query.set('every', b.every);
    out.replaceChildren(el('p', { class: 'muted', id: 'backtest-running' }, 'Backtesting over the last ' + b.label + ' (an analysis every ' + b.every + ')…'));
    try {
      const text = await api(path + '?' + query, { method: 'POST', accept: 'text/html', contentType, body }).then(html);
      if (ctx.signal.aborted) return;
      out.replaceChildren(reportNode(text));
    } catch (err) {
      if (ctx.signal.aborted) return;
      out.replaceChildren(problemNode(err) || '');
    }
  }

  // A template: its arguments, its spec, and its backtests.
  async function showTemplate(ctx, name) {
    view.replaceChildren(el('p', { class: 'muted' }, 'Loading…'));
    const t = await api('templates/' + encodeURIComponent(name)).then(json);
    if (ctx.signal.aborted) return;
    const inputs = {};
    const args = (t.args || []).map((a) => {
      const id = 'arg-' + a.name;
      inputs[a.name] = el('input', { id, name: a.name, value: a.value && a.value !== '*****' ? a.value : '', required: a.required, autocomplete: 'off' });
      return el('div', { class: 'field' }, el('label', { for: id }, a.name + (a.required ? ' (required)' : '')), inputs[a.name]);
    });
    const out = el('div', { id: 'backtest' });
    const form = el('form', { class: 'args', onsubmit: (ev) => ev.preventDefault() }, args,
      backtestButtons((b) => {
        if (!form.reportValidity()) return;
        const given = {};
        for (const [k, inp] of Object.entries(inputs)) if (inp.value !== '') given[k] = inp.value;
        runBacktest(ctx, out, 'templates/' + encodeURIComponent(name) + '/backtests', new URLSearchParams(), JSON.stringify({ args: given }), 'application/json', b);
      }));
    view.replaceChildren(
      el('p', { class: 'crumbs' }, el('a', { href: '#/templates' }, '← Templates')),
      el('h1', null, t.name, ' ', el('span', { class: 'muted' }, t.kind || '')),
      el('p', { class: 'muted' }, 'From ', el('code', null, t.file + (t.line ? ':' + t.line : '')), t.status !== 'ok' ? ' — ' + t.status : ''),
      form, out,
      el('details', null, el('summary', null, 'The spec as loaded'), el('pre', { class: 'spec' }, JSON.stringify(t.spec, null, 2))));
  }

  // Try a template: validate it (every problem at its line), and
  // backtest it at once.
  const TRY_KEY = 'canaryd.try';
  async function showTry(ctx) {
    let saved = '';
    try { saved = sessionStorage.getItem(TRY_KEY) || ''; } catch (e) { /* none */ }
    const text = el('textarea', { id: 'try-yaml', name: 'yaml', rows: '18', spellcheck: 'false', 'aria-describedby': 'try-help' });
    text.value = saved;
    const argsIn = el('textarea', { id: 'try-args', name: 'args', rows: '2', spellcheck: 'false', placeholder: 'namespace=echo' });
    const problems = el('div', { id: 'problems', 'aria-live': 'polite' });
    const out = el('div', { id: 'backtest' });
    const query = () => {
      const q = new URLSearchParams();
      for (const line of argsIn.value.split('\n')) {
        const i = line.indexOf('=');
        if (i > 0) q.append('arg.' + line.slice(0, i).trim(), line.slice(i + 1).trim());
      }
      return q;
    };
    // validate answers whether the text is valid, showing its problems.
    const validate = async () => {
      try { sessionStorage.setItem(TRY_KEY, text.value); } catch (e) { /* none */ }
      problems.replaceChildren(el('p', { class: 'muted' }, 'Checking…'));
      const resp = await api('validate?' + query(), { method: 'POST', contentType: 'application/yaml', body: text.value });
      const body = await resp.json().catch(() => null);
      if (ctx.signal.aborted) return false;
      if (resp.ok) {
        problems.replaceChildren(el('p', { class: 'valid', id: 'valid' }, '✓ Valid: ', body.summary || ''));
        return true;
      }
      const errs = (body && body.errors) || [];
      problems.replaceChildren(errs.length ? annotated(text, errs) : (problemNode(new APIError(resp.status, body)) || ''));
      return false;
    };
    const form = el('form', { class: 'try', onsubmit: (ev) => { ev.preventDefault(); validate().catch(showErr); } },
      el('label', { for: 'try-yaml' }, 'An AnalysisTemplate, AnalysisRun or bare spec (YAML or JSON)'),
      el('p', { id: 'try-help', class: 'muted' }, 'Checked as canaryd validate checks it; every problem is shown at its line.'),
      text,
      el('label', { for: 'try-args' }, 'Arguments, NAME=VALUE, one a line'), argsIn,
      el('div', { class: 'buttons' }, el('button', { type: 'submit', id: 'try-validate' }, 'Validate')),
      backtestButtons(async (b) => {
        if (await validate().catch(showErr)) {
          runBacktest(ctx, out, 'backtests', query(), text.value, 'application/yaml', b);
        }
      }));
    function showErr(err) {
      const n = problemNode(err);
      if (n) problems.replaceChildren(n);
      return false;
    }
    view.replaceChildren(el('h1', null, 'Try a template'), form, problems, out);
    text.focus();
  }

  // annotated shows the text with its line numbers, each problem under
  // its line (problems without a line above all).
  function annotated(textarea, errs) {
    const lines = textarea.value.split('\n');
    const at = new Map();
    const loose = [];
    for (const e of errs) {
      if (e.line > 0 && e.line <= lines.length) {
        if (!at.has(e.line)) at.set(e.line, []);
        at.get(e.line).push(e);
      } else {
        loose.push(e);
      }
    }
    const rows = [];
    lines.forEach((l, i) => {
      const n = i + 1;
      const here = at.get(n);
      rows.push(el('div', { class: 'src' + (here ? ' bad' : ''), 'data-line': String(n) },
        el('span', { class: 'ln' }, String(n)), el('span', { class: 'code' }, l || ' ')));
      for (const e of here || []) {
        rows.push(el('div', { class: 'msg', 'data-line': String(n) },
          el('button', { type: 'button', class: 'goto', onclick: () => goToLine(textarea, n) }, 'line ' + n),
          ' ', e.field ? el('code', null, e.field) : '', e.field ? ': ' : '', e.message));
      }
    });
    return el('div', { class: 'annotated', id: 'annotated' },
      el('h2', null, errs.length === 1 ? '1 problem' : errs.length + ' problems'),
      loose.length ? el('ul', { class: 'loose' }, loose.map((e) => el('li', null, e.field ? el('code', null, e.field) : '', e.field ? ': ' : '', e.message))) : null,
      el('div', { class: 'listing' }, rows));
  }

  // goToLine puts the caret at the start of line n of the textarea.
  function goToLine(textarea, n) {
    const lines = textarea.value.split('\n');
    let pos = 0;
    for (let i = 0; i < n - 1 && i < lines.length; i++) pos += lines[i].length + 1;
    textarea.focus();
    textarea.setSelectionRange(pos, pos + (lines[n - 1] || '').length);
  }

  window.addEventListener('hashchange', render);
  render();
})();
