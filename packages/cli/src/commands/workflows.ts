/** `spool workflows …`: jobs with dependencies, created and followed as one. */
import { readFileSync } from 'node:fs';
import { Command, Option } from 'commander';
import { fromWire, type CreateWorkflowParams, type Workflow, type WorkflowJob, type WorkflowStatus } from '@spool/sdk';
import { contextFor, intIn, parseJson, UsageError } from '../context.js';
import { details, shortTime, table, type Column } from '../output.js';

const WORKFLOW_STATUSES: WorkflowStatus[] = ['pending', 'running', 'completed', 'failed', 'cancelled'];

const WORKFLOW_COLUMNS: Column<Workflow>[] = [
  { header: 'ID', value: (w) => w.id },
  { header: 'NAME', value: (w) => w.name },
  { header: 'STATUS', value: (w) => w.status },
  { header: 'JOBS', value: (w) => `${w.completedJobs}/${w.totalJobs}`, right: true },
  { header: 'FAILED', value: (w) => w.failedJobs, right: true },
  { header: 'PROGRESS', value: (w) => `${Math.round(w.progressPercent)}%`, right: true },
  { header: 'CREATED', value: (w) => shortTime(w.createdAt) },
];

function readDefinition(file: string): CreateWorkflowParams {
  let text: string;
  try {
    text = readFileSync(file === '-' ? 0 : file, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read --file ${file}: ${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (err as Error).message}`);
  }
  const body = parseJson(text, `--file ${file}`);
  if (body === null || typeof body !== 'object' || !Array.isArray((body as { jobs?: unknown }).jobs)) {
    throw new UsageError(`--file ${file} must hold the POST /api/v1/workflows body: {"name": …, "jobs": [{"key", "queue_name", "payload", "depends_on"?}, …]}`);
  }
  // The file is in the wire's snake_case, like every other JSON Spool reads; the SDK speaks camelCase.
  return fromWire<CreateWorkflowParams>(body);
}

export function workflowsCommand(): Command {
  const workflows = new Command('workflows').description('list, inspect, create, cancel and retry workflows');

  workflows
    .command('list')
    .description('workflows, newest first')
    .addOption(new Option('-s, --status <status>', 'only this status').choices(WORKFLOW_STATUSES))
    .addOption(new Option('--limit <n>', 'rows to show (1-100)').argParser(intIn(1, 100)).default(50))
    .action(async (opts: { status?: WorkflowStatus; limit: number }, command: Command) => {
      const ctx = contextFor(command);
      const rows = await ctx.client.workflows.list({ status: opts.status, limit: opts.limit });
      ctx.print(rows, () => table(rows, WORKFLOW_COLUMNS, 'No workflows.'));
    });

  workflows
    .command('get <id>')
    .description('one workflow, with its jobs')
    .action(async (id: string, _opts: unknown, command: Command) => {
      const ctx = contextFor(command);
      const [workflow, jobs] = await Promise.all([ctx.client.workflows.get(id), ctx.client.workflows.jobs(id)]);
      // depends_on holds job ids; people wrote the workflow with keys.
      const keyOf = new Map(jobs.map((j) => [j.id, j.key]));
      ctx.print({ ...workflow, jobs }, () =>
        [
          details(workflow),
          '',
          table<WorkflowJob>(
            jobs,
            [
              { header: 'KEY', value: (j) => j.key },
              { header: 'JOB', value: (j) => j.id },
              { header: 'QUEUE', value: (j) => j.queueName },
              { header: 'STATUS', value: (j) => j.status },
              // An edge's on_parent_failure when it is not the default block: "extract(continue)".
              { header: 'DEPENDS ON', value: (j) => j.dependsOn.map((dep) => {
                const policy = j.onParentFailure?.[dep];
                return `${keyOf.get(dep) ?? dep}${policy && policy !== 'block' ? `(${policy})` : ''}`;
              }).join(',') },
              { header: 'ERROR', value: (j) => j.error },
            ],
            'No jobs.',
          ),
        ].join('\n'),
      );
    });

  workflows
    .command('create')
    .description('create a workflow from a JSON file (the POST /api/v1/workflows body; - for stdin)')
    .requiredOption('-f, --file <path>', 'e.g. {"name":"etl","jobs":[{"key":"a","queue_name":"q","payload":{}},{"key":"b","queue_name":"q","payload":{},"depends_on":["a"],"on_parent_failure":"cancel"}]}')
    .action(async (opts: { file: string }, command: Command) => {
      const params = readDefinition(opts.file);
      const ctx = contextFor(command);
      const created = await ctx.client.workflows.create(params);
      ctx.print(created, () => `Created workflow ${created.workflowId} (${created.status}) with ${created.jobIds.length} job(s):\n${table(created.jobIds, [
        { header: 'KEY', value: (j) => j.key },
        { header: 'JOB', value: (j) => j.jobId },
      ])}`);
    });

  workflows
    .command('cancel <id>')
    .description('cancel the workflow and its jobs that have not finished')
    .action(async (id: string, _opts: unknown, command: Command) => {
      const ctx = contextFor(command);
      const workflow = await ctx.client.workflows.cancel(id);
      ctx.print(workflow, () => `Workflow ${workflow.id} is ${workflow.status}.`);
    });

  workflows
    .command('retry <id>')
    .description('re-run the failed jobs of a failed workflow')
    .action(async (id: string, _opts: unknown, command: Command) => {
      const ctx = contextFor(command);
      const workflow = await ctx.client.workflows.retry(id);
      ctx.print(workflow, () => `Workflow ${workflow.id} is ${workflow.status} again.`);
    });

  return workflows;
}
