// Browser module `bulk.js` of the dashboard: retry, fork or cancel every workflow a list filter
// matches. The set is collected first (the count shown), a second click confirms, progress shows
// as it goes, a summary ends it. Running it again does nothing twice: a workflow no longer failed
// (retry) or running (cancel), or already forked (each fork's id is <id>~fork-<step>), is skipped.
export const BULK_JS = String.raw`
import { h } from './dom.js';
import { api, query, id as enc } from './api.js';

/** At most this many in one bulk: past it, narrow the filter. */
const MAX_BULK = 10000;

async function collect(filters, extra) {
  const ids = [];
  let cursor = null;
  do {
    const page = await api('/workflows' + query({ ...filters, ...extra, limit: 1000, cursor }));
    for (const w of page.items) if (!(extra.skipForks && w.forkedFrom)) ids.push(w.workflowId);
    cursor = page.nextCursor;
  } while (cursor && ids.length < MAX_BULK);
  return ids.slice(0, MAX_BULK);
}

export function bulkBar(currentFilters, ui) {
  const what = h('select', { id: 'bulk-action', 'aria-label': 'Bulk action' },
    h('option', { value: 'retry' }, 'Retry the failed ones'),
    h('option', { value: 'fork' }, 'Fork each from step'),
    h('option', { value: 'cancel' }, 'Cancel the live ones'));
  const step = h('input', { id: 'bulk-step', type: 'text', maxlength: 255, placeholder: 'step name or seq', 'aria-label': 'Fork from step' });
  const go = h('button', { type: 'button', id: 'bulk-go', class: 'danger' }, 'Apply to all matching');
  const progress = h('span', { id: 'bulk-progress', class: 'muted', role: 'status' });
  let armed = null;
  const reset = () => {
    armed = null;
    go.textContent = 'Apply to all matching';
  };
  what.addEventListener('change', reset);
  step.addEventListener('input', reset);

  const act = {
    retry: { extra: { status: 'failed' }, verb: 'retried', send: (id) => api('/workflows/' + enc(id) + '/retry', { method: 'POST', body: {} }) },
    cancel: { extra: {}, verb: 'cancelled', send: (id) => api('/workflows/' + enc(id) + '/cancel', { method: 'POST', body: { reason: 'Bulk cancel from the dashboard' } }) },
    fork: {
      extra: { skipForks: true },
      verb: 'forked',
      send: (id, from) => api('/workflows/' + enc(id) + '/fork', { method: 'POST', body: { fromStep: from, workflowId: id + '~fork-' + from } }),
    },
  };

  go.addEventListener('click', async () => {
    const kind = what.value;
    const spec = act[kind];
    const from = /^\d+$/.test(step.value.trim()) ? Number(step.value.trim()) : step.value.trim();
    if (kind === 'fork' && from === '') return ui.flash('Give the step to fork from (its name or seq).', 'error');
    if (!armed) {
      go.disabled = true;
      try {
        const filters = currentFilters();
        const extra = kind === 'retry' ? { ...spec.extra, status: 'failed' } : spec.extra;
        const ids = await collect(kind === 'retry' ? { ...filters, status: 'failed' } : filters, extra);
        if (ids.length === 0) return ui.flash('No workflows match.', 'ok');
        armed = ids;
        go.textContent = ids.length + ' match: click again to apply';
      } catch (err) {
        ui.flash(ui.errorText(err), 'error');
      } finally {
        go.disabled = false;
      }
      return;
    }
    const ids = armed;
    reset();
    go.disabled = true;
    let done = 0, skipped = 0;
    const failed = [];
    const show = () => (progress.textContent = done + '/' + ids.length + ' ' + spec.verb + (skipped ? ', ' + skipped + ' skipped' : '') + (failed.length ? ', ' + failed.length + ' failed' : ''));
    for (let i = 0; i < ids.length; i += 8) {
      await Promise.all(ids.slice(i, i + 8).map(async (id) => {
        try {
          await spec.send(id, from);
          done++;
        } catch (err) {
          // 409: it no longer applies (retried, ended, forked already): what makes a re-run safe.
          if (err && err.status === 409 && err.code !== 'WEFT_FORK_REFUSED') skipped++;
          else failed.push(id + ': ' + ui.errorText(err));
        }
      }));
      show();
    }
    go.disabled = false;
    ui.flash(spec.verb[0].toUpperCase() + spec.verb.slice(1) + ' ' + done + ' of ' + ids.length + (skipped ? '; ' + skipped + ' skipped' : '') + (failed.length ? '; ' + failed.length + ' failed: ' + failed.slice(0, 3).join('; ') : '.'), failed.length ? 'error' : 'ok');
    ui.refresh();
  });
  return h('div', { class: 'bulk row', id: 'bulk' }, what, step, go, progress);
}
`;
