/** `spool api-keys …`: the organization's API keys. */
import { Command, Option } from 'commander';
import { API_KEY_ROLES, type ApiKeyRole, type ApiKeySummary } from '@spool/sdk';
import { contextFor, intIn, UsageError } from '../context.js';
import { details, shortTime, table } from '../output.js';

export function apiKeysCommand(): Command {
  const keys = new Command('api-keys').description('list, create and revoke API keys');

  keys
    .command('list')
    .description('the organization\'s keys (never the secrets)')
    .action(async (_opts: unknown, command: Command) => {
      const ctx = contextFor(command);
      const rows = await ctx.client.apiKeys.list();
      ctx.print(rows, () =>
        table<ApiKeySummary>(
          rows,
          [
            { header: 'ID', value: (k) => k.id },
            { header: 'NAME', value: (k) => k.name },
            { header: 'ROLE', value: (k) => k.role },
            { header: 'QUEUES', value: (k) => (k.queues.length ? k.queues.join(',') : '*') },
            { header: 'STATE', value: (k) => (k.isActive ? 'active' : 'revoked') },
            { header: 'LAST USED', value: (k) => shortTime(k.lastUsed) },
            { header: 'EXPIRES', value: (k) => shortTime(k.expiresAt) },
          ],
          'No API keys.',
        ),
      );
    });

  keys
    .command('get <id>')
    .description('one key')
    .action(async (id: string, _opts: unknown, command: Command) => {
      const ctx = contextFor(command);
      const key = await ctx.client.apiKeys.get(id);
      ctx.print(key, () => details(key));
    });

  keys
    .command('create <name>')
    .description('create a key; its secret is printed once')
    .addOption(new Option('--role <role>', 'what the key may do').choices(API_KEY_ROLES).default('admin'))
    .option('--queues <list>', 'comma-separated queues it may use (prefix* allowed); default all', (value: string) => value.split(',').map((q) => q.trim()).filter(Boolean))
    .addOption(new Option('--rate-limit <n>', 'requests per second (1-10000)').argParser(intIn(1, 10_000)))
    .option('--expires-at <time>', 'ISO time after which the key stops working')
    .action(async (name: string, opts: { role: ApiKeyRole; queues?: string[]; rateLimit?: number; expiresAt?: string }, command: Command) => {
      if (opts.expiresAt !== undefined && Number.isNaN(Date.parse(opts.expiresAt))) throw new UsageError(`--expires-at is not a date: "${opts.expiresAt}"`);
      const ctx = contextFor(command);
      const created = await ctx.client.apiKeys.create({ name, role: opts.role, queues: opts.queues, rateLimit: opts.rateLimit, expiresAt: opts.expiresAt });
      ctx.print(created, () => `Created API key ${created.id} (${created.name}, ${created.role ?? opts.role}). Its secret, shown only now:\n${created.key}`);
    });

  keys
    .command('delete <id>')
    .description('revoke the key: requests with it are refused from now on')
    .option('-y, --yes', 'confirm')
    .action(async (id: string, opts: { yes?: boolean }, command: Command) => {
      if (!opts.yes) throw new UsageError('delete revokes the key for good: add --yes to confirm');
      const ctx = contextFor(command);
      await ctx.client.apiKeys.revoke(id);
      ctx.print({ id, revoked: true }, () => `Revoked API key ${id}.`);
    });

  return keys;
}
