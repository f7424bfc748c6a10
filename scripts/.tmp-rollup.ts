import { createPool, queueStatsRollup } from '@spool/engine';
const db = createPool({ connectionString: process.argv[2]! });
const limit = Number(process.argv[3] ?? 500);
const started = performance.now();
let events = 0, runs = 0, rows = 0;
const times: number[] = [];
for (;;) {
  const t0 = performance.now();
  const r = await queueStatsRollup(db, limit);
  times.push(performance.now() - t0);
  events += r.events; rows += r.rows; runs++;
  if (!r.full) break;
}
const ms = performance.now() - started;
times.sort((a, b) => a - b);
console.log({ runs, rows, events, ms: Math.round(ms), eventsPerSecond: Math.round(events / (ms / 1000)), medianRunMs: Math.round(times[Math.floor(times.length / 2)]!), maxRunMs: Math.round(times.at(-1)!) });
await db.end();
