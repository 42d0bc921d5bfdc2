"""Realtime: Yjs sync and awareness over WebSocket, live presence, and live state (issue 19)."""
