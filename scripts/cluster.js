// npm run start:cluster: three demo engines on ports 3000-3002 sharing one (embedded) database.
// Kill one (kill -9 <pid>) and watch the others take its workflows over (GET /weft/workflows/:id/ownership).
import { spawn } from 'node:child_process';
import path from 'node:path';

const main = path.join(import.meta.dirname, '..', 'dist', 'src', 'main.js');
const children = [0, 1, 2].map((i) => {
  const env = { ...process.env, PORT: String(3000 + i), WEFT_ENGINE_ID: `engine-${i + 1}` };
  const child = spawn(process.execPath, [main], { env, stdio: ['ignore', 'inherit', 'inherit'] });
  process.stdout.write(`engine-${i + 1}: pid ${child.pid}, http://127.0.0.1:${3000 + i}\n`);
  return child;
});
const stop = () => children.forEach((c) => c.kill('SIGTERM'));
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
