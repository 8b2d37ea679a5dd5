import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { makeTempDir, REPO_ROOT } from './support/node-ts.js';

// The README's `npm ci && npm test` on a machine that has neither Chromium nor PostgreSQL
// (docs/decisions/0015-npm-test-prepares-the-machine.md): `npm test` prepares the machine itself
// (scripts/prepare-tests.js, its pretest), and CI runs exactly that command. The installs are
// checked against a stand-in apt-get on a scratch path; the full check on a fresh clone is in the
// decision record.

const SCRIPT = path.join(REPO_ROOT, 'scripts', 'prepare-tests.js');

/**
 * A directory holding a stand-in `apt-get` that logs its arguments and, on install, creates
 * `chromium`, and a password-less `sudo` (used when the test does not run as root).
 */
function fakeApt(dir: string, chromium: string): string {
  const bin = path.join(dir, 'bin');
  fs.mkdirSync(bin);
  const log = path.join(dir, 'apt.log');
  fs.writeFileSync(
    path.join(bin, 'apt-get'),
    `#!/bin/sh\necho "$*" >> ${log}\nif [ "$2" = "-y" ]; then echo '#!/bin/sh' > ${chromium}; /bin/chmod +x ${chromium}; fi\n`,
    { mode: 0o755 },
  );
  fs.writeFileSync(path.join(bin, 'sudo'), '#!/bin/sh\nshift\nexec "$@"\n', { mode: 0o755 });
  return bin;
}

function prepare(env: Record<string, string>, chromium: string) {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== 'CHROME_PATH')) as Record<string, string>;
  const res = spawnSync(process.execPath, [SCRIPT, '--chromium-at', chromium], { env: { ...clean, ...env }, encoding: 'utf8' });
  return { status: res.status, stderr: res.stderr };
}

describe('npm test prepares a fresh machine', () => {
  it('is what the README says to run, and what CI runs: npm ci && npm test, with the preparation in pretest', () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    expect(pkg.scripts.pretest).toBe('node scripts/prepare-tests.js');
    expect(fs.readFileSync(path.join(REPO_ROOT, 'README.md'), 'utf8')).toContain('npm ci && npm test');
    const ci = fs.readFileSync(path.join(REPO_ROOT, '.ci', 'run'), 'utf8');
    // CI may start the machine's PostgreSQL first, but prepares nothing else the README's command lacks.
    const commands = ci.split('\n').filter((l) => /^\s*(npm|npx|apt-get|export CHROME_PATH)\b/.test(l) || /apt-get install/.test(l));
    expect(commands.map((l) => l.trim())).toEqual(['npm ci --no-audit --no-fund', 'npm test']);
  });

  it('installs Debian chromium with apt-get when it is missing and this user may', () => {
    const dir = makeTempDir('weft-prepare-');
    const chromium = path.join(dir, 'chromium');
    const bin = fakeApt(dir, chromium);
    const res = prepare({ PATH: `${bin}:/usr/bin:/bin` }, chromium);
    expect([res.status, res.stderr]).toEqual([0, expect.stringContaining('installing Debian')]);
    expect(fs.readFileSync(path.join(dir, 'apt.log'), 'utf8').trim().split('\n')).toEqual(['update -qq', 'install -y -qq chromium']);
    expect(fs.existsSync(chromium)).toBe(true);

    // Present: nothing to do, nothing run.
    fs.rmSync(path.join(dir, 'apt.log'));
    expect(prepare({ PATH: `${bin}:/usr/bin:/bin` }, chromium)).toEqual({ status: 0, stderr: '' });
    expect(fs.existsSync(path.join(dir, 'apt.log'))).toBe(false);
  });

  it('stops before the suite with the command to run when it cannot install', () => {
    const dir = makeTempDir('weft-prepare-');
    const chromium = path.join(dir, 'chromium');
    fs.mkdirSync(path.join(dir, 'empty'));
    const res = prepare({ PATH: path.join(dir, 'empty') }, chromium); // no apt-get, no sudo
    expect(res.status).toBe(1);
    expect(res.stderr).toContain(`no Chromium at ${chromium}`);
    expect(res.stderr).toContain('run "sudo apt-get install chromium" (Debian), or set CHROME_PATH');

    const named = prepare({ PATH: path.join(dir, 'empty'), CHROME_PATH: path.join(dir, 'nope') }, chromium);
    expect([named.status, named.stderr]).toEqual([
      1,
      expect.stringContaining(`CHROME_PATH is ${path.join(dir, 'nope')}, which does not exist`),
    ]);
  });
});
