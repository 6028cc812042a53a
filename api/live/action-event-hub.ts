/**
 * One `LISTEN action_events` connection per API process, shared by every live-progress stream of the process. The
 * notification says only which action moved; each stream then reads the action's log (`action_events`) after the
 * last event it sent, so a missed or coalesced notification loses nothing. When the connection drops, every stream
 * is woken (it reads what it missed) and the connection is made again. The connection has the pool's settings
 * (TCP keepalive after 10 s), so a database that vanished is noticed without a query.
 */
import { Client } from 'pg';
import type { DataSource } from 'typeorm';
import { CONNECTION_SETTINGS } from '../../src/db/data-source';
import { log } from '../../src/log';

export const ACTION_EVENTS_CHANNEL = 'action_events';

/**
 * 15 s: under the API's own idle deadline (`HTTP_IDLE_TIMEOUT_SECONDS`, 30 s) and the usual proxies' and load
 * balancers' 60 s, so an idle stream is never cut; and a dead client is noticed within two heartbeats.
 */
export const HEARTBEAT_MS = 15_000;

/** What a stream asks of the hub: to be woken when its action may have new events, and to be ended at shutdown. */
export interface EventSubscriber {
  wake(): void;
  end(): void;
}

export class ActionEventHub {
  private readonly subscribers = new Map<number, Set<EventSubscriber>>();
  private client: Client | undefined;
  private connecting: Promise<void> | undefined;
  private closed = false;
  private retryTimer: NodeJS.Timeout | undefined;

  /** `heartbeatMs`: how often each stream sends its heartbeat comment (`HEARTBEAT_MS`; tests shorten it). */
  constructor(private readonly connectionString: string, readonly heartbeatMs = HEARTBEAT_MS) {}

  static forDataSource(db: DataSource, heartbeatMs?: number): ActionEventHub {
    return new ActionEventHub((db.options as { url: string }).url, heartbeatMs);
  }

  /** Streams open in this process. */
  get size(): number {
    let n = 0;
    for (const set of this.subscribers.values()) n += set.size;
    return n;
  }

  /** Registers `subscriber` for `actionId` once the process listens (so nothing committed after this is missed). */
  async subscribe(actionId: number, subscriber: EventSubscriber): Promise<() => void> {
    if (this.closed) throw new Error('the live-progress hub is closed');
    await this.listening();
    let set = this.subscribers.get(actionId);
    if (!set) this.subscribers.set(actionId, (set = new Set()));
    set.add(subscriber);
    return () => {
      const current = this.subscribers.get(actionId);
      current?.delete(subscriber);
      if (current?.size === 0) this.subscribers.delete(actionId);
    };
  }

  /** Ends every stream and the LISTEN connection (process shutdown). */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retryTimer);
    for (const set of [...this.subscribers.values()]) for (const s of [...set]) s.end();
    this.subscribers.clear();
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }

  private listening(): Promise<void> {
    if (this.client) return Promise.resolve();
    this.connecting ??= this.connect().finally(() => { this.connecting = undefined; });
    return this.connecting;
  }

  private async connect(): Promise<void> {
    const client = new Client({ connectionString: this.connectionString, ...CONNECTION_SETTINGS, application_name: 'imagery-live-progress' });
    client.on('notification', (msg) => {
      const actionId = Number(msg.payload);
      for (const s of this.subscribers.get(actionId) ?? []) s.wake();
    });
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client, new Error('connection ended')));
    await client.connect();
    await client.query(`LISTEN ${ACTION_EVENTS_CHANNEL}`);
    if (this.closed) {
      await client.end().catch(() => undefined);
      throw new Error('the live-progress hub is closed');
    }
    this.client = client;
  }

  private lost(client: Client, err: Error): void {
    if (this.client !== client || this.closed) return;
    this.client = undefined;
    log.warn('the live-progress LISTEN connection was lost; listening again', { error: err.message });
    client.end().catch(() => undefined);
    const again = () => {
      if (this.closed) return;
      this.listening().then(
        () => { for (const set of this.subscribers.values()) for (const s of set) s.wake(); }, // what was missed meanwhile
        () => { this.retryTimer = setTimeout(again, 1000); this.retryTimer.unref(); },
      );
    };
    again();
  }
}
