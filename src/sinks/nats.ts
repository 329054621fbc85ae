// `nats` sink (DESIGN.md §19): publishes entries to JetStream in batches, one message of NDJSON
// per batch (up to `max_batch_count` entries or `max_batch_bytes`, or what arrived within
// `flush_interval_ms`), with `Nats-Msg-Id` = the first entry's id + `+` + the count, so the
// stream's duplicate window drops a batch sent again, and settles its entries on the server's
// publish acknowledgement. Up to `max_pending` batches are out at once (a window, not a round
// trip per message). Publishes go out with plain `nc.publish` and a reply subject per publish
// under one inbox subscription: no promise and no timer per batch; one sweep a few times per
// request_timeout_ms re-queues what went unanswered. A batch keeps its entries and its id through
// every retry. Streams are never created here.

import { createInbox, headers, type Msg, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import { HeldWaiters } from '../net/held-waiters.js';
import { createRequestLinkState } from '../net/link-state.js';
import { eachWireRun, encodeWire, type WireItem, wireItems } from '../core/entry-wire.js';
import { settle } from '../core/ack.js';
import { PluginError } from '../core/errors.js';
import type { OnFull } from '../core/queue.js';
import { sinkQueueFields } from '../core/plugin-config.js';
import type { PluginSpec } from '../config/spec.js';
import { BatchBuilder } from '../net/batch-builder.js';
import { type NatsConfig, natsBackoff, natsConfig, natsConnectOptions, natsFields, NatsLink } from '../nats/connection.js';
import type { Sink, SinkFactory, SinkItem } from './types.js';

interface NatsSinkConfig extends NatsConfig {
  readonly subject?: string;
  /** most batches awaiting their acknowledgement */
  readonly max_pending: number;
  readonly max_batch_count: number;
  readonly max_batch_bytes: number;
  readonly flush_interval_ms: number;
  readonly request_timeout_ms: number;
  readonly backoff_min_ms: number;
  readonly backoff_max_ms: number;
  readonly buffer_size: number;
  /** bound of the queue together with what the sink holds unacknowledged, bytes of formatted lines */
  readonly buffer_max_bytes: number;
  readonly on_full: OnFull;
}

/** One batch on its way: encoded once, published (again, the same bytes and id) until acknowledged. */
interface Publish {
  readonly items: readonly SinkItem[];
  /** the batch's chain lines, NDJSON without the last newline */
  readonly data: Uint8Array;
  readonly msgId: string | undefined;
  /** when it was last published, epoch ms */
  sentAt: number;
}

export const NATS_SINK: PluginSpec = {
  doc: 'publishes entries to a JetStream subject in batches (one NDJSON message each, `Nats-Msg-Id` = first entry id + `+` + count); delivered on the publish acknowledgement',
  fields: natsFields({
    subject: { t: 'string', nonEmpty: true, doc: 'subject to publish on; default `logrelay.<pipeline>`' },
    max_pending: { t: 'number', def: 1024, int: true, min: 1, unit: 'batches', doc: 'batches published and waiting for their acknowledgement at most' },
    max_batch_count: { t: 'number', def: 500, int: true, min: 1, unit: 'entries', doc: 'entries in one message at most' },
    max_batch_bytes: { t: 'number', def: 1048576, int: true, min: 1, doc: 'NDJSON bytes in one message at most (an entry larger than this goes alone)' },
    flush_interval_ms: { t: 'number', def: 50, int: true, min: 1, doc: 'a batch that is not full is published at most this long after its first entry arrived (at once while no batch awaits its acknowledgement)' },
    request_timeout_ms: { t: 'number', def: 5000, int: true, min: 1, doc: 'a batch not acknowledged within this is published again' },
    backoff_min_ms: { t: 'number', def: 250, int: true, min: 1, doc: 'first retry delay; doubles per failure' },
    backoff_max_ms: { t: 'number', def: 30000, int: true, min: 1, doc: 'longest retry delay' },
    ...sinkQueueFields('delivers'),
  }),
};

/** A batch's message: its chain lines (each with its `\n`) in one piece, but the last `\n`. */
function messageOf(items: readonly WireItem[]): Uint8Array {
  const runs: Buffer[] = [];
  eachWireRun(items, 0, items.length, (run) => runs.push(run));
  const all = runs.length === 1 ? runs[0]! : Buffer.concat(runs);
  return all.subarray(0, all.length - 1);
}

export const createNatsSink: SinkFactory = (plugin, ctx): Sink => {
  const cfg = natsConfig<NatsSinkConfig>('sink', plugin, NATS_SINK.fields);
  if (cfg.backoff_max_ms < cfg.backoff_min_ms) {
    throw new PluginError('sink', plugin.id, 'backoff_max_ms', `must be >= backoff_min_ms (${cfg.backoff_min_ms}), got ${cfg.backoff_max_ms}`);
  }
  const subject = cfg.subject ?? `logrelay.${ctx.pipeline}`;
  const counters = { connected: 0, reconnects: 0, unacked: 0, published: 0, retried: 0, retries: 0 };
  const log = ctx.log;
  const retryBackoff = natsBackoff(cfg.backoff_min_ms, cfg.backoff_max_ms);
  const linkBackoff = natsBackoff(cfg.backoff_min_ms, cfg.backoff_max_ms);
  const options = natsConnectOptions('sink', plugin.id, cfg, `logrelay ${ctx.node} ${ctx.pipeline}/${plugin.id}`, linkBackoff);

  /** published, awaiting the acknowledgement: reply token → batch (insertion order = send order) */
  let inflight = new Map<number, Publish>();
  let inflightEntries = 0;
  /** closed batches not yet published, and batches published without an acknowledgement (sent again first) */
  const queued: Publish[] = [];
  const retries: Publish[] = [];
  /** entries in `queued` and `retries` */
  let waitingEntries = 0;
  /** the batch being filled; a closed one becomes a message waiting to be published */
  const builder = new BatchBuilder<WireItem>({
    maxCount: cfg.max_batch_count,
    maxBytes: cfg.max_batch_bytes,
    flushMs: cfg.flush_interval_ms,
    close(items) {
      const first = items[0]!.entry.id;
      queued.push({ items, data: messageOf(items), msgId: first === undefined ? undefined : `${first}+${items.length}`, sentAt: 0 });
      waitingEntries += items.length;
    },
    flushed() {
      publishSome();
      update();
    },
  });
  /** entries not published yet: write() waits while a batch's worth of them waits */
  const unpublished = () => builder.length + waitingEntries;
  const held = () => unpublished() + inflightEntries;
  /** no batch out or waiting: what fills the next one goes at once */
  const idle = () => inflight.size === 0 && queued.length === 0 && retries.length === 0;
  const room = new HeldWaiters(unpublished, cfg.max_batch_count);
  const drained = new HeldWaiters(held, 1);
  let token = 0;
  let inbox = '';
  let nc: NatsConnection | undefined;
  let sub: Subscription | undefined;
  let retryTimer: NodeJS.Timeout | undefined;
  let sweepTimer: NodeJS.Timeout | undefined;
  let closing = false;
  /** a failure is logged once per outage, then at DEBUG */
  let failureLogged = false;
  /**
   * `connected` follows the publishes too: a live connection whose publishes keep failing (no
   * stream takes the subject, no acknowledgement) for backoff_max_ms is a link down
   */
  const delivery = createRequestLinkState(counters, log, cfg.servers.join(','), 'NATS publish', cfg.backoff_max_ms);

  const update = () => {
    counters.unacked = held();
    room.wake(closing);
    drained.wake(closing);
  };

  /** Publishes what waits, retries first, while fewer than max_pending batches await their ack. */
  const publishSome = () => {
    if (!nc || !link.up || retryTimer) return;
    const now = Date.now();
    while (inflight.size < cfg.max_pending) {
      const from = retries.length > 0 ? retries : queued;
      const pub = from.shift();
      if (pub === undefined) break;
      const h = headers();
      if (pub.msgId !== undefined) h.set('Nats-Msg-Id', pub.msgId);
      const t = ++token;
      try {
        nc.publish(subject, pub.data, { reply: `${inbox}.${t}`, headers: h });
      } catch {
        from.unshift(pub);
        break;
      }
      pub.sentAt = now;
      inflight.set(t, pub);
      waitingEntries -= pub.items.length;
      inflightEntries += pub.items.length;
    }
  };

  /** Unacknowledged batches wait a backoff before going out again; `moved`: entries sent again. */
  const failed = (reason: string, moved: number, level: 'error' | 'warn') => {
    counters.retried += moved;
    counters.retries++;
    const fields = { subject, error: reason, unacked: held() };
    if (!closing) delivery.failed({ error: reason });
    if (failureLogged || closing) log.debug(fields, 'NATS publish failed, retrying');
    else log[level](fields, 'NATS publish failed, retrying');
    failureLogged = true;
    if (retryTimer) return;
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      publishSome();
    }, retryBackoff.next());
  };

  /** An in-flight batch goes back among the retries (it keeps its entries and its id). */
  const retryLater = (t: number, pub: Publish) => {
    inflight.delete(t);
    inflightEntries -= pub.items.length;
    retries.push(pub);
    waitingEntries += pub.items.length;
  };

  const onReply = (err: Error | null, msg: Msg) => {
    if (err) return;
    const t = Number(msg.subject.slice(msg.subject.lastIndexOf('.') + 1));
    const pub = inflight.get(t);
    if (!pub) return; // answered after it timed out and went out again
    const text = msg.data.length > 0 ? msg.string() : '';
    // a PubAck starts {"stream"…; anything else is a status (503: no stream takes the subject) or an error
    if (text.startsWith('{"stream"') && !text.includes('"error"')) {
      inflight.delete(t);
      inflightEntries -= pub.items.length;
      counters.published += pub.items.length;
      delivery.succeeded();
      failureLogged = false;
      retryBackoff.reset();
      for (const item of pub.items) settle(item.ticket);
      // the link is idle: what fills the next batch goes now, not flush_interval_ms after it began
      if (idle()) builder.close();
    } else {
      retryLater(t, pub);
      const code = msg.headers?.code ?? 0;
      failed(code === 503 ? `no stream takes subject ${subject} (the operator creates streams)` : text || `status ${code} ${msg.headers?.description ?? ''}`, pub.items.length, 'error');
    }
    update();
    publishSome();
  };

  /** Batches unanswered for request_timeout_ms go out again (oldest first). */
  const sweep = () => {
    if (inflight.size === 0) return;
    const old = Date.now() - cfg.request_timeout_ms;
    let moved = 0;
    for (const [t, pub] of inflight) {
      if (pub.sentAt > old) break;
      retryLater(t, pub);
      moved += pub.items.length;
    }
    if (moved > 0) failed(`no publish acknowledgement within request_timeout_ms (${cfg.request_timeout_ms} ms)`, moved, 'warn');
  };

  /** What was in flight when the connection changed is sent again (its acks may be lost). */
  const requeueInflight = () => {
    if (inflight.size === 0) return;
    let moved = 0;
    for (const [t, pub] of inflight) {
      retryLater(t, pub);
      moved += pub.items.length;
    }
    inflight = new Map();
    counters.retried += moved;
  };

  const link = new NatsLink({
    options,
    backoff: linkBackoff,
    log,
    counters,
    onUp(conn, fresh) {
      if (fresh) {
        nc = conn;
        inbox = createInbox();
        sub = conn.subscribe(`${inbox}.*`, { callback: onReply });
      }
      requeueInflight();
      publishSome();
    },
  });

  return {
    id: plugin.id,
    type: 'nats',
    counters,
    bufferSize: cfg.buffer_size,
    bufferMaxBytes: cfg.buffer_max_bytes,
    onFull: cfg.on_full,
    settles: true,
    carriesIds: true,
    sendsWire: true,
    linkUp: () => link.up,
    linkDown: () => link.down,
    open() {
      if (ctx.checkOnly) return Promise.resolve();
      link.start();
      sweepTimer = setInterval(sweep, Math.max(50, Math.min(1000, cfg.request_timeout_ms / 4)));
      sweepTimer.unref();
      return Promise.resolve();
    },
    write(batch) {
      // the chain lines, written straight into bytes (shared with the pipeline's chain sinks)
      const items = wireItems(batch);
      encodeWire(items, 0, items.length, Date.now(), ctx.pipeline);
      for (const item of items) builder.add(item, item.wireEnd - item.wireAt);
      // an idle link publishes at once (as http_chain does); while batches await their
      // acknowledgement, the next one fills until its count, bytes or flush_interval_ms
      builder.settle(idle() && link.up, !ctx.checkOnly);
      publishSome();
      counters.unacked = held();
      return room.whenRoom(closing);
    },
    held,
    async close(deadline) {
      closing = true;
      builder.close();
      publishSome();
      update();
      if (held() > 0 && !ctx.checkOnly) await drained.emptyBy(deadline);
      clearTimeout(retryTimer);
      builder.stop();
      clearInterval(sweepTimer);
      retryTimer = undefined;
      sub?.unsubscribe();
      delivery.close();
      await link.close(deadline);
    },
  };
};
