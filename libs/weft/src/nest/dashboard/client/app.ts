// Browser module `app.js` of the dashboard, the page's entry: the shell (navigation, live status,
// messages), the hash router and the refresh loop.
export const APP_JS = String.raw`
import { h } from './dom.js';
import { ApiError } from './api.js';
import { workflowsView } from './workflows.js';
import { workflowView } from './workflow.js';
import { enginesView } from './engines.js';
import { schedulesView } from './schedules.js';
import { queuesView, queueView } from './queues.js';

// A view is { name, title?, match(path) -> params | null, mount(element, params, ui) -> { refresh(), unmount?() } }.
// Views with a title are in the navigation, in this order.
const VIEWS = [workflowsView, workflowView, enginesView, schedulesView, queuesView, queueView];
const POLL_MS = 2000;

const state = { view: null, instance: null, timer: null, paused: false, lastOk: null, problem: null };

const nav = h('nav', null);
const liveText = h('span', { id: 'live-state' });
const liveToggle = h('button', { id: 'live-toggle', type: 'button', class: 'ghost', onclick: togglePause }, 'Pause');
const flashBox = h('div', { id: 'flash', 'aria-live': 'polite' });
const main = h('main', { id: 'view' });

document.body.append(
  h('header', { class: 'top' }, h('a', { class: 'brand', href: '#/workflows' }, 'Weft'), nav, h('div', { class: 'live' }, liveText, liveToggle)),
  flashBox,
  main,
);

for (const view of VIEWS) {
  if (view.title) nav.append(h('a', { href: '#/' + view.name, dataset: { view: view.name } }, view.title));
}

function errorText(err) {
  return err instanceof ApiError ? err.text : String(err && err.message ? err.message : err);
}

function authHint(err) {
  return err instanceof ApiError && (err.status === 401 || err.status === 403)
    ? ' The Weft routes refused this browser: sign in as your application asks (its guard decides), then reload the page.'
    : '';
}

/** A message at the top: 'ok' ones go after a while, errors stay until closed or replaced. */
function flash(text, kind) {
  const close = h('button', { type: 'button', class: 'ghost close', 'aria-label': 'Close', onclick: () => item.remove() }, '\u00d7');
  const item = h('div', { class: 'flash ' + (kind || 'ok'), role: kind === 'error' ? 'alert' : 'status' }, h('span', null, text), close);
  flashBox.replaceChildren(item);
  if (kind !== 'error') setTimeout(() => item.remove(), 6000);
}

/** Runs an operator action from a button: disabled meanwhile, the answer or the API's error shown, then a refresh. */
async function action(button, fn, success) {
  if (button) button.disabled = true;
  try {
    const result = await fn();
    flash(typeof success === 'function' ? success(result) : success, 'ok');
  } catch (err) {
    flash(errorText(err) + authHint(err), 'error');
  } finally {
    if (button) button.disabled = false;
    refreshNow();
  }
}

const ui = { flash, action, errorText, refresh: () => refreshNow() };

function renderLive() {
  liveToggle.textContent = state.paused ? 'Resume' : 'Pause';
  liveText.className = state.problem ? 'problem' : '';
  if (state.problem) liveText.textContent = 'Refresh failed: ' + errorText(state.problem) + authHint(state.problem);
  else if (state.paused) liveText.textContent = 'Paused';
  else if (document.hidden) liveText.textContent = 'Paused while the tab is hidden';
  else liveText.textContent = state.lastOk ? 'Live \u00b7 every ' + POLL_MS / 1000 + ' s' : 'Loading\u2026';
}

function schedule() {
  clearTimeout(state.timer);
  if (!state.paused && !document.hidden) state.timer = setTimeout(refreshNow, POLL_MS);
}

async function refreshNow() {
  clearTimeout(state.timer);
  const instance = state.instance;
  if (!instance) return;
  if (instance.busy) {
    instance.again = true; // a filter or an action changed what to show: once more when this one ends
    return;
  }
  instance.busy = true;
  try {
    await instance.refresh();
    if (instance === state.instance) {
      state.lastOk = Date.now();
      state.problem = null;
    }
  } catch (err) {
    if (instance === state.instance) {
      // Shown once per distinct error (a 404, a refused key), not re-flashed on every poll.
      if (!state.problem || errorText(state.problem) !== errorText(err)) flash(errorText(err) + authHint(err), 'error');
      state.problem = err;
    }
  } finally {
    instance.busy = false;
    if (instance === state.instance) {
      document.body.dataset.refreshed = String(state.lastOk || 0);
      renderLive();
      if (instance.again) {
        instance.again = false;
        refreshNow();
      } else schedule();
    }
  }
}

function togglePause() {
  state.paused = !state.paused;
  renderLive();
  if (state.paused) clearTimeout(state.timer);
  else refreshNow();
}

document.addEventListener('visibilitychange', () => {
  renderLive();
  if (document.hidden) clearTimeout(state.timer);
  else refreshNow();
});

function route() {
  const raw = location.hash.replace(/^#/, '') || '/workflows';
  const at = raw.indexOf('?');
  const path = at < 0 ? raw : raw.slice(0, at);
  const params = new URLSearchParams(at < 0 ? '' : raw.slice(at + 1));
  for (const view of VIEWS) {
    const matched = view.match(path, params);
    if (matched) return { view, params: matched };
  }
  return { view: VIEWS[0], params: VIEWS[0].match('/workflows', new URLSearchParams()) };
}

function mount() {
  const { view, params } = route();
  if (state.instance && state.instance.unmount) state.instance.unmount();
  main.replaceChildren();
  flashBox.replaceChildren(); // a message belongs to the view it came from
  state.problem = null;
  state.view = view;
  main.dataset.view = view.name;
  for (const a of nav.querySelectorAll('a')) a.classList.toggle('active', a.dataset.view === (view.parent || view.name));
  state.instance = view.mount(main, params, ui);
  document.title = (view.heading ? view.heading(params) : view.title) + ' \u00b7 Weft';
  refreshNow();
}

window.addEventListener('hashchange', mount);
mount();
`;
