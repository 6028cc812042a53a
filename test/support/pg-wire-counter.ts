/**
 * A TCP relay between Postgres clients and the real server that reads the frontend side of the wire protocol and
 * counts what each client asks for: statements (an Execute of the extended protocol, or a simple Query) and round
 * trips (a Sync or a simple Query: each waits for the server's ReadyForQuery). Bytes pass through untouched; the
 * server is the real one. Connections ask for no TLS on loopback (the relay answers an SSLRequest with 'N').
 */
import net from 'node:net';

export interface WireCounts {
  statements: number;
  roundTrips: number;
}

export interface PgWireCounter {
  /** `postgres://...` of the real server with the host and port of the relay. */
  url(databaseUrl: string): string;
  /** What every connection through the relay asked for so far. */
  counts(): WireCounts;
  close(): Promise<void>;
}

const SSL_REQUEST = 80877103;
const GSS_REQUEST = 80877104;

/** Counts one client's frontend messages as they stream past. */
class FrontendReader {
  private buffer = Buffer.alloc(0);
  private started = false;

  constructor(private readonly totals: WireCounts, private readonly answerClient: (bytes: Buffer) => void) {}

  /** Answers the bytes to forward to the server (an SSLRequest is answered here and not forwarded). */
  read(chunk: Buffer): Buffer {
    this.buffer = Buffer.concat([this.buffer, chunk]);
    const forward: Buffer[] = [];
    for (;;) {
      if (!this.started) {
        if (this.buffer.length < 8) break;
        const length = this.buffer.readInt32BE(0);
        if (this.buffer.length < length) break;
        const code = this.buffer.readInt32BE(4);
        const message = this.buffer.subarray(0, length);
        this.buffer = this.buffer.subarray(length);
        if (code === SSL_REQUEST || code === GSS_REQUEST) {
          this.answerClient(Buffer.from('N'));
          continue;
        }
        this.started = true; // the startup message
        forward.push(message);
        continue;
      }
      if (this.buffer.length < 5) break;
      const length = this.buffer.readInt32BE(1) + 1;
      if (this.buffer.length < length) break;
      const type = String.fromCharCode(this.buffer[0]);
      if (type === 'E') this.totals.statements++;
      if (type === 'Q') {
        this.totals.statements++;
        this.totals.roundTrips++;
      }
      if (type === 'S') this.totals.roundTrips++;
      forward.push(this.buffer.subarray(0, length));
      this.buffer = this.buffer.subarray(length);
    }
    return Buffer.concat(forward);
  }
}

export async function startPgWireCounter(databaseUrl: string): Promise<PgWireCounter> {
  const target = new URL(databaseUrl);
  const totals: WireCounts = { statements: 0, roundTrips: 0 };
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    sockets.add(client).add(upstream);
    const reader = new FrontendReader(totals, (bytes) => client.write(bytes));
    client.on('data', (chunk) => {
      const forward = reader.read(chunk);
      if (forward.length > 0) upstream.write(forward);
    });
    upstream.pipe(client);
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url(url) {
      const through = new URL(url);
      through.hostname = '127.0.0.1';
      through.port = String(port);
      return through.toString();
    },
    counts: () => ({ ...totals }),
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
