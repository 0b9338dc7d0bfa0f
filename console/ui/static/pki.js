// pki.js: the PKI view (docs/kubernetes-behaviour.md, K.2): the CA trees
// with each certificate under its CA and the identity kube-apiserver reads
// from it (CN as the user, O as the groups), an expiry timeline across all
// certificates, the rotation phase, the service-account keys and each
// kubeconfig with its identity, from GET /kubegate/ui/api/pki.

import { StatusError, getJSON } from './api.js';
import { age, failure, h, notAllowed, replace, s } from './dom.js';

let root;
let ctx;

export function init(el, c) {
  root = el;
  ctx = c;
}

export function show() {
  load();
}

async function load() {
  if (!ctx.session.views || !ctx.session.views.pki) {
    replace(root, h('h1', {}, 'PKI'),
      notAllowed('this user may not get the non-resource path /kubegate/ui/pki, which the PKI view needs.'));
    return;
  }
  replace(root, h('h1', {}, 'PKI'), h('p', { class: 'muted' }, 'Loading…'));
  let pki;
  try {
    pki = await getJSON('/kubegate/ui/api/pki', { signal: ctx.signal });
  } catch (e) {
    if (ctx.signal.aborted) return;
    replace(root, h('h1', {}, 'PKI'), e instanceof StatusError && e.notAllowed ? notAllowed('the PKI view', e) : failure('Cannot read the PKI', e));
    return;
  }
  if (!pki.configured) {
    replace(root, h('h1', {}, 'PKI'), h('p', { class: 'muted' }, 'This gateway has no PKI directory (--pki-dir), so there is nothing to show.'));
    return;
  }
  render(pki);
}

function render(pki) {
  const certs = pki.certificates || [];
  const known = new Set((pki.authorities || []).map((a) => a.name));
  const sections = (pki.authorities || []).map((a) => authority(a, certs.filter((c) => c.authority === a.name)));
  const others = certs.filter((c) => !known.has(c.authority));
  replace(root,
    h('div', { class: 'view-head' },
      h('h1', {}, 'PKI'),
      h('button', { type: 'button', onclick: load }, 'Reload')),
    h('p', { class: 'muted' }, 'Directory ', h('code', {}, pki.dir || ''), ' · ', certs.length + ' certificates'),
    rotation(pki.rotation),
    h('h2', {}, 'Expiry'),
    timeline(certs),
    sections,
    others.length ? authority({ name: 'signed by no CA of the tree', file: '' }, others) : null,
    serviceAccountKeys(pki.serviceAccountKeys || []),
    kubeconfigs(pki.kubeconfigs || []));
}

function rotation(r) {
  if (!r) return h('p', { class: 'rotation' }, 'CA rotation: none in progress.');
  return h('p', { class: ['rotation', r.inProgress ? 'warn' : ''] },
    'CA rotation: phase ', h('strong', { 'data-rotation-phase': r.phase }, r.phase),
    r.inProgress ? ' (in progress)' : '',
    r.next ? ['; next: ', h('code', {}, r.next)] : '',
    r.cas && r.cas.length ? ' · CAs ' + r.cas.join(', ') : '');
}

function expiryClass(seconds) {
  if (seconds <= 0) return 'expired';
  if (seconds < 30 * 86400) return 'soon';
  return 'ok';
}

function list(values) {
  return (values || []).length ? values.join(', ') : '—';
}

function authority(a, certs) {
  // The CA's own certificate first, then its leaves by file.
  certs = certs.slice().sort((x, y) => (y.isCA - x.isCA) || x.file.localeCompare(y.file));
  return h('section', { class: 'ca', 'data-authority': a.name },
    h('h2', {}, 'CA ', a.name, a.file ? h('span', { class: 'muted' }, ' · ', a.file) : null),
    certs.length ? h('table', { class: 'grid' },
      h('thead', {}, h('tr', {},
        ['Certificate', 'User (CN)', 'Groups (O)', 'SANs', 'Key', 'Usages', 'Expires'].map((t) => h('th', {}, t)))),
      h('tbody', {}, certs.map(certRow))) : h('p', { class: 'muted' }, 'No certificates.'));
}

function certRow(c) {
  const sans = [].concat(c.dnsNames || [], c.ipAddresses || [], c.uris || []);
  return h('tr', {
    class: ['cert', c.isCA ? 'is-ca' : ''],
    'data-file': c.file,
    'data-not-after': c.notAfter,
    'data-kubeconfig-user': c.kubeconfigUser || null,
  },
  h('td', {}, h('code', {}, c.file), c.kubeconfigUser ? h('div', { class: 'muted' }, 'user ', c.kubeconfigUser) : null,
    c.isCA ? h('span', { class: 'badge' }, 'CA') : null,
    h('div', { class: 'muted small', title: 'subject' }, c.subject)),
  h('td', { class: 'cn' }, c.user),
  h('td', {}, list(c.groups)),
  h('td', { class: 'small' }, list(sans)),
  h('td', {}, c.keyType),
  h('td', { class: 'small' }, list(c.usages)),
  h('td', { class: expiryClass(c.expiresInSeconds) },
    h('time', { datetime: c.notAfter }, c.notAfter.slice(0, 10)),
    h('div', { class: 'small' }, c.expiresInSeconds > 0 ? 'in ' + age(c.expiresInSeconds) : 'expired ' + age(-c.expiresInSeconds) + ' ago')));
}

// timeline draws one bar per certificate from notBefore to notAfter on a
// shared time axis, with a line at now.
function timeline(certs) {
  if (!certs.length) return h('p', { class: 'muted' }, 'No certificates.');
  const now = Date.now();
  const sorted = certs.slice().sort((a, b) => Date.parse(a.notAfter) - Date.parse(b.notAfter));
  const t0 = Math.min(now, ...sorted.map((c) => Date.parse(c.notBefore)));
  const t1 = Math.max(now, ...sorted.map((c) => Date.parse(c.notAfter)));
  const label = 300;
  const width = 1100;
  const row = 18;
  const top = 22;
  const height = top + sorted.length * row + 16;
  const x = (t) => label + ((t - t0) / Math.max(1, t1 - t0)) * (width - label - 10);
  const svg = s('svg', { class: 'timeline', viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': 'certificate expiry timeline' });
  // Year ticks.
  for (let y = new Date(t0).getUTCFullYear() + 1; Date.UTC(y, 0, 1) < t1; y++) {
    const tx = x(Date.UTC(y, 0, 1));
    svg.appendChild(s('line', { x1: tx, x2: tx, y1: top - 6, y2: height, class: 'tick' }));
    svg.appendChild(s('text', { x: tx + 2, y: 12, class: 'tick-label' }, String(y)));
  }
  sorted.forEach((c, i) => {
    const y = top + i * row;
    const name = c.kubeconfigUser ? c.file + ' (' + c.kubeconfigUser + ')' : c.file;
    // The label is the file alone, which fits beside the bars; the
    // tooltip names the kubeconfig's user too.
    svg.appendChild(s('text', { x: 0, y: y + 12, class: 'bar-label' }, c.file.length > 44 ? c.file.slice(0, 43) + '…' : c.file));
    const x0 = x(Date.parse(c.notBefore));
    const x1 = x(Date.parse(c.notAfter));
    svg.appendChild(s('rect', { x: x0, y: y + 2, width: Math.max(2, x1 - x0), height: row - 6, rx: 3, class: 'bar ' + expiryClass(c.expiresInSeconds) },
      s('title', {}, name + ': ' + c.notBefore + ' → ' + c.notAfter)));
  });
  const nx = x(now);
  svg.appendChild(s('line', { x1: nx, x2: nx, y1: top - 6, y2: height, class: 'now' }));
  svg.appendChild(s('text', { x: nx - 3, y: height - 4, 'text-anchor': 'end', class: 'now-label' }, 'now'));
  return h('div', { class: 'timeline-wrap' }, svg);
}

function serviceAccountKeys(keys) {
  return h('section', { class: 'ca', 'data-authority': 'service-account' },
    h('h2', {}, 'Service-account signing key'),
    keys.length ? h('table', { class: 'grid' },
      h('thead', {}, h('tr', {}, h('th', {}, 'Public key'), h('th', {}, 'Key'))),
      h('tbody', {}, keys.map((k) => h('tr', { 'data-file': k.file }, h('td', {}, h('code', {}, k.file)), h('td', {}, k.keyType)))))
      : h('p', { class: 'muted' }, 'None.'));
}

function kubeconfigs(kcs) {
  return h('section', { class: 'kubeconfigs' },
    h('h2', {}, 'Kubeconfigs'),
    kcs.length ? h('table', { class: 'grid' },
      h('thead', {}, h('tr', {}, ['File', 'Context', 'Server', 'User', 'Groups', 'Credential', 'Certificate expires'].map((t) => h('th', {}, t)))),
      h('tbody', {}, kcs.map((k) => h('tr', { class: 'kubeconfig', 'data-kubeconfig': k.file },
        h('td', {}, h('code', {}, k.file)),
        h('td', {}, k.context, h('div', { class: 'muted small' }, 'cluster ', k.cluster)),
        h('td', { class: 'small' }, k.server),
        h('td', { class: 'cn' }, k.user),
        h('td', {}, list(k.groups)),
        h('td', {}, k.credential),
        h('td', {}, k.notAfter ? h('time', { datetime: k.notAfter }, k.notAfter.slice(0, 10)) : '—')))))
      : h('p', { class: 'muted' }, 'None.'));
}
