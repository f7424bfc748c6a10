import type { Queryable } from '../db.js';
import { run, sqlFile } from '../db.js';

const statement = sqlFile(import.meta.url, './database-doctor.sql');

/** The tables every job's life writes: where dead tuples and a late autovacuum slow the queue first. */
// spool.jobs by its partitions (migration 046): the partitioned parent holds no rows of its own.
export const HOT_TABLES = ['jobs_live', 'jobs_done', 'job_history', 'events', 'dead_letter_queue', 'workers', 'webhook_deliveries', 'rate_limit_counters'] as const;

export interface TransactionHolder {
  pid: number;
  application_name: string;
  state: string | null;
  client_addr: string | null;
  xact_start: string;
  query_start: string | null;
  age_seconds: number;
}

export interface HotTableReading {
  table: string;
  live_tuples: number;
  dead_tuples: number;
  last_autovacuum: string | null;
  last_vacuum: string | null;
}

export interface DoctorReading {
  /** The oldest open transaction of another session that keeps vacuum from removing dead rows; null when none. */
  oldest_transaction: TransactionHolder | null;
  idle_in_transaction: number;
  idle_in_transaction_longest_seconds: number | null;
  oldest_prepared_seconds: number | null;
  slots: { slot_name: string; active: boolean; xmin_age: number }[];
  tables: HotTableReading[];
  at: Date;
}

/** One reading of what holds back vacuum and how the hot tables fare (catalog views only). */
export async function databaseDoctor(db: Queryable): Promise<DoctorReading> {
  const rows = await run<DoctorReading>(db, statement, [HOT_TABLES]);
  return rows[0]!;
}
