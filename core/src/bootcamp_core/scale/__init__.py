"""Distributed backends on an existing engine (Ray), imported only when asked for: joining a cluster
(:mod:`.cluster`) and generation as Ray tasks (:mod:`.generate`)."""
