"""The master's dashboard page: workers online and offline (dead ones with the reason), restarts, deaths and
rejoins, per-worker calls, tools, instances, heartbeats, hosts.

Everything a worker reports is untrusted: every value goes through :func:`html.escape`, and the page carries a
content security policy that forbids scripts, so hostile worker text renders as text.
"""

from __future__ import annotations

from html import escape
from typing import Any

from bootcamp_core.evaluate.secrets import mask_url

REFRESH_S = 3

_STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}
th{background:#f4f4f4}.online{color:#0a7d28;font-weight:600}.offline{color:#b00020;font-weight:600}
.muted{color:#777}
"""


def _text(value: Any) -> str:
    return escape("" if value is None else str(value), quote=True)


def _host(host: Any) -> str:
    if not isinstance(host, dict):
        return _text(host)
    parts = [host.get("hostname"), f"pid {host.get('pid')}" if host.get("pid") else None, host.get("platform"),
             f"{host.get('cpus')} CPUs" if host.get("cpus") else None, f"Python {host.get('python')}"
             if host.get("python") else None]
    return _text(", ".join(str(part) for part in parts if part))


def render_dashboard(status: dict) -> str:
    """The page for ``GET /``, from the master's ``/health`` data."""
    workers = status.get("workers") or []
    live = [worker for worker in workers if worker.get("alive")]
    served: dict[str, int] = {}
    for worker in live:
        for tool in worker.get("tools") or ():
            served[str(tool)] = served.get(str(tool), 0) + 1
    offered = {str(tool) for worker in workers for tool in worker.get("tools") or ()}
    rows = []
    for worker in sorted(workers, key=lambda item: (not item.get("alive"), str(item.get("id")))):
        state = ('<span class="online">online</span>' if worker.get("alive")
                 else f'<span class="offline">offline</span> <span class="muted">{_text(worker.get("death"))}</span>')
        rows.append(
            "<tr>"
            f"<td>{_text(worker.get('id'))}</td><td>{state}</td>"
            f"<td>{_text(mask_url(str(worker.get('url') or '')))}</td>"
            f"<td>{_text(worker.get('instances'))}</td><td>{_text(worker.get('load'))}</td>"
            f"<td>{_text(worker.get('calls', 0))}</td><td>{_text(worker.get('registrations', 1))}</td>"
            f"<td>{_text(worker.get('heartbeat_age_s'))} s ago</td>"
            f"<td>{_text(', '.join(str(tool) for tool in worker.get('tools') or ()))}</td>"
            f"<td>{_host(worker.get('host'))}</td>"
            "</tr>"
        )
    tool_rows = [
        f"<tr><td>{_text(tool)}</td><td>{served.get(tool, 0)}</td></tr>" for tool in sorted(offered)
    ]
    ready = "ready" if status.get("ready") else "waiting for workers"
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="refresh" content="{REFRESH_S}">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>bootcamp tool server</title><style>{_STYLE}</style></head>
<body>
<h1>bootcamp tool server</h1>
<p>{_text(ready)}: {len(live)} of {len(workers)} worker(s) online (expected {_text(status.get("expected_workers"))}),
{len(workers) - len(live)} dead, {_text(status.get("instances"))} active instance(s);
{_text(status.get("worker_restarts", 0))} worker restart(s), {_text(status.get("worker_deaths", 0))} worker(s) declared
dead, {_text(status.get("worker_rejoins", 0))} rejoined after being declared dead; up {_text(status.get("uptime_s"))} s.
Master: {_host(status.get("host"))}. This page refreshes every {REFRESH_S} s.</p>
<h2>Workers</h2>
<table><tr><th>id</th><th>status</th><th>url</th><th>instances</th><th>routed load</th><th>calls</th>
<th>registrations</th><th>last heartbeat</th><th>tools</th><th>host</th></tr>
{"".join(rows) or '<tr><td colspan="10" class="muted">no worker has registered yet</td></tr>'}
</table>
<h2>Tools</h2>
<table><tr><th>tool</th><th>live workers serving it</th></tr>
{"".join(tool_rows) or '<tr><td colspan="2" class="muted">none</td></tr>'}
</table>
</body></html>
"""
