-- Which of the candidate slugs are already taken.
SELECT slug FROM spool.organizations WHERE slug = ANY($1::text[]);
