-- Collections no longer keep their API JSON in the database: a list item is built by the same serialiser as a
-- GET (`toApi` in collections.service.ts), so the two cannot differ. Undoes migration 011.
DROP TRIGGER collections_api_json ON collections;
DROP FUNCTION collection_api_json();
ALTER TABLE collections DROP COLUMN api_json;
