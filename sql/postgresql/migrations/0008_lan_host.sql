-- Version 8 (as sql/migrations/0008_lan_host.sql, which says why): news_summary.lan_host,
-- the host of the feed document that staged the entry when a private address served it.
ALTER TABLE news_summary ADD COLUMN lan_host TEXT;

-- The pending entries (new, failed) of an upgraded database, with no lookup: lan_host is
-- the link's host only when it IS the host of one of the entry's feeds AND that host is
-- `localhost` or a literal private address (IPv4 127/8, 10/8, 172.16/12, 192.168/16,
-- 169.254/16; IPv6 ::1, fc00::/7, fe80::/10); NULL for every other (its link is then
-- refused on a private address, unless [fetch] allow_private). The same rule, written
-- with the same patterns, as on SQLite.
WITH hosts AS (  -- as feedsync.canonical.host_of: no port, no brackets
    SELECT kind, id,
           lower(coalesce(substring(url FROM '^[a-z]+://\[([^]/]*)\]'),
                          substring(url FROM '^[a-z]+://([^/:?#]*)'))) AS host
      FROM (SELECT 'entry' AS kind, id, url FROM news_summary
             WHERE state IN ('new', 'failed')
            UNION ALL
            SELECT 'feed', id, url FROM feeds) AS urls
),
lan_feeds AS (
    SELECT id, host
      FROM hosts
     WHERE kind = 'feed'
       AND (host = 'localhost'
            OR host ~ '^(127|10)\.[0-9.]*$'
            OR host ~ '^(192\.168|169\.254)\.[0-9.]*$'
            OR host ~ '^172\.(1[6-9]|2[0-9]|3[01])\.[0-9.]*$'
            OR host = '::1'
            OR host ~ '^f[cd][0-9a-f]{2}:[0-9a-f:.]*$'
            OR host ~ '^fe[89ab][0-9a-f]:[0-9a-f:.]*$')
),
lan_entries AS (
    SELECT DISTINCT e.id, e.host
      FROM hosts AS e
      JOIN feed_entries AS fe ON fe.summary_id = e.id
      JOIN lan_feeds AS f ON f.id = fe.feed_id AND f.host = e.host
     WHERE e.kind = 'entry'
)
UPDATE news_summary AS s
   SET lan_host = l.host
  FROM lan_entries AS l
 WHERE s.id = l.id;
