// bench/report.js: the tables of docs/performance.md and the chart docs/images/throughput.svg,
// from the results npm run bench collected (bench/run.js writes them).

export const median = (xs) => {
  const v = xs.filter((x) => typeof x === 'number' && Number.isFinite(x)).sort((a, b) => a - b);
  return v.length === 0 ? undefined : v[Math.floor(v.length / 2)];
};

// ---------------------------------------------------------------- the tables, for a person

const fmt = (n, digits = 0) =>
  n === undefined || n === null || Number.isNaN(n)
    ? '–'
    : n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
const modeName = (m) => `\`${m}\``;
/**
 * A heading's note: the run an entry a BENCH_ONLY run kept from an earlier results file came from,
 * and the command of any entry measured otherwise than by a plain `npm run bench`, so every table
 * says how it was made.
 */
const keptFrom = (entry) => {
  const command = entry.command && entry.command !== 'npm run bench' ? `, \`${entry.command}\`` : '';
  const on = entry.machineNote ? `, on ${entry.machineNote}` : '';
  if (entry.from) return ` (kept from the run of ${entry.from}${on}${command})`;
  return command || on ? ` (${`${on}${command}`.slice(2)})` : '';
};

/** Median over the runs of one throughput row's figure. */
function rowMedian(entry, mode, shape, inFlight, key) {
  return median(entry.runs.map((r) => r.results.find((x) => x.mode === mode && x.shape === shape && x.inFlight === inFlight)?.[key]));
}

export function throughputTables(entry) {
  const rs = entry.runs;
  const first = rs[0];
  const out = [];
  const from = keptFrom(entry);
  const at = (r, which, c) => r.ceiling?.[which]?.find((x) => x.clients === c);
  out.push(
    `### The ceiling (pgbench, one-row INSERT, \`-M prepared\`)${from}`,
    '',
    'Commits per second of a one-row INSERT from pgbench on the same server, before and after each run of the engine;',
    "a run's ratios divide by the mean of its two. Four serial commits at the 1-client ceiling take " +
      `${fmt(median(rs.map((r) => r.ceiling?.fourCommitFloorMs)), 2)} ms (median over the runs; the floor of a 3-step workflow). ` +
      'The same INSERT committed one after another from node-pg, the driver the engine uses, takes ' +
      `${fmt(median(rs.map((r) => median((r.ceiling?.nodeCommits ?? []).map((n) => n.p50Ms)))), 3)} ms p50 per commit, so four of them ` +
      `${fmt(median(rs.map((r) => r.ceiling?.fourNodeCommitsMs)), 2)} ms.`,
    '',
    '| run | clients | before the engine runs | after | mean (used) |',
    '|---|---|---|---|---|',
  );
  rs.forEach((r, i) => {
    for (const c of [1, 16]) {
      const b = at(r, 'before', c);
      const a = at(r, 'after', c);
      out.push(
        `| ${i + 1} | ${c} | ${fmt(b?.tps)} commits/s (${fmt(b?.latencyMs, 3)} ms avg) | ${fmt(a?.tps)} commits/s (${fmt(a?.latencyMs, 3)} ms avg) | ${fmt(r.ceiling?.[`tps${c}`])} commits/s |`,
      );
    }
  });
  const levels = [...new Set(first.results.filter((r) => r.shape === 'noop3').map((r) => r.inFlight))];
  const modes = [...new Set(first.results.map((r) => r.mode))];
  out.push(
    '',
    `### Throughput: ${fmt(median(rs.map((r) => r.results.find((x) => x.inFlight !== 1)?.workflows)))} workflows of 3 no-op steps (1,000 at 1 in flight)${from}`,
    '',
    '"of the ceiling" = steps/s ÷ the ceiling at the same client count (64 in flight: the 16-client ceiling).',
    '',
    '| in flight | mode | workflows/s | steps/s | of the ceiling | p50 | p99 | commits / workflow | advance statements / workflow | Node CPU / workflow |',
    '|---|---|---|---|---|---|---|---|---|---|',
  );
  const sentences = [];
  for (const level of levels)
    for (const mode of modes) {
      const m = (k) => rowMedian(entry, mode, 'noop3', level, k);
      out.push(
        `| ${level} | ${modeName(mode)} | ${fmt(m('workflowsPerSec'))} | ${fmt(m('stepsPerSec'))} | ${fmt(m('ofCeiling'), 2)} | ${fmt(m('p50Ms'), 2)} ms | ${fmt(m('p99Ms'), 2)} ms | ${fmt(m('commitsPerWorkflow'), 2)} | ${fmt(m('advanceStatementsPerWorkflow'), 2)} | ${fmt(m('cpuMsPerWorkflow'), 3)} ms |`,
      );
      sentences.push(
        `- ${level} in flight, ${mode}: ${fmt(m('workflowsPerSec'))} wf/s, ${fmt(m('ofCeiling'), 2)} of the ceiling, p50 ${fmt(m('p50Ms'), 2)} ms`,
      );
    }
  out.push(...warmUpLines(rs));
  const lon = (shape, level) =>
    median(rs.map((r) => r.leaseOverNone?.find((x) => x.shape === shape && x.inFlight === level)?.workflowsPerSec));
  out.push('', ...sentences, '');
  if (modes.length === 2)
    out.push(
      `\`workflow-lease\` ÷ \`none\` (workflows/s, same run): ${levels.map((l) => `${l} in flight ${fmt(lon('noop3', l), 2)}`).join(', ')}.`,
      '',
    );
  const mixed = first.results.filter((r) => r.shape === 'mixed');
  if (mixed.length > 0) {
    out.push(
      `### Mixed shape: ${fmt(mixed[0].workflows)} workflows at ${mixed[0].inFlight} in flight${from}`,
      '',
      'A step, a 5 ms sleep, a signal wait (the bench sends the signal right after the start), a child workflow of one step, a step.',
      'Commits and statements count the child too.',
      '',
      '| mode | workflows/s | p50 | p99 | commits / workflow | advance statements / workflow | Node CPU / workflow |',
      '|---|---|---|---|---|---|---|',
    );
    for (const { mode, inFlight } of mixed) {
      const m = (k) => rowMedian(entry, mode, 'mixed', inFlight, k);
      out.push(
        `| ${modeName(mode)} | ${fmt(m('workflowsPerSec'))} | ${fmt(m('p50Ms'), 1)} ms | ${fmt(m('p99Ms'), 1)} ms | ${fmt(m('commitsPerWorkflow'), 2)} | ${fmt(m('advanceStatementsPerWorkflow'), 2)} | ${fmt(m('cpuMsPerWorkflow'), 3)} ms |`,
      );
    }
    if (modes.length === 2)
      out.push('', `\`workflow-lease\` ÷ \`none\` (workflows/s, same run): ${fmt(lon('mixed', mixed[0].inFlight), 2)}.`);
    out.push('');
  }
  out.push('![Steps per second by workflows in flight, both modes, against the ceiling](images/throughput.svg)', '');
  return out;
}

/** The warm-up each engine ran before the levels, chunk by chunk (medians over the runs). */
function warmUpLines(rs) {
  const first = rs[0].warmUp;
  if (!first?.length) return [];
  const chunks = first[0].workflowsPerSec.length;
  const { workflows, workflowsPerChunk } = first[0];
  const per = (mode, i) => median(rs.map((r) => r.warmUp?.find((w) => w.mode === mode)?.workflowsPerSec[i]));
  return [
    '',
    `Before the levels, each engine ran ${fmt(workflows)} workflows at 16 in flight on its empty tables, in chunks of ${fmt(workflowsPerChunk)}`,
    '(workflows/s of each chunk, in order). A fresh engine is slower until V8 has compiled the hot path and its young',
    'tables have stopped doubling (every doubling makes each connection plan its statements again); the levels above are',
    'measured after this, on tables that hold what a service in use holds.',
    '',
    ...first.map(({ mode }) => `- ${modeName(mode)}: ${Array.from({ length: chunks }, (_, i) => fmt(per(mode, i))).join(' → ')}`),
  ];
}

export function targetsTable(byName) {
  const t = byName.throughput;
  const m = (mode, level, key) => (t ? rowMedian(t, mode, 'noop3', level, key) : undefined);
  const lon = (level) =>
    t ? median(t.runs.map((r) => r.leaseOverNone?.find((x) => x.shape === 'noop3' && x.inFlight === level)?.workflowsPerSec)) : undefined;
  const yes = (ok) => (ok === undefined ? '–' : ok ? 'yes' : 'no');
  const renewal = byName.renewal?.medians;
  const parked = byName['parked-heap']?.medians;
  const queues = byName.queues?.medians;
  const rows = [
    [
      '`workflow-lease` wf/s ÷ `none` wf/s at 16 in flight',
      '0.59–0.66',
      '≥ 0.90',
      fmt(lon(16), 2),
      yes(lon(16) === undefined ? undefined : lon(16) >= 0.9),
    ],
    [
      'commits per workflow at 16, `workflow-lease`',
      '2.1–2.2',
      '≤ 1.3',
      fmt(m('workflow-lease', 16, 'commitsPerWorkflow'), 2),
      yes(m('workflow-lease', 16, 'commitsPerWorkflow') === undefined ? undefined : m('workflow-lease', 16, 'commitsPerWorkflow') <= 1.3),
    ],
    [
      'ratio to the ceiling at 16 in flight, `none` / `workflow-lease`',
      '0.18–0.24 / 0.10–0.16',
      '≥ 0.30 / ≥ 0.27',
      `${fmt(m('none', 16, 'ofCeiling'), 2)} / ${fmt(m('workflow-lease', 16, 'ofCeiling'), 2)}`,
      `${yes(m('none', 16, 'ofCeiling') >= 0.3)} / ${yes(m('workflow-lease', 16, 'ofCeiling') >= 0.27)}`,
    ],
    [
      'ratio to the ceiling at 64 in flight, `none`',
      '0.26–0.33',
      '≥ 0.40',
      fmt(m('none', 64, 'ofCeiling'), 2),
      yes(m('none', 64, 'ofCeiling') >= 0.4),
    ],
    [
      'p50 at 1 in flight ÷ four-commit floor, `none` / `workflow-lease`',
      '2.8–3.8',
      '≤ 2.5',
      `${fmt(m('none', 1, 'p50OverFloor'), 2)} / ${fmt(m('workflow-lease', 1, 'p50OverFloor'), 2)}`,
      `${yes(m('none', 1, 'p50OverFloor') <= 2.5)} / ${yes(m('workflow-lease', 1, 'p50OverFloor') <= 2.5)}`,
    ],
    [
      'the same p50 ÷ four commits from node-pg (not a target: the floor from Node)',
      '–',
      '–',
      `${fmt(m('none', 1, 'p50OverNodeFloor'), 2)} / ${fmt(m('workflow-lease', 1, 'p50OverNodeFloor'), 2)}`,
      '–',
    ],
    [
      'Node CPU per workflow at 16 in flight, `none` / `workflow-lease`',
      '0.39 / 0.55 ms',
      '≤ 0.35 ms',
      `${fmt(m('none', 16, 'cpuMsPerWorkflow'), 3)} / ${fmt(m('workflow-lease', 16, 'cpuMsPerWorkflow'), 3)} ms`,
      `${yes(m('none', 16, 'cpuMsPerWorkflow') <= 0.35)} / ${yes(m('workflow-lease', 16, 'cpuMsPerWorkflow') <= 0.35)}`,
    ],
    scaleRow(byName['scale-rows'], yes),
    recoveryRow(byName.recovery?.medians, yes),
    [
      'renewal pass, 100k claims / heap, parked workflows',
      '748 ms / 68 MiB',
      '< 1 s / ≤ 200 MB',
      `${fmt(renewal?.['renewalPasses[2].passMsMedianOf3'], 0)} ms / ${fmt(parked?.['result.heapWithParkedMiB'], 1)} MiB (${fmt(parked?.['result.workflows'])} parked)`,
      renewal && parked
        ? `${yes(renewal['renewalPasses[2].passMsMedianOf3'] < 1000)} / ${yes(parked['result.heapWithParkedMiB'] <= 200)}`
        : '–',
    ],
    [
      'issue 39: queue at concurrency 50 ÷ 50 in flight without one / partitioned, 100 keys',
      '0.32–0.58 / –',
      '≥ 0.90 / ≥ 0.80',
      `${fmt(queues?.ratioQueuedOverPlain, 2)} / ${fmt(queues?.ratioPartitionedOverPlain, 2)}`,
      queues ? `${yes(queues.ratioQueuedOverPlain >= 0.9)} / ${yes(queues.ratioPartitionedOverPlain >= 0.8)}` : '–',
    ],
    transactionsRow(byName, yes),
  ];
  return [
    '### Targets of issue 15',
    '',
    '| figure | issue 15 "now" | target | measured here (median) | met |',
    '|---|---|---|---|---|',
    ...rows.map((r) => `| ${r.join(' | ')} |`),
    '',
  ];
}

/** Issue 35's target: transactional ÷ plain steps at 16 in flight. */
function transactionsRow(byName, yes) {
  const med = byName.transactions?.medians;
  const row = med && Object.keys(med).find((k) => /^rows\[\d+\]\.inFlight$/.test(k) && med[k] === 16);
  const ratio = row ? med[row.replace('.inFlight', '.ratioTransactionalOverPlain')] : undefined;
  // Against plain steps writing through TypeORM (the transactional body's own data layer) and
  // through a bare node-pg pool: met only when both are (runs before the TypeORM shape have one).
  const orm = row ? med[row.replace('.inFlight', '.ratioTransactionalOverPlainTypeorm')] : undefined;
  return [
    'issue 35: transactional steps ÷ plain steps at 16 in flight (3 steps, one application row each; plain through TypeORM / bare node-pg)',
    '0.49',
    '≥ 0.80',
    row ? `${orm === undefined ? '–' : fmt(orm, 2)} / ${fmt(ratio, 2)}` : 'not measured',
    row ? yes(ratio >= 0.8 && (orm === undefined || orm >= 0.8)) : '–',
  ];
}

/** The 1,000,000-row target: full ÷ empty wf/s at 16 in flight, per mode (in the order the bench ran them). */
function scaleRow(entry, yes) {
  const med = entry?.medians;
  if (!med)
    return ['throughput at 16 with 1,000,000 ended workflows ÷ empty tables', 'not measured', '≥ 0.90', 'not measured in this run', '–'];
  const modes = entry.runs[0].results.map((r) => modeName(r.mode));
  const ratios = modes.map((_, i) => med[`results[${i}].ratio`]);
  return [
    `throughput at 16 with ${fmt(med.rows)} ended workflows ÷ empty tables, ${modes.join(' / ')}`,
    'not measured',
    '≥ 0.90',
    ratios.map((r) => fmt(r, 2)).join(' / '),
    ratios.map((r) => yes(r >= 0.9)).join(' / '),
  ];
}

/** The recovery target: every claim within the bound, no renewal late, peak memory. */
function recoveryRow(med, yes) {
  const figure = `a fresh engine recovering ${med ? fmt(med.workflows) : '100,000'} running workflows (parked on timers)`;
  const target = 'all claimed within `maxConcurrentWorkflows`, renewals never late, ≤ 300 MB';
  if (!med) return [figure, 'not measured', target, 'not measured in this run', '–'];
  const within = (p) => med[`${p}claimedAtEnd`] === med[`${p}target`] && med[`${p}maxClaimsHeld`] <= med[`${p}maxConcurrent`];
  const onTime = (p) => med[`${p}renewalsLate`] === 0 && med[`${p}lostClaims`] === 0 && med[`${p}samplesWithExpiredClaims`] === 0;
  const measured =
    `all ${fmt(med.claimedAtEnd)} claimed in ${fmt(med.claimAllSeconds, 1)} s, ${fmt(med['limited.claimedAtEnd'])} of ${fmt(med['limited.maxConcurrent'])} ` +
    `with the bound; ${fmt(med.renewalsLate + med['limited.renewalsLate'])} renewals late (least headroom ${fmt(med.minEngineHeadroomMs)} ms); ` +
    `peak RSS ${fmt(med.vmHwmMiB, 0)} MiB (heap bound 160 MB), ${fmt(med['unbounded.vmHwmMiB'], 0)} MiB unbounded`;
  return [
    figure,
    'not measured',
    target,
    measured,
    `${yes(within('') && within('limited.'))} / ${yes(onTime('') && onTime('limited.'))} / ${yes(med.vmHwmMiB <= 300)}`,
  ];
}

/** Where one workflow's time goes: bench/latency.ts. */
function latencyTable(med, firstRun, from) {
  const out = [
    `### Where one workflow's time goes (3 no-op steps, 1 in flight)${from}`,
    '',
    "Every statement the engine sends is timed from node-pg's `query` to its reply, so p50 splits into the workflow's four round trips, " +
      "Node's time between a reply and the next statement, and the two edges (`start()` to the first statement, the last reply to `result()`). " +
      'In the same window, on a bare connection of the same process, three reference statements: a one-row INSERT (what the ceiling commits), ' +
      "the step's two row writes as plain SQL (UPDATE of the workflow row, INSERT of its operation, on copies of the engine's tables), " +
      "and the engine's own step-record statement on the same copies.",
    '',
    '| mode | p50 | four round trips | Node between them | edges | one-row INSERT | step writes, plain SQL | the engine’s step record | p50 ÷ four one-row INSERTs |',
    '|---|---|---|---|---|---|---|---|---|',
  ];
  for (let i = 0; med[`results[${i}].p50Ms`] !== undefined; i++) {
    const r = (k, d = 3) => `${fmt(med[`results[${i}].${k}`], d)} ms`;
    out.push(
      `| ${modeName(firstRun[i].mode)} | ${r('p50Ms', 2)} | ${r('fourRoundTripsMs', 2)} | ${r('nodeBetweenMs')} | ${r('edgesMs')} | ${r('bareInsertMs')} | ${r('plainStepWritesMs')} | ${r('engineStepRecordMs')} | ${fmt(med[`results[${i}].p50OverFourBareInserts`], 2)} |`,
    );
  }
  return [...out, ''];
}

function placementTable(entry, from) {
  const med = entry.medians;
  const head = `### p50 at 1 in flight by CPU placement${from}`;
  if (entry.runs[0].skipped) return [head, '', `Not measured: ${entry.runs[0].skipped}.`, ''];
  const out = [
    head,
    '',
    'The same workload as the 1-in-flight level (3 no-op steps, both modes, chunks alternating), and pgbench’s 1-client floor, with the ' +
      'client (this Node process, or pgbench) and the PostgreSQL backends serving it pinned with `taskset`: on one core, on two, and left to ' +
      'the scheduler. Medians of the runs; p50 ÷ floor as in the targets table.',
    '',
    '| placement | client / server CPUs | pgbench, 1 client | four-commit floor | `none` p50 (÷ floor) | `workflow-lease` p50 (÷ floor) |',
    '|---|---|---|---|---|---|',
  ];
  entry.runs[0].placements.forEach((p, i) => {
    const k = (key) => med[`placements[${i}].${key}`];
    const tps = (k('pgbenchTps[0]') + k('pgbenchTps[1]')) / 2;
    const mode = (j) => `${fmt(k(`modes[${j}].p50Ms`), 2)} ms (${fmt(k(`modes[${j}].p50OverFloor`), 2)})`;
    out.push(
      `| ${p.placement} | ${p.clientCpus} / ${p.serverCpus} | ${fmt(tps)} commits/s | ${fmt(k('fourCommitFloorMs'), 3)} ms | ${mode(0)} | ${mode(1)} |`,
    );
  });
  return [...out, ''];
}

export function otherTables(entry) {
  const med = entry.medians;
  const from = keptFrom(entry);
  const own = {
    placement: placementTable,
    'timer-lateness': timerLatenessTable,
    transactions: transactionsTable,
    'talk-latency': talkTable,
    attributes: attributesTable,
    heartbeats: heartbeatsTable,
    queues: queuesTable,
    codec: codecTable,
  }[entry.bench];
  if (own) return own(entry, from);
  if (entry.bench === 'renewal') {
    const out = [`### Renewal${from}`, '', '| held claims | one renewal pass | statements per pass |', '|---|---|---|'];
    for (let i = 0; med[`renewalPasses[${i}].heldClaims`] !== undefined; i++)
      out.push(
        `| ${fmt(med[`renewalPasses[${i}].heldClaims`])} | ${fmt(med[`renewalPasses[${i}].passMsMedianOf3`], 1)} ms | ${fmt(med[`renewalPasses[${i}].statementsPerPass`])} |`,
      );
    out.push('', '| failover of | claim TTL | renew interval | SIGKILL to the last workflow resumed |', '|---|---|---|---|');
    for (let i = 0; med[`failovers[${i}].workflows`] !== undefined; i++)
      out.push(
        `| ${fmt(med[`failovers[${i}].workflows`])} workflows | ${fmt(med[`failovers[${i}].claimTtlMs`])} ms | ${fmt(med[`failovers[${i}].renewIntervalMs`])} ms | ${fmt(med[`failovers[${i}].sigkillToLastResumedMs`])} ms |`,
      );
    return [...out, ''];
  }
  if (entry.bench === 'parked-heap') {
    return [
      `### Parked workflows${from}`,
      '',
      '| parked workflows | start and park | heap before | heap with them parked | live in the cache | RSS |',
      '|---|---|---|---|---|---|',
      `| ${fmt(med['result.workflows'])} | ${fmt(med['result.startAndParkSeconds'], 1)} s | ${fmt(med['result.heapBeforeMiB'], 1)} MiB | ${fmt(med['result.heapWithParkedMiB'], 1)} MiB | ${fmt(med['result.liveInCache'])} | ${fmt(med['result.rssMiB'], 1)} MiB |`,
      '',
    ];
  }
  if (entry.bench === 'scale-rows') {
    const out = [
      `### ${fmt(med.rows)} ended workflows in the tables${from}`,
      '',
      `3 no-op steps at 16 in flight on a database that holds them (written as the engine leaves them: histories, claims, a consumed signal every 4th) against an empty one, side by side, in chunks that alternate between the two; the control is the same pair before the fill. Workflow ids: ${entry.runs[0].ids === 'random (randomUUID)' ? 'random UUIDs (BENCH_IDS=random)' : 'the engine’s UUIDv7, time-ordered in the fill too (docs/decisions/0010)'}.`,
      '',
      '| mode | empty tables | full tables | full ÷ empty | adjacent chunks ÷ (median) | control (both empty) | WAL per workflow, empty / full | full-page images per workflow, full |',
      '|---|---|---|---|---|---|---|---|',
    ];
    for (let i = 0; med[`results[${i}].ratio`] !== undefined; i++) {
      const r = (k) => med[`results[${i}].${k}`];
      const mode = entry.runs[0].results[i]?.mode ?? `mode ${i + 1}`;
      out.push(
        `| ${modeName(mode)} | ${fmt(r('emptyWfPerSec'))} wf/s | ${fmt(r('fullWfPerSec'))} wf/s | ${fmt(r('ratio'), 2)} | ${fmt(r('pairRatiosMedian'), 2)} | ${fmt(r('control.ratio'), 2)} | ${fmt(r('empty.walKiBPerWorkflow'), 1)} / ${fmt(r('full.walKiBPerWorkflow'), 1)} KiB | ${fmt(r('full.fullPageImagesPerWorkflow'), 2)} |`,
      );
    }
    return [...out, ''];
  }
  if (entry.bench === 'recovery') {
    const row = (name, p) =>
      `| ${name} | ${fmt(med[`${p}maxConcurrent`])} | ${fmt(med[`${p}claimedAtEnd`])} | ${fmt(med[`${p}maxClaimsHeld`])} | ${fmt(med[`${p}claimAllSeconds`], 1)} s | ${fmt(med[`${p}renewalsLate`])} | ${fmt(med[`${p}minEngineHeadroomMs`])} ms | ${fmt(med[`${p}lostClaims`])} | ${fmt(med[`${p}vmHwmMiB`], 0)} MiB | ${fmt(med[`${p}peakHeapMiB`], 0)} MiB |`;
    return [
      `### A fresh engine recovering ${fmt(med.workflows)} workflows parked on timers${from}`,
      '',
      `Their engine was SIGKILLed; a new one (claim TTL ${fmt(med.claimTtlMs)} ms, renewal every ${fmt(med.renewIntervalMs)} ms) bootstraps, in a process of its own. ` +
        "The first two run with `--max-old-space-size=160` (a heap bound as a 300 MB container gives); RSS includes the bench's TypeScript loader (about 80 MiB).",
      '',
      '| run | maxConcurrentWorkflows | claimed | most held at once | all claimed after | renewals late | least renewal headroom | claims lost | peak RSS | peak heap |',
      '|---|---|---|---|---|---|---|---|---|---|',
      row('heap bound', ''),
      row('heap bound, limited', 'limited.'),
      row('no heap bound', 'unbounded.'),
      '',
    ];
  }
  if (entry.bench === 'latency') return latencyTable(med, entry.runs[0].results, from);
  if (entry.bench === 'signal-latency') {
    const first = entry.runs[0];
    const out = [
      `### Signal latency (two engine processes, one signal at a time)${from}`,
      '',
      '| delivery | one way p50 | p90 | p99 | `engine.signal()` p50 |',
      '|---|---|---|---|---|',
    ];
    (first.results ?? []).forEach((r, i) => {
      const name = r.mode ?? (r.pollIntervalMs ? `poll every ${r.pollIntervalMs} ms` : `variant ${i + 1}`);
      out.push(
        `| ${name} | ${fmt(med[`results[${i}].oneWayMs.p50`], 2)} ms | ${fmt(med[`results[${i}].oneWayMs.p90`], 2)} ms | ${fmt(med[`results[${i}].oneWayMs.p99`], 2)} ms | ${fmt(med[`results[${i}].signalCallMs.p50`], 2)} ms |`,
      );
    });
    return [...out, ''];
  }
  return [
    `### ${entry.bench}${from}`,
    '',
    '| figure | median |',
    '|---|---|',
    ...Object.entries(med).map(([k, v]) => `| ${k} | ${v} |`),
    '',
  ];
}

/** bench/attributes.ts (issue 40): list by attribute on a full table, and the hot path with attributes ÷ without. */
function attributesTable(entry, from) {
  const med = entry.medians;
  const out = [
    `### Search attributes: list on ${fmt(med.rows)} workflows, and the hot path with attributes${from}`,
    '',
    'engine.list({ attributes, limit: 100 }), 30 calls each, on workflows written with `{ tenant: 1 of 1,000, amount }`, a quarter failed:',
    '',
    '| filter | median | p95 | indexes in the plan |',
    '|---|---|---|---|',
  ];
  for (const name of Object.keys(entry.runs[0].list ?? {})) {
    const k = (key) => med[`list.${name}.${key}`];
    out.push(`| \`${name}\` | ${fmt(k('medianMs'), 2)} ms | ${fmt(k('p95Ms'), 2)} ms | ${entry.runs[0].list[name].indexes.join(', ')} |`);
  }
  out.push(
    '',
    `3 no-op steps at ${fmt(med['hotPath.inFlight'])} in flight with \`attributes\` set at start against none, in ${fmt(med['hotPath.chunks'])} chunks of ` +
      `${fmt(med['hotPath.workflowsPerChunk'])} that alternate which goes first, after a warm-up chunk of each (target: within 5 %, ratio ≥ 0.95):`,
    '',
    '| with attributes | without | with ÷ without, median of chunk pairs | ratio of the sums |',
    '|---|---|---|---|',
    `| ${fmt(med['hotPath.withAttributesPerSecond'])} wf/s | ${fmt(med['hotPath.withoutPerSecond'])} wf/s | ${fmt(med['hotPath.ratio'], 3)} | ${fmt(med['hotPath.ratioOfSums'], 3)} |`,
    '',
  );
  return out;
}

/** bench/queues.ts (issue 39): a queue and a partitioned one ÷ no queue, per run, and the hand-off latency. */
function queuesTable(entry, from) {
  const med = entry.medians;
  const t = (r, k) => r.throughput?.[k];
  const row = (name, r, q) =>
    `| ${name} | ${fmt(t(r, 'noQueue50InFlightWfPerSec'))} wf/s | ${fmt(t(r, 'queueConcurrency50WfPerSec'))} wf/s | ${fmt(r.ratioQueuedOverPlain, 2)}${q(r, 'queued')} | ${fmt(t(r, 'partitioned100KeysWfPerSec'))} wf/s | ${fmt(r.ratioPartitionedOverPlain, 2)}${q(r, 'partitioned')} | ${fmt(r.handoffLatencyMs?.p50, 2)} / ${fmt(r.handoffLatencyMs?.p99, 2)} ms | ${fmt(r.loadAverage?.[0], 1)} |`;
  const quart = (r, k) => (r.ratioQuartiles?.[k] ? ` (${fmt(r.ratioQuartiles[k][0], 2)}–${fmt(r.ratioQuartiles[k][1], 2)})` : '');
  return [
    `### Queues: a queue at concurrency 50 and a partitioned one (100 keys, 2 per key) against 50 in flight without a queue (targets: ≥ 0.90 and ≥ 0.80)${from}`,
    '',
    `${fmt(med['throughput.chunks'])} rounds of one chunk of ${fmt(med['throughput.workflowsPerChunk'])} workflows of 3 no-op steps per variant, which goes first rotating, after a discarded warm-up; a ratio is the median of the ratios paired per round (quartiles beside it). Hand-off: from one queued workflow's end to the next one's first step, concurrency 1, ${fmt(med['handoffLatencyMs.queuedAtStart'])} queued.`,
    '',
    '| run | no queue | queue | queue ÷ no queue | partitioned | partitioned ÷ no queue | hand-off p50 / p99 | load (1 min) |',
    '|---|---|---|---|---|---|---|---|',
    ...entry.runs.map((r, i) => row(String(i + 1), r, quart)),
    '',
  ];
}

/** bench/codec.ts (issue 41): the 3-step workflow with AesGcmCodec on ÷ off at 16 in flight, per run. */
function codecTable(entry, from) {
  const med = entry.medians;
  const row = (name, r) =>
    `| ${name} | ${fmt(r.offWorkflowsPerSec)} wf/s | ${fmt(r.onWorkflowsPerSec)} wf/s | ${fmt(r.ratioChunkMedian, 3)} (${fmt(r.ratioChunkRange?.[0], 2)}–${fmt(r.ratioChunkRange?.[1], 2)}) | ${fmt(r.ratio, 3)} | ${fmt(r.cpuMsPerWorkflow?.off, 3)} / ${fmt(r.cpuMsPerWorkflow?.on, 3)} ms | ${fmt(r.encodeDecodeMicrosPerPayload, 1)} µs |`;
  return [
    `### Codec: the 3-step workflow with \`AesGcmCodec\` on ÷ off at ${fmt(med.inFlight)} in flight (target: ≥ 0.85)${from}`,
    '',
    `${fmt(med.chunks)} chunks of ${fmt(med.workflowsPerChunk)} workflows per variant, alternating, after a discarded warm-up; the heap collected (untimed) before each chunk.`,
    '',
    '| run | codec off | codec on | on ÷ off, median of chunk pairs (range) | ratio of sums | CPU a workflow, off / on | one payload encode + decode |',
    '|---|---|---|---|---|---|---|',
    ...entry.runs.map((r, i) => row(String(i + 1), r)),
    '',
  ];
}

/** bench/heartbeats.ts (issue 38): steps heartbeating every 100 ms ÷ the same steps without, and the writes per heartbeat. */
function heartbeatsTable(entry, from) {
  const med = entry.medians;
  return [
    `### Heartbeats: ${fmt(med.inFlight)} steps in flight, each beating every ${fmt(med.tickMs)} ms for ${fmt(med.ticksPerStep)} ticks (target: under 10 % slower)${from}`,
    '',
    'Chunks alternate between the two shapes on one engine; the writer flushes every step that beat since its last flush in one statement a second.',
    '',
    '| plain | heartbeating | heartbeating ÷ plain | heartbeats | writer statements | statements per heartbeat | commits per workflow, plain / heartbeating |',
    '|---|---|---|---|---|---|---|',
    `| ${fmt(med.plainWfPerSec, 1)} wf/s | ${fmt(med.heartbeatWfPerSec, 1)} wf/s | ${fmt(med.ratioHeartbeatOverPlain, 3)} | ${fmt(med.heartbeats)} | ${fmt(med.writerStatements)} | ${fmt(med.statementsPerHeartbeat, 5)} | ${fmt(med['commitsPerWorkflow.plain'], 2)} / ${fmt(med['commitsPerWorkflow.heartbeat'], 2)} |`,
    '',
  ];
}

/** bench/transactions.ts (issue 35): transactional steps ÷ plain steps, each inserting one application row. */
function transactionsTable(entry, from) {
  const med = entry.medians;
  const out = [
    `### Transactional steps against plain steps (3 steps, one application row each; ownership ${entry.runs[0].ownership ?? 'none'})${from}`,
    '',
    'A transactional step commits its row with its record: its BEGIN rides with the body’s first statement, and the record, ' +
      'its check and the COMMIT go in one round trip, with what the code did after the step (the end, for the last one: decision 0043). ' +
      'A plain step inserts apart (one commit), through the app’s TypeORM DataSource (the transactional body’s data layer) or a bare node-pg pool, and its record is group-committed apart. ' +
      'Chunks of the two alternate after a warm-up; the ratio is the median over chunk pairs (its range beside it), then the ratio of the sums. ' +
      'CPU: this process, and the server’s backends for the bench’s database.',
    '',
    '| in flight | plain (node-pg) | plain (TypeORM) | transactional | transactional ÷ plain (TypeORM), median of rounds (range) | transactional ÷ plain (node-pg), median of rounds (range) | ratio of sums, TypeORM / node-pg | commits per workflow, plain / transactional | round trips per workflow, plain / transactional | CPU ms per workflow, Node plain / plain TypeORM / transactional | CPU ms per workflow, server plain / plain TypeORM / transactional |',
    '|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (let i = 0; med[`rows[${i}].inFlight`] !== undefined; i++) {
    const r = (k) => med[`rows[${i}].${k}`];
    const pair = (k, d = 2) => `${fmt(r(`${k}.plain`), d)} / ${fmt(r(`${k}.transactional`), d)}`;
    const three = (k, d) => `${fmt(r(`${k}.plain`), d)} / ${fmt(r(`${k}.plainTypeorm`), d)} / ${fmt(r(`${k}.transactional`), d)}`;
    const range = (k) => (r(`${k}[0]`) === undefined ? '' : ` (${fmt(r(`${k}[0]`), 2)}–${fmt(r(`${k}[1]`), 2)})`);
    out.push(
      `| ${fmt(r('inFlight'))} | ${fmt(r('plainWfPerSec'))} wf/s | ${fmt(r('plainTypeormWfPerSec'))} wf/s | ${fmt(r('transactionalWfPerSec'))} wf/s | ${fmt(r('ratioTransactionalOverPlainTypeorm'), 2)}${range('pairedRatioRangeTypeorm')} | ${fmt(r('ratioTransactionalOverPlain'), 2)}${range('pairedRatioRange')} | ${fmt(r('ratioOfSumsTypeorm'), 2)} / ${fmt(r('ratioOfSums'), 2)} | ${pair('commitsPerWorkflow')} | ${pair('roundTripsPerWorkflow')} | ${three('nodeCpuMsPerWorkflow', 3)} | ${three('serverCpuMsPerWorkflow', 3)} |`,
    );
  }
  return [...out, ''];
}

/** bench/talk-latency.ts (issue 37): getEvent and stream entries reaching a reader, ÷ a bare NOTIFY; one stream to many SSE clients. */
function talkTable(entry, from) {
  const med = entry.medians;
  const ms = (k) => `${fmt(med[k], 2)} ms`;
  const row = (name, p) =>
    `| ${name} | ${ms(`${p}.getEventWakeMs.p50`)} | ${ms(`${p}.getEventWakeMs.p99`)} | ${fmt(med[`${p}.ratioToBareNotify.getEventP50`], 1)} / ${fmt(med[`${p}.ratioToBareNotify.getEventP99`], 1)} | ${ms(`${p}.streamWriteToReadMs.p50`)} | ${ms(`${p}.streamWriteToReadMs.p99`)} | ${fmt(med[`${p}.ratioToBareNotify.streamP50`], 1)} / ${fmt(med[`${p}.ratioToBareNotify.streamP99`], 1)} | ${fmt(med[`${p}.ratioToCommitNotify.getEventP50`], 1)} / ${fmt(med[`${p}.ratioToCommitNotify.streamP50`], 1)} |`;
  const sse = (name, p) =>
    `| ${name} | ${fmt(med['sse.entries'])} | ${fmt(med['sse.clients'])} | ${fmt(med[`sse.${p}.ms`])} ms | ${fmt(med[`sse.${p}.entriesPerSecPerClient`])} | ${entry.runs.every((r) => r.sse?.[p]?.allComplete) ? 'yes' : 'no'} |`;
  return [
    `### Events and streams: how soon a reader sees them (targets: p50 under 5 ms, p99 under 20 ms)${from}`,
    '',
    `From the workflow's clock just before \`ctx.setEvent\` / \`ctx.writeStream\` to the waiting reader's. References in the same run: a bare NOTIFY round trip ${ms('bareNotifyMs.p50')} p50 / ${ms('bareNotifyMs.p99')} p99; an INSERT with a NOTIFY in one autocommit statement (a durable publish, WAL flush included) ${ms('commitNotifyMs.p50')} / ${ms('commitNotifyMs.p99')}.`,
    '',
    '| reader | getEvent p50 | p99 | ÷ bare NOTIFY p50 / p99 | stream entry p50 | p99 | ÷ bare NOTIFY p50 / p99 | p50 ÷ INSERT+NOTIFY p50, getEvent / stream |',
    '|---|---|---|---|---|---|---|---|',
    row('the writing engine', 'oneEngine'),
    row('another process', 'twoProcesses'),
    '',
    `A stream written from workflow code as fast as it goes (the writer took ${fmt(med['sse.writerMs'])} ms), read over HTTP server-sent events by clients at once (in the server's process):`,
    '',
    '| read | entries | clients | until the last client’s end | entries/s per client | every client got every entry once, in order |',
    '|---|---|---|---|---|---|',
    sse('live (connected before the writes)', 'live'),
    sse('catching up (the finished stream from 0)', 'catchUp'),
    '',
  ];
}

/** bench/timer-lateness.ts: fire minus due at 1 and N parked runs, per ownership mode. */
function timerLatenessTable(entry, from) {
  const med = entry.medians;
  const first = entry.runs[0];
  const parked = first.parked ?? 1000;
  const out = [
    `### Timer lateness (fire minus due, on the engine that owns the workflow, timerPollInterval 1 s)${from}`,
    '',
    `| ownership | 1 parked: p50 | p99 | ${fmt(parked)} parked: p50 | p99 |`,
    '|---|---|---|---|---|',
  ];
  (first.results ?? []).forEach((r, i) => {
    const f = (k) => fmt(med[`results[${i}].${k}`], 1);
    out.push(
      `| ${modeName(r.ownership)} | ${f('parked1.p50Ms')} ms | ${f('parked1.p99Ms')} ms | ${f(`parked${parked}.p50Ms`)} ms | ${f(`parked${parked}.p99Ms`)} ms |`,
    );
  });
  return [...out, ''];
}

// ---------------------------------------------------------------- the chart, hand-written SVG

export function chart(entry, date) {
  const levels = [...new Set(entry.runs[0].results.filter((r) => r.shape === 'noop3').map((r) => r.inFlight))].sort((a, b) => a - b);
  const modes = [...new Set(entry.runs[0].results.map((r) => r.mode))];
  const ceilingAt = (level) => median(entry.runs.map((r) => r.ceiling?.[level === 1 ? 'tps1' : 'tps16']));
  const series = [
    ...modes.map((mode, i) => ({
      name: `${mode} (steps/s)`,
      color: ['#1f77b4', '#d62728'][i] ?? '#2ca02c',
      dash: '',
      below: i === 1,
      points: levels.map((l) => rowMedian(entry, mode, 'noop3', l, 'stepsPerSec')),
      ratios: levels.map((l) => rowMedian(entry, mode, 'noop3', l, 'ofCeiling')),
    })),
    { name: 'ceiling (one-row INSERT commits/s)', color: '#555', dash: '6 4', below: false, points: levels.map(ceilingAt), ratios: [] },
  ];
  const W = 640;
  const H = 400;
  const L = 70;
  const R = 20;
  const T = 50;
  const B = 60;
  const max = Math.max(1, ...series.flatMap((s) => s.points.filter((p) => p !== undefined)));
  const step = 10 ** Math.floor(Math.log10(max / 5));
  const tick = [1, 2, 5, 10].map((k) => k * step).find((k) => max / k <= 6) ?? 10 * step;
  const top = Math.ceil(max / tick) * tick;
  const x = (i) => L + (levels.length === 1 ? (W - L - R) / 2 : (i * (W - L - R)) / (levels.length - 1));
  const y = (v) => T + (H - T - B) * (1 - v / top);
  const esc = (s) => String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;');
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="#fff"/>`,
    `<text x="${W / 2}" y="20" text-anchor="middle" font-size="14">Throughput by workflows in flight (3 no-op steps), ${esc(entry.runs[0]?.at?.slice(0, 10) ?? date)}</text>`,
  ];
  for (let v = 0; v <= top; v += tick)
    parts.push(
      `<line x1="${L}" x2="${W - R}" y1="${y(v)}" y2="${y(v)}" stroke="#e5e5e5"/>`,
      `<text x="${L - 6}" y="${y(v) + 4}" text-anchor="end">${fmt(v)}</text>`,
    );
  levels.forEach((l, i) => parts.push(`<text x="${x(i)}" y="${H - B + 18}" text-anchor="middle">${l}</text>`));
  parts.push(
    `<text x="${(L + W - R) / 2}" y="${H - B + 38}" text-anchor="middle">workflows in flight (64: against the 16-client ceiling)</text>`,
    `<text transform="translate(16 ${(T + H - B) / 2}) rotate(-90)" text-anchor="middle">per second</text>`,
    `<line x1="${L}" x2="${L}" y1="${T}" y2="${H - B}" stroke="#888"/>`,
    `<line x1="${L}" x2="${W - R}" y1="${H - B}" y2="${H - B}" stroke="#888"/>`,
  );
  for (const s of series) {
    const pts = s.points.map((p, i) => (p === undefined ? undefined : [x(i), y(p)])).filter(Boolean);
    parts.push(
      `<polyline fill="none" stroke="${s.color}" stroke-width="2"${s.dash ? ` stroke-dasharray="${s.dash}"` : ''} points="${pts.map((p) => p.join(',')).join(' ')}"/>`,
    );
    s.points.forEach((p, i) => {
      if (p === undefined) return;
      const label = s.dash ? fmt(p) : `${fmt(p)} (${fmt(s.ratios[i], 2)})`;
      // Last point: text to its left; the second mode's labels below its line, so they do not collide.
      const last = i === levels.length - 1;
      const dy = s.below ? 16 : -6;
      parts.push(
        `<circle cx="${x(i)}" cy="${y(p)}" r="3" fill="${s.color}"/>`,
        `<text x="${x(i) + (last ? -6 : 6)}" y="${y(p) + dy}" fill="${s.color}"${last ? ' text-anchor="end"' : ''}>${label}</text>`,
      );
    });
  }
  series.forEach((s, i) => {
    const ly = T + 4 + i * 16;
    parts.push(
      `<line x1="${L + 12}" x2="${L + 40}" y1="${ly}" y2="${ly}" stroke="${s.color}" stroke-width="2"${s.dash ? ` stroke-dasharray="${s.dash}"` : ''}/>`,
      `<text x="${L + 46}" y="${ly + 4}">${esc(s.name)}</text>`,
    );
  });
  parts.push(
    `<text x="${W - R}" y="${H - 8}" text-anchor="end" fill="#666">in brackets: steps/s ÷ ceiling of the same run; medians of ${entry.runs.length} run(s)</text>`,
    '</svg>',
    '',
  );
  return parts.join('\n');
}
