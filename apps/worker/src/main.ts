import 'reflect-metadata';
import { WeftEngine } from '@weft/nest';

/** Headless engine process for multi-process tests and the chaos harness; configured by environment. */
async function main(): Promise<void> {
  const engine = await WeftEngine.create({
    database: process.env.DATABASE_URL ? { url: process.env.DATABASE_URL } : undefined,
    schema: process.env.WEFT_SCHEMA ?? 'weft',
    engineId: process.env.WEFT_ENGINE_ID,
  });
  await engine.bootstrap();
  process.stdout.write(`${JSON.stringify({ ready: true, engineId: engine.engineId })}\n`);
  const stop = () => void engine.dispose().then(() => process.exit(0));
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error)?.stack ?? String(err)}\n`);
  process.exit(1);
});
