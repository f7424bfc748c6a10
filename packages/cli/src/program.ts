/** The `spool` command tree. */
import { Command, Option } from 'commander';
import { enqueueCommand } from './commands/enqueue.js';
import { dlqCommand, jobsCommand } from './commands/jobs.js';
import { queuesCommand, statsCommand, workersCommand } from './commands/queues.js';
import { schedulesCommand } from './commands/schedules.js';
import { migrateCommand, startCommand } from './commands/server.js';
import { apiKeysCommand } from './commands/api-keys.js';
import { webhooksCommand } from './commands/webhooks.js';
import { outboxCommand } from './commands/outbox.js';
import { workflowsCommand } from './commands/workflows.js';
import { DEFAULT_URL } from './context.js';

export const CLI_VERSION = '0.1.0';

/** Builds the program; commands that talk to a server share --url, --api-key and --json. */
export function buildProgram(): Command {
  const program = new Command('spool')
    .description('Spool: a job queue on PostgreSQL')
    .version(CLI_VERSION)
    .addOption(new Option('--url <url>', 'Spool server').env('SPOOL_URL').default(DEFAULT_URL))
    .addOption(new Option('--api-key <key>', 'API key').env('SPOOL_API_KEY'))
    .option('--json', 'machine-readable output (the API\'s snake_case JSON; a failure is one JSON object on stderr)')
    .addOption(new Option('--progress', 'draw progress bars on stderr even when it is not a terminal').env('SPOOL_PROGRESS'))
    .showHelpAfterError('(run with --help for usage)');
  program.addHelpText(
    'after',
    `
Examples:
  $ spool start                                  run the server on http://localhost:8080
  $ export SPOOL_API_KEY=sk_test_...             the key printed on first start
  $ spool enqueue emails '{"to":"a@example.com"}'
  $ spool enqueue emails --file jobs.ndjson      one JSON payload per line, sent in bulk
  $ spool jobs list --status deadletter --json | jq '.[].id'
  $ spool dlq retry --queue emails
  $ spool outbox relay --database-url postgres://app@db/app   forward your app's outbox to Spool`,
  );
  for (const command of [
    startCommand(),
    migrateCommand(),
    enqueueCommand(),
    jobsCommand(),
    dlqCommand(),
    queuesCommand(),
    schedulesCommand(),
    workflowsCommand(),
    webhooksCommand(),
    apiKeysCommand(),
    workersCommand(),
    statsCommand(),
    outboxCommand(),
  ]) {
    program.addCommand(command);
  }
  return program;
}
