// api.js: every request the console makes, all to its own origin: the
// gateway's console endpoints under /kubegate/ui/api/ and the Kubernetes
// API, with the user's own credential, so that RBAC decides what the page
// may show (docs/kubernetes-behaviour.md, K.1).

const TOKEN_KEY = 'kubegate.token';

// The bearer token lives in sessionStorage only: never in a URL, in the
// persistent local storage, in a cookie or in a log line.
export function token() {
  return sessionStorage.getItem(TOKEN_KEY) || '';
}

export function setToken(value) {
  sessionStorage.setItem(TOKEN_KEY, value);
}

export function clearSession() {
  sessionStorage.clear();
}

// StatusError is a refused or failed answer: status is the HTTP status (0
// when the network failed), message the kube Status message when there is
// one.
export class StatusError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }

  // notAllowed tells a refusal (401, 403) from a failure.
  get notAllowed() {
    return this.status === 401 || this.status === 403;
  }
}

function headers(extra) {
  const h = new Headers(extra || {});
  const t = token();
  if (t) h.set('Authorization', 'Bearer ' + t);
  h.set('Accept', 'application/json');
  return h;
}

// request sends one request and returns the Response, or throws StatusError
// for any status of 400 or more, carrying the Status message.
export async function request(path, { method = 'GET', body, signal, accept } = {}) {
  const init = { method, headers: headers(), signal, credentials: 'same-origin', cache: 'no-store' };
  if (accept) init.headers.set('Accept', accept);
  if (body !== undefined) {
    init.headers.set('Content-Type', 'application/json');
    init.body = JSON.stringify(body);
  }
  let resp;
  try {
    resp = await fetch(path, init);
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new StatusError(0, 'cannot reach the gateway: ' + e.message);
  }
  if (resp.status >= 400) {
    let message = resp.status + ' ' + resp.statusText;
    try {
      const st = await resp.json();
      if (st && st.message) message = st.message;
    } catch (_) { /* not a Status */ }
    throw new StatusError(resp.status, message);
  }
  return resp;
}

export async function getJSON(path, opts) {
  const resp = await request(path, opts);
  return resp.json();
}

// canI asks the API server with a SelfSubjectAccessReview whether the
// user may do verb on resource (in namespace; '' for all namespaces).
export async function canI(verb, resource, { group = '', namespace = '' } = {}) {
  const review = {
    apiVersion: 'authorization.k8s.io/v1',
    kind: 'SelfSubjectAccessReview',
    spec: { resourceAttributes: { verb, resource, group, namespace } },
  };
  try {
    const resp = await request('/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', { method: 'POST', body: review });
    const got = await resp.json();
    return Boolean(got.status && got.status.allowed);
  } catch (e) {
    if (e instanceof StatusError) return false;
    throw e;
  }
}

// readLines reads resp's body as newline-delimited JSON, calling onObject
// for each line. It returns when the body ends.
export async function readLines(resp, onObject) {
  const reader = resp.body.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  let done = false;
  try {
    for (;;) {
      const chunk = await reader.read();
      if (chunk.done) break;
      buf += decoder.decode(chunk.value, { stream: true });
      let nl;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl).trim();
        buf = buf.slice(nl + 1);
        if (line) onObject(JSON.parse(line));
      }
    }
    done = true;
  } finally {
    // onObject may end the stream early by throwing: close the
    // connection rather than leave it open until it is collected.
    if (!done) reader.cancel().catch(() => {});
  }
  const rest = (buf + decoder.decode()).trim();
  if (rest) onObject(JSON.parse(rest));
}

// Backoff doubles a delay from 0.5 s up to 15 s; reset after a success.
export class Backoff {
  constructor() { this.reset(); }
  reset() { this.delay = 500; }
  wait(signal) {
    const d = this.delay;
    this.delay = Math.min(this.delay * 2, 15000);
    return new Promise((resolve) => {
      const id = setTimeout(resolve, d);
      if (signal) signal.addEventListener('abort', () => { clearTimeout(id); resolve(); }, { once: true });
    });
  }
}

// follow streams an NDJSON endpoint until signal aborts, reconnecting with
// back-off when the stream ends or fails. onState receives 'live',
// 'reconnecting' or an StatusError that ends the stream (a refusal).
export async function follow(path, onObject, { signal, onState = () => {} } = {}) {
  const backoff = new Backoff();
  while (!signal.aborted) {
    try {
      const resp = await request(path, { signal, accept: 'application/x-ndjson' });
      onState('live');
      backoff.reset();
      await readLines(resp, onObject);
    } catch (e) {
      if (signal.aborted) return;
      if (e instanceof StatusError && e.notAllowed) {
        onState(e);
        return;
      }
    }
    if (signal.aborted) return;
    onState('reconnecting');
    await backoff.wait(signal);
  }
}

function withQuery(path, params) {
  const q = new URLSearchParams(params).toString();
  return path + (path.includes('?') ? '&' : '?') + q;
}

function key(obj) {
  const m = obj.metadata || {};
  return (m.namespace || '') + '/' + m.name;
}

// watchList keeps a live copy of a Kubernetes collection the way client-go's
// reflector does: list, then watch from the list's resourceVersion, resume
// a broken watch from the last version seen, and list again when the
// server answers 410 Gone (the version was compacted). onChange receives
// the Map of objects by namespace/name after every change; onError an
// StatusError when the list itself is refused or fails (a refusal ends the
// loop).
export async function watchList(path, { signal, onChange, onError = () => {} }) {
  const backoff = new Backoff();
  const objects = new Map();
  let rv = '';
  while (!signal.aborted) {
    if (!rv) {
      try {
        const list = await getJSON(path, { signal });
        objects.clear();
        for (const item of list.items || []) objects.set(key(item), item);
        rv = list.metadata.resourceVersion;
        backoff.reset();
        onChange(objects);
      } catch (e) {
        if (signal.aborted) return;
        if (e instanceof StatusError) onError(e);
        if (e instanceof StatusError && e.notAllowed) return;
        await backoff.wait(signal);
        continue;
      }
    }
    try {
      const resp = await request(withQuery(path, { watch: '1', resourceVersion: rv, allowWatchBookmarks: 'true' }), { signal });
      backoff.reset();
      await readLines(resp, (ev) => {
        const obj = ev.object || {};
        switch (ev.type) {
          case 'ADDED':
          case 'MODIFIED':
            objects.set(key(obj), obj);
            break;
          case 'DELETED':
            objects.delete(key(obj));
            break;
          case 'BOOKMARK':
            break;
          case 'ERROR':
            // A Status; 410 means the version is gone: list again.
            if (obj.code === 410) rv = '';
            throw new StatusError(obj.code || 500, obj.message || 'watch error');
          default:
            return;
        }
        if (obj.metadata && obj.metadata.resourceVersion) rv = obj.metadata.resourceVersion;
        if (ev.type !== 'BOOKMARK') onChange(objects);
      });
    } catch (e) {
      if (signal.aborted) return;
      if (e instanceof StatusError && e.status === 410) rv = '';
      else if (e instanceof StatusError && e.notAllowed) { onError(e); return; }
    }
    if (signal.aborted) return;
    await backoff.wait(signal);
  }
}
