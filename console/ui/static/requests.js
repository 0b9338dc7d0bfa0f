// requests.js: the live authentication view (docs/kubernetes-behaviour.md,
// K.3): every request the gateway decided, newest on top, streamed from
// GET /kubegate/ui/api/requests (NDJSON), filtered by user and decision,
// with a panel showing the whole identity of a clicked row.

import { follow } from './api.js';
import { h, replace } from './dom.js';

// The page keeps at most this many rows; older ones drop off the bottom.
const MAX_ROWS = 2000;

let root;
let ctx;
let tbody;
let status;
let panel;
let userFilter;
let decisionFilter;
// The stream runs while the view is shown; rows stay when it is hidden.
let stream = null;
// Rows already shown, by request ID and time: a reconnected stream starts
// again with the gateway's recent requests.
const seen = new Set();

export function init(el, c) {
  root = el;
  ctx = c;
  stream = null;
  seen.clear();
  const own = ctx.session.views && ctx.session.views.requests !== 'all';
  userFilter = h('input', { type: 'search', id: 'filter-user', placeholder: 'user contains…', oninput: applyFilters });
  decisionFilter = h('select', { id: 'filter-decision', onchange: applyFilters },
    ['', 'allowed', 'unauthorized', 'forbidden', 'error'].map((d) => h('option', { value: d }, d || 'any decision')));
  status = h('span', { class: 'stream-state muted' }, 'connecting…');
  tbody = h('tbody', {});
  panel = h('aside', { class: 'detail', hidden: true });
  replace(root,
    h('div', { class: 'view-head' }, h('h1', {}, 'Authentication, live'), status),
    own ? h('p', { class: 'note' }, 'Showing your own requests only: seeing everyone\'s needs get on the non-resource path /kubegate/ui/requests.') : null,
    h('div', { class: 'filters' },
      h('label', {}, 'User ', userFilter),
      h('label', {}, 'Decision ', decisionFilter)),
    h('table', { class: 'grid requests' },
      h('thead', {}, h('tr', {}, ['Time', 'User', 'Groups', 'Authenticator', 'Verb', 'Path', 'Decision', 'Reason'].map((t) => h('th', {}, t)))),
      tbody),
    panel);
}

export function show() {
  if (stream) return;
  stream = new AbortController();
  ctx.signal.addEventListener('abort', () => stream && stream.abort(), { once: true });
  follow('/kubegate/ui/api/requests', add, {
    signal: stream.signal,
    onState: (st) => {
      if (typeof st === 'string') status.textContent = st === 'live' ? '● live' : 'reconnecting…';
      else status.textContent = 'Not allowed: ' + st.message;
      status.classList.toggle('live', st === 'live');
    },
  });
}

// hide ends the stream; showing the view again resumes it, and the
// gateway's recent requests it starts with fill the gap.
export function hide() {
  if (stream) stream.abort();
  stream = null;
  status.textContent = 'paused';
}

function add(line) {
  const id = (line.requestID || '') + '|' + line.time + '|' + line.path;
  if (seen.has(id)) return;
  seen.add(id);
  const tr = h('tr', {
    class: ['request', 'decision-' + line.decision],
    'data-decision': line.decision,
    'data-user': line.user,
    'data-request-id': line.requestID,
    onclick: () => detail(line, tr),
  },
  h('td', { class: 'small nowrap' }, h('time', { datetime: line.time }, (line.time || '').slice(11, 23))),
  h('td', { class: 'user' }, line.user || '—'),
  h('td', { class: 'small' }, (line.groups || []).join(', ')),
  h('td', {}, line.authenticator || '—'),
  h('td', {}, line.verb),
  h('td', { class: 'path small' }, line.method + ' ' + line.path),
  h('td', {}, h('span', { class: 'decision ' + line.decision }, line.decision), ' ', String(line.status)),
  h('td', { class: 'reason small' }, line.reason || ''));
  tr.hidden = !matches(tr);
  tbody.insertBefore(tr, tbody.firstChild);
  while (tbody.children.length > MAX_ROWS) tbody.lastChild.remove();
}

function matches(tr) {
  const u = userFilter.value.trim().toLowerCase();
  const d = decisionFilter.value;
  return (!u || (tr.dataset.user || '').toLowerCase().includes(u)) && (!d || tr.dataset.decision === d);
}

function applyFilters() {
  for (const tr of tbody.children) tr.hidden = !matches(tr);
}

function detail(line, tr) {
  for (const r of tbody.querySelectorAll('tr.selected')) r.classList.remove('selected');
  tr.classList.add('selected');
  const extra = Object.entries(line.extra || {});
  const rows = [
    ['User', line.user],
    ['UID', line.uid],
    ['Groups', (line.groups || []).join('\n')],
    ['Extra', extra.map(([k, v]) => k + ': ' + v.join(', ')).join('\n')],
    ['Authenticator', line.authenticator],
    ['Issuer', line.issuer],
    ['Request ID', line.requestID],
    ['Time', line.time],
    ['Request', line.method + ' ' + line.path],
    ['Verb', line.verb],
    ['Resource', [line.apiGroup, line.resource, line.subresource].filter(Boolean).join('/')],
    ['Namespace', line.namespace],
    ['Name', line.name],
    ['Decision', line.decision + ' (' + line.status + ')'],
    ['Reason', line.reason],
  ];
  replace(panel,
    h('div', { class: 'view-head' }, h('h2', {}, 'Request'),
      h('button', { type: 'button', onclick: () => { panel.hidden = true; tr.classList.remove('selected'); } }, 'Close')),
    h('dl', {}, rows.filter(([, v]) => v).map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)])));
  panel.hidden = false;
}
