// scheduling.js: the scheduling view (docs/kubernetes-behaviour.md, K.4).
// It reads a pod through the API and draws the explanation kubegate's
// scheduler left on it in the annotation scheduler.kubegate.io/explain:
// which nodes each filter plugin removed, each score plugin's raw,
// normalized and weighted (normalized × weight) score per node, the total
// and the pick: the numbers `kubegate scheduler explain POD` prints. It
// also lists pending pods with their PodScheduled condition.

import { StatusError, canI, getJSON } from './api.js';
import { failure, h, notAllowed, replace } from './dom.js';
import { namespace as currentNamespace } from './cluster.js';

const ANNOTATION = 'scheduler.kubegate.io/explain';

let root;
let ctx;
let nsInput;
let podInput;
let podList;
let result;
let pending;

export function init(el, c) {
  root = el;
  ctx = c;
  nsInput = h('input', { id: 'sched-namespace', value: 'default', spellcheck: 'false', size: 16 });
  podInput = h('input', { id: 'sched-pod', list: 'sched-pods', spellcheck: 'false', size: 32, placeholder: 'pod name' });
  podList = h('datalist', { id: 'sched-pods' });
  result = h('div', { class: 'explanation' });
  pending = h('div', { class: 'pending' });
  const form = h('form', {
    class: 'filters',
    onsubmit: (ev) => {
      ev.preventDefault();
      if (podInput.value.trim()) ctx.go('scheduling', nsInput.value.trim() + '/' + podInput.value.trim());
    },
  },
  h('label', {}, 'Namespace ', nsInput),
  h('label', {}, 'Pod ', podInput, podList),
  h('button', { type: 'submit' }, 'Explain'),
  h('button', { type: 'button', onclick: () => refreshPending() }, 'Pending pods'));
  nsInput.addEventListener('change', () => refreshPods());
  replace(root, h('h1', {}, 'Scheduling'), form, result, h('h2', {}, 'Pending pods'), pending);
}

// show takes "namespace/pod" (from the URL, or a pod clicked in the
// cluster view).
export function show(arg) {
  const slash = arg ? arg.indexOf('/') : -1;
  if (slash > 0) {
    nsInput.value = arg.slice(0, slash);
    podInput.value = arg.slice(slash + 1);
    explain(nsInput.value, podInput.value);
  } else {
    const ns = currentNamespace();
    if (ns) nsInput.value = ns;
    replace(result, h('p', { class: 'muted' }, 'Pick a pod, or click one in the cluster view.'));
  }
  refreshPods();
  refreshPending();
}

function podPath(ns, name) {
  return '/api/v1/namespaces/' + encodeURIComponent(ns) + '/pods' + (name ? '/' + encodeURIComponent(name) : '');
}

async function refreshPods() {
  const ns = nsInput.value.trim();
  if (!ns) return;
  try {
    const list = await getJSON(podPath(ns), { signal: ctx.signal });
    replace(podList, (list.items || []).map((p) => h('option', { value: p.metadata.name })));
  } catch (_) {
    replace(podList);
  }
}

async function explain(ns, name) {
  replace(result, h('p', { class: 'muted' }, 'Reading pod ', ns, '/', name, '…'));
  let pod;
  try {
    pod = await getJSON(podPath(ns, name), { signal: ctx.signal });
  } catch (e) {
    if (ctx.signal.aborted) return;
    replace(result, e instanceof StatusError && e.notAllowed ? notAllowed('reading pod ' + ns + '/' + name, e) : failure('Cannot read pod ' + ns + '/' + name, e));
    return;
  }
  const raw = (pod.metadata.annotations || {})[ANNOTATION];
  const cond = podScheduled(pod);
  if (!raw) {
    replace(result, h('p', { class: 'muted' },
      'Pod ', ns, '/', name, ' carries no scheduler explanation',
      pod.spec.nodeName ? ' (it is on ' + pod.spec.nodeName + ', placed by another scheduler or before kubegate explained)' : '',
      cond ? '; PodScheduled: ' + cond.status + (cond.reason ? ' ' + cond.reason : '') : '', '.'));
    return;
  }
  let e;
  try {
    e = JSON.parse(raw);
  } catch (err) {
    replace(result, failure('The annotation ' + ANNOTATION + ' is not valid JSON', err));
    return;
  }
  replace(result, draw(e, cond));
}

function podScheduled(pod) {
  return ((pod.status && pod.status.conditions) || []).find((c) => c.type === 'PodScheduled');
}

function draw(e, cond) {
  const summary = h('p', { class: 'summary', 'data-pick': e.node || '' },
    'pod ', h('strong', {}, e.pod), e.node ? [': scheduled to ', h('strong', { class: 'pick' }, e.node)] : ': not scheduled',
    ' (' + e.nodes + ' nodes, ' + e.evaluated + ' evaluated, ' + e.feasible + ' feasible)');
  return [
    summary,
    e.error ? h('p', { class: 'error' }, e.error) : null,
    cond && cond.status !== 'True' ? h('p', { class: 'note' }, 'PodScheduled: ', cond.reason || cond.status, cond.message ? ' — ' + cond.message : '') : null,
    filters(e),
    scores(e),
  ];
}

// filters shows which nodes each filter plugin removed, or, when the
// scheduler kept counts only, how many nodes each reason removed.
function filters(e) {
  const out = [];
  if ((e.rejected || []).length) {
    const byPlugin = new Map();
    for (const r of e.rejected) {
      if (!byPlugin.has(r.plugin)) byPlugin.set(r.plugin, []);
      byPlugin.get(r.plugin).push(r);
    }
    const rows = [];
    for (const [plugin, rs] of byPlugin) {
      rs.forEach((r, i) => rows.push(h('tr', { 'data-node': r.node, 'data-plugin': plugin },
        i === 0 ? h('td', { rowspan: rs.length, class: 'plugin' }, plugin) : null,
        h('td', {}, r.node === '*' ? 'every node (PreFilter)' : r.node),
        h('td', { class: 'small' }, (r.reasons || []).join(', ')))));
    }
    out.push(h('h2', {}, 'Filtered out'),
      h('table', { class: 'grid rejected' },
        h('thead', {}, h('tr', {}, h('th', {}, 'Filter plugin'), h('th', {}, 'Node'), h('th', {}, 'Reasons'))),
        h('tbody', {}, rows)));
  }
  const counts = Object.entries(e.rejectedCounts || {}).sort((a, b) => (b[1] - a[1]) || a[0].localeCompare(b[0]));
  if (counts.length) {
    out.push(h('h2', {}, 'Filtered out (counts)'),
      h('table', { class: 'grid rejected-counts' },
        h('thead', {}, h('tr', {}, h('th', {}, 'Nodes'), h('th', {}, 'Reason'))),
        h('tbody', {}, counts.map(([reason, n]) => h('tr', { 'data-reason': reason }, h('td', { class: 'num' }, String(n)), h('td', {}, reason))))));
  }
  return out;
}

// scores draws a node × plugin table: per cell the raw score, the
// normalized score (0–100, the bar) and the weighted score (normalized ×
// weight, what the total adds up), then the total and the pick.
function scores(e) {
  const rows = e.scores || [];
  if (!rows.length) return null;
  const plugins = e.plugins || [];
  const maxTotal = Math.max(1, ...rows.map((r) => r.total));
  const table = h('table', { class: 'grid scores' },
    h('thead', {}, h('tr', {}, h('th', {}, 'Node'),
      plugins.map((p) => h('th', { 'data-plugin': p.name, class: p.skipped ? 'muted' : '' }, p.name, h('div', { class: 'small muted' }, 'weight ' + p.weight))),
      h('th', {}, 'Total'))),
    h('tbody', {}, rows.map((r) => h('tr', { class: ['score-row', r.node === e.node ? 'picked' : ''], 'data-node': r.node, 'data-total': r.total },
      h('td', { class: 'node' }, r.node, r.node === e.node ? h('span', { class: 'badge pick' }, 'pick') : null),
      plugins.map((p, i) => cell(e, p, r, i)),
      h('td', { class: 'total', 'data-total': r.total },
        h('div', { class: 'bar-track' }, bar(r.total / maxTotal * 100, 'total')),
        h('strong', {}, String(r.total)))))));
  return [
    h('h2', {}, 'Scores'),
    table,
    h('p', { class: 'muted small' },
      e.scoringSkipped ? 'Only one node was feasible, so none was scored.' : 'Each cell: raw / normalized / weighted (normalized × weight); the bar is the normalized score out of 100; — = plugin skipped for this pod.',
      e.moreFeasible ? ' And ' + e.moreFeasible + ' more feasible nodes.' : ''),
  ];
}

function cell(e, p, r, i) {
  if (e.scoringSkipped || !r.raw || i >= r.raw.length) return h('td', { 'data-plugin': p.name });
  if (p.skipped) return h('td', { 'data-plugin': p.name, class: 'muted' }, '—');
  const norm = r.normalized[i];
  const weighted = norm * p.weight;
  return h('td', {
    class: 'score',
    'data-plugin': p.name,
    'data-raw': r.raw[i],
    'data-normalized': norm,
    'data-weighted': weighted,
    title: p.name + ' on ' + r.node + ': raw ' + r.raw[i] + ', normalized ' + norm + ', × ' + p.weight + ' = ' + weighted,
  },
  h('div', { class: 'bar-track' }, bar(norm, 'norm')),
  h('span', { class: 'small' }, r.raw[i] + ' / ' + norm + ' / '), h('strong', {}, String(weighted)));
}

function bar(percent, kind) {
  const el = h('div', { class: 'bar ' + kind });
  el.style.width = Math.max(0, Math.min(100, percent)).toFixed(1) + '%';
  return el;
}

// refreshPending lists the namespace's pods (all namespaces when the user
// may) that no node has taken yet, with why.
async function refreshPending() {
  const ns = nsInput.value.trim();
  const all = await canI('list', 'pods');
  const path = (all ? '/api/v1/pods' : podPath(ns)) + '?fieldSelector=' + encodeURIComponent('status.phase=Pending');
  let list;
  try {
    list = await getJSON(path, { signal: ctx.signal });
  } catch (e) {
    if (ctx.signal.aborted) return;
    replace(pending, e instanceof StatusError && e.notAllowed ? notAllowed('listing pods in ' + (all ? 'all namespaces' : ns), e) : failure('Cannot list pods', e));
    return;
  }
  const pods = (list.items || []).filter((p) => !p.spec.nodeName);
  if (!pods.length) {
    replace(pending, h('p', { class: 'muted' }, 'No pending pods in ', all ? 'any namespace' : ns, '.'));
    return;
  }
  replace(pending, h('table', { class: 'grid' },
    h('thead', {}, h('tr', {}, ['Pod', 'Reason', 'Message'].map((t) => h('th', {}, t)))),
    h('tbody', {}, pods.map((p) => {
      const c = podScheduled(p) || {};
      const ref = p.metadata.namespace + '/' + p.metadata.name;
      return h('tr', { class: 'pending-pod clickable', 'data-pod': ref, onclick: () => ctx.go('scheduling', ref) },
        h('td', {}, ref), h('td', {}, c.reason || '—'), h('td', { class: 'small' }, c.message || ''));
    }))));
}
