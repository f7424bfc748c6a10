import type { JSX } from 'preact';
import { PageHeader } from '../components/ui';
import { getSession } from '../lib/session';
import { ApiKeys } from './api-keys';
import { IncomingWebhooks } from './incoming-webhooks';
import { Webhooks } from './webhooks';

export function Settings({ query }: { query: URLSearchParams }): JSX.Element {
  const session = getSession();
  return (
    <div class="page">
      <PageHeader title="Settings" />
      {session?.kind === 'api_key' ? <p class="notice">This server has no /auth/login: the tab uses your API key directly as its credential.</p> : null}
      <ApiKeys />
      <Webhooks open={query.get('webhook')} />
      <IncomingWebhooks />
    </div>
  );
}
