// `nats` source (DESIGN.md §19): pulls from a durable JetStream consumer and acknowledges each
// message only once its entries are done (every sink delivered them or dropped them with a
// count, DESIGN.md §15). A message is one JSON entry (as other producers send) or NDJSON lines
// (a logrelay sink's batch); several nodes on one durable consumer share the messages. A fetch
// asks for about four `buffer_size`s of entries' worth of messages (from the running mean of entries per
// message); while the pipeline is saturated no fetch is made. The client hands fetched messages
// over as an async iterator (one resolved promise per message: the library's API, there is no
// callback for fetch); everything else, decoding, emit and the acks' bookkeeping, is synchronous
// and per batch.

import { AckPolicy, type Consumer, DeliverPolicy, jetstream, jetstreamManager, type JsMsg } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { decodeEntry } from '../core/entry-line.js';
import { CHAIN_SOURCE_BUFFER_SIZE } from '../net/source-config.js';
import { doneBy } from '../core/ack.js';
import type { Entry } from '../core/entry.js';
import { errorMessage } from '../core/errors.js';
import type { PluginSpec } from '../config/spec.js';
import { type NatsConfig, natsBackoff, natsConfig, natsConnectOptions, natsFields, NatsLink } from '../nats/connection.js';
import type { Source, SourceFactory } from './types.js';

interface NatsSourceConfig extends NatsConfig {
  readonly stream: string;
  readonly durable: string;
  readonly filter_subject?: string;
  /** the consumer's bound on messages delivered and not yet acknowledged (all its nodes together) */
  readonly max_ack_pending: number;
  /** most messages per fetch and per emitted batch */
  readonly buffer_size: number;
}

/**
 * A fetch asks for this many `buffer_size`s of entries: one pull request is a round trip to the
 * server, and batches of a few hundred entries per message made a fetch of one buffer's worth
 * carry only two messages (the pipeline's saturation still stops the next fetch).
 */
const FETCH_ENTRIES_PER_BUFFER = 4;

/**
 * How long one fetch waits for messages on an idle stream (the client's minimum is 1 s). The
 * client ends a fetch that missed two idle heartbeats (expires / 2 each) and drops what the server
 * sends it after that: such messages come again only after the consumer's ack wait (30 s). With
 * 2 s, a three-server stream on two busy cores missed heartbeats a few times in ten runs of a
 * million entries (ERROR `NATS pull failed, retrying`, "heartbeats missed"); 10 s leaves room for a
 * server or an event loop seconds late, and a fetch still returns as soon as it has its messages.
 */
const FETCH_EXPIRES_MS = 10_000;

export const NATS_SOURCE: PluginSpec = {
  doc: 'pulls entries from a JetStream durable consumer; each message is acknowledged once its entry is delivered by every sink',
  fields: natsFields({
    stream: { t: 'string', required: true, nonEmpty: true, doc: 'the JetStream stream to read' },
    durable: { t: 'string', required: true, nonEmpty: true, doc: 'durable consumer name; nodes on the same one share the messages' },
    filter_subject: { t: 'string', nonEmpty: true, doc: 'only messages on this subject; default all of the stream' },
    max_ack_pending: { t: 'number', def: 1000, int: true, min: 1, unit: 'messages', doc: 'messages delivered but not yet acknowledged at most' },
    buffer_size: CHAIN_SOURCE_BUFFER_SIZE,
  }),
};

export const createNatsSource: SourceFactory = (plugin, ctx): Source => {
  const cfg = natsConfig<NatsSourceConfig>('source', plugin, NATS_SOURCE.fields);
  const counters = { total_entries: 0, dropped_entries: 0, connected: 0, reconnects: 0, parse_errors: 0, unacked: 0 };
  const log = ctx.log;
  const linkBackoff = natsBackoff(250, 30000);
  const pullBackoff = natsBackoff(250, 30000);
  const options = natsConnectOptions('source', plugin.id, cfg, `logrelay ${ctx.pipeline}/${plugin.id}`, linkBackoff);
  /** entries per message, a running mean: a fetch asks for about FETCH_ENTRIES_PER_BUFFER buffers' worth of messages */
  let perMessage = 1;
  const fetchMax = () => Math.max(1, Math.min(cfg.max_ack_pending, Math.floor((FETCH_ENTRIES_PER_BUFFER * cfg.buffer_size) / perMessage)));

  let started = false;
  let stopping = false;
  let paused = false;
  /** wakes the pull loop: resume(), stop(), a new connection, or the end of a backoff */
  let wake: (() => void) | undefined;
  let loop: Promise<void> | undefined;
  let fetching: { stop(): void } | undefined;
  /** a failure is logged at ERROR once per outage, then at DEBUG */
  let failureLogged = false;
  /** a stopping source waits for what it emitted to be done */
  let drained: (() => void) | undefined;

  let batch: Entry[] = [];
  let msgs: JsMsg[] = [];
  let flushScheduled = false;

  const ackAll = (done: readonly JsMsg[]) => {
    for (const m of done) {
      try {
        m.ack();
      } catch {
        // connection closed: the server sends it again after its ack wait
      }
    }
    counters.unacked -= done.length;
    if (drained && counters.unacked === 0) drained();
  };

  const flush = () => {
    flushScheduled = false;
    if (batch.length === 0) return;
    const entries = batch;
    const done = msgs;
    batch = [];
    msgs = [];
    counters.total_entries += entries.length;
    counters.unacked += done.length;
    ctx.emit(entries, () => ackAll(done));
  };

  /** A message's entries go into one emitted batch: it is acknowledged once they are all done. */
  const onMessage = (m: JsMsg) => {
    // Node's own UTF-8 decoder, on the payload's bytes as they are: TextDecoder (m.string()) took
    // twice as long
    const text = Buffer.from(m.data.buffer, m.data.byteOffset, m.data.byteLength).toString('utf8');
    const now = Date.now();
    let taken = 0;
    let at = 0;
    // one JSON object (other producers), or NDJSON lines (a logrelay sink's batch)
    while (at < text.length) {
      let end = text.indexOf('\n', at);
      if (end < 0) end = text.length;
      if (end > at) {
        const entry = decodeEntry(text.slice(at, end), undefined, now, ctx.pipeline);
        if (entry) {
          batch.push(entry);
          taken++;
        } else counters.parse_errors++;
      }
      at = end + 1;
    }
    perMessage += (Math.max(1, taken) - perMessage) / 8;
    if (taken === 0) {
      if (text.length === 0) counters.parse_errors++;
      m.ack();
      return;
    }
    msgs.push(m);
    if (batch.length >= cfg.buffer_size) flush();
    else if (!flushScheduled) {
      flushScheduled = true;
      setImmediate(flush);
    }
  };

  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const t = setTimeout(() => {
        wake = undefined;
        resolve();
      }, ms);
      wake = () => {
        clearTimeout(t);
        wake = undefined;
        resolve();
      };
    });

  const failure = (what: string, err: unknown) => {
    const fields = { stream: cfg.stream, durable: cfg.durable, error: errorMessage(err) };
    if (failureLogged || stopping) log.debug(fields, what);
    else log.error(fields, what);
    failureLogged = true;
  };

  /** The durable consumer: created when missing, its settings brought to the config's otherwise. */
  const consumerOn = async (nc: NatsConnection): Promise<Consumer> => {
    const jsm = await jetstreamManager(nc);
    const settings = { max_ack_pending: cfg.max_ack_pending, ...(cfg.filter_subject ? { filter_subject: cfg.filter_subject } : {}) };
    try {
      await jsm.consumers.add(cfg.stream, { durable_name: cfg.durable, ack_policy: AckPolicy.Explicit, deliver_policy: DeliverPolicy.All, ...settings });
    } catch (err) {
      // it exists with other settings (another node's older config, or a change): update
      if (!/already exists|exists/i.test(errorMessage(err))) throw err;
      await jsm.consumers.update(cfg.stream, cfg.durable, settings);
    }
    return jetstream(nc).consumers.get(cfg.stream, cfg.durable);
  };

  const pullLoop = async () => {
    let consumer: { nc: NatsConnection; c: Consumer } | undefined;
    while (!stopping) {
      const nc = link.connection;
      if (!nc || !link.up || paused || ctx.isSaturated()) {
        await sleep(paused || ctx.isSaturated() ? 100 : 1000);
        continue;
      }
      try {
        if (consumer?.nc !== nc) consumer = { nc, c: await consumerOn(nc) };
        const it = await consumer.c.fetch({ max_messages: fetchMax(), expires: FETCH_EXPIRES_MS });
        fetching = it;
        for await (const m of it) onMessage(m);
        fetching = undefined;
        flush();
        failureLogged = false;
        pullBackoff.reset();
      } catch (err) {
        fetching = undefined;
        flush();
        consumer = undefined;
        failure('NATS pull failed, retrying', err);
        await sleep(pullBackoff.next());
      }
    }
  };

  const link = new NatsLink({
    options,
    backoff: linkBackoff,
    log,
    counters,
    onUp: () => wake?.(),
  });

  return {
    id: plugin.id,
    type: 'nats',
    counters,
    pausable: true,
    acksUpstream: true,
    start() {
      if (started || ctx.checkOnly) return;
      started = true;
      link.start();
      loop = pullLoop();
    },
    pause() {
      paused = true;
    },
    resume() {
      paused = false;
      wake?.();
    },
    async stop(deadline = Date.now()) {
      if (stopping) return;
      stopping = true;
      fetching?.stop();
      wake?.();
      await loop;
      flush();
      // what was emitted drains on and is acknowledged as it is done, until the deadline
      if (counters.unacked > 0) {
        await doneBy(deadline, (wake) => (drained = wake));
        drained = undefined;
      }
      await link.close(deadline);
    },
  };
};
