-- Deletes a schedule; its runs go with it (ON DELETE CASCADE), jobs it created stay.
DELETE FROM spool.schedules WHERE organization_id = $1 AND id = $2 RETURNING id;
