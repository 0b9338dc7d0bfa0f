// app.js: the console's entry point: login (a client certificate the
// browser presents, or a bearer token kept in sessionStorage), the top bar
// with the identity and the four tabs, and switching between the views
// (docs/kubernetes-behaviour.md, K.1).

import { StatusError, clearSession, getJSON, setToken, token } from './api.js';
import { replace } from './dom.js';
import * as pki from './pki.js';
import * as requests from './requests.js';
import * as scheduling from './scheduling.js';
import * as cluster from './cluster.js';

const views = { pki, requests, scheduling, cluster };
const $ = (id) => document.getElementById(id);

let session = null;
let current = '';
// Every stream of the logged-in session stops when this aborts.
let life = null;

// start asks the gateway who the request's credential is. 200: logged in;
// 401: the credential (or its absence) is not enough, show the login form.
async function start() {
  try {
    session = await getJSON('/kubegate/ui/api/session');
  } catch (e) {
    if (e instanceof StatusError && e.status === 401 && token()) {
      // A stored token that stopped working: drop it, and try the
      // browser's client certificate, if any, before asking.
      clearSession();
      return start();
    }
    showLogin(e instanceof StatusError && e.status === 401 ? '' : (e.message || String(e)));
    return;
  }
  loggedIn();
}

function showLogin(message) {
  $('boot').hidden = true;
  $('tabs').hidden = true;
  $('identity').hidden = true;
  for (const name of Object.keys(views)) $('view-' + name).hidden = true;
  $('login').hidden = false;
  $('login-error').textContent = message || '';
  $('token').focus();
}

function loggedIn() {
  $('boot').hidden = true;
  $('login').hidden = true;
  $('tabs').hidden = false;
  $('identity').hidden = false;
  const u = session.user || {};
  $('whoami').textContent = u.username || '';
  $('whoami').title = (u.groups || []).join(', ');
  $('authenticator').textContent = session.authenticator || '';
  life = new AbortController();
  for (const [name, view] of Object.entries(views)) {
    view.init($('view-' + name), { session, signal: life.signal, go });
  }
  route();
}

// go shows view name; arg is passed to it (the scheduling view takes a
// namespace/pod).
function go(name, arg) {
  location.hash = arg ? name + '/' + arg : name;
}

function route() {
  if (!session) return;
  const hash = decodeURIComponent(location.hash.slice(1));
  const slash = hash.indexOf('/');
  let name = slash < 0 ? hash : hash.slice(0, slash);
  const arg = slash < 0 ? '' : hash.slice(slash + 1);
  if (!views[name]) name = session.views && session.views.pki ? 'pki' : 'cluster';
  // The address of the view already shown (#cluster after the default
  // view): nothing to do, rather than list everything again.
  if (name === current && !arg && !$('view-' + name).hidden) return;
  for (const a of document.querySelectorAll('#tabs a')) {
    a.classList.toggle('active', a.dataset.view === name);
  }
  for (const n of Object.keys(views)) $('view-' + n).hidden = n !== name;
  if (current && current !== name && views[current].hide) views[current].hide();
  current = name;
  views[name].show(arg);
}

$('login-form').addEventListener('submit', async (ev) => {
  // The form never submits anywhere (CSP form-action 'none'): the token
  // goes to sessionStorage and into each request's Authorization header.
  ev.preventDefault();
  const value = $('token').value.trim();
  $('token').value = '';
  if (!value) return;
  setToken(value);
  try {
    session = await getJSON('/kubegate/ui/api/session');
  } catch (e) {
    clearSession();
    showLogin(e instanceof StatusError && e.status === 401 ? 'The token was not accepted.' : (e.message || String(e)));
    return;
  }
  loggedIn();
});

$('logout').addEventListener('click', () => {
  clearSession();
  if (life) life.abort();
  life = null;
  session = null;
  current = '';
  for (const name of Object.keys(views)) replace($('view-' + name));
  history.replaceState(null, '', location.pathname);
  showLogin('Logged out.');
});

window.addEventListener('hashchange', route);
start();
