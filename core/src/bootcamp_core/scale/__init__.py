"""Distributed backends on an existing engine (Ray), imported only when asked for: joining a cluster
(:mod:`.cluster`), generation as Ray tasks (:mod:`.generate`), evaluation in Ray actors (:mod:`.evaluate`) and tool
workers as Ray actors (:mod:`.tools`)."""
