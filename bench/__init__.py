"""feedsync's benchmark harness: ``python -m bench`` (see bench/README.md).

Every scenario measures feedsync and a baseline side by side in the same run, against a
generated news site on a loopback server, and bench/RESULTS.md + bench/results.json
report min / median / max over the runs and the ratio of the medians.
"""
