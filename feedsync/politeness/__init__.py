"""Host politeness: when a request may go to its host, for feed polls and article
fetches alike, in this process and across every poller on the database.

The flows ask :class:`feedsync.politeness.hosts.Hosts` (hosts.py: the map of the
package). This file imports nothing: storage imports the pure rules (rules.py), and a
submodule's import runs this file first, so anything here would load the gate, fetch and
httpx into every command that opens the database.
"""
