// The reference server for bench/realtime.py: @y/websocket-server's own connection handler (setupWSConnection,
// the code behind its `y-websocket-server` bin) under Node, documents in memory, no persistence, no auth.
//
//   node server.mjs [PORT]      (0 or none: any free port)
//
// Prints the port it listens on (127.0.0.1) as its first stdout line. The room is the URL path, as in the
// package's own server.js; this runner differs from that one only in binding 127.0.0.1, printing its port, and
// using ws 8 (the version the test clients use) instead of the package's optional ws 6. Per-message deflate is
// off (ws's server default), as it is on collab's realtime route.

// utils.js reads these at import time: no LevelDB persistence, no HTTP callback, garbage collection on (defaults).
delete process.env.YPERSISTENCE
delete process.env.CALLBACK_URL
delete process.env.GC

const http = await import('node:http')
const { WebSocketServer } = await import('ws')
const { setupWSConnection, getPersistence } = await import('@y/websocket-server/utils')

if (getPersistence() !== null) {
  console.error('the reference server must run in memory (YPERSISTENCE set)')
  process.exit(2)
}

const wss = new WebSocketServer({ noServer: true })
const server = http.createServer((_request, response) => {
  response.writeHead(200, { 'Content-Type': 'text/plain' })
  response.end('okay')
})
wss.on('connection', setupWSConnection)
server.on('upgrade', (request, socket, head) => {
  wss.handleUpgrade(request, socket, head, ws => { wss.emit('connection', ws, request) })
})
server.listen(Number(process.argv[2] || 0), '127.0.0.1', () => {
  console.log(server.address().port)
})
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => process.exit(0))
