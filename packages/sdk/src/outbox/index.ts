/** The transactional outbox for applications whose database is not Spool's (docs/transactional-enqueue.md). */
export { OUTBOX_SCHEMA_SQL, ensureOutboxTable, type OutboxQueryable } from './schema.js';
export { enqueueToOutbox, outboxInsert, outboxRow, type OutboxJob, type OutboxRow } from './enqueue.js';
export {
  OutboxRelay,
  isSpoolOutage,
  outboxRowBackoffMs,
  type OutboxBatchResult,
  type OutboxDrainResult,
  type OutboxFailingRow,
  type OutboxPool,
  type OutboxRelayEvent,
  type OutboxRelayOptions,
  type OutboxSession,
  type OutboxStatus,
} from './relay.js';
