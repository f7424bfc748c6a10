import { randomBytes } from 'node:crypto';
import { organizationSlugsTaken, type Queryable } from '@spool/engine';

/** docs/compatibility.md §3.14: 3–50 characters, lowercase words joined by single hyphens, starting with a letter. */
export const SLUG_PATTERN = '^[a-z][a-z0-9]*(-[a-z0-9]+)*$';
const SLUG_RE = new RegExp(SLUG_PATTERN);
export const SLUG_MIN = 3;
export const SLUG_MAX = 50;

/** Slugs that would shadow routes, product pages or operator names. */
export const RESERVED_SLUGS: ReadonlySet<string> = new Set([
  'admin', 'administrator', 'api', 'app', 'apps', 'assets', 'auth', 'billing', 'blog', 'dashboard', 'default',
  'docs', 'help', 'internal', 'login', 'logout', 'mail', 'metrics', 'new', 'org', 'organizations', 'register',
  'root', 'settings', 'signin', 'signup', 'spool', 'spooled', 'static', 'status', 'support', 'system', 'webhooks', 'www',
]);

/** Why a slug cannot be used (ignoring whether it is taken), or null. */
export function slugProblem(slug: string): string | null {
  if (slug.length < SLUG_MIN || slug.length > SLUG_MAX) return `slug must be ${SLUG_MIN} to ${SLUG_MAX} characters`;
  if (!SLUG_RE.test(slug)) return 'slug must be lowercase letters, digits and single hyphens, starting with a letter';
  if (RESERVED_SLUGS.has(slug)) return `slug "${slug}" is reserved`;
  return null;
}

/** A valid (but possibly taken) slug derived from any text. */
export function slugify(text: string): string {
  let slug = text
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, SLUG_MAX - 6)
    .replace(/-+$/g, '');
  if (!/^[a-z]/.test(slug)) slug = slug ? `org-${slug}` : 'org';
  if (slug.length < SLUG_MIN) slug = `${slug}-org`;
  if (RESERVED_SLUGS.has(slug)) slug = `${slug}-org`;
  return slug.slice(0, SLUG_MAX - 6).replace(/-+$/g, '');
}

/** A valid slug derived from `text` that no organization uses yet (a random suffix when needed). */
export async function availableSlug(db: Queryable, text: string): Promise<string> {
  const base = slugify(text);
  for (let attempt = 0; attempt < 5; attempt += 1) {
    const candidates = [base, ...Array.from({ length: 4 }, () => `${base}-${randomBytes(3).toString('hex').slice(0, 5)}`)];
    const usable = candidates.filter((candidate) => slugProblem(candidate) === null);
    const taken = await organizationSlugsTaken(db, usable);
    const free = usable.find((candidate) => !taken.has(candidate));
    if (free) return free;
  }
  return `${base}-${randomBytes(8).toString('hex')}`.slice(0, SLUG_MAX);
}
