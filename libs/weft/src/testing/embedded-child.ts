// The embedded test server in a process of its own: `node embedded-child.js <dataDir>`, spawned by
// embedded-in-child.ts when the test process cannot load the embedded server's ES modules (jest's
// CommonJS runtime before Node 24.9). Prints one JSON line, `{ url }` or `{ error }`, then holds
// the server until its stdin ends (the kit's release, or the test process gone) and stops it.
import { startEmbeddedPostgres } from '../storage/embedded/embedded-postgres.js';

const say = (o: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(o)}\n`);

async function main(): Promise<void> {
  const dataDir = process.argv[2];
  if (!dataDir) throw new Error('usage: embedded-child.js <dataDir>');
  const handle = await startEmbeddedPostgres({ dataDir });
  say({ url: handle.url });
  const stop = () => void handle.stop().finally(() => process.exit(0));
  process.stdin.on('end', stop);
  process.stdin.on('close', stop);
  process.stdin.resume();
}

main().catch((err: unknown) => {
  const e = err as { name?: string; code?: string; message?: string };
  say({ error: { name: e.name, code: e.code, message: e.message ?? String(err) } });
  process.exit(1);
});
