/** `spool webhooks …`: outgoing webhooks (Spool calls your URL on job and queue events). */
import { Command } from 'commander';
import type { OutgoingWebhook, WebhookDelivery, WebhookEvent } from '@spool/sdk';
import { contextFor, UsageError } from '../context.js';
import { details, shortTime, table } from '../output.js';

function list(value: string): string[] {
  return value.split(',').map((item) => item.trim()).filter(Boolean);
}

export function webhooksCommand(): Command {
  const webhooks = new Command('webhooks').description('outgoing webhooks: list, create, test and delete');

  webhooks
    .command('list')
    .description('all outgoing webhooks')
    .action(async (_opts: unknown, command: Command) => {
      const ctx = contextFor(command);
      const rows = await ctx.client.webhooks.list();
      ctx.print(rows, () =>
        table<OutgoingWebhook>(
          rows,
          [
            { header: 'ID', value: (w) => w.id },
            { header: 'NAME', value: (w) => w.name },
            { header: 'URL', value: (w) => w.url },
            { header: 'EVENTS', value: (w) => w.events.join(',') },
            { header: 'STATE', value: (w) => (w.enabled ? 'enabled' : 'disabled') },
            { header: 'FAILURES', value: (w) => w.failureCount, right: true },
            { header: 'LAST', value: (w) => w.lastStatus },
          ],
          'No webhooks.',
        ),
      );
    });

  webhooks
    .command('get <id>')
    .description('one webhook')
    .action(async (id: string, _opts: unknown, command: Command) => {
      const ctx = contextFor(command);
      const webhook = await ctx.client.webhooks.get(id);
      ctx.print(webhook, () => details(webhook));
    });

  webhooks
    .command('create <name>')
    .description('call a URL on events')
    // Not --url: that is the global option naming the Spool server.
    .requiredOption('--endpoint <url>', 'where Spool POSTs the events')
    .requiredOption('-e, --events <list>', 'comma-separated, e.g. job.completed,job.failed', list)
    .option('--secret <secret>', 'HMAC-SHA256 signing secret (never shown again)')
    .option('--disabled', 'create it switched off')
    .action(async (name: string, opts: { endpoint: string; events: string[]; secret?: string; disabled?: boolean }, command: Command) => {
      if (opts.events.length === 0) throw new UsageError('--events needs at least one event, e.g. job.completed');
      const ctx = contextFor(command);
      const created = await ctx.client.webhooks.create({ name, url: opts.endpoint, events: opts.events as WebhookEvent[], secret: opts.secret, enabled: !opts.disabled });
      ctx.print(created, () => `Created webhook ${created.id} (${created.name}) for ${created.events.join(', ')}.`);
    });

  webhooks
    .command('test <id>')
    .description('deliver a webhook.test event now and report the answer')
    .action(async (id: string, _opts: unknown, command: Command) => {
      const ctx = contextFor(command);
      const result = await ctx.client.webhooks.test(id);
      ctx.print(result, () =>
        result.success ? `Delivered: ${result.statusCode} in ${result.responseTimeMs} ms.` : `Not delivered: ${result.error ?? `status ${result.statusCode}`} (${result.responseTimeMs} ms).`,
      );
      if (!result.success) process.exitCode = 1;
    });

  webhooks
    .command('deliveries <id>')
    .description('recent deliveries of a webhook')
    .action(async (id: string, _opts: unknown, command: Command) => {
      const ctx = contextFor(command);
      const rows = await ctx.client.webhooks.deliveries(id);
      ctx.print(rows, () =>
        table<WebhookDelivery>(
          rows,
          [
            { header: 'ID', value: (d) => d.id },
            { header: 'EVENT', value: (d) => d.event },
            { header: 'STATUS', value: (d) => d.status },
            { header: 'HTTP', value: (d) => d.statusCode, right: true },
            { header: 'ATTEMPTS', value: (d) => d.attempts, right: true },
            { header: 'CREATED', value: (d) => shortTime(d.createdAt) },
            { header: 'ERROR', value: (d) => d.error },
          ],
          'No deliveries yet.',
        ),
      );
    });

  webhooks
    .command('delete <id>')
    .description('delete the webhook')
    .option('-y, --yes', 'confirm the deletion')
    .action(async (id: string, opts: { yes?: boolean }, command: Command) => {
      if (!opts.yes) throw new UsageError('delete removes the webhook for good: add --yes to confirm');
      const ctx = contextFor(command);
      await ctx.client.webhooks.delete(id);
      ctx.print({ id, deleted: true }, () => `Deleted webhook ${id}.`);
    });

  return webhooks;
}
