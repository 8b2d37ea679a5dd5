// Browser module `workflows.js` of the dashboard: the workflow list, filtered by status, type, id
// prefix and attributes, oldest or newest first, paged with the API's cursor; and its bulk actions. The filters live in the address (#/workflows?status=...).
export const WORKFLOWS_JS = String.raw`
import { h, badge, time, workflowLink, table, empty, jsonInline } from './dom.js';
import { api, query } from './api.js';
import { bulkBar } from './bulk.js';

const STATUSES = ['pending', 'enqueued', 'running', 'suspended', 'completed', 'failed', 'cancelled', 'timed_out'];
const PAGE_SIZES = [25, 50, 100, 200];

function filtersFrom(params) {
  const status = params.get('status') || '';
  const limit = Number(params.get('limit')) || 50;
  return {
    status: STATUSES.includes(status) ? status : '',
    type: params.get('type') || '',
    idPrefix: params.get('prefix') || '',
    where: params.get('where') || '',
    order: params.get('order') === 'newest' ? 'newest' : 'oldest',
    limit: PAGE_SIZES.includes(limit) ? limit : 50,
  };
}

/** The attribute conditions of the filter box: separated by spaces or commas (tenant=42 amount>100). */
const conditions = (text) => text.split(/[\s,]+/).filter(Boolean);

export const workflowsView = {
  name: 'workflows',
  title: 'Workflows',
  match: (path, params) => (path === '/workflows' || path === '/' ? filtersFrom(params) : null),
  mount(root, initial, ui) {
    const filters = { ...initial };
    // cursors[i] is the cursor of page i (null: the first page).
    let cursors = [null];
    let page = 0;
    let next = null;

    const status = h('select', { id: 'filter-status', 'aria-label': 'Status' },
      h('option', { value: '' }, 'any status'),
      STATUSES.map((s) => h('option', { value: s }, s.replace('_', ' '))));
    status.value = filters.status;
    const type = h('input', { id: 'filter-type', type: 'search', placeholder: 'type', maxlength: 255, value: filters.type, 'aria-label': 'Workflow type' });
    const prefix = h('input', { id: 'filter-prefix', type: 'search', placeholder: 'id prefix', maxlength: 255, value: filters.idPrefix, 'aria-label': 'Workflow id prefix' });
    const where = h('input', { id: 'filter-where', type: 'search', placeholder: 'attributes: tenant=42 amount>100', maxlength: 1000, value: filters.where, 'aria-label': 'Attribute conditions' });
    const order = h('select', { id: 'filter-order', 'aria-label': 'Order' }, h('option', { value: 'oldest' }, 'oldest first'), h('option', { value: 'newest' }, 'newest first'));
    order.value = filters.order;
    const size = h('select', { id: 'filter-limit', 'aria-label': 'Page size' }, PAGE_SIZES.map((n) => h('option', { value: String(n) }, n + ' a page')));
    size.value = String(filters.limit);
    const prev = h('button', { type: 'button', id: 'page-prev', onclick: () => go(page - 1) }, '\u2190 Previous');
    const more = h('button', { type: 'button', id: 'page-next', onclick: () => go(page + 1) }, 'Next \u2192');
    const pageLabel = h('span', { class: 'muted' });
    const body = h('div', { id: 'wf-list' });

    let debounce = null;
    const changed = () => {
      clearTimeout(debounce);
      debounce = setTimeout(apply, 250);
    };
    function apply() {
      filters.status = status.value;
      filters.type = type.value.trim();
      filters.idPrefix = prefix.value.trim();
      filters.where = where.value.trim();
      filters.order = order.value;
      filters.limit = Number(size.value);
      cursors = [null];
      page = 0;
      // The address keeps the filters (shareable, kept on reload) without re-mounting the view.
      const q = query({ status: filters.status, type: filters.type, prefix: filters.idPrefix, where: filters.where, order: filters.order === 'newest' ? 'newest' : '', limit: filters.limit === 50 ? '' : filters.limit });
      history.replaceState(null, '', '#/workflows' + q);
      ui.refresh();
    }
    function go(to) {
      if (to < 0 || (to > page && !next)) return;
      if (to > page) cursors[to] = next;
      page = to;
      ui.refresh();
    }
    status.addEventListener('change', apply);
    size.addEventListener('change', apply);
    order.addEventListener('change', apply);
    where.addEventListener('input', changed);
    type.addEventListener('input', changed);
    prefix.addEventListener('input', changed);

    root.append(
      h('div', { class: 'toolbar' }, h('h1', null, 'Workflows'),
        h('form', { class: 'filters', onsubmit: (e) => { e.preventDefault(); apply(); } }, status, type, prefix, where, order, size)),
      bulkBar(() => apiFilters(), ui),
      body,
      h('div', { class: 'pager' }, prev, pageLabel, more),
    );

    /** The list's filters as the API takes them (the bulk actions use the same). */
    const apiFilters = () => ({
      status: filters.status,
      type: filters.type,
      idPrefix: filters.idPrefix,
      where: conditions(filters.where),
      order: filters.order === 'newest' ? 'newest' : '',
    });
    const instance = {
      async refresh() {
        const answer = await api('/workflows' + query({ ...apiFilters(), limit: filters.limit, cursor: cursors[page] }));
        next = answer.nextCursor;
        prev.disabled = page === 0;
        more.disabled = !next;
        pageLabel.textContent = 'page ' + (page + 1);
        if (answer.items.length === 0) {
          body.replaceChildren(empty(page === 0 ? 'No workflows match these filters.' : 'No more workflows.'));
          return;
        }
        const rows = answer.items.map((w) =>
          h('tr', { dataset: { id: w.workflowId, status: w.status } },
            h('td', null, workflowLink(w.workflowId)),
            h('td', null, w.type),
            h('td', null, badge(w.status)),
            h('td', null, time(w.createdAt)),
            h('td', null, time(w.updatedAt)),
            h('td', null, w.completedAt ? time(w.completedAt) : ''),
            h('td', null, w.parentId ? workflowLink(w.parentId) : ''),
            h('td', null, Object.keys(w.attributes || {}).length ? jsonInline(w.attributes) : '')));
        body.replaceChildren(table(['id', 'type', 'status', 'created', 'updated', 'ended', 'parent', 'attributes'], rows, { id: 'wf-table', class: 'grid' }));
      },
      unmount() {
        clearTimeout(debounce);
      },
    };
    return instance;
  },
};
`;
