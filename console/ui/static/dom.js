// dom.js: building elements. Every string that reaches the page goes in as
// a text node or an attribute value, never as markup, so a certificate CN
// or a user name such as <img src=x onerror=…> shows as the text it is
// (docs/kubernetes-behaviour.md, K.1).

const SVG_NS = 'http://www.w3.org/2000/svg';

function build(el, attrs, children) {
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on')) {
      // Handlers are functions only: an on* attribute is never set from
      // a string.
      if (typeof value === 'function') el.addEventListener(name.slice(2), value);
    } else if (name === 'class') {
      el.setAttribute('class', Array.isArray(value) ? value.filter(Boolean).join(' ') : value);
    } else {
      el.setAttribute(name, value === true ? '' : String(value));
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else if (c instanceof Node) el.appendChild(c);
    else el.appendChild(document.createTextNode(String(c)));
  }
}

// h creates an HTML element: h('td', {class: 'x', 'data-file': f}, 'text', child…).
export function h(tag, attrs, ...children) {
  return build(document.createElement(tag), attrs, children);
}

// s creates an SVG element the same way.
export function s(tag, attrs, ...children) {
  return build(document.createElementNS(SVG_NS, tag), attrs, children);
}

// replace empties el and appends children.
export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

// notAllowed is the one way a refusal is shown: never as an empty list.
export function notAllowed(what, err) {
  return h('p', { class: 'not-allowed', role: 'status' },
    'Not allowed: ', what, err && err.message ? h('span', { class: 'muted' }, ' (' + err.message + ')') : null);
}

export function failure(what, err) {
  return h('p', { class: 'error', role: 'alert' }, what, ': ', err && err.message ? err.message : String(err));
}

// age formats a duration in seconds the way kubectl does: 45s, 12m, 3h, 20d, 2y.
export function age(seconds) {
  const neg = seconds < 0;
  let v = Math.abs(seconds);
  let out;
  if (v < 120) out = Math.floor(v) + 's';
  else if (v < 7200) out = Math.floor(v / 60) + 'm';
  else if (v < 172800) out = Math.floor(v / 3600) + 'h';
  else if (v < 730 * 86400) out = Math.floor(v / 86400) + 'd';
  else out = Math.floor(v / (365 * 86400)) + 'y';
  return neg ? '-' + out : out;
}

// coalesce returns a function that runs fn once, shortly, however often it
// is called before then: watches can deliver many events at once. (A timer
// rather than an animation frame, which a background tab does not get.)
export function coalesce(fn) {
  let pending = false;
  return () => {
    if (pending) return;
    pending = true;
    setTimeout(() => { pending = false; fn(); }, 30);
  };
}
