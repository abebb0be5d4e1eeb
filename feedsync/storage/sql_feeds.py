"""The feed list, written once for both engines (the Feeds role of
:mod:`feedsync.storage.interface`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from feedsync import clock, identity
from feedsync.records import (
    Feed,
    FeedHealth,
    ListedFeed,
)
from feedsync.storage.sql_core import LEFT_CONFIG, Connection, SQLCore


class SQLFeeds(SQLCore):
    """The Feeds role over named queries."""

    def sync_config_feeds(
        self, urls: Sequence[str] | Mapping[str, str | ListedFeed], now: str
    ) -> list[str]:
        listed = _listed(urls)

        def work(conn: Connection) -> list[str]:
            rows = [dict(r) for r in self._exec(conn, "feeds_for_config").fetchall()]
            plan = reconcile_config(rows, listed)
            created: set[str] = set()
            if plan.insert:
                feeds = json.dumps([[url, *listed[url]] for url in plan.insert], ensure_ascii=False)
                created = {
                    row["url"]
                    for row in self._exec(conn, "feeds_insert_config", feeds=feeds, now=now)
                }
            added = [url for url in plan.insert if url in created]
            raced = {url: listed[url] for url in plan.insert if url not in created}
            if raced:
                # added by another process starting this instant (PostgreSQL: the insert
                # waited for its commit, so its rows are visible now). Another daemon of
                # the same config made them as this one would have: usually nothing is
                # left to change, where a statement per feed made every daemon but the
                # first pay three round trips per feed before its first poll.
                rows = [dict(r) for r in self._exec(conn, "feeds_for_config").fetchall()]
                again = reconcile_config(rows, raced)
                plan.adopt.extend(again.adopt)
                plan.identity.update(again.identity)  # its disable list: only these URLs
                plan.names.update(again.names)
            for feed_id in plan.adopt:
                self._exec(conn, "feed_adopt_for_config", id=feed_id, left_config=LEFT_CONFIG)
            for feed_id, mode in plan.identity.items():
                self._exec(conn, "feed_set_identity", id=feed_id, identity=mode)
            for feed_id, (title, category) in plan.names.items():
                self._exec(conn, "feed_set_names", id=feed_id, title=title, category=category)
            for feed_id in plan.disable:
                self._exec(conn, "feed_disable", id=feed_id, reason=LEFT_CONFIG)
            return added

        return self._write(work)

    def add_feed(
        self, url: str, now: str, category: str | None = None, title: str | None = None
    ) -> bool:
        return self._write(
            lambda conn: (
                self._exec(
                    conn,
                    "feed_insert",
                    url=url,
                    origin="cli",
                    now=now,
                    category=category,
                    title=title,
                ).fetchone()
                is not None
            )
        )

    def remove_feed(self, url: str) -> bool:
        def work(conn: Connection) -> bool:
            row = self._exec(conn, "feed_by_url", url=url).fetchone()
            if row is None:
                return False
            self._exec(conn, "feed_delete_links", id=row["id"])
            self._exec(conn, "feed_delete", id=row["id"])
            return True

        return self._write(work)

    def disable_feed(self, url: str, reason: str) -> bool:
        def work(conn: Connection) -> bool:
            row = self._exec(conn, "feed_by_url", url=url).fetchone()
            if row is None:
                return False
            self._exec(conn, "feed_disable", id=row["id"], reason=reason)
            return True

        return self._write(work)

    def feed_health(self, week_ago: str | None = None) -> list[FeedHealth]:
        """Every feed with its polling health and, when ``week_ago`` is given, its
        articles' (``feedsync feeds``): pending, failing, given up and extracted."""
        articles: dict[int, dict[str, Any]] = {}
        if week_ago is not None:
            for r in self._read("feed_articles", week_ago=week_ago):
                articles[r["feed_id"]] = {
                    "articles_pending": int(r["pending"] or 0),
                    "articles_failing": int(r["failing"] or 0),
                    "articles_given_up_week": int(r["given_up_week"] or 0),
                    "articles_extracted_week": int(r["extracted_week"] or 0),
                }
            for r in self._read("feed_article_errors", week_ago=week_ago):
                found = articles.setdefault(r["feed_id"], {})
                found.setdefault("articles_last_error", r["last_error"])
        return [
            FeedHealth(
                id=r["id"],
                url=r["url"],
                title=r["title"],
                enabled=bool(r["enabled"]),
                disabled_reason=r["disabled_reason"],
                origin=r["origin"],
                latest_published=r["latest_published"],
                last_poll_at=r["last_poll_at"],
                last_success_at=r["last_success_at"],
                error_count=r["error_count"],
                last_error=r["last_error"],
                entries=r["entries"],
                last_warning=r["last_warning"],
                moved_from=r["moved_from"],
                category=r["category"],
                next_poll_at=r["next_poll_at"],
                feed_title=r["feed_title"],
                user_title=r["user_title"],
                **articles.get(r["id"], {}),
            )
            for r in self._read("feed_health")
        ]

    def feed_name(self, feed_id: int) -> str | None:
        rows = self._read("feed_name", id=feed_id)
        return str(rows[0]["title"] or rows[0]["url"]) if rows else None

    def has_category(self, category: str) -> bool:
        return bool(self._read("category_feed", category=category))

    def feeds_to_poll(self, due_before: str | None = None, week_ago: str = "") -> list[Feed]:
        return [
            Feed(
                id=r["id"],
                url=r["url"],
                latest_published=r["latest_published"],
                etag=r["etag"],
                last_modified=r["last_modified"],
                error_count=r["error_count"],
                polled_before=bool(r["polled_before"]),
                recent_entries=r["recent_entries"],
                recent_oldest=r["recent_oldest"],
                redirect_to=r["redirect_to"],
                redirect_seen=r["redirect_seen"],
                identity=r["identity"],
            )
            for r in self._read(
                "feeds_to_poll",
                due_before=due_before,
                written_after=clock.horizon(due_before) if due_before else None,
                week_ago=week_ago,
            )
        ]

    def newest_poll(self) -> str:
        return str(self._read("newest_poll")[0]["newest"])

    def feed_id(self, ref: str) -> int | None:
        if ref.isdigit():
            return int(ref) if any(f.id == int(ref) for f in self.feed_health()) else None
        rows = self._read("feed_by_url", url=ref)
        return int(rows[0]["id"]) if rows else None


@dataclass(frozen=True)
class ConfigPlan:
    """What bringing the config file's feeds into the database changes (and nothing
    else: a config that did not change writes no row)."""

    insert: list[str] = field(default_factory=list)  # URLs new to the database
    adopt: list[int] = field(default_factory=list)  # ids the config owns (again)
    identity: dict[int, str] = field(default_factory=dict)  # id -> its new [feeds] identity
    # id -> its new [feeds] title and category (None: the file gives none)
    names: dict[int, tuple[str | None, str | None]] = field(default_factory=dict)
    disable: list[int] = field(default_factory=list)  # config feeds no longer listed


def _listed(urls: Sequence[str] | Mapping[str, str | ListedFeed]) -> dict[str, ListedFeed]:
    """The config file's feeds as :func:`reconcile_config` takes them: URL -> what the file
    says of it (a bare identity mode, or nothing, says no title and no folder)."""
    if not isinstance(urls, Mapping):
        return dict.fromkeys(urls, ListedFeed(identity.AUTO))
    return {
        url: said if isinstance(said, ListedFeed) else ListedFeed(identity=said)
        for url, said in urls.items()
    }


def reconcile_config(
    rows: Sequence[Mapping[str, Any]], modes: Mapping[str, str | ListedFeed]
) -> ConfigPlan:
    """The changes that make the feed list (``rows``: every feed's id, url, moved_from,
    origin, enabled, disabled_reason, identity, user_title, category) say what the config
    file says (``modes``: URL -> what the file says of it, :class:`ListedFeed`, or its
    identity mode alone). A listed URL names the feed with that URL, else one that moved
    away from it (301/308); such a feed becomes the config's, and enabled again if only
    leaving the config had disabled it; its title and folder are the file's (none when
    the file gives none: the file is where a config feed is named). A feed the config
    owned and no longer lists is disabled, its names kept. Pure: one read of the list
    before, then one statement for every new feed together and one per other change,
    where a statement per listed feed (three round trips each on PostgreSQL) made every
    start of a daemon or a cron run pay for the whole list."""
    by_url = {row["url"]: row for row in rows}
    moved: dict[str, Mapping[str, Any]] = {}
    for row in sorted(rows, key=lambda r: r["id"]):
        if row["moved_from"] is not None:
            moved.setdefault(row["moved_from"], row)
    plan = ConfigPlan()
    for url, said in _listed(modes).items():
        found = by_url.get(url) or moved.get(url)
        if found is None:
            plan.insert.append(url)
            continue
        if found["origin"] != "config" or found["disabled_reason"] == LEFT_CONFIG:
            plan.adopt.append(found["id"])
        if found["identity"] != said.identity:
            plan.identity[found["id"]] = said.identity
        names = (said.title, said.category)
        if (found.get("user_title"), found.get("category")) != names:
            plan.names[found["id"]] = names
    for row in rows:
        listed = row["url"] in modes or row["moved_from"] in modes
        if row["origin"] == "config" and row["enabled"] and not listed:
            plan.disable.append(row["id"])
    return plan
