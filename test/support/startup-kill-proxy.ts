// A TCP proxy in front of the test server that, when armed, ends the next connection to open the
// way a server shutting down can: its backend is terminated (pg_terminate_backend) as its startup
// completes, and the client receives the server's ReadyForQuery and its FATAL ErrorResponse
// (57P01) in one chunk, so node-pg parses both in the same 'data' event. Every other connection
// is passed through untouched.
import net from 'node:net';
import pg from 'pg';

/** The server's messages in `buf` (type byte + int32 length), as far as they are complete. */
function messages(buf: Buffer): { type: string; body: Buffer }[] {
  const out: { type: string; body: Buffer }[] = [];
  for (let at = 0; at + 5 <= buf.length;) {
    const len = buf.readInt32BE(at + 1);
    if (at + 1 + len > buf.length) break;
    out.push({ type: String.fromCharCode(buf[at]!), body: buf.subarray(at + 5, at + 1 + len) });
    at += 1 + len;
  }
  return out;
}

export class StartupKillProxy {
  private readonly server: net.Server;
  private readonly sockets = new Set<net.Socket>();
  private armed = 0;
  /** Connections ended at startup so far. */
  killed = 0;

  private constructor(
    private readonly target: URL,
    private readonly adminUrl: string,
  ) {
    this.server = net.createServer((client) => this.accept(client));
  }

  /** Listens on a free local port in front of `url`'s server; `adminUrl` terminates backends. */
  static async start(url: string, adminUrl: string): Promise<StartupKillProxy> {
    const proxy = new StartupKillProxy(new URL(url), adminUrl);
    await new Promise<void>((resolve) => proxy.server.listen(0, '127.0.0.1', resolve));
    return proxy;
  }

  /** `url` with its host and port replaced by the proxy's. */
  url(url: string): string {
    const u = new URL(url);
    u.hostname = '127.0.0.1';
    u.port = String((this.server.address() as net.AddressInfo).port);
    return u.toString();
  }

  /** The next `n` connections to open are ended at startup. */
  arm(n = 1): void {
    this.armed += n;
  }

  private accept(client: net.Socket): void {
    const upstream = net.connect(Number(this.target.port || 5432), this.target.hostname);
    for (const s of [client, upstream]) {
      this.sockets.add(s);
      s.on('error', () => undefined);
      s.on('close', () => {
        this.sockets.delete(s);
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    if (this.armed === 0) return void upstream.pipe(client);
    this.armed--;
    let held = Buffer.alloc(0);
    let terminating = false;
    upstream.on('data', (chunk: Buffer) => {
      held = Buffer.concat([held, chunk]);
      const seen = messages(held);
      const ready = seen.findIndex((m) => m.type === 'Z');
      if (ready < 0) return;
      if (!terminating) {
        terminating = true;
        const pid = seen.find((m) => m.type === 'K')!.body.readInt32BE(0);
        void this.terminate(pid);
      }
      if (seen.slice(ready).some((m) => m.type === 'E')) {
        this.killed++;
        client.end(held);
        upstream.destroy();
      }
    });
  }

  private async terminate(pid: number): Promise<void> {
    const admin = new pg.Client({ connectionString: this.adminUrl });
    admin.on('error', () => undefined);
    await admin.connect();
    try {
      await admin.query('SELECT pg_terminate_backend($1)', [pid]);
    } finally {
      await admin.end();
    }
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
