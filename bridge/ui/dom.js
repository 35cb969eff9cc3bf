// Tiny DOM helpers. Every text goes through textContent: nothing from the API is parsed as HTML.

// h('tag.class', {attr: value, onclick: fn}, ...children) -> Element
export function h(spec, attrs = {}, ...children) {
  const [tag, ...classes] = spec.split('.');
  const el = document.createElement(tag || 'div');
  if (classes.length) {
    el.className = classes.join(' ');
  }
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) {
      continue;
    }
    if (k.startsWith('on') && typeof v === 'function') {
      el.addEventListener(k.slice(2), v);
    } else if (k === 'dataset') {
      Object.assign(el.dataset, v);
    } else if (v === true) {
      el.setAttribute(k, '');
    } else {
      el.setAttribute(k, String(v));
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) {
      continue;
    }
    if (Array.isArray(c)) {
      append(el, c);
    } else if (c instanceof Node) {
      el.appendChild(c);
    } else {
      el.appendChild(document.createTextNode(String(c)));
    }
  }
}

export function clear(el) {
  while (el.firstChild) {
    el.removeChild(el.firstChild);
  }
  return el;
}

// "3 s ago", "5 min ago", … for an RFC 3339 time; the exact time goes in a title/datetime.
export function ago(iso) {
  if (!iso) {
    return '—';
  }
  const t = Date.parse(iso);
  if (Number.isNaN(t)) {
    return iso;
  }
  const s = Math.max(0, Math.round((Date.now() - t) / 1000));
  if (s < 60) {
    return `${s} s ago`;
  }
  if (s < 3600) {
    return `${Math.floor(s / 60)} min ago`;
  }
  if (s < 86400) {
    return `${Math.floor(s / 3600)} h ago`;
  }
  return `${Math.floor(s / 86400)} d ago`;
}

export function time(iso) {
  return h('time', { datetime: iso || '', title: iso || '' }, ago(iso));
}

// A state/status pill; the word itself is the accessible text (colour is decoration only).
export function badge(word) {
  const cls = String(word || 'unknown').replace(/[^a-z_-]/gi, '');
  return h(`span.badge.b-${cls}`, {}, word || 'unknown');
}

// A table with a caption, column headers (scope=col) and rows of cells; `empty` when no rows.
export function table(caption, headers, rows, empty) {
  const t = h('table.grid', {},
    h('caption', {}, caption),
    h('thead', {}, h('tr', {}, headers.map((x) => h('th', { scope: 'col' }, x)))));
  const body = h('tbody');
  if (!rows.length) {
    body.appendChild(h('tr.empty', {}, h('td', { colspan: headers.length }, empty)));
  }
  for (const r of rows) {
    body.appendChild(r);
  }
  t.appendChild(body);
  return t;
}
