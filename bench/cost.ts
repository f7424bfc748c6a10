/**
 * `npm run bench -- --cost [--jobs N] [--systems spool,graphile-worker]`:
 * per-job database cost of enqueue (single and bulk), claim and complete for
 * Spool and its peers, measured in the same harness (bench/systems/*). Unlike
 * jobs/s these figures do not depend on how busy the machine is: they count
 * what the database had to write and touch, not how long it took.
 *
 * Each phase starts from empty tables, a CHECKPOINT (so every system pays the
 * same full-page images for the pages it first touches) and reset statistics;
 * autovacuum is off so that no vacuum work lands inside a phase. Sources:
 *  - WAL: pg_current_wal_lsn() before/after, split by pg_walinspect into
 *    record bytes and full-page images;
 *  - rows and index entries written: pg_walinspect's per-block records mapped
 *    to relations (heap INSERT/UPDATE/HOT_UPDATE/DELETE, btree leaf inserts);
 *  - buffers, WAL and calls per statement: pg_stat_statements (track = top),
 *    classified by what the statement does (enqueue, claim, complete, request
 *    overhead such as authentication, background services, harness probes).
 * The "job life" summary (bench/lib/job-life.ts) adds a bulk enqueue and a
 * drain per job and compares them with pg-boss and graphile-worker.
 * Writes bench/results/cost.json and bench/results/cost.md.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import pg from 'pg';
import { startScratchPostgres } from '../test-support/scratch-postgres.js';
import { jobLives, renderJobLife } from './lib/job-life.js';
import { HOT_KEYS, renderKeyCost } from './lib/key-cost.js';
import { GraphileSystem } from './systems/graphile.js';
import { PgBossSystem } from './systems/pgboss.js';
import { SpoolSystem } from './systems/spool.js';
import type { BenchSystem } from './systems/system.js';

type Op = 'enqueue' | 'claim' | 'complete' | 'request' | 'background' | 'harness';

/** How each system's statements map to operations (first match wins; the rest is background). */
const CLASSIFY: Record<string, [Op, RegExp][]> = {
  spool: [
    // The harness's probe is an EXISTS on spool.jobs; the server's webhook dispatcher also
    // opens with SELECT EXISTS (webhook-dispatch-consumers.sql), and what it writes is Spool's.
    ['harness', /^\s*(SELECT (NOT )?EXISTS \(SELECT \$1 FROM spool\.jobs\b|ANALYZE|TRUNCATE|VACUUM|CHECKPOINT)/i],
    // pg_stat_statements shows normalized text (constants become $n), so match on structure.
    ['claim', /\bpicked AS \(/],
    ['complete', /AS t\(id, worker_id, lease_id, result\)/],
    ['enqueue', /INSERT INTO spool\.jobs/],
    // A job_key's lock and decision (job-key-lock.sql, job-key-resolve.sql).
    ['enqueue', /'spool\.job_key:'|\bidem AS \(/],
    ['request', /spool\.api_keys|spool\.organizations|^\s*(BEGIN|COMMIT|ROLLBACK)/i],
  ],
  'graphile-worker': [
    ['harness', /^\s*(SELECT (NOT )?EXISTS|ANALYZE|TRUNCATE|VACUUM|CHECKPOINT)/i],
    ['enqueue', /add_jobs?\(/],
    ['complete', /delete from .*_private_jobs/is],
    ['claim', /locked_by|get_job/i],
  ],
  'pg-boss': [
    ['harness', /^\s*(SELECT (NOT )?EXISTS|ANALYZE|TRUNCATE|VACUUM|CHECKPOINT)/i],
    // The foreign-key check on pgboss.queue runs once per inserted job.
    ['enqueue', /INSERT INTO pgboss\.job_common|FROM ONLY "pgboss"\."queue"/],
    ['complete', /^WITH results AS \( UPDATE pgboss\.job_common SET completed_on/],
    ['claim', /^WITH next AS/],
  ],
};

CLASSIFY['spool-grpc'] = CLASSIFY.spool!;

function classify(system: string, query: string): Op {
  for (const [op, re] of CLASSIFY[system] ?? []) if (re.test(query)) return op;
  return 'background';
}

interface StatementCost {
  op: Op;
  calls: number;
  rows: number;
  hit: number;
  read: number;
  dirtied: number;
  walRecords: number;
  walFpi: number;
  walBytes: number;
  query: string;
}

interface PhaseCost {
  system: string;
  phase: string;
  jobs: number;
  walBytes: number;
  walRecordBytes: number;
  walFpiBytes: number;
  /** Heap tuples written per relation and record type (INSERT, UPDATE, HOT_UPDATE, DELETE, LOCK). */
  heap: Record<string, Record<string, number>>;
  /** Btree leaf entries inserted per index. */
  indexEntries: Record<string, number>;
  /** WAL per record type (`Heap/UPDATE`, `Transaction/COMMIT`, ...): records, record bytes, full-page-image bytes. */
  walByType?: Record<string, { n: number; bytes: number; fpi: number }>;
  /** WAL block data and full-page images per relation (cluster-wide: another database's blocks are `other:<filenode>`). */
  walByRelation?: Record<string, { data: number; fpi: number }>;
  statements: StatementCost[];
}

const argv = process.argv.slice(2);
const flag = (name: string) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : undefined;
};
const JOBS = Number(flag('jobs') ?? 2000);
const SINGLE = Number(flag('single') ?? 400);
const only = flag('systems')?.split(',');

const BTREE_INSERTS = new Set(['INSERT_LEAF', 'INSERT_POST', 'SPLIT_L', 'SPLIT_R']);
const HEAP_WRITES = ['INSERT', 'UPDATE', 'HOT_UPDATE', 'DELETE', 'LOCK'];

class Meter {
  constructor(readonly system: string, readonly db: pg.Client) {}

  async start(): Promise<string> {
    // The reset (TRUNCATE, DELETE) wrote catalog rows whose hint bits are not
    // set yet; the first statement that reads them would set them and, with
    // data checksums on (PostgreSQL 18's default), write a full-page image of
    // each catalog page into the phase. A system with more relations paid more
    // of it, for work no job causes: read every catalog table here first.
    await this.db.query(`DO $$ DECLARE t regclass; BEGIN
      FOR t IN SELECT c.oid::regclass FROM pg_class c WHERE c.relnamespace = 'pg_catalog'::regnamespace AND c.relkind = 'r' LOOP
        EXECUTE format('SELECT count(*) FROM %s', t);
      END LOOP; END $$`);
    await this.db.query('CHECKPOINT');
    await this.db.query('SELECT pg_stat_statements_reset()');
    return (await this.db.query('SELECT pg_current_wal_lsn()::text AS lsn')).rows[0].lsn as string;
  }

  async stop(phase: string, jobs: number, startLsn: string): Promise<PhaseCost> {
    // Statements first: the queries below would otherwise count themselves.
    const s = await this.db.query(`
      SELECT query, calls::float8, rows::float8, shared_blks_hit::float8 AS hit, shared_blks_read::float8 AS read,
             shared_blks_dirtied::float8 AS dirtied, wal_records::float8 AS "walRecords", wal_fpi::float8 AS "walFpi", wal_bytes::float8 AS "walBytes"
      FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())`);
    const endLsn = (await this.db.query('SELECT pg_current_wal_lsn()::text AS lsn')).rows[0].lsn as string;
    const totals = await this.db.query(`
      SELECT coalesce(sum(record_size), 0)::float8 AS rec, coalesce(sum(fpi_size), 0)::float8 AS fpi, pg_wal_lsn_diff($2, $1)::float8 AS total
      FROM pg_get_wal_stats($1, $2, false)`, [startLsn, endLsn]);
    // One row per (record, block); a record counts once per relation it writes.
    const blocks = await this.db.query(`
      SELECT coalesce(pg_filenode_relation(b.reltablespace, b.relfilenode)::regclass::text, 'other:' || b.relfilenode) AS rel,
             b.resource_manager AS rmgr, split_part(b.record_type, '+', 1) AS type, count(DISTINCT b.start_lsn)::int AS n
      FROM pg_get_wal_block_info($1, $2, false) b
      WHERE b.reldatabase = (SELECT oid FROM pg_database WHERE datname = current_database()) AND b.relforknumber = 0
        AND b.resource_manager IN ('Heap', 'Btree')
      GROUP BY 1, 2, 3`, [startLsn, endLsn]);
    const types = await this.db.query(`
      SELECT resource_manager || '/' || split_part(record_type, '+', 1) AS type, count(*)::int AS n,
             sum(record_length - fpi_length)::float8 AS bytes, sum(fpi_length)::float8 AS fpi
      FROM pg_get_wal_records_info($1, $2) GROUP BY 1`, [startLsn, endLsn]);
    const relations = await this.db.query(`
      SELECT coalesce(CASE WHEN b.reldatabase = (SELECT oid FROM pg_database WHERE datname = current_database())
                           THEN pg_filenode_relation(b.reltablespace, b.relfilenode)::regclass::text END,
                      'other:' || b.relfilenode) AS rel,
             sum(b.block_data_length)::float8 AS data, sum(b.block_fpi_length)::float8 AS fpi
      FROM pg_get_wal_block_info($1, $2, false) b GROUP BY 1`, [startLsn, endLsn]);
    const walByType: NonNullable<PhaseCost['walByType']> = {};
    for (const r of types.rows as { type: string; n: number; bytes: number; fpi: number }[]) walByType[r.type] = { n: r.n, bytes: r.bytes, fpi: r.fpi };
    const walByRelation: NonNullable<PhaseCost['walByRelation']> = {};
    for (const r of relations.rows as { rel: string; data: number; fpi: number }[]) walByRelation[r.rel] = { data: r.data, fpi: r.fpi };
    const heap: PhaseCost['heap'] = {};
    const indexEntries: PhaseCost['indexEntries'] = {};
    for (const b of blocks.rows as { rel: string; rmgr: string; type: string; n: number }[]) {
      if (b.rmgr === 'Heap' && HEAP_WRITES.includes(b.type)) (heap[b.rel] ??= {})[b.type] = (heap[b.rel]?.[b.type] ?? 0) + b.n;
      if (b.rmgr === 'Btree' && BTREE_INSERTS.has(b.type)) indexEntries[b.rel] = (indexEntries[b.rel] ?? 0) + b.n;
    }
    const statements = (s.rows as Omit<StatementCost, 'op'>[])
      .filter((r) => !/pg_stat_statements|pg_current_wal_lsn|pg_get_wal/.test(r.query))
      .map((r) => {
        const query = r.query.replace(/--[^\n]*\n/g, ' ').replace(/\s+/g, ' ').trim();
        return { ...r, op: classify(this.system, query), query: query.slice(0, 140) };
      });
    const t = totals.rows[0];
    return { system: this.system, phase, jobs, walBytes: t.total, walRecordBytes: t.rec, walFpiBytes: t.fpi, heap, indexEntries, walByType, walByRelation, statements };
  }
}

async function phases(sys: BenchSystem, meter: Meter): Promise<PhaseCost[]> {
  const out: PhaseCost[] = [];
  const run = async (phase: string, jobs: number, prepare: () => Promise<void>, fn: () => Promise<unknown>) => {
    await sys.reset();
    await prepare();
    const lsn = await meter.start();
    await fn();
    const cost = await meter.stop(phase, jobs, lsn);
    out.push(cost);
    console.error(`  ${sys.name} ${phase}: ${(cost.walBytes / jobs).toFixed(0)} WAL bytes/job`);
  };
  await run('enqueue-single', SINGLE, async () => {}, () => sys.enqueueSingle(SINGLE, 8));
  await run('enqueue-bulk', JOBS, async () => {}, () => sys.enqueueBulk(JOBS, 1000));
  await run('drain', JOBS, () => sys.preload(JOBS, 1000), () => sys.drain(JOBS, 1));
  if (sys instanceof SpoolSystem && sys.name === 'spool') {
    // What a job_key costs per single enqueue (docs/jobs-api.md, "Job keys"), against enqueue-single:
    // dedupe of new keys (every call creates), dedupe of HOT_KEYS keys (all but HOT_KEYS calls find the job),
    // debounce of HOT_KEYS keys (all but HOT_KEYS calls move the waiting job); bench/lib/key-cost.ts compares them.
    await run('enqueue-dedupe-new', SINGLE, async () => {}, () => sys.enqueueSingleKeyed(SINGLE, 8, (i) => ({ key: `k${i}`, mode: 'dedupe' })));
    await run('enqueue-dedupe-hit', SINGLE, async () => {}, () => sys.enqueueSingleKeyed(SINGLE, 8, (i) => ({ key: `k${i % HOT_KEYS}`, mode: 'dedupe' })));
    await run('enqueue-debounce', SINGLE, async () => {}, () => sys.enqueueSingleKeyed(SINGLE, 8, (i) => ({ key: `k${i % HOT_KEYS}`, mode: 'debounce', window_secs: 60 })));
  }
  return out;
}

/** Per-job figures of one phase, optionally restricted to statements of some operations. */
export function perJob(c: PhaseCost, ops?: Op[]) {
  const st = c.statements.filter((s) => (ops ? ops.includes(s.op) : s.op !== 'harness' && s.op !== 'background'));
  const sum = (k: keyof StatementCost) => st.reduce((a, s) => a + (s[k] as number), 0) / c.jobs;
  return { calls: sum('calls'), hit: sum('hit'), read: sum('read'), dirtied: sum('dirtied'), walRecords: sum('walRecords'), walBytes: sum('walBytes'), walFpi: sum('walFpi') };
}

function heapRows(c: PhaseCost): number {
  let n = 0;
  for (const types of Object.values(c.heap)) for (const [t, v] of Object.entries(types)) if (t !== 'LOCK') n += v;
  return n / c.jobs;
}

function indexRows(c: PhaseCost): number {
  return Object.values(c.indexEntries).reduce((a, b) => a + b, 0) / c.jobs;
}

const f1 = (v: number) => (Math.abs(v) >= 100 ? Math.round(v).toLocaleString('en-US') : Math.abs(v) >= 1 || v === 0 ? v.toFixed(2) : v.toPrecision(2));

export function renderCost(all: PhaseCost[], context: string[]): string {
  const lines = ['# Per-job database cost', '', ...context, ''];
  lines.push('## Summary (per job)', '',
    '| system | phase | WAL bytes (all) | WAL bytes w/o FPI | rows written | index entries | statements | buffers hit | read | dirtied |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |');
  for (const c of all) {
    const p = perJob(c);
    lines.push(`| ${c.system} | ${c.phase} | ${f1(c.walBytes / c.jobs)} | ${f1(c.walRecordBytes / c.jobs)} | ${f1(heapRows(c))} | ${f1(indexRows(c))} | ${f1(p.calls)} | ${f1(p.hit)} | ${f1(p.read)} | ${f1(p.dirtied)} |`);
  }
  // The section ends with a blank line of its own; the next one starts with one.
  const life = renderJobLife(all);
  if (life.length) lines.push('', ...life.slice(0, -1));
  const keys = renderKeyCost(all);
  if (keys.length) lines.push('', ...keys.slice(0, -1));
  lines.push('', '## Drain split by operation (per job, pg_stat_statements)', '',
    '| system | operation | statements | buffers hit | dirtied | WAL records | WAL bytes |', '| --- | --- | --- | --- | --- | --- | --- |');
  for (const c of all.filter((x) => x.phase === 'drain')) {
    for (const op of ['claim', 'complete', 'request', 'background'] as Op[]) {
      const p = perJob(c, [op]);
      if (p.calls === 0) continue;
      lines.push(`| ${c.system} | ${op} | ${f1(p.calls)} | ${f1(p.hit)} | ${f1(p.dirtied)} | ${f1(p.walRecords)} | ${f1(p.walBytes)} |`);
    }
  }
  lines.push('', '## Where the writes go (per job, from the WAL)', '');
  for (const c of all) {
    const parts: string[] = [];
    for (const [rel, types] of Object.entries(c.heap).sort()) parts.push(`${rel} ${Object.entries(types).map(([t, v]) => `${t} ${f1(v / c.jobs)}`).join(', ')}`);
    const idx = Object.entries(c.indexEntries).sort().map(([rel, v]) => `${rel} ${f1(v / c.jobs)}`);
    lines.push(`- **${c.system} ${c.phase}**: heap: ${parts.join('; ') || 'none'}. Index entries: ${idx.join(', ') || 'none'}.`);
  }
  lines.push('', '## A drain\'s WAL by record type and by relation (per job, from pg_walinspect)', '',
    'Bytes per job; "fpi" are full-page images. Record types and relations under 5 bytes per job are left out.', '');
  for (const c of all.filter((x) => x.phase === 'drain' && x.walByType)) {
    const byType = Object.entries(c.walByType!).map(([t, v]) => [t, (v.bytes + v.fpi) / c.jobs, v] as const).filter(([, b]) => b >= 5).sort((a, b) => b[1] - a[1]);
    const byRel = Object.entries(c.walByRelation ?? {}).map(([r, v]) => [r, (v.data + v.fpi) / c.jobs, v] as const).filter(([, b]) => b >= 5).sort((a, b) => b[1] - a[1]);
    lines.push(`- **${c.system}**, by record type: ${byType.map(([t, b, v]) => `${t} ${f1(b)} (${f1(v.n / c.jobs)} records${v.fpi ? `, fpi ${f1(v.fpi / c.jobs)}` : ''})`).join('; ')}.`);
    lines.push(`  By relation (block data + fpi): ${byRel.map(([r, b, v]) => `${r} ${f1(b)}${v.fpi ? ` (fpi ${f1(v.fpi / c.jobs)})` : ''}`).join('; ')}.`);
  }
  lines.push('', '## Statements (per phase, costliest first by WAL)', '');
  for (const c of all) {
    lines.push(`### ${c.system} ${c.phase} (${c.jobs} jobs)`, '', '| op | calls | rows | hit | dirtied | WAL bytes | statement |', '| --- | --- | --- | --- | --- | --- | --- |');
    for (const s of [...c.statements].sort((a, b) => b.walBytes - a.walBytes || b.hit - a.hit).slice(0, 10)) {
      lines.push(`| ${s.op} | ${s.calls} | ${s.rows} | ${s.hit} | ${s.dirtied} | ${Math.round(s.walBytes)} | \`${s.query.replace(/\|/g, '\\|')}\` |`);
    }
    lines.push('');
  }
  return lines.join('\n');
}

export async function runCost(): Promise<void> {
  const startedAt = new Date();
  const loadStart = loadavg().map((l) => l.toFixed(2)).join(' ');
  const scratch = await startScratchPostgres({
    prefix: 'spool-cost-pg-',
    embeddedOnly: true,
    settings: { shared_preload_libraries: 'pg_stat_statements', 'pg_stat_statements.track': 'top', autovacuum: 'off' },
  });
  const all: PhaseCost[] = [];
  const make: [string, (url: string) => BenchSystem][] = [
    ['spool', (u) => new SpoolSystem(u)],
    ['spool-grpc', (u) => new SpoolSystem(u, 'grpc')],
    ['graphile-worker', (u) => new GraphileSystem(u)],
    ['pg-boss', (u) => new PgBossSystem(u)],
  ];
  try {
    for (const [name, ctor] of make.filter(([n]) => !only || only.includes(n))) {
      const url = await scratch.createDatabase(`cost_${name.replace(/-/g, '_')}`);
      const meterDb = new pg.Client({ connectionString: url });
      await meterDb.connect();
      await meterDb.query('CREATE EXTENSION pg_stat_statements; CREATE EXTENSION pg_walinspect');
      const sys = ctor(url);
      try {
        await sys.setup();
        console.error(`[cost] ${name}`);
        all.push(...(await phases(sys, new Meter(name, meterDb))));
      } finally {
        await sys.teardown().catch((err) => console.error(`[cost] ${name} teardown`, err));
        await meterDb.end();
      }
    }
    const version = (await scratch.admin.query('SHOW server_version')).rows[0].server_version;
    const context = [
      `Generated by \`npm run bench -- --cost${argv.filter((a) => a !== '--cost').length ? ' ' + argv.filter((a) => a !== '--cost').join(' ') : ''}\` on ${startedAt.toISOString()} (bench/cost.ts).`,
      `PostgreSQL ${version}, embedded, default durability, autovacuum off during the phases, CHECKPOINT before each phase.`,
      `Phases: enqueue-single = ${SINGLE} jobs from 8 concurrent callers; enqueue-bulk = ${JOBS} jobs in batches of 1,000; drain = claim + complete of ${JOBS} bulk-loaded jobs by one worker process (the systems' bench configurations, see BENCHMARKS.md; spool-grpc enqueues singles and works through gRPC, bulk goes over HTTP as there is no gRPC bulk call).`,
      'Counts, not times: these figures do not depend on machine load (load average at start ' + loadStart + ').',
      'Before each phase\'s CHECKPOINT the meter reads every catalog table, so hint bits of the catalog rows the reset wrote are set outside the phase.',
      '"statements", "buffers" count the job path only (enqueue, claim, complete and per-request overhead such as authentication); background services and harness probes are listed per statement below. WAL and rows/index entries are everything the database wrote during the phase, in the system\'s database.',
    ];
    const out = new URL('./results/', import.meta.url);
    mkdirSync(out, { recursive: true });
    writeFileSync(new URL('cost.json', out), JSON.stringify(all, null, 2) + '\n');
    writeFileSync(new URL('cost.md', out), renderCost(all, context) + '\n');
    for (const l of jobLives(all)) console.error(`[cost] job life ${l.system}: ${Math.round(l.walBytes)} WAL bytes, ${l.indexEntries.toFixed(1)} index entries, ${l.bufferHits.toFixed(1)} buffer hits per job`);
    console.error('[cost] wrote bench/results/cost.json and bench/results/cost.md');
  } finally {
    await scratch.stop();
  }
}
