import { jobEnqueue, type InsertedJob, type NewJob, type Queryable } from '@spool/engine';
import { GroupCommit, type GroupCommitOptions } from './group-commit.js';

/**
 * Group commit for single enqueues (docs/design.md §7 S1, §8): concurrent
 * `POST /jobs` and gRPC `Enqueue` calls share one multi-row INSERT. Idempotency
 * keys behave as if the calls ran one after another in arrival order (the
 * first gets `created: true`, a later one the same id with `created: false`),
 * and so do job keys (jobEnqueue applies their policies in order).
 */
export class EnqueueBatcher extends GroupCommit<NewJob, InsertedJob> {
  constructor(db: Queryable, options: GroupCommitOptions = {}) {
    super((jobs) => jobEnqueue(db, jobs), options);
  }

  /** Inserts one job as part of the next shared INSERT. */
  enqueue(job: NewJob): Promise<InsertedJob> {
    return this.submit(job);
  }
}
