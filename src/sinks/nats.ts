// `nats` sink (DESIGN.md §19): publishes each entry to JetStream as its JSON object, with the
// entry id as `Nats-Msg-Id` so the stream's duplicate window drops resends, and settles it on
// the server's publish acknowledgement. Publishes go out with plain `nc.publish` and a reply
// subject per publish under one inbox subscription: per entry that is one buffered write and
// one map entry, no promise and no timer (what `js.publish` would cost); one sweep a few times
// per request_timeout_ms re-queues what went unanswered. At most `max_pending` publishes are
// unacknowledged; failed ones are sent again after a backoff. Streams are never created here.

import { createInbox, headers, type Msg, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import { HeldWaiters } from '../chain/held-waiters.js';
import { encodeEntry } from '../chain/protocol.js';
import { settle } from '../core/ack.js';
import { PluginError } from '../core/errors.js';
import { BoundedQueue, type OnFull } from '../core/queue.js';
import { SINK_QUEUE_FIELDS } from '../core/plugin-config.js';
import type { PluginSpec } from '../config/spec.js';
import { type NatsConfig, natsBackoff, natsConfig, natsConnectOptions, natsFields, NatsLink } from '../nats/connection.js';
import type { Sink, SinkFactory, SinkItem } from './types.js';

interface NatsSinkConfig extends NatsConfig {
  readonly subject?: string;
  /** most publishes awaiting their acknowledgement */
  readonly max_pending: number;
  readonly request_timeout_ms: number;
  readonly backoff_min_ms: number;
  readonly backoff_max_ms: number;
  readonly buffer_size: number;
  readonly on_full: OnFull;
}

/** One entry on its way: encoded once, published (again) until acknowledged. */
interface Publish {
  readonly item: SinkItem;
  readonly data: string;
  /** when it was last published, epoch ms */
  sentAt: number;
}

export const NATS_SINK: PluginSpec = {
  doc: 'publishes each entry as its JSON object to a JetStream subject, with `Nats-Msg-Id` = the entry id; delivered on the publish acknowledgement',
  fields: natsFields({
    subject: { t: 'string', nonEmpty: true, doc: 'subject to publish on; default `logrelay.<pipeline>`' },
    max_pending: { t: 'number', def: 1024, int: true, min: 1, unit: 'publishes', doc: 'publishes waiting for their acknowledgement at most' },
    request_timeout_ms: { t: 'number', def: 5000, int: true, min: 1, doc: 'a publish not acknowledged within this is sent again' },
    backoff_min_ms: { t: 'number', def: 250, int: true, min: 1, doc: 'first retry delay; doubles per failure' },
    backoff_max_ms: { t: 'number', def: 30000, int: true, min: 1, doc: 'longest retry delay' },
    ...SINK_QUEUE_FIELDS,
  }),
};

export const createNatsSink: SinkFactory = (plugin, ctx): Sink => {
  const cfg = natsConfig<NatsSinkConfig>('sink', plugin, NATS_SINK.fields);
  if (cfg.backoff_max_ms < cfg.backoff_min_ms) {
    throw new PluginError('sink', plugin.id, 'backoff_max_ms', `must be >= backoff_min_ms (${cfg.backoff_min_ms}), got ${cfg.backoff_max_ms}`);
  }
  const subject = cfg.subject ?? `logrelay.${ctx.pipeline}`;
  const counters = { connected: 0, reconnects: 0, unacked: 0, published: 0, retried: 0 };
  const log = ctx.log;
  const retryBackoff = natsBackoff(cfg.backoff_min_ms, cfg.backoff_max_ms);
  const linkBackoff = natsBackoff(cfg.backoff_min_ms, cfg.backoff_max_ms);
  const options = natsConnectOptions('sink', plugin.id, cfg, `logrelay ${ctx.node} ${ctx.pipeline}/${plugin.id}`, linkBackoff);

  /** published, awaiting the acknowledgement: reply token → publish (insertion order = send order) */
  let inflight = new Map<number, Publish>();
  /** taken by write(), not yet published */
  const queued = new BoundedQueue<Publish>(cfg.max_pending);
  /** published without an acknowledgement: sent again first */
  const retries = new BoundedQueue<Publish>(cfg.max_pending);
  const held = () => inflight.size + queued.length + retries.length;
  const waiters = new HeldWaiters(held, cfg.max_pending);
  let token = 0;
  let inbox = '';
  let nc: NatsConnection | undefined;
  let sub: Subscription | undefined;
  let retryTimer: NodeJS.Timeout | undefined;
  let sweepTimer: NodeJS.Timeout | undefined;
  let closing = false;
  /** a failure is logged once per outage, then at DEBUG */
  let failureLogged = false;
  const encodeOut = { completed: false };

  const update = () => {
    counters.unacked = held();
    waiters.wake(closing);
  };

  /** Publishes what is queued, retries first, while fewer than max_pending await their ack. */
  const publishSome = () => {
    if (!nc || !link.up || retryTimer) return;
    const now = Date.now();
    while (inflight.size < cfg.max_pending) {
      const from = retries.length > 0 ? retries : queued;
      if (from.length === 0) break;
      const [pub] = from.take(1);
      const h = headers();
      const id = pub!.item.entry.id;
      if (id !== undefined) h.set('Nats-Msg-Id', id);
      const t = ++token;
      try {
        nc.publish(subject, pub!.data, { reply: `${inbox}.${t}`, headers: h });
      } catch {
        retries.push(pub!);
        break;
      }
      pub!.sentAt = now;
      inflight.set(t, pub!);
    }
  };

  /** Unacknowledged publishes wait a backoff before going out again. */
  const failed = (reason: string, moved: number, level: 'error' | 'warn') => {
    counters.retried += moved;
    const fields = { subject, error: reason, unacked: held() };
    if (failureLogged || closing) log.debug(fields, 'NATS publish failed, retrying');
    else log[level](fields, 'NATS publish failed, retrying');
    failureLogged = true;
    if (retryTimer) return;
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      publishSome();
    }, retryBackoff.next());
  };

  const onReply = (err: Error | null, msg: Msg) => {
    if (err) return;
    const t = Number(msg.subject.slice(msg.subject.lastIndexOf('.') + 1));
    const pub = inflight.get(t);
    if (!pub) return; // answered after it timed out and went out again
    inflight.delete(t);
    const text = msg.data.length > 0 ? msg.string() : '';
    // a PubAck starts {"stream"…; anything else is a status (503: no stream takes the subject) or an error
    if (text.startsWith('{"stream"') && !text.includes('"error"')) {
      counters.published++;
      failureLogged = false;
      retryBackoff.reset();
      settle(pub.item.ticket);
    } else {
      retries.push(pub);
      const code = msg.headers?.code ?? 0;
      failed(code === 503 ? `no stream takes subject ${subject} (the operator creates streams)` : text || `status ${code} ${msg.headers?.description ?? ''}`, 1, 'error');
    }
    update();
    publishSome();
  };

  /** Publishes unanswered for request_timeout_ms go out again (oldest first). */
  const sweep = () => {
    if (inflight.size === 0) return;
    const old = Date.now() - cfg.request_timeout_ms;
    let moved = 0;
    for (const [t, pub] of inflight) {
      if (pub.sentAt > old) break;
      inflight.delete(t);
      retries.push(pub);
      moved++;
    }
    if (moved > 0) failed(`no publish acknowledgement within request_timeout_ms (${cfg.request_timeout_ms} ms)`, moved, 'warn');
  };

  /** What was in flight when the connection changed is sent again (its acks may be lost). */
  const requeueInflight = () => {
    if (inflight.size === 0) return;
    const old = inflight;
    inflight = new Map();
    for (const pub of old.values()) retries.push(pub);
    counters.retried += old.size;
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
    onFull: cfg.on_full,
    settles: true,
    carriesIds: true,
    linkUp: () => link.up,
    open() {
      if (ctx.checkOnly) return Promise.resolve();
      link.start();
      sweepTimer = setInterval(sweep, Math.max(50, Math.min(1000, cfg.request_timeout_ms / 4)));
      sweepTimer.unref();
      return Promise.resolve();
    },
    write(batch) {
      const now = Date.now();
      for (const item of batch) queued.push({ item, data: encodeEntry(item.entry, now, ctx.pipeline, encodeOut), sentAt: 0 });
      publishSome();
      counters.unacked = held();
      return waiters.whenRoom(closing);
    },
    held,
    async close(deadline) {
      closing = true;
      waiters.wake(closing);
      if (held() > 0 && !ctx.checkOnly) await waiters.emptyBy(deadline);
      clearTimeout(retryTimer);
      clearInterval(sweepTimer);
      retryTimer = undefined;
      sub?.unsubscribe();
      await link.close(deadline);
    },
  };
};
