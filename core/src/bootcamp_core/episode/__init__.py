"""One episode: its messages, its tool calls, the rollout engine, the policies that play it and their retries."""
