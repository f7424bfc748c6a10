-- Creates an organization and its first API key in one statement, so a
-- registration can never leave an organization without a key.
WITH org AS (
  INSERT INTO spool.organizations (name, slug, plan_tier, billing_email, settings)
  VALUES ($1, $2, $3, $4, coalesce($5::jsonb, '{}'::jsonb))
  RETURNING *
),
key AS (
  INSERT INTO spool.api_keys (organization_id, name, key_hash, key_prefix, queues)
  SELECT org.id, $6, $7, $8, $9::text[] FROM org
  RETURNING id AS key_id, name AS key_name, created_at AS key_created_at
)
SELECT org.*, key.* FROM org, key;
