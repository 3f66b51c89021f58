-- Keeps the newest $1 stored rejections: the table stays bounded under any flood.
DELETE FROM rejected_messages WHERE id <= (SELECT max(id) FROM rejected_messages) - $1
