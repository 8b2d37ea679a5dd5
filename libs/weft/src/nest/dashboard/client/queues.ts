// Browser module `queues.js` of the dashboard: the declared queues with their limits (a
// partitioned queue's per-key ones too), and how many workflows each holds enqueued and running
// (as of the answering engine's last admission pass); one queue's page (#/queues/<name>) lists
// its busiest partition keys, counted from the workflows table on each refresh.
export const QUEUES_JS = String.raw`
import { h, duration, mono, table, empty, facts, syncClock } from './dom.js';
import { api } from './api.js';

const PARTITIONS_SHOWN = 50;

function limit(n) {
  return n === null || n === undefined ? h('span', { class: 'muted' }, 'none') : String(n);
}

function rate(r) {
  return r ? r.limit + ' per ' + duration(r.periodMs) : h('span', { class: 'muted' }, 'none');
}

function queueHref(name) {
  return '#/queues/' + encodeURIComponent(name);
}

/** A partitioned queue's limits per key, and the way to its keys; nothing for one that is not. */
function perKey(q) {
  if (!q.partition) return h('span', { class: 'muted' }, 'not partitioned');
  const parts = [];
  if (q.partition.concurrency !== null) parts.push(q.partition.concurrency + ' at once');
  if (q.partition.rateLimit) parts.push(q.partition.rateLimit.limit + ' per ' + duration(q.partition.rateLimit.periodMs));
  return h('span', null, parts.length ? parts.join(', ') : 'no limit', ' \u00b7 ', h('a', { href: queueHref(q.name), dataset: { action: 'partitions' } }, 'partitions'));
}

export const queuesView = {
  name: 'queues',
  title: 'Queues',
  match: (path) => (path === '/queues' ? {} : null),
  mount(root) {
    const list = h('div', { id: 'queues-list' });
    root.append(h('div', { class: 'toolbar' }, h('h1', null, 'Queues')), h('section', { class: 'card wide' }, list));
    return {
      async refresh() {
        const v = await api('/queues');
        syncClock(v.serverTime);
        if (v.queues.length === 0) return list.replaceChildren(empty('No queues. Declare them in the module options: queues: { payments: { concurrency: 10 } }.'));
        const rows = v.queues.map((q) =>
          h('tr', { dataset: { queue: q.name } },
            h('td', null, q.partition ? h('a', { href: queueHref(q.name) }, mono(q.name)) : mono(q.name)),
            h('td', { class: 'num' }, String(q.enqueued)),
            h('td', { class: 'num' }, String(q.running)),
            h('td', { class: 'num' }, limit(q.concurrency)),
            h('td', { class: 'num' }, limit(q.perEngineConcurrency)),
            h('td', null, rate(q.rateLimit)),
            h('td', null, perKey(q))));
        list.replaceChildren(table(['queue', 'enqueued', 'running', 'concurrency', 'per engine', 'rate limit', 'per partition key'], rows, { id: 'queues-table', class: 'grid' }));
      },
    };
  },
};

/** One queue: its limits and its busiest partition keys. */
export const queueView = {
  name: 'queue',
  parent: 'queues',
  match: (path) => {
    const m = /^\/queues\/(.+)$/.exec(path);
    if (!m) return null;
    try {
      return { queue: decodeURIComponent(m[1]) };
    } catch {
      return null;
    }
  },
  heading: (p) => 'Queue ' + p.queue,
  mount(root, { queue }) {
    const limits = h('div', { id: 'queue-limits' });
    const summary = h('p', { id: 'partitions-summary' });
    const list = h('div', { id: 'partitions-list' });
    root.append(
      h('div', { class: 'toolbar' }, h('h1', null, 'Queue ', mono(queue)), h('a', { href: '#/queues' }, 'all queues')),
      h('section', { class: 'card' }, h('h2', null, 'Limits'), limits),
      h('section', { class: 'card wide' }, h('h2', null, 'Busiest partition keys'), summary, list),
    );
    return {
      async refresh() {
        const [all, p] = await Promise.all([api('/queues'), api('/queues/' + encodeURIComponent(queue) + '/partitions?limit=' + PARTITIONS_SHOWN)]);
        syncClock(p.serverTime);
        const q = all.queues.find((x) => x.name === queue);
        if (q) {
          limits.replaceChildren(facts([
            // The queue's totals as of the answering engine's last admission pass (the keys below are counted now).
            ['enqueued (last pass)', q.enqueued],
            ['running (last pass)', q.running],
            ['concurrency', limit(q.concurrency)],
            ['per engine', limit(q.perEngineConcurrency)],
            ['rate limit', rate(q.rateLimit)],
            ['per key: concurrency', q.partition ? limit(q.partition.concurrency) : null],
            ['per key: rate limit', q.partition ? rate(q.partition.rateLimit) : null],
          ]));
        }
        if (!p.partitioned) {
          summary.replaceChildren();
          return list.replaceChildren(empty('This queue is not partitioned: declare queues.' + queue + '.partition to limit each key.'));
        }
        summary.textContent = p.keysWithWork + (p.keysWithWork === 1 ? ' key' : ' keys') + ' with work' +
          (p.keysWithWork > p.partitions.length ? ', the ' + p.partitions.length + ' busiest shown' : '');
        if (p.partitions.length === 0) return list.replaceChildren(empty('No key has work.'));
        const rows = p.partitions.map((k) =>
          h('tr', { dataset: { partition: k.partitionKey } },
            h('td', null, mono(k.partitionKey)),
            h('td', { class: 'num' }, String(k.enqueued)),
            h('td', { class: 'num' }, String(k.running)),
            h('td', null, k.oldestEnqueuedAgeMs === null ? h('span', { class: 'muted' }, 'none waiting') : duration(k.oldestEnqueuedAgeMs))));
        list.replaceChildren(table(['partition key', 'enqueued', 'running', 'oldest waiting'], rows, { id: 'partitions-table', class: 'grid' }));
      },
    };
  },
};
`;
