"""The memory browser: a small server-rendered web UI at `/ui` over `MemoryService` (issue 13).

`app.build_ui` returns the ASGI app that `rearview.api.app.create_app(ui=True)` mounts beside
`/mcp`, outside `TenantAuth`: the UI authenticates with its own signed session cookie
(`session`), and the tenant still comes from the API key the user signed in with. Every
mutation is CSRF-checked (`csrf`), every response carries a strict CSP (`security_headers`),
and every page is a Jinja2 template with autoescape on: memory content is untrusted input.
"""
