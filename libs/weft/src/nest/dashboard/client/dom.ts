// Browser module `dom.js` of the dashboard: element building (text nodes only, never innerHTML, so
// workflow data cannot inject markup), times and durations, status badges, JSON blocks.
// Kept as a string that tsc emits, so the built and packed package serve it with no copy step.
export const DOM_JS = String.raw`
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith('on')) el.addEventListener(key.slice(2), value);
    else if (key === 'class') el.className = value;
    else if (key === 'dataset') Object.assign(el.dataset, value);
    else if (key === 'value') el.value = value;
    else el.setAttribute(key, value === true ? '' : String(value));
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** The server's clock minus the browser's, from the last answer that carried serverTime. */
export const clock = { skewMs: 0 };
export function serverNow() {
  return Date.now() + clock.skewMs;
}
export function syncClock(serverTime) {
  const t = Date.parse(serverTime);
  if (!Number.isNaN(t)) clock.skewMs = t - Date.now();
}

export function duration(ms) {
  if (ms === null || ms === undefined || Number.isNaN(ms)) return '';
  const abs = Math.abs(ms);
  if (abs < 1000) return Math.round(abs) + ' ms';
  if (abs < 10000) return (abs / 1000).toFixed(1) + ' s';
  if (abs < 60000) return Math.round(abs / 1000) + ' s';
  const two = (big, bigUnit, small, smallUnit) => big + ' ' + bigUnit + (small ? ' ' + small + ' ' + smallUnit : '');
  if (abs < 3600000) return two(Math.floor(abs / 60000), 'm', Math.floor((abs % 60000) / 1000), 's');
  if (abs < 86400000) return two(Math.floor(abs / 3600000), 'h', Math.floor((abs % 3600000) / 60000), 'm');
  return two(Math.floor(abs / 86400000), 'd', Math.floor((abs % 86400000) / 3600000), 'h');
}

export function relative(iso) {
  if (!iso) return '';
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return String(iso);
  const delta = t - serverNow();
  if (Math.abs(delta) < 1000) return 'now';
  return delta < 0 ? duration(-delta) + ' ago' : 'in ' + duration(delta);
}

/** A relative time, with the exact one as its tooltip. */
export function time(iso) {
  if (!iso) return h('span', { class: 'muted' }, '\u2014');
  return h('time', { datetime: iso, title: new Date(iso).toISOString() }, relative(iso));
}

export function clockTime(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  return d.toLocaleTimeString(undefined, { hour12: false }) + '.' + String(d.getMilliseconds()).padStart(3, '0');
}

export function badge(status) {
  return h('span', { class: 'badge s-' + String(status).replace(/[^a-z_-]/gi, '') }, String(status).replace('_', ' '));
}

export function workflowHref(id) {
  return '#/workflow/' + encodeURIComponent(id);
}

export function workflowLink(id) {
  return h('a', { class: 'mono', href: workflowHref(id), title: id }, id);
}

export function mono(text) {
  return h('span', { class: 'mono', title: text }, text);
}

/** A recorded value: a preview the server cut (over 4 KiB), or the value as indented JSON. */
export function jsonText(value) {
  if (value && typeof value === 'object' && value.truncated === true && typeof value.preview === 'string') {
    return value.preview + '\u2026 (' + value.length + ' characters in all)';
  }
  return value === undefined ? '' : JSON.stringify(value, null, 2);
}

export function jsonBlock(value) {
  return h('pre', { class: 'json' }, jsonText(value));
}

/** One line of a value for a table cell; the whole value in the tooltip. */
export function jsonInline(value) {
  const text = jsonText(value);
  const line = text.replace(/\s+/g, ' ');
  return h('span', { class: 'mono inline-json', title: text.slice(0, 2000) }, line.length > 80 ? line.slice(0, 80) + '\u2026' : line);
}

export function errorText(error) {
  if (!error) return '';
  if (typeof error === 'object' && error.truncated === true) return jsonText(error);
  if (typeof error === 'object') return (error.name ? error.name + ': ' : '') + (error.message || JSON.stringify(error));
  return String(error);
}

export function table(headers, rows, attrs) {
  return h(
    'table',
    attrs || {},
    h('thead', null, h('tr', null, headers.map((x) => h('th', null, x)))),
    h('tbody', null, rows),
  );
}

export function empty(text) {
  return h('p', { class: 'empty' }, text);
}

/** Key-value pairs as a definition list. */
export function facts(pairs) {
  return h(
    'dl',
    { class: 'facts' },
    pairs.filter((p) => p).map(([k, v]) => [h('dt', null, k), h('dd', null, v === null || v === undefined || v === '' ? '\u2014' : v)]),
  );
}
`;
