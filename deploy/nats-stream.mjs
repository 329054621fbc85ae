// One-shot for the `nats` compose profile: creates (or updates) the JetStream stream the nats
// sinks publish to, as an operator would; logrelay's plugins never create streams. Debian ships
// no `nats` CLI, so this uses the same client library the node does.
//   NATS_SERVERS=nats://a:4222,nats://b:4222 NATS_STREAM=LOGS NATS_SUBJECTS='logs.>' NATS_REPLICAS=3 node deploy/nats-stream.mjs

import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';

const servers = (process.env.NATS_SERVERS ?? 'nats://nats-1:4222').split(',');
const name = process.env.NATS_STREAM ?? 'LOGS';
const subjects = (process.env.NATS_SUBJECTS ?? 'logs.>').split(',');
const replicas = Number(process.env.NATS_REPLICAS ?? '3');
// JetStream drops a message whose Nats-Msg-Id it saw within this window (ns): 2 minutes
const duplicate_window = 120_000_000_000;

const deadline = Date.now() + 60_000;
for (;;) {
  try {
    const nc = await connect({ servers });
    try {
      const jsm = await jetstreamManager(nc);
      const config = { name, subjects, num_replicas: replicas, duplicate_window, storage: 'file' };
      const info = await jsm.streams.add(config).catch(async (err) => {
        if (!/already in use|exists/i.test(String(err))) throw err;
        return jsm.streams.update(name, { subjects, duplicate_window });
      });
      console.log(`stream ${info.config.name}: subjects ${info.config.subjects.join(' ')}, replicas ${info.config.num_replicas}`);
      process.exit(0);
    } finally {
      await nc.close();
    }
  } catch (err) {
    // a new cluster takes a few seconds to elect its JetStream leader
    if (Date.now() > deadline) {
      console.error(`cannot create stream ${name}: ${err}`);
      process.exit(1);
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
}
