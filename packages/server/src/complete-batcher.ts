import { jobCompleteMany, type CompleteItem, type CompleteOutcome, type Queryable } from '@spool/engine';
import { GroupCommit, type GroupCommitOptions } from './group-commit.js';

interface Completion {
  organizationId: string;
  item: CompleteItem;
}

/**
 * Group commit for single completions (`POST /jobs/{id}/complete`, gRPC
 * `Complete` and ProcessJobs): concurrent calls share one UPDATE per
 * organization and one commit. A job never appears twice in one statement,
 * so of two concurrent completes of one job the second is judged after the
 * first, exactly as two separate requests would be.
 */
export class CompleteBatcher extends GroupCommit<Completion, CompleteOutcome> {
  constructor(db: Queryable, options: GroupCommitOptions = {}) {
    super((completions) => completeByOrganization(db, completions), { ...options, keyOf: (c) => c.item.id });
  }

  complete(organizationId: string, item: CompleteItem): Promise<CompleteOutcome> {
    return this.submit({ organizationId, item });
  }
}

async function completeByOrganization(db: Queryable, completions: Completion[]): Promise<CompleteOutcome[]> {
  const byOrganization = new Map<string, number[]>();
  completions.forEach((c, i) => {
    const indexes = byOrganization.get(c.organizationId) ?? [];
    indexes.push(i);
    byOrganization.set(c.organizationId, indexes);
  });
  const outcomes: CompleteOutcome[] = new Array(completions.length);
  await Promise.all([...byOrganization].map(async ([organizationId, indexes]) => {
    const answered = await jobCompleteMany(db, organizationId, indexes.map((i) => completions[i]!.item));
    indexes.forEach((index, k) => (outcomes[index] = answered[k]!));
  }));
  return outcomes;
}
