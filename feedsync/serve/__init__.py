"""``feedsync serve``: the articles feedsync keeps, read over HTTP, changing nothing.

Two kinds of answer from one small server, both read through the storage layer's
Reading, Feeds and Upkeep roles (either engine), never writing:

- full-text feeds out (feedsync/serve/syndication.py): Atom and JSON Feed 1.1 of every
  feed, of each category and of all of them, each entry carrying the extracted text, and
  an OPML that subscribes a reader app to them at once;
- a read-only web page (feedsync/serve/pages.py): the news, search, one article, the
  feeds' health, the failed articles and the status, server-rendered HTML that needs no
  JavaScript.

A request goes::

    socket | access (who may read) | request (what was asked, checked) | routes
           | a handler (reads storage, renders) | response (conditional GET, headers)

:mod:`feedsync.serve.web` holds the request and response records every handler speaks.
"""
