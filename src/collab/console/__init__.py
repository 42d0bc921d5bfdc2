"""The service console: server-rendered pages at /console for workspace owners (issue #20)."""
