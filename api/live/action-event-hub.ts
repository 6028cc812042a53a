/**
 * One `LISTEN action_events` connection per API process, shared by every live-progress stream of the process. The
 * notification says only which action moved; each stream then reads the action's log (`action_events`) after the
 * last event it sent, so a missed or coalesced notification loses nothing. When the connection drops, it is made
 * again (after 1 s, doubling to 30 s, with jitter) and every stream is woken to read what it missed, spread over up
 * to 5 s so that ten thousand streams do not query at once. The connection has the pool's settings (TCP keepalive
 * after 10 s), so a database that vanished is noticed without a query.
 *
 * The dashboard's overview follows a whole account (`subscribeAccount`): the actions announced are gathered for
 * ACCOUNT_WAKE_MS and their accounts read in one statement on the same connection, however many accounts are followed,
 * and then each followed account that moved is woken once.
 *
 * The hub also keeps the process's stream limits (`LiveStreamLimits`): streams per API key (and per dashboard user),
 * streams in all, and how long one stream lives. And it ends a key's streams when the key is revoked: told on the same connection
 * (`KEY_REVOKED_CHANNEL`), and, after a reconnect, by asking which keys of the open streams were revoked meanwhile.
 */
import { Client } from 'pg';
import type { DataSource } from 'typeorm';
import { CONNECTION_SETTINGS, databaseUrlOf } from '../../src/db/data-source';
import { DEFAULT_LIVE_STREAM_LIMITS, type LiveStreamLimits } from '../../src/config';
import { log } from '../../src/log';
import { AppError, generationUnavailable } from '../../src/errors';
import { KEY_REVOKED_CHANNEL } from '../../src/accounts/accounts';

export const ACTION_EVENTS_CHANNEL = 'action_events';

/** Retry-After of a process that holds as many streams as it may. */
const STREAMS_BUSY_RETRY_AFTER_SECONDS = 5;
/** After a reconnect, the streams' catch-up reads are spread over this long at most (1 ms per stream). */
const MAX_WAKE_SPREAD_MS = 5_000;
const RETRY_MS = { first: 1_000, max: 30_000 };
/** Streams one dashboard user may hold open in one process (a browser's tabs: overviews and action details). */
export const DASHBOARD_STREAMS_PER_USER = 10;
/** Actions announced within this long are resolved to their accounts together, for the streams that follow accounts. */
const ACCOUNT_WAKE_MS = 250;

/** What a stream asks of the hub: to be woken when its action may have new events, and to be ended at shutdown. */
export interface EventSubscriber {
  wake(): void;
  end(): void;
}

export class ActionEventHub {
  private readonly subscribers = new Map<number, Set<EventSubscriber>>();
  /** The open streams of each API key id. */
  private readonly ofKeys = new Map<number, Set<EventSubscriber>>();
  /** Streams open (or being opened) per API key id. */
  private readonly perKey = new Map<number, number>();
  /** The streams that follow a whole account (the dashboard's), by account id. */
  private readonly ofAccounts = new Map<number, Set<EventSubscriber>>();
  /** Account streams open (or being opened) per dashboard user id. */
  private readonly perUser = new Map<number, number>();
  /** Actions announced since the accounts' streams were last woken. */
  private readonly moved = new Set<number>();
  private accountWake: NodeJS.Timeout | undefined;
  private open = 0;
  private client: Client | undefined;
  private connecting: Promise<void> | undefined;
  private closed = false;
  private retryTimer: NodeJS.Timeout | undefined;
  private retryMs = RETRY_MS.first;

  constructor(private readonly connectionString: string, readonly limits: LiveStreamLimits = DEFAULT_LIVE_STREAM_LIMITS) {}

  static forDataSource(db: DataSource, limits?: LiveStreamLimits): ActionEventHub {
    return new ActionEventHub(databaseUrlOf(db), limits);
  }

  /** Streams open in this process. */
  get size(): number {
    return this.open;
  }

  /**
   * Registers `subscriber` for `actionId` once the process listens (so nothing committed after this is missed), as
   * one of `keyId`'s streams. Refused, before anything is held: 429 `too_many_streams` when the key holds
   * `limits.perKey` streams in this process, 503 when the process holds `limits.perProcess`.
   */
  subscribe(actionId: number, keyId: number, subscriber: EventSubscriber): Promise<() => void> {
    return this.followAsKey(keyId, this.subscribers, actionId, subscriber);
  }

  /**
   * Registers `subscriber` to be woken when any action of `accountId` may have moved (at most once per
   * ACCOUNT_WAKE_MS), as one of API key `keyId`'s streams (a batch's progress), counted, refused and ended as the
   * key's other streams are (see `subscribe`).
   */
  subscribeAccountAsKey(accountId: number, keyId: number, subscriber: EventSubscriber): Promise<() => void> {
    return this.followAsKey(keyId, this.ofAccounts, accountId, subscriber);
  }

  /** One of an API key's streams, following `id` in `map` (an action's, or an account's): see `subscribe`. */
  private async followAsKey(keyId: number, map: Map<number, Set<EventSubscriber>>, id: number, subscriber: EventSubscriber): Promise<() => void> {
    const uncount = this.count(this.perKey, keyId, this.limits.perKey, 'This API key holds', 'the most one key may');
    try {
      await this.listening();
    } catch (err) {
      uncount();
      throw err;
    }
    addTo(map, id, subscriber);
    addTo(this.ofKeys, keyId, subscriber);
    const unsubscribe = () => {
      uncount();
      removeFrom(map, id, subscriber);
      removeFrom(this.ofKeys, keyId, subscriber);
    };
    // A revocation announced before the stream was registered (while it waited for the connection, or before the
    // connection listened) is not announced again: asked once, now that a later one would end it.
    try {
      if (await this.keyRevoked(keyId)) throw new AppError(401, 'invalid_api_key', 'The API key is invalid or revoked');
    } catch (err) {
      unsubscribe();
      throw err;
    }
    return unsubscribe;
  }

  /**
   * Registers `subscriber` to be woken when any action of `accountId` may have moved (at most once per
   * ACCOUNT_WAKE_MS), as one of dashboard user `userId`'s streams (see `followAs`).
   */
  subscribeAccount(accountId: number, userId: number, subscriber: EventSubscriber): Promise<() => void> {
    return this.followAs(userId, this.ofAccounts, accountId, subscriber);
  }

  /** Registers `subscriber` for `actionId`, as one of dashboard user `userId`'s streams (see `followAs`). */
  subscribeActionAs(actionId: number, userId: number, subscriber: EventSubscriber): Promise<() => void> {
    return this.followAs(userId, this.subscribers, actionId, subscriber);
  }

  /**
   * A dashboard user's stream (the session guard checked the user on connect; the stream is short-lived and
   * reconnects through it): at most DASHBOARD_STREAMS_PER_USER per user (a browser's tabs), within the process's limit.
   */
  private async followAs(userId: number, map: Map<number, Set<EventSubscriber>>, id: number, subscriber: EventSubscriber): Promise<() => void> {
    const uncount = this.count(this.perUser, userId, DASHBOARD_STREAMS_PER_USER, 'This dashboard user holds', 'the most one user may');
    try {
      await this.listening();
    } catch (err) {
      uncount();
      throw err;
    }
    addTo(map, id, subscriber);
    return () => {
      uncount();
      removeFrom(map, id, subscriber);
    };
  }

  /**
   * Counts a stream of `holder` (a key or a user) before anything is held, refusing it with 429 `too_many_streams`
   * when the holder has `limit` streams in this process, 503 when the process holds `limits.perProcess`; answers
   * the uncount (idempotent). Counted before waiting for the LISTEN connection, so that streams opened together
   * cannot pass the limits.
   */
  private count(counts: Map<number, number>, holder: number, limit: number, holds: string, most: string): () => void {
    if (this.closed) throw new Error('the live-progress hub is closed');
    const held = counts.get(holder) ?? 0;
    if (held >= limit) {
      throw new AppError(429, 'too_many_streams', `${holds} ${held} live-progress streams open, ${most}; close one first`,
        { limit }, { 'Retry-After': String(STREAMS_BUSY_RETRY_AFTER_SECONDS) });
    }
    if (this.open >= this.limits.perProcess) {
      throw generationUnavailable('The server holds as many live-progress streams as it can; try again shortly, or poll', STREAMS_BUSY_RETRY_AFTER_SECONDS);
    }
    counts.set(holder, held + 1);
    this.open++;
    let counted = true;
    return () => {
      if (!counted) return;
      counted = false;
      this.open--;
      const left = (counts.get(holder) ?? 1) - 1;
      if (left === 0) counts.delete(holder);
      else counts.set(holder, left);
    };
  }

  /** Ends every stream and the LISTEN connection (process shutdown). */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retryTimer);
    clearTimeout(this.accountWake);
    for (const map of [this.subscribers, this.ofAccounts]) for (const set of [...map.values()]) for (const s of [...set]) s.end();
    this.subscribers.clear();
    this.ofAccounts.clear();
    this.ofKeys.clear();
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
      if (msg.channel === KEY_REVOKED_CHANNEL) return this.endKeyStreams(Number(msg.payload));
      const actionId = Number(msg.payload);
      for (const s of this.subscribers.get(actionId) ?? []) s.wake();
      if (this.ofAccounts.size > 0) this.noteMoved(actionId);
    });
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client, new Error('connection ended')));
    try {
      await client.connect();
      await client.query(`LISTEN ${ACTION_EVENTS_CHANNEL}; LISTEN ${KEY_REVOKED_CHANNEL}`);
      if (this.closed) throw new Error('the live-progress hub is closed');
    } catch (err) {
      await client.end().catch(() => undefined); // a client that connected but could not listen is not kept open
      throw err;
    }
    this.client = client;
    this.retryMs = RETRY_MS.first;
  }

  private lost(client: Client, err: Error): void {
    if (this.client !== client || this.closed) return;
    this.client = undefined;
    log.warn('the live-progress LISTEN connection was lost; listening again', { error: err.message });
    client.end().catch(() => undefined);
    const again = () => {
      if (this.closed) return;
      this.listening().then(
        () => {
          this.wakeAll(); // what was missed meanwhile
          setImmediate(() => void this.endRevokedKeysStreams()); // and keys revoked meanwhile (after the streams that waited are in)
        },
        (failure: Error) => {
          const delay = this.retryMs * (0.5 + Math.random() / 2);
          this.retryMs = Math.min(this.retryMs * 2, RETRY_MS.max);
          log.warn('listening for live progress failed; trying again', { error: failure.message, retryInMs: Math.round(delay) });
          this.retryTimer = setTimeout(again, delay);
          this.retryTimer.unref();
        },
      );
    };
    again();
  }

  /** Gathers an announced action for the accounts' streams, woken together ACCOUNT_WAKE_MS after the first. */
  private noteMoved(actionId: number): void {
    this.moved.add(actionId);
    this.accountWake ??= setTimeout(() => void this.wakeAccounts(), ACCOUNT_WAKE_MS);
  }

  /** Wakes the streams of the accounts whose actions were announced, read in one statement. */
  private async wakeAccounts(): Promise<void> {
    const ids = [...this.moved];
    this.moved.clear();
    try {
      const client = this.client;
      if (!client || this.closed) return; // a reconnect wakes every stream anyway
      const { rows } = await client.query<{ account_id: number }>('SELECT DISTINCT account_id FROM actions WHERE id = ANY($1::int[])', [ids]);
      for (const { account_id: accountId } of rows) for (const s of this.ofAccounts.get(accountId) ?? []) s.wake();
    } catch (err) {
      log.warn('could not tell the dashboard\'s streams which accounts moved', { error: (err as Error).message });
    } finally {
      this.accountWake = undefined;
      if (this.moved.size > 0 && !this.closed) this.accountWake = setTimeout(() => void this.wakeAccounts(), ACCOUNT_WAKE_MS); // announced meanwhile
    }
  }

  private async keyRevoked(keyId: number): Promise<boolean> {
    const client = this.client;
    if (!client) return false; // the connection was lost meanwhile: the reconnect asks for every open stream's key
    const { rows } = await client.query('SELECT 1 FROM api_keys WHERE id = $1 AND revoked_at IS NOT NULL', [keyId]);
    return rows.length > 0;
  }

  /** Ends every open stream of the key (it was revoked). */
  private endKeyStreams(keyId: number): void {
    for (const s of [...(this.ofKeys.get(keyId) ?? [])]) s.end();
  }

  /** Ends the streams of keys revoked while the connection was away. */
  private async endRevokedKeysStreams(): Promise<void> {
    const client = this.client;
    if (!client || this.ofKeys.size === 0) return;
    try {
      const { rows } = await client.query<{ id: number }>('SELECT id FROM api_keys WHERE id = ANY($1) AND revoked_at IS NOT NULL', [[...this.ofKeys.keys()]]);
      for (const { id } of rows) this.endKeyStreams(id);
    } catch (err) {
      log.warn('could not check the live streams\' keys after a reconnect', { error: (err as Error).message });
    }
  }

  /** Wakes every stream, spread over up to MAX_WAKE_SPREAD_MS (1 ms per stream) so that their reads do not all come at once. */
  private wakeAll(): void {
    const spreadMs = Math.min(MAX_WAKE_SPREAD_MS, this.open);
    for (const set of [...this.subscribers.values(), ...this.ofAccounts.values()]) {
      for (const s of set) setTimeout(() => { if (!this.closed) s.wake(); }, Math.random() * spreadMs).unref();
    }
  }
}

function addTo<K>(map: Map<K, Set<EventSubscriber>>, key: K, subscriber: EventSubscriber): void {
  let set = map.get(key);
  if (!set) map.set(key, (set = new Set()));
  set.add(subscriber);
}

function removeFrom<K>(map: Map<K, Set<EventSubscriber>>, key: K, subscriber: EventSubscriber): void {
  const set = map.get(key);
  set?.delete(subscriber);
  if (set?.size === 0) map.delete(key);
}
