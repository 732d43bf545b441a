-- A webhook event owed is kept as it was made, byte for byte (json keeps
-- its text; jsonb re-encodes it: keys reordered, spaces added), so that
-- a replica sending it again sends the body, and so the signature, of
-- the first attempt. The previous version reads and writes the column
-- as before.
ALTER TABLE canaryd_deliveries ALTER COLUMN event TYPE json USING event::json;
