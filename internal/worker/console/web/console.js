// console.js - the dead-letter console's page. Every value that came
// from a message or a user goes into the page as text (textContent),
// never as markup, and bidi and control characters are shown as \u{..}
// escapes, so a payload, a header or an error can neither run script nor
// disguise itself.

const $ = (s, r = document) => r.querySelector(s);
const POLL_MS = 5000;

let me = null;
const etags = new Map();
let rows = [];
const selected = new Set();
let lastClicked = null;
let older = null;

// Control, bidi and other invisible formatting characters, as escapes.
const HIDDEN = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]/g;
function show(v) {
  if (v === null || v === undefined) return '';
  return String(v).replace(HIDDEN, (c) => '\\u{' + c.codePointAt(0).toString(16) + '}');
}

// An element with attributes and children; strings become text nodes.
function el(tag, attrs = {}, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = show(v);
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const k of kids) if (k !== null && k !== undefined) e.append(typeof k === 'string' ? show(k) : k);
  return e;
}

async function api(path, body) {
  const headers = { Accept: 'application/json' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    headers['X-CSRF-Token'] = me && me.csrf ? me.csrf : '';
  } else if (etags.has(path)) {
    headers['If-None-Match'] = etags.get(path).tag;
  }
  const r = await fetch(path, {
    method: body === undefined ? 'GET' : 'POST', headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: 'same-origin', cache: 'no-store',
  });
  if (r.status === 401) { location.assign('/login'); throw new Error('signed out'); }
  if (r.status === 304 && etags.has(path)) return Object.assign({ same: true }, etags.get(path).json);
  const j = await r.json().catch(() => ({ ok: false, error: 'HTTP ' + r.status }));
  j.status = r.status;
  const tag = r.headers.get('ETag');
  if (body === undefined && tag && j.ok) etags.set(path, { tag, json: j });
  return j;
}

function canOperate() { return me && (me.role === 'operator' || me.role === 'admin'); }

function ago(ms) {
  const s = Math.max(0, Math.round((Date.now() - ms) / 1000));
  if (s < 60) return s + ' s ago';
  if (s < 3600) return Math.floor(s / 60) + ' min ago';
  if (s < 86400) return Math.floor(s / 3600) + ' h ago';
  return Math.floor(s / 86400) + ' d ago';
}
function age(ms) {
  if (ms === null || ms === undefined) return '—';
  const s = Math.round(ms / 1000);
  if (s < 3600) return Math.floor(s / 60) + ' min';
  if (s < 86400) return Math.floor(s / 3600) + ' h';
  return Math.floor(s / 86400) + ' d';
}
function when(ms) {
  return el('time', { datetime: new Date(ms).toISOString(), title: new Date(ms).toISOString(), text: ago(ms) });
}

// The view's state lives in the URL: a link reproduces it.
const FILTERS = ['status', 'queue', 'class', 'owner', 'signature', 'since', 'text'];
function params() { return new URLSearchParams(location.search); }
function view() { return params().get('view') || 'letters'; }

function listPath(before) {
  const p = params(), q = new URLSearchParams();
  for (const f of FILTERS) if (p.get(f)) q.set(f, p.get(f));
  q.set('limit', '50');
  if (before) q.set('before_id', String(before));
  return '/api/v1/dead-letters?' + q.toString();
}

function plural(n, word) { return n + ' ' + word + (n === 1 ? '' : word.endsWith('s') ? 'es' : 's'); }

function card(title, value, list) {
  const c = el('div', { class: 'card' }, el('h2', { text: title }), el('p', { class: 'big', text: value }));
  if (list) c.append(list);
  return c;
}
function topList(obj, n, key) {
  const ul = el('ul');
  Object.entries(obj || {}).slice(0, n).forEach(([k, v]) => {
    const a = el('a', { href: '?view=letters&status=open&' + key + '=' + encodeURIComponent(k) }, k);
    ul.append(el('li', {}, a, ' ', el('span', { class: 'n', text: String(v) })));
  });
  return ul;
}

async function overview() {
  const s = await api('/api/v1/stats');
  if (!s.ok || s.same) return;
  const c = await api('/api/v1/groups?by_cause=true&limit=5');
  const d = s.data, box = $('#overview');
  const causes = el('ul');
  if (c.ok && Array.isArray(c.data)) c.data.forEach((k) => {
    const sig = k.groups && k.groups[0] ? k.groups[0].signature : '';
    causes.append(el('li', {}, el('a', { href: '?view=letters&signature=' + encodeURIComponent(sig) }, k.error || k.reason || '(no error)'),
      ' ', el('span', { class: 'n', text: String(k.unresolved) })));
  });
  const esc = d.escalations || {};
  box.replaceChildren(
    card('Unresolved', String(d.unresolved)),
    card('By queue', plural(Object.keys(d.by_queue || {}).length, 'queue'), topList(d.by_queue, 5, 'queue')),
    card('By class', plural(Object.keys(d.by_class || {}).length, 'class'), topList(d.by_class, 5, 'class')),
    card('Top causes', '', causes),
    card('Oldest unresolved', age(d.oldest_unresolved_age_ms)),
    card('Overdue escalations', String((esc.past_escalate_at || 0) + (esc.unowned_past_sla || 0))),
  );
  const dl = $('#queues');
  dl.replaceChildren(...Object.keys(d.by_queue || {}).map((q) => el('option', { value: q })));
}

function renderRows() {
  const tb = $('#table tbody');
  tb.replaceChildren(...rows.map((r, i) => {
    const box = el('input', { type: 'checkbox', 'aria-label': 'Select dead letter ' + r.id });
    box.checked = selected.has(r.id);
    box.addEventListener('click', (ev) => select(i, box.checked, ev.shiftKey));
    const open = el('button', { type: 'button', class: 'link', 'aria-label': 'Open dead letter ' + r.id, onclick: () => record(r.id) }, String(r.id));
    const err = el('td', { class: 'err' }, el('span', { class: 'error', text: r.error || r.reason || '' }));
    if (r.hint) err.append(el('span', { class: 'hint', text: r.hint }));
    return el('tr', { class: selected.has(r.id) ? 'sel' : '' },
      el('td', {}, box), el('td', {}, open), el('td', {}, when(r.received_at)),
      el('td', { text: r.queue }), el('td', { text: r.class }), el('td', { text: r.status }),
      err, el('td', { text: String(r.retry_count ?? '') }), el('td', { text: r.owner || '' }),
      canOperate() ? el('td', { class: 'preview' }, el('code', { text: r.payload_preview || '' })) : null);
  }));
  $('#selcount').textContent = selected.size + ' selected';
  $('#more').hidden = rows.length === 0 || !older;
}

function select(i, on, range) {
  const from = range && lastClicked !== null ? Math.min(lastClicked, i) : i;
  const to = range && lastClicked !== null ? Math.max(lastClicked, i) : i;
  for (let k = from; k <= to; k++) on ? selected.add(rows[k].id) : selected.delete(rows[k].id);
  lastClicked = i;
  renderRows();
}

async function letters(more) {
  const path = listPath(more ? older : null);
  const j = await api(path);
  if (!j.ok) { $('#status').textContent = show(j.error || 'the list failed'); return; }
  if (j.same && !more) return;
  rows = more ? rows.concat(j.data) : j.data;
  older = j.data.length === 50 ? j.data[j.data.length - 1].id : null;
  $('#status').textContent = rows.length + ' shown';
  renderRows();
}

function kv(title, obj) {
  const dl = el('dl');
  for (const [k, v] of Object.entries(obj || {})) dl.append(el('dt', { text: k }), el('dd', { text: typeof v === 'object' ? JSON.stringify(v) : v }));
  return el('section', {}, el('h3', { text: title }), dl);
}

function pretty(p) {
  try { return JSON.stringify(JSON.parse(p), null, 2); } catch { return p; }
}

async function record(id) {
  const j = await api('/api/v1/dead-letters/' + id);
  const b = $('#record-body');
  if (!j.ok) { b.replaceChildren(el('p', { text: j.error })); $('#record').showModal(); return; }
  const d = j.data;
  const parts = [
    kv('Record', { id: d.id, queue: d.queue, dlq: d.dlq, status: d.status, class: d.class,
      owner: d.owner, message_id: d.message_id, correlation_id: d.correlation_id,
      retries: d.retry_count, replays: d.replay_count, received: new Date(d.received_at).toISOString() }),
    el('section', {}, el('h3', { text: 'Error' }), el('p', { class: 'error', text: d.error || d.reason || '' }),
      el('h3', { text: 'How to fix' }), el('p', { class: 'hint', text: d.hint || '' })),
  ];
  if (canOperate()) {
    parts.push(kv('Headers', d.headers));
    parts.push(el('section', {}, el('h3', { text: 'Payload' }),
      el('pre', { class: 'payload', text: d.payload === null || d.payload === undefined ? (d.payload_b64 ? '(binary, base64) ' + d.payload_b64 : '(none)') : pretty(d.payload) })));
  }
  parts.push(el('section', {}, el('h3', { text: 'x-death' }), el('pre', { text: JSON.stringify(d.x_death, null, 2) })));
  parts.push(el('section', {}, el('h3', { text: 'Lineage' }), el('pre', { text: JSON.stringify(d.lineage, null, 2) })));
  const audit = el('ul');
  (d.audit || []).forEach((a) => audit.append(el('li', {}, when(a.at), ' ', el('span', { text: a.actor }), ' ', el('span', { text: a.command }), ' ', el('span', { text: a.result || '' }))));
  parts.push(el('section', {}, el('h3', { text: 'Audit trail' }), audit));
  b.replaceChildren(...parts);
  $('#record-title').textContent = 'Dead letter ' + d.id;
  $('#record').showModal();
  $('#record-title').focus();
}

// Bulk actions on the selection: a preview of what is eligible first.
// The statuses each change takes (the worker refuses the others, and
// says why for each id).
const TAKES = { assign: ['open', 'assigned'], drop: ['open', 'assigned', 'replaying'] };
const ACTIONS = {
  assign: { title: 'Assign', fields: [['owner', 'Owner', true], ['decision', 'Decision', true], ['evidence', 'Evidence', false]] },
  drop: { title: 'Drop', fields: [['reason', 'Reason', true]] },
  replay: { title: 'Replay', fields: [['reason', 'Reason', true], ['evidence', 'Evidence', false], ['canary', 'Canary (first N)', false]] },
};
let action = null;

function openAction(name) {
  if (selected.size === 0) { $('#status').textContent = 'Select dead letters first'; return; }
  action = name;
  const a = ACTIONS[name];
  $('#action-title').textContent = a.title + ' dead letters';
  if (TAKES[name]) {
    const ok = rows.filter((r) => selected.has(r.id) && TAKES[name].includes(r.status)).length;
    $('#action-count').textContent = ok + ' / ' + selected.size + ' eligible (' + TAKES[name].join(', ') + ')';
  } else $('#action-count').textContent = selected.size + ' selected';
  $('#action-fields').replaceChildren(...a.fields.map(([k, label, req]) => el('label', {}, label + ' ',
    el('input', Object.assign({ name: k, id: 'f-' + k }, req ? { required: '' } : {}, k === 'canary' ? { type: 'number', min: '0' } : {})))));
  $('#action-preview').replaceChildren();
  $('#action-result').textContent = '';
  $('#action-preview-btn').hidden = name !== 'replay';
  $('#action-go').disabled = false;
  $('#action').showModal();
  if (name === 'replay') preview();
}

function field(k) { const f = $('#f-' + k); return f && f.value.trim() ? f.value.trim() : undefined; }

async function preview() {
  const ids = [...selected];
  const j = await api('/api/v1/replays', { ids, reason: field('reason'), evidence: field('evidence') });
  const box = $('#action-preview');
  if (!j.ok) { box.replaceChildren(el('p', { class: 'error', text: j.error })); return; }
  const yes = j.data.filter((p) => p.eligible);
  const list = el('ul', { class: 'plan' });
  j.data.forEach((p) => list.append(el('li', {}, String(p.id) + ' ', p.eligible ? el('span', { class: 'ok', text: '→ ' + (p.exchange || '(default)') + '/' + p.routing_key }) : el('span', { class: 'error', text: p.why }))));
  box.replaceChildren(el('p', { id: 'eligible', text: yes.length + ' / ' + ids.length + ' eligible' }), list);
  $('#action-go').disabled = yes.length === 0;
}

async function follow(job) {
  for (;;) {
    const j = await api('/api/v1/replays/' + job);
    if (!j.ok) { $('#action-result').textContent = show(j.error); return; }
    const d = j.data;
    $('#action-result').textContent = show(`Replay ${d.id}: ${d.state}; published ${d.published}, failed ${d.failed}, unknown ${d.unknown}, refused ${d.refused}` + (d.error ? ' (' + d.error + ')' : ''));
    if (d.state !== 'running') return;
    await new Promise((r) => setTimeout(r, 500));
  }
}

async function execute(ev) {
  ev.preventDefault();
  const ids = [...selected];
  let j;
  $('#action-go').disabled = true;
  if (action === 'assign') j = await api('/api/v1/dead-letters/assign', { ids, owner: field('owner'), decision: field('decision'), evidence: field('evidence') });
  else if (action === 'drop') j = await api('/api/v1/dead-letters/drop', { ids, reason: field('reason') });
  else {
    const canary = field('canary') ? Number(field('canary')) : 0;
    j = await api('/api/v1/replays', { ids, reason: field('reason'), evidence: field('evidence'), execute: true, canary });
    if (j.ok) { $('#action-result').textContent = 'Replay ' + j.data.job + ' started: ' + j.data.eligible + ' eligible'; await follow(j.data.job); selected.clear(); refresh(); return; }
  }
  if (!j.ok && !j.data) { $('#action-result').textContent = show(j.error); $('#action-go').disabled = false; return; }
  const res = (j.data && j.data.results) || [];
  const bad = res.filter((r) => r.error);
  $('#action-result').textContent = show(`${ACTIONS[action].title}: ${res.length - bad.length} changed` + (bad.length ? `, ${bad.length} not: ` + bad.map((r) => r.id + ' ' + r.error).join('; ') : ''));
  selected.clear();
  refresh();
}

async function groups() {
  const by = $('#bycause').checked;
  const j = await api('/api/v1/groups?limit=100' + (by ? '&by_cause=true' : ''));
  if (!j.ok || j.same) return;
  $('#gtable thead').replaceChildren(el('tr', {}, ...['Error', 'Class', by ? 'Queues' : 'Queue', 'Count', 'Unresolved', 'Last seen'].map((h) => el('th', { scope: 'col', text: h }))));
  $('#gtable tbody').replaceChildren(...j.data.map((g) => {
    const sig = by ? (g.groups[0] || {}).signature : g.signature;
    return el('tr', {}, el('td', {}, el('a', { href: '?view=letters&signature=' + encodeURIComponent(sig || '') }, g.error || g.reason || '(none)')),
      el('td', { text: g.class }), el('td', { text: by ? g.groups.map((x) => x.queue).join(', ') : g.queue }),
      el('td', { text: String(g.count) }), el('td', { text: String(g.unresolved) }), el('td', {}, when(g.last_seen)));
  }));
}

async function audit() {
  const j = await api('/api/v1/audit?limit=100');
  if (!j.ok || j.same) return;
  $('#atable tbody').replaceChildren(...j.data.map((a) => el('tr', {}, el('td', {}, when(a.at)), el('td', { text: a.actor }),
    el('td', { text: a.command }), el('td', { class: 'args', text: a.args ? JSON.stringify(a.args) : '' }), el('td', { text: a.result || '' }))));
}

// "causes" is the groups view with one cause across queues (the
// digest's links to a cause open it).
function section() { const v = view(); return v === 'causes' ? 'groups' : v; }

function showView() {
  const v = section();
  for (const s of ['letters', 'groups', 'audit']) $('#' + s).hidden = s !== v;
  $('#bycause').checked = view() === 'causes';
  document.querySelectorAll('nav a').forEach((a) => a.setAttribute('aria-current', a.dataset.view === v ? 'page' : 'false'));
  const p = params();
  for (const f of FILTERS) { const i = $('#filters [name=' + f + ']'); if (i) i.value = p.get(f) || ''; }
}

async function refresh() {
  await overview();
  const v = section();
  if (v === 'letters') await letters(false);
  else if (v === 'groups') await groups();
  else await audit();
}

function go(search) {
  history.pushState(null, '', search ? '?' + search : location.pathname);
  selected.clear();
  showView();
  refresh();
}

async function main() {
  const j = await api('/api/v1/me');
  if (!j.ok) return;
  me = j.data;
  $('#who').textContent = show(me.user + ' (' + me.role + ')');
  document.body.classList.toggle('viewer', !canOperate());
  document.querySelectorAll('.op').forEach((b) => { b.hidden = !canOperate(); });
  $('#filters').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const q = new URLSearchParams();
    q.set('view', 'letters');
    for (const [k, v] of new FormData(ev.target)) if (v) q.set(k, v);
    go(q.toString());
  });
  $('#clear').addEventListener('click', () => go('view=letters'));
  document.querySelectorAll('nav a').forEach((a) => a.addEventListener('click', (ev) => { ev.preventDefault(); go('view=' + a.dataset.view); }));
  $('#overview').addEventListener('click', (ev) => {
    const a = ev.target.closest('a');
    if (a) { ev.preventDefault(); go(a.getAttribute('href').slice(1)); }
  });
  $('#gtable').addEventListener('click', (ev) => {
    const a = ev.target.closest('a');
    if (a) { ev.preventDefault(); go(a.getAttribute('href').slice(1)); }
  });
  $('#selall').addEventListener('change', (ev) => { rows.forEach((r) => ev.target.checked ? selected.add(r.id) : selected.delete(r.id)); renderRows(); });
  $('#more').addEventListener('click', () => letters(true));
  $('#bycause').addEventListener('change', (ev) => go('view=' + (ev.target.checked ? 'causes' : 'groups')));
  $('#do-assign').addEventListener('click', () => openAction('assign'));
  $('#do-drop').addEventListener('click', () => openAction('drop'));
  $('#do-replay').addEventListener('click', () => openAction('replay'));
  $('#action-preview-btn').addEventListener('click', preview);
  $('#action-form').addEventListener('submit', execute);
  $('#action-close').addEventListener('click', () => $('#action').close());
  $('#logout').addEventListener('click', async () => {
    await fetch('/logout', { method: 'POST', headers: { 'X-CSRF-Token': me.csrf || '' }, credentials: 'same-origin' });
    location.assign('/login');
  });
  window.addEventListener('popstate', () => { showView(); refresh(); });
  showView();
  await refresh();
  // conditional requests: an unchanged archive answers 304, unread
  setInterval(() => { if (!document.hidden && !$('#action').open) refresh(); }, POLL_MS);
  document.body.dataset.ready = 'true';
}

main();
