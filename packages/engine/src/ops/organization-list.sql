-- Admin listing: optional plan filter ($1), name/slug substring ($2, matched
-- literally), a whitelisted sort column ($3) and direction ($4), paging ($5,
-- $6). `total` counts every match, not just the page.
SELECT o.*, count(*) OVER () AS total
FROM spool.organizations o
WHERE ($1::text IS NULL OR o.plan_tier = $1)
  AND ($2::text IS NULL OR strpos(lower(o.name), lower($2)) > 0 OR strpos(o.slug, lower($2)) > 0)
ORDER BY
  CASE WHEN $4 = 'asc' AND $3 = 'name' THEN o.name END ASC,
  CASE WHEN $4 = 'asc' AND $3 = 'slug' THEN o.slug END ASC,
  CASE WHEN $4 = 'asc' AND $3 = 'plan_tier' THEN o.plan_tier END ASC,
  CASE WHEN $4 = 'asc' AND $3 = 'updated_at' THEN o.updated_at END ASC,
  CASE WHEN $4 = 'asc' AND $3 = 'created_at' THEN o.created_at END ASC,
  CASE WHEN $4 = 'desc' AND $3 = 'name' THEN o.name END DESC,
  CASE WHEN $4 = 'desc' AND $3 = 'slug' THEN o.slug END DESC,
  CASE WHEN $4 = 'desc' AND $3 = 'plan_tier' THEN o.plan_tier END DESC,
  CASE WHEN $4 = 'desc' AND $3 = 'updated_at' THEN o.updated_at END DESC,
  CASE WHEN $4 = 'desc' AND $3 = 'created_at' THEN o.created_at END DESC,
  o.id
LIMIT $5 OFFSET $6;
