import type { AnchorHTMLAttributes, ComponentChildren, JSX } from 'preact';
import { ApiError, errorMessage } from '../lib/api';
import { prettyJson } from '../lib/format';
import { linkClick } from '../lib/router';

export function Link(props: AnchorHTMLAttributes<HTMLAnchorElement> & { href: string }): JSX.Element {
  return <a {...props} onClick={(event) => linkClick(event as unknown as MouseEvent)} />;
}

export function PageHeader({ title, children }: { title: string; children?: ComponentChildren }): JSX.Element {
  return (
    <header class="page-header">
      <h1>{title}</h1>
      {children ? <div class="page-actions">{children}</div> : null}
    </header>
  );
}

export function StatusBadge({ status }: { status: string }): JSX.Element {
  return <span class={`badge badge-${status}`} data-status={status}>{status}</span>;
}

export function Loading({ label = 'Loading…' }: { label?: string }): JSX.Element {
  return <p class="muted loading" role="status">{label}</p>;
}

export function EmptyState({ title, children }: { title: string; children?: ComponentChildren }): JSX.Element {
  return (
    <div class="empty-state">
      <p class="empty-title">{title}</p>
      {children ? <div class="muted">{children}</div> : null}
    </div>
  );
}

/**
 * An error where the data should be. An endpoint the server does not have
 * (yet) is said plainly instead of looking like a failure.
 */
export function ErrorState({ error, what, retry }: { error: unknown; what: string; retry?: () => void }): JSX.Element {
  if (error instanceof ApiError && error.missingEndpoint) {
    return (
      <div class="empty-state unavailable" data-testid="unavailable">
        <p class="empty-title">{what} are not available on this server</p>
        <p class="muted">This Spool server does not offer that API yet ({error.message}).</p>
      </div>
    );
  }
  return (
    <div class="error-state" role="alert">
      <p>Could not load {what.toLowerCase()}: {errorMessage(error)}</p>
      {retry ? <button type="button" onClick={retry}>Try again</button> : null}
    </div>
  );
}

export function JsonBlock({ value, empty = 'null' }: { value: unknown; empty?: string }): JSX.Element {
  if (value === null || value === undefined) return <p class="muted mono">{empty}</p>;
  return <pre class="json">{prettyJson(value)}</pre>;
}

export function Pager({ page, hasNext, onPage }: { page: number; hasNext: boolean; onPage: (page: number) => void }): JSX.Element | null {
  if (page <= 1 && !hasNext) return null;
  return (
    <nav class="pager" aria-label="Pages">
      <button type="button" disabled={page <= 1} onClick={() => onPage(page - 1)}>← Newer</button>
      <span class="muted">Page {page}</span>
      <button type="button" disabled={!hasNext} onClick={() => onPage(page + 1)}>Older →</button>
    </nav>
  );
}

/** A label/value list for detail views. */
export function Facts({ items }: { items: [string, ComponentChildren][] }): JSX.Element {
  return (
    <dl class="facts">
      {items.map(([label, value]) => (
        <div key={label}>
          <dt>{label}</dt>
          <dd>{value ?? '—'}</dd>
        </div>
      ))}
    </dl>
  );
}

export function Tile({ label, value, hint, tone }: { label: string; value: ComponentChildren; hint?: ComponentChildren; tone?: 'ok' | 'warn' | 'bad' }): JSX.Element {
  return (
    <div class={`tile${tone ? ` tile-${tone}` : ''}`}>
      <div class="tile-label">{label}</div>
      <div class="tile-value">{value}</div>
      {hint ? <div class="tile-hint muted">{hint}</div> : null}
    </div>
  );
}
