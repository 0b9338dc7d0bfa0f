// cluster.js: the cluster view (docs/kubernetes-behaviour.md, K.5): nodes
// with their pods (grouped by spec.nodeName) and the workloads with their
// rollout progress, kept live by list + watch. The namespace is "all
// namespaces" when a SelfSubjectAccessReview says the user may list pods
// cluster-wide, else the one the user types (remembered in
// sessionStorage). A refused list shows "Not allowed", never an empty
// success.

import { canI, watchList } from './api.js';
import { coalesce, failure, h, notAllowed, replace } from './dom.js';

const NS_KEY = 'kubegate.namespace';

let root;
let ctx;
let nsInput;
let nodesEl;
let workloadsEl;
let mayListAll = false;
let started = false;
let watches = null;
// Live state: each collection's objects, or the error that refused it.
let state = {};

// namespace is the namespace the cluster view shows; '' for all.
export function namespace() {
  return sessionStorage.getItem(NS_KEY) || '';
}

export function init(el, c) {
  root = el;
  ctx = c;
  started = false;
  nsInput = h('input', { id: 'cluster-namespace', spellcheck: 'false', size: 20, value: namespace() });
  nodesEl = h('div', { class: 'nodes' });
  workloadsEl = h('div', { class: 'workloads' });
  const form = h('form', {
    class: 'filters',
    onsubmit: (ev) => {
      ev.preventDefault();
      sessionStorage.setItem(NS_KEY, nsInput.value.trim());
      restart();
    },
  }, h('label', {}, 'Namespace ', nsInput), h('button', { type: 'submit', id: 'cluster-namespace-apply' }, 'Show'));
  replace(root, h('h1', {}, 'Cluster'), form,
    h('h2', {}, 'Nodes and their pods'), nodesEl,
    h('h2', {}, 'Workloads'), workloadsEl);
}

export async function show() {
  if (!started) {
    started = true;
    mayListAll = await canI('list', 'pods');
    nsInput.placeholder = mayListAll ? 'all namespaces' : 'namespace (required)';
  }
  restart();
}

// hide stops the watches: a browser keeps only six HTTP/1.1 connections
// per origin, and each watch holds one.
export function hide() {
  if (watches) watches.abort();
  watches = null;
}

function restart() {
  if (watches) watches.abort();
  watches = new AbortController();
  const w = watches;
  ctx.signal.addEventListener('abort', () => w.abort(), { once: true });
  state = {};
  const ns = nsInput.value.trim();
  if (!ns && !mayListAll) {
    replace(nodesEl, notAllowed('listing pods in all namespaces; type a namespace you may read.'));
    replace(workloadsEl);
    return;
  }
  replace(nodesEl, h('p', { class: 'muted' }, 'Loading…'));
  replace(workloadsEl, h('p', { class: 'muted' }, 'Loading…'));
  const scope = ns ? '/namespaces/' + encodeURIComponent(ns) : '';
  const render = coalesce(draw);
  const follow = (name, path) => watchList(path, {
    signal: watches.signal,
    onChange: (objects) => { state[name] = objects; render(); },
    onError: (err) => { state[name] = err; render(); },
  });
  follow('nodes', '/api/v1/nodes');
  follow('pods', '/api/v1' + scope + '/pods');
  follow('deployments', '/apis/apps/v1' + scope + '/deployments');
  follow('statefulsets', '/apis/apps/v1' + scope + '/statefulsets');
  follow('daemonsets', '/apis/apps/v1' + scope + '/daemonsets');
}

function where() {
  const ns = nsInput.value.trim();
  return ns ? 'namespace ' + ns : 'all namespaces';
}

function refused(v) {
  return v instanceof Error;
}

function draw() {
  drawNodes();
  drawWorkloads();
}

function nodeReady(node) {
  const c = ((node.status && node.status.conditions) || []).find((x) => x.type === 'Ready');
  return c ? c.status === 'True' : false;
}

function drawNodes() {
  const pods = state.pods;
  const nodes = state.nodes;
  if (pods === undefined) return;
  if (refused(pods)) {
    replace(nodesEl, pods.notAllowed ? notAllowed('listing pods in ' + where(), pods) : failure('Cannot list pods in ' + where(), pods));
    return;
  }
  // Group the pods by spec.nodeName; nodes the user may not list still
  // appear through their pods.
  const byNode = new Map();
  if (nodes instanceof Map) for (const n of nodes.values()) byNode.set(n.metadata.name, { node: n, pods: [] });
  const unscheduled = [];
  for (const p of pods.values()) {
    const name = p.spec && p.spec.nodeName;
    if (!name) { unscheduled.push(p); continue; }
    if (!byNode.has(name)) byNode.set(name, { node: null, pods: [] });
    byNode.get(name).pods.push(p);
  }
  const cards = [...byNode.entries()].sort((a, b) => a[0].localeCompare(b[0])).map(([name, { node, pods: ps }]) =>
    h('section', { class: 'node-card', 'data-node': name },
      h('h3', {}, name, ' ',
        node ? h('span', { class: 'badge ' + (nodeReady(node) ? 'ok' : 'bad') }, nodeReady(node) ? 'Ready' : 'NotReady') : null,
        h('span', { class: 'muted small' }, ' ' + ps.length + ' pods')),
      podList(ps)));
  if (unscheduled.length) {
    cards.push(h('section', { class: 'node-card unscheduled', 'data-node': '' },
      h('h3', {}, 'Not on a node ', h('span', { class: 'muted small' }, unscheduled.length + ' pods')),
      podList(unscheduled)));
  }
  replace(nodesEl,
    refused(nodes) ? h('p', { class: 'note' }, 'Nodes: ', nodes.notAllowed ? 'not allowed to list them; shown through their pods.' : nodes.message) : null,
    cards.length ? h('div', { class: 'cards' }, cards) : h('p', { class: 'muted' }, 'No pods in ', where(), '.'));
}

function podList(pods) {
  pods.sort((a, b) => (a.metadata.namespace + '/' + a.metadata.name).localeCompare(b.metadata.namespace + '/' + b.metadata.name));
  return h('ul', { class: 'pods' }, pods.map((p) => {
    const ref = p.metadata.namespace + '/' + p.metadata.name;
    const phase = p.metadata.deletionTimestamp ? 'Terminating' : ((p.status && p.status.phase) || 'Unknown');
    return h('li', {
      class: 'pod phase-' + phase.toLowerCase(),
      'data-pod': ref,
      'data-phase': phase,
      title: 'Explain how ' + ref + ' was scheduled',
      onclick: () => ctx.go('scheduling', ref),
    }, h('span', { class: 'pod-name' }, nsInput.value.trim() ? p.metadata.name : ref), h('span', { class: 'phase' }, phase));
  }));
}

// rollout returns a workload's desired, updated, ready and available
// counts, whatever its kind.
function rollout(kind, o) {
  const st = o.status || {};
  if (kind === 'DaemonSet') {
    return [st.desiredNumberScheduled || 0, st.updatedNumberScheduled || 0, st.numberReady || 0, st.numberAvailable || 0];
  }
  const desired = o.spec && o.spec.replicas !== undefined ? o.spec.replicas : 1;
  return [desired, st.updatedReplicas || 0, st.readyReplicas || 0, st.availableReplicas || 0];
}

function drawWorkloads() {
  const kinds = [['Deployment', 'deployments'], ['StatefulSet', 'statefulsets'], ['DaemonSet', 'daemonsets']];
  const notes = [];
  const rows = [];
  for (const [kind, name] of kinds) {
    const v = state[name];
    if (v === undefined) continue;
    if (refused(v)) {
      notes.push(v.notAllowed ? notAllowed('listing ' + name + ' in ' + where(), v) : failure('Cannot list ' + name, v));
      continue;
    }
    for (const o of v.values()) rows.push([kind, o]);
  }
  rows.sort((a, b) => (a[1].metadata.namespace + a[1].metadata.name).localeCompare(b[1].metadata.namespace + b[1].metadata.name));
  replace(workloadsEl, notes,
    rows.length ? h('table', { class: 'grid workloads' },
      h('thead', {}, h('tr', {}, ['Kind', 'Name', 'Desired', 'Updated', 'Ready', 'Available', 'Rollout'].map((t) => h('th', {}, t)))),
      h('tbody', {}, rows.map(([kind, o]) => {
        const [desired, updated, ready, available] = rollout(kind, o);
        const done = desired > 0 ? available / desired : 1;
        const bar = h('div', { class: 'bar ' + (done >= 1 && updated >= desired ? 'ok' : 'progress') });
        bar.style.width = (Math.min(1, done) * 100).toFixed(0) + '%';
        return h('tr', { class: 'workload', 'data-kind': kind, 'data-name': o.metadata.namespace + '/' + o.metadata.name },
          h('td', {}, kind), h('td', {}, o.metadata.namespace + '/' + o.metadata.name),
          h('td', { class: 'num' }, String(desired)), h('td', { class: 'num' }, String(updated)),
          h('td', { class: 'num' }, String(ready)), h('td', { class: 'num' }, String(available)),
          h('td', {}, h('div', { class: 'bar-track wide' }, bar)));
      }))) : (notes.length ? null : h('p', { class: 'muted' }, 'No workloads in ', where(), '.')));
}
