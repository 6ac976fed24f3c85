"""``streamband manage``: the manager loop of 000 Fig. 4 as a service beside a real
cluster known only by its addresses. :mod:`.config` is its ``cluster.yaml``,
:mod:`.service` the service (watch Nimbus, one step of every topology, the views),
:mod:`.state` what survives a restart, :mod:`.dashboard` the web page, JSON API and
``/metrics``; :mod:`.stage` presents the testbed as such a cluster, for drills."""
