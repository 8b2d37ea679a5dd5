// Browser module `workflow.js` of the dashboard: one workflow. Its timeline (operations in order,
// with times, durations, attempts, result or error), messages, children and parent, run number
// and claim; its events and streams (one tailed live); and the operator actions: signal, cancel,
// suspend, resume, retry and fork.
export const WORKFLOW_JS = String.raw`
import { h, badge, time, clockTime, duration, workflowLink, mono, jsonBlock, jsonInline, errorText, table, empty, facts, syncClock, serverNow } from './dom.js';
import { api, API_BASE, id as enc } from './api.js';
import { kindLabel } from './kinds.js';

const TERMINAL = ['completed', 'failed', 'cancelled', 'timed_out'];

function actions(workflowId, ui) {
  const reason = h('input', { id: 'action-reason', type: 'text', maxlength: 1000, placeholder: 'reason (optional)', 'aria-label': 'Reason' });
  const body = () => (reason.value.trim() ? { reason: reason.value.trim() } : {});
  const post = (what, payload) => api('/workflows/' + enc(workflowId) + '/' + what, { method: 'POST', body: payload });
  // Cancelling cannot be undone: the first click arms the button, the second one sends.
  const cancel = h('button', { type: 'button', class: 'danger', dataset: { action: 'cancel' } }, 'Cancel');
  let disarm = null;
  cancel.addEventListener('click', () => {
    if (cancel.dataset.armed !== 'true') {
      cancel.dataset.armed = 'true';
      cancel.textContent = 'Click again to cancel';
      disarm = setTimeout(() => {
        delete cancel.dataset.armed;
        cancel.textContent = 'Cancel';
      }, 4000);
      return;
    }
    clearTimeout(disarm);
    delete cancel.dataset.armed;
    cancel.textContent = 'Cancel';
    ui.action(cancel, () => post('cancel', body()), 'Cancelled ' + workflowId);
  });
  const suspend = h('button', { type: 'button', dataset: { action: 'suspend' } }, 'Suspend');
  suspend.addEventListener('click', () => ui.action(suspend, () => post('suspend', body()), 'Suspended ' + workflowId));
  const resume = h('button', { type: 'button', dataset: { action: 'resume' } }, 'Resume');
  resume.addEventListener('click', () => ui.action(resume, () => post('resume', {}), 'Resumed ' + workflowId));
  // Repair: retry a failed run from its failed step; fork from a step (its name or seq).
  const retry = h('button', { type: 'button', dataset: { action: 'retry' } }, 'Retry from the failed step');
  retry.addEventListener('click', () => ui.action(retry, () => post('retry', {}), 'Retried ' + workflowId + ': it goes on as its next run'));
  const fromStep = h('input', { id: 'fork-step', type: 'text', maxlength: 255, placeholder: 'step name or seq', 'aria-label': 'Fork from step' });
  const forkId = h('input', { id: 'fork-id', type: 'text', maxlength: 255, placeholder: 'new id (optional)', 'aria-label': 'New workflow id' });
  const fork = h('button', { type: 'button', dataset: { action: 'fork' } }, 'Fork');
  fork.addEventListener('click', () => {
    const raw = fromStep.value.trim();
    if (!raw) return ui.flash('Give the step to fork from (its name or seq).', 'error');
    const body = { fromStep: /^\d+$/.test(raw) ? Number(raw) : raw };
    if (forkId.value.trim()) body.workflowId = forkId.value.trim();
    ui.action(fork, () => post('fork', body), (r) => 'Forked ' + workflowId + ' as ' + r.workflowId);
  });

  const name = h('input', { id: 'signal-name', type: 'text', required: true, maxlength: 255, placeholder: 'signal name', 'aria-label': 'Signal name' });
  const payload = h('textarea', { id: 'signal-payload', rows: 2, placeholder: 'payload as JSON, e.g. {"approved": true} (empty: null)', 'aria-label': 'Signal payload (JSON)' });
  const send = h('button', { type: 'submit', id: 'signal-send' }, 'Send signal');
  const form = h('form', { class: 'signal' }, name, payload, send);
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    let value = null;
    const text = payload.value.trim();
    if (text) {
      try {
        value = JSON.parse(text);
      } catch (err) {
        ui.flash('The payload is not JSON: ' + err.message, 'error');
        return;
      }
    }
    const signal = name.value.trim();
    if (!signal) return ui.flash('Give the signal a name.', 'error');
    ui.action(send, () => api('/workflows/' + enc(workflowId) + '/signal/' + enc(signal), { method: 'POST', body: { payload: value } }), 'Signal "' + signal + '" accepted by ' + workflowId);
  });

  const card = h('section', { class: 'card actions' },
    h('h2', null, 'Actions'),
    h('div', { class: 'row' }, reason, cancel, suspend, resume),
    h('h3', null, 'Repair'),
    h('div', { class: 'row' }, retry, fromStep, forkId, fork),
    h('h3', null, 'Signal'),
    form);
  return {
    card,
    update(status) {
      const ended = TERMINAL.includes(status);
      cancel.disabled = ended;
      suspend.disabled = status !== 'running';
      resume.disabled = status !== 'suspended';
      retry.disabled = status !== 'failed';
      send.disabled = ended;
    },
  };
}

/** A bar per operation on the workflow's own time axis: where it started and how long it took. */
function bar(op, t0, span) {
  const end = op.completedAt ? Date.parse(op.completedAt) : serverNow();
  const start = op.startedAt ? Date.parse(op.startedAt) : end;
  const b = h('span', { class: 'bar ' + (op.status === 'failed' ? 'failed' : 'ok') });
  b.style.left = Math.min(100, Math.max(0, ((start - t0) / span) * 100)).toFixed(2) + '%';
  b.style.width = Math.max(0.6, ((end - start) / span) * 100).toFixed(2) + '%';
  return h('div', { class: 'track', title: duration(end - start) }, b);
}

function timeline(t) {
  if (t.operations.length === 0) return empty('Nothing recorded yet.');
  const t0 = Date.parse(t.startAt || t.createdAt);
  const tEnd = t.completedAt ? Date.parse(t.completedAt) : serverNow();
  const span = Math.max(1, tEnd - t0);
  const rows = t.operations.map((op) =>
    h('tr', { dataset: { seq: op.seq, kind: op.kind, status: op.status } },
      h('td', { class: 'num' }, op.seq),
      h('td', { title: op.kind }, kindLabel(op.kind)),
      h('td', { class: 'mono' }, op.name),
      h('td', null, badge(op.status)),
      h('td', { class: 'num' }, op.attempts > 1 ? h('strong', null, op.attempts) : op.attempts),
      h('td', { class: 'mono small' }, clockTime(op.startedAt)),
      h('td', { class: 'mono small' }, clockTime(op.completedAt)),
      h('td', { class: 'num' }, duration(op.durationMs)),
      h('td', { class: 'span' }, bar(op, t0, span)),
      h('td', null, op.status === 'failed' ? h('span', { class: 'error-text', title: errorText(op.error) }, errorText(op.error)) : jsonInline(op.result))));
  const more = t.moreOperations ? h('p', { class: 'muted' }, 'More operations follow; the first ' + t.operations.length + ' are shown.') : null;
  return [table(['#', 'kind', 'name', 'status', 'attempts', 'started', 'ended', 'took', 'timeline', 'result / error'], rows, { id: 'timeline', class: 'grid' }), more];
}

function messageState(m) {
  if (m.consumedSeq !== null && m.consumedSeq !== undefined) return h('span', { class: 'badge s-completed' }, 'consumed at #' + m.consumedSeq);
  return badge(m.status);
}

function messages(t) {
  if (t.messages.length === 0) return empty('No signals, updates or child results.');
  const rows = t.messages.map((m) =>
    h('tr', { dataset: { name: m.name, consumed: String(m.consumedSeq !== null) } },
      h('td', { class: 'num' }, m.id),
      h('td', null, m.kind),
      h('td', { class: 'mono' }, m.name),
      h('td', null, messageState(m)),
      h('td', null, time(m.createdAt)),
      h('td', null, jsonInline(m.payload))));
  const more = t.messagesTotal > t.messages.length ? h('p', { class: 'muted' }, 'The latest ' + t.messages.length + ' of ' + t.messagesTotal + '.') : null;
  return [table(['id', 'kind', 'name', 'state', 'arrived', 'payload'], rows, { id: 'messages', class: 'grid' }), more];
}

function events(t) {
  if (!t.events || t.events.length === 0) return empty('No events (ctx.setEvent).');
  const rows = t.events.map((e) =>
    h('tr', { dataset: { key: e.key } },
      h('td', { class: 'mono' }, e.key),
      h('td', null, time(e.updatedAt)),
      h('td', null, jsonInline(e.value))));
  const more = t.eventsTotal > t.events.length ? h('p', { class: 'muted' }, 'The first ' + t.events.length + ' of ' + t.eventsTotal + ', by key.') : null;
  return [table(['key', 'set', 'value'], rows, { id: 'events', class: 'grid' }), more];
}

/** Rows a tail keeps, and how far back from the end it starts. */
const TAIL_ROWS = 200;
const TAIL_BACK = 50;

/**
 * The Streams card: the list (redrawn with every refresh) and one tail (kept across refreshes), an
 * EventSource on the stream's SSE route (the API's guards and cookie; it resumes with
 * Last-Event-ID by itself after a dropped connection), closed at the 'end' event or on leaving.
 */
function streamsCard(workflowId) {
  const list = h('div', { id: 'wf-streams' });
  const tail = h('div', { id: 'wf-stream-tail' });
  let source = null;
  let tailing = null;
  const stop = () => {
    if (source) source.close();
    source = null;
  };
  function start(key, entries) {
    stop();
    tailing = key;
    const from = Math.max(0, entries - TAIL_BACK);
    const rows = h('tbody');
    const state = h('span', { id: 'stream-state', class: 'muted' }, 'Tailing from offset ' + from + '…');
    const tbl = h('table', { id: 'stream-entries', class: 'grid', dataset: { key } },
      h('thead', null, h('tr', null, ['offset', 'stored', 'attempt', 'value'].map((x) => h('th', null, x)))), rows);
    const stopButton = h('button', { type: 'button', id: 'stream-stop' }, 'Stop');
    stopButton.addEventListener('click', () => {
      stop();
      state.textContent = 'Stopped.';
    });
    tail.replaceChildren(h('h3', null, 'Stream ', mono(key)), h('div', { class: 'row' }, state, stopButton), tbl);
    const s = new EventSource(API_BASE + '/workflows/' + enc(workflowId) + '/streams/' + enc(key) + '?from=' + from);
    source = s;
    s.addEventListener('entry', (ev) => {
      const e = JSON.parse(ev.data);
      rows.append(h('tr', { dataset: { offset: e.offset } },
        h('td', { class: 'num' }, e.offset),
        h('td', { class: 'mono small' }, clockTime(e.at)),
        h('td', { class: 'num' }, e.attempt === null ? '' : e.attempt),
        h('td', null, jsonInline(e.value))));
      while (rows.children.length > TAIL_ROWS) rows.firstElementChild.remove();
      state.textContent = 'Tailing: up to offset ' + e.offset + '.';
    });
    s.addEventListener('end', () => {
      if (source === s) stop();
      tbl.dataset.ended = 'true';
      state.textContent = 'The stream is closed or the workflow ended.';
    });
    s.addEventListener('error', () => {
      if (s.readyState === EventSource.CLOSED) state.textContent = 'The stream could not be read.';
    });
  }
  return {
    list,
    tail,
    stop,
    render(t) {
      if (!t.streams || t.streams.length === 0) return list.replaceChildren(empty('No streams (ctx.writeStream).'));
      const rows = t.streams.map((x) => {
        const b = h('button', { type: 'button', dataset: { tail: x.key } }, tailing === x.key && source ? 'Tailing' : 'Tail');
        b.addEventListener('click', () => start(x.key, x.entries));
        return h('tr', { dataset: { key: x.key } },
          h('td', { class: 'mono' }, x.key),
          h('td', { class: 'num' }, x.entries),
          h('td', null, x.closed ? 'closed' : 'open'),
          h('td', null, b));
      });
      const more = t.streamsTotal > t.streams.length ? h('p', { class: 'muted' }, 'The first ' + t.streams.length + ' of ' + t.streamsTotal + ', by key.') : null;
      list.replaceChildren(...[table(['key', 'entries', 'state', ''], rows, { id: 'streams', class: 'grid' }), more].filter(Boolean));
    },
  };
}

function children(t) {
  if (t.childrenTotal === 0) return empty('No children.');
  const rows = t.children.map((c) => h('tr', null, h('td', null, workflowLink(c.workflowId)), h('td', null, c.type), h('td', null, badge(c.status)), h('td', null, time(c.createdAt))));
  const more = t.childrenTotal > t.children.length ? h('p', { class: 'muted' }, 'The first ' + t.children.length + ' of ' + t.childrenTotal + '.') : null;
  return [table(['child', 'type', 'status', 'started'], rows, { id: 'children', class: 'grid' }), more];
}

function claim(c) {
  if (c.mode === 'none') return facts([['ownership', 'none (one engine; no claims)']]);
  const expiry = c.expiresAt ? [time(c.expiresAt), c.expired ? h('span', { class: 'badge s-failed' }, 'expired') : null] : null;
  return facts([
    ['ownership', c.mode],
    ['holder', c.holder ? [mono(c.holder), c.heldHere ? h('span', { class: 'muted' }, ' (this engine)') : null] : 'nobody'],
    ['epoch', c.epoch],
    ['expires', expiry],
    ['claimed', c.claimedAt ? time(c.claimedAt) : null],
  ]);
}

export const workflowView = {
  name: 'workflow',
  parent: 'workflows',
  match: (path) => {
    const m = /^\/workflow\/(.+)$/.exec(path);
    if (!m) return null;
    try {
      return { workflowId: decodeURIComponent(m[1]) };
    } catch {
      return null;
    }
  },
  heading: (p) => p.workflowId,
  mount(root, { workflowId }, ui) {
    const open = new Set(['input', 'output', 'error']);
    const status = h('span', { id: 'wf-status' });
    const act = actions(workflowId, ui);
    const summary = h('div', { id: 'wf-summary' });
    const owner = h('div', { id: 'wf-claim' });
    const ops = h('div', { id: 'wf-timeline' });
    const msgs = h('div', { id: 'wf-messages' });
    const kids = h('div', { id: 'wf-children' });
    const evs = h('div', { id: 'wf-events' });
    const values = h('div', { id: 'wf-values' });
    const streams = streamsCard(workflowId);
    root.append(
      h('div', { class: 'toolbar' }, h('a', { href: '#/workflows', class: 'back' }, '\u2190 Workflows'),
        h('h1', null, mono(workflowId)), status),
      h('div', { class: 'cards' },
        h('section', { class: 'card' }, h('h2', null, 'Workflow'), summary),
        h('section', { class: 'card' }, h('h2', null, 'Claim'), owner),
        act.card),
      h('section', { class: 'card wide' }, h('h2', null, 'Timeline'), ops),
      h('section', { class: 'card wide' }, h('h2', null, 'Messages'), msgs),
      h('section', { class: 'card wide' }, h('h2', null, 'Events'), evs),
      h('section', { class: 'card wide' }, h('h2', null, 'Streams'), streams.list, streams.tail),
      h('section', { class: 'card wide' }, h('h2', null, 'Children'), kids),
      h('section', { class: 'card wide' }, h('h2', null, 'Input, output, error'), values),
    );
    const detail = (key, label, value) => {
      const d = h('details', { open: open.has(key) }, h('summary', null, label), jsonBlock(value));
      d.addEventListener('toggle', () => (d.open ? open.add(key) : open.delete(key)));
      return d;
    };
    return {
      async refresh() {
        const t = await api('/workflows/' + enc(workflowId) + '/timeline');
        syncClock(t.serverTime);
        status.replaceChildren(badge(t.status));
        root.dataset.status = t.status;
        act.update(t.status);
        summary.replaceChildren(facts([
          ['type', t.type],
          ['run', '#' + t.runNumber + (t.runNumber > 1 ? ' (continued as new or restarted)' : '')],
          ['code version', t.workflowVersion],
          ['parent', t.parentId ? workflowLink(t.parentId) : null],
          ['created', time(t.createdAt)],
          ['updated', time(t.updatedAt)],
          ['ended', t.completedAt ? [time(t.completedAt), ' (took ' + duration(Date.parse(t.completedAt) - Date.parse(t.createdAt)) + ')'] : null],
          t.startAt ? ['starts', time(t.startAt)] : null,
          ['deadline', t.deadline ? time(t.deadline) : 'none'],
          ['version', t.version],
          ['attributes', Object.keys(t.attributes || {}).length ? jsonInline(t.attributes) : 'none'],
          t.forkedFrom ? ['forked from', [workflowLink(t.forkedFrom.workflowId), ' run #' + t.forkedFrom.runNumber + ', from seq ' + t.forkedFrom.fromSeq]] : null,
          t.retriedFrom ? ['retried from', 'run #' + t.retriedFrom.runNumber + ', from seq ' + t.retriedFrom.fromSeq] : null,
        ]));
        owner.replaceChildren(claim(t.claim));
        ops.replaceChildren(...[timeline(t)].flat().filter(Boolean));
        msgs.replaceChildren(...[messages(t)].flat().filter(Boolean));
        evs.replaceChildren(...[events(t)].flat().filter(Boolean));
        streams.render(t);
        kids.replaceChildren(...[children(t)].flat().filter(Boolean));
        values.replaceChildren(
          ...[
            detail('input', 'input', t.input),
            t.status === 'completed' ? detail('output', 'output', t.output) : null,
            t.error ? detail('error', 'error: ' + errorText(t.error), t.error) : null,
          ].filter(Boolean),
        );
      },
      unmount() {
        streams.stop();
      },
    };
  },
};
`;
