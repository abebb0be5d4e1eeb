-- Version 8: whether an entry's link may be on a private address is decided once, when
-- the entry is staged, from the peer address that served the feed document carrying it
-- (feedsync/guard.py), and kept with the entry: news_summary.lan_host is that document's
-- host when a private address served it, else NULL. The article fetch allows a private
-- address only on that host (and [fetch] lan_hosts); never from a later DNS lookup.
ALTER TABLE news_summary ADD COLUMN lan_host TEXT;

-- The entries still to fetch (state new or failed) were staged before anything was
-- recorded; they were allowed when one of their feeds was on the LAN, by a DNS lookup
-- at fetch time, the very thing an attacker's name can steer. What they get instead,
-- decided from the URLs alone, with no lookup: lan_host is set only when the link's host
-- IS the host of one of the entry's feeds AND that host is `localhost` or a literal
-- private address (IPv4 127/8, 10/8, 172.16/12, 192.168/16, 169.254/16; IPv6 ::1,
-- fc00::/7, fe80::/10). Every other pending entry gets NULL: its link is refused on a
-- private address (as an internet feed's is), unless [fetch] allow_private. Entries done
-- or given up keep NULL: they are not fetched again.
WITH urls (kind, id, rest) AS (
    SELECT 'entry', id, substr(url, instr(url, '://') + 3)
      FROM news_summary
     WHERE state IN ('new', 'failed')
    UNION ALL
    SELECT 'feed', id, substr(url, instr(url, '://') + 3) FROM feeds
),
authorities (kind, id, authority) AS (
    SELECT kind, id, substr(rest, 1, instr(rest || '/', '/') - 1) FROM urls
),
hosts (kind, id, host) AS (  -- as feedsync.canonical.host_of: no port, no brackets
    SELECT kind, id,
           lower(CASE WHEN authority LIKE '[%'
                      THEN substr(authority, 2, instr(authority, ']') - 2)
                      ELSE substr(authority, 1, instr(authority || ':', ':') - 1) END)
      FROM authorities
),
lan_feeds (id, host) AS (
    SELECT id, host
      FROM hosts
     WHERE kind = 'feed'
       AND (host = 'localhost'
            OR (host NOT GLOB '*[^0-9.]*'
                AND (host GLOB '127.*' OR host GLOB '10.*' OR host GLOB '192.168.*'
                     OR host GLOB '169.254.*' OR host GLOB '172.1[6-9].*'
                     OR host GLOB '172.2[0-9].*' OR host GLOB '172.3[01].*'))
            OR (host NOT GLOB '*[^0-9a-f:.]*'
                AND (host = '::1' OR host GLOB 'f[cd][0-9a-f][0-9a-f]:*'
                     OR host GLOB 'fe[89ab][0-9a-f]:*')))
),
lan_entries (id, host) AS (
    SELECT DISTINCT e.id, e.host
      FROM hosts AS e
      JOIN feed_entries AS fe ON fe.summary_id = e.id
      JOIN lan_feeds AS f ON f.id = fe.feed_id AND f.host = e.host
     WHERE e.kind = 'entry'
)
UPDATE news_summary
   SET lan_host = (SELECT host FROM lan_entries WHERE lan_entries.id = news_summary.id)
 WHERE id IN (SELECT id FROM lan_entries);
