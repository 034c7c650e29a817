"""Distributed backends on an existing engine (Ray), imported only when asked for; none is here yet."""
