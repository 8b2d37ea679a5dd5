// npm run bench: runs every benchmark, prints their JSON and writes bench/results/<date>.json.
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const benches = [
  ['throughput.ts', ['2000']],
  ['parked-heap.ts', [process.env.BENCH_PARKED ?? '100000']],
  ['renewal.ts', []],
];
const results = [];
for (const [file, args] of benches) {
  const out = execFileSync(
    process.execPath,
    ['--expose-gc', '-r', path.join(__dirname, 'register.js'), path.join(__dirname, file), ...args],
    {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
      maxBuffer: 64 * 1024 * 1024,
    },
  );
  process.stdout.write(out);
  results.push(JSON.parse(out));
}
const dir = path.join(__dirname, 'results');
fs.mkdirSync(dir, { recursive: true });
const file = path.join(dir, `${new Date().toISOString().slice(0, 10)}.json`);
fs.writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
process.stderr.write(`wrote ${file}\n`);
