// `random` source: words on a timer, for demos and load. It cannot pause, so a saturated
// pipeline counts its entries as `dropped_entries`.

import type { Entry, Level } from '../core/entry.js';
import { pluginConfig } from '../core/plugin-config.js';
import type { PluginSpec } from '../config/spec.js';
import type { Source, SourceFactory } from './types.js';

interface RandomConfig {
  readonly interval_ms: number;
  readonly entries_per_tick: number;
  readonly length: number;
  readonly count: number;
}

const WORDS = 'lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut labore et dolore magna aliqua'.split(' ');
const LEVELS: Level[] = ['DEBUG', 'INFO', 'INFO', 'INFO', 'WARN', 'ERROR'];

export const RANDOM_SOURCE: PluginSpec = {
  doc: 'generates lorem-ipsum entries with random levels (the demo; load tests)',
  fields: {
    interval_ms: { t: 'number', def: 500, int: true, min: 1, doc: 'time between ticks' },
    entries_per_tick: { t: 'number', def: 1, int: true, min: 1, unit: 'entries', doc: 'entries made per tick' },
    length: { t: 'number', def: 20, int: true, min: 1, unit: 'words', doc: 'message length' },
    count: { t: 'number', def: 0, int: true, min: 0, unit: 'entries', doc: 'stop after this many; 0 = endless' },
  },
};

export const createRandomSource: SourceFactory = (plugin, ctx): Source => {
  const cfg = pluginConfig<RandomConfig>('source', plugin, RANDOM_SOURCE.fields);
  const counters = { total_entries: 0, dropped_entries: 0 };
  let timer: NodeJS.Timeout | undefined;
  let produced = 0;

  const tick = () => {
    let n = cfg.entries_per_tick;
    if (cfg.count > 0) n = Math.min(n, cfg.count - produced);
    const now = Date.now();
    const batch: Entry[] = [];
    for (let i = 0; i < n; i++) {
      const words: string[] = [];
      for (let w = 0; w < cfg.length; w++) words.push(WORDS[Math.floor(Math.random() * WORDS.length)]!);
      batch.push({ time: now, source: 'random', level: LEVELS[Math.floor(Math.random() * LEVELS.length)]!, message: words.join(' ') });
    }
    produced += n;
    counters.total_entries += n;
    ctx.emit(batch);
    if (cfg.count > 0 && produced >= cfg.count && timer) {
      clearInterval(timer);
      timer = undefined;
    }
  };

  return {
    id: plugin.id,
    type: 'random',
    counters,
    pausable: false,
    start() {
      timer ??= setInterval(tick, cfg.interval_ms);
    },
    async stop() {
      if (timer) clearInterval(timer);
      timer = undefined;
    },
  };
};
