"""AWS Lambda entry points. Each is thin: parse the event, call the service, render the result.

- `handlers.mcp.handler`: the MCP endpoint (API Gateway HTTP API payload 2.0, Function URL).
- `handlers.jobs.handler`: scheduled lifecycle jobs (EventBridge Scheduler `{"job": ..., "tenant": ...}`).
- `handlers.stream.handler`: DynamoDB Streams consumer for TTL expirations (batch item failures).

Nothing heavy is imported here: each module imports the service and its backends on first use.
"""
