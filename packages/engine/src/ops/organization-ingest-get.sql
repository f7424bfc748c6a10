-- What incoming-webhook ingestion needs of a live organization, in one read:
-- its webhook token, plan (for plan limits), the sealed signing secret of
-- provider $2 (null columns when it has none) and how many live
-- organizations exist (at most 2: a server-wide secret applies only to a
-- lone one). No row for an unknown or deleted organization.
SELECT o.settings ->> 'webhook_token' AS webhook_token,
       o.plan_tier, o.custom_limits,
       s.ciphertext, s.iv, s.auth_tag, s.key_id,
       (SELECT count(*)::int FROM (SELECT 1 FROM spool.organizations WHERE plan_tier <> 'deleted' LIMIT 2) AS live) AS live_organizations
FROM spool.organizations o
LEFT JOIN spool.organization_webhook_secrets s ON s.organization_id = o.id AND s.provider = $2
WHERE o.id = $1 AND o.plan_tier <> 'deleted';
