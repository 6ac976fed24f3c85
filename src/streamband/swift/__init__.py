"""OpenStack Swift on the testbed for BwMan (paper 002): the store, its workload,
the failure generator and the integrity monitor."""
