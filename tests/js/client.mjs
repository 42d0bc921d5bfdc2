// A scriptable y-websocket client for the test suite: the stock WebsocketProvider, driven over stdin/stdout.
//
//   node client.mjs BASE ROOM TOKEN [OPTIONS_JSON]
//
// BASE is the realtime prefix (ws://host:port/v2/realtime), ROOM "org/doc/editor" (each id URL-encoded), TOKEN
// the user token from auth/generate_token. OPTIONS: {"type": "text"|"map"|"array"|"xml", "key": "content",
// "maxBackoffTime": ms}. Each stdin line is one command {"id": n, "op": ..., ...}; each answer is one stdout
// line {"id": n, "ok": true, ...} or {"id": n, "ok": false, "error": ..., "state": ...}. Commands that wait
// ("wait_*") answer when what they wait for has happened, or with error "timeout" after timeout_ms, so tests
// wait on events and never sleep. Commands run concurrently; answers carry the command's id.
import * as readline from 'node:readline'
import * as Y from 'yjs'
import { WebsocketProvider } from 'y-websocket'
import * as encoding from 'lib0/encoding'
import * as decoding from 'lib0/decoding'
import WebSocket from 'ws'

const MESSAGE_LIVESTATE = 100
const [base, room, token, optionsText] = process.argv.slice(2)
const options = optionsText ? JSON.parse(optionsText) : {}
const kind = options.type || 'text'
const key = options.key || 'content'

const doc = new Y.Doc()
const shared = { text: () => doc.getText(key), map: () => doc.getMap(key), array: () => doc.getArray(key),
  xml: () => doc.getXmlFragment(key), xmltext: () => doc.getText(key) }[kind]()

const closes = [] // close events the server sent: {code, reason}
const livestate = [] // livestate messages received, in order
let connects = 0
const waiters = new Set() // re-checked after every event

function changed () {
  for (const waiter of [...waiters]) waiter.check()
}

const provider = new WebsocketProvider(base, room, doc, {
  params: { token },
  WebSocketPolyfill: WebSocket,
  maxBackoffTime: options.maxBackoffTime ?? 300,
  disableBc: true
})
provider.messageHandlers[MESSAGE_LIVESTATE] = (_encoder, decoder) => {
  livestate.push(JSON.parse(decoding.readVarString(decoder)))
  changed()
}
provider.on('status', ({ status }) => {
  if (status === 'connected') connects++
  changed()
})
provider.on('sync', changed)
provider.on('connection-close', (event) => {
  // null: closed by this client (disconnect, or y-websocket's watchdog), not by the server
  if (event) closes.push({ code: event.code, reason: String(event.reason || '') })
  changed()
})
doc.on('update', changed)
provider.awareness.on('change', changed)

function content () {
  return kind === 'xml' ? shared.toString() : shared.toJSON()
}

function remoteStates () {
  return [...provider.awareness.getStates()].filter(([id]) => id !== doc.clientID).map(([, state]) => state)
}

function state () {
  return { connected: provider.wsconnected, synced: provider.synced, connects, closes, content: content(),
    awareness: remoteStates(), livestate }
}

// True when every key of `pattern` equals (deeply) the same key of `value`.
function matches (value, pattern) {
  if (pattern === null || typeof pattern !== 'object') return JSON.stringify(value) === JSON.stringify(pattern)
  if (value === null || typeof value !== 'object') return false
  return Object.entries(pattern).every(([k, v]) => matches(value[k], v))
}

function send (bytes) {
  if (!provider.ws || provider.ws.readyState !== WebSocket.OPEN) throw new Error('not connected')
  provider.ws.send(bytes)
}

function livestateMessage (body) {
  const encoder = encoding.createEncoder()
  encoding.writeVarUint(encoder, MESSAGE_LIVESTATE)
  encoding.writeVarString(encoder, JSON.stringify(body))
  return encoding.toUint8Array(encoder)
}

// Resolve with what `test()` returns once it returns something other than undefined.
function waitFor (test, timeoutMs) {
  return new Promise((resolve, reject) => {
    const waiter = {
      check () {
        let found
        try {
          found = test()
        } catch (err) {
          finish(); reject(err); return
        }
        if (found !== undefined) { finish(); resolve(found) }
      }
    }
    const timer = setTimeout(() => { finish(); reject(new Error('timeout')) }, timeoutMs ?? 10000)
    function finish () { clearTimeout(timer); waiters.delete(waiter) }
    waiters.add(waiter)
    waiter.check()
  })
}

const ops = {
  insert ({ index, text }) {
    shared.insert(index === 'end' || index === undefined ? shared.length : index, text)
    return { content: content() }
  },
  delete ({ index, length }) {
    shared.delete(index, length)
    return { content: content() }
  },
  set ({ name, value }) { // map
    shared.set(name, value)
    return { content: content() }
  },
  push ({ values }) { // array
    shared.push(values)
    return { content: content() }
  },
  content () { return { content: content() } },
  text () { return { text: String(content()) } },
  state,
  awareness ({ state: local }) {
    provider.awareness.setLocalState(local)
    return {}
  },
  subscribe_livestate ({ liveStateDataId }) {
    send(livestateMessage({ op: 'subscribe', liveStateDataId }))
    return {}
  },
  unsubscribe_livestate ({ liveStateDataId }) {
    send(livestateMessage({ op: 'unsubscribe', liveStateDataId }))
    return {}
  },
  send_raw ({ base64 }) {
    send(Buffer.from(base64, 'base64'))
    return {}
  },
  disconnect () {
    provider.disconnect()
    return {}
  },
  connect () {
    provider.connect()
    return {}
  },
  // Synced (sync step 2 received) on connection number `connects` or later.
  wait_synced ({ connects: atLeast = 1, timeout_ms: timeoutMs }) {
    return waitFor(() => (provider.synced && connects >= atLeast ? { connects } : undefined), timeoutMs)
  },
  wait_text ({ equals, includes, timeout_ms: timeoutMs }) {
    return waitFor(() => {
      const text = String(content())
      if (equals !== undefined ? text === equals : text.includes(includes)) return { text }
    }, timeoutMs)
  },
  wait_content ({ equals, timeout_ms: timeoutMs }) {
    return waitFor(() => (matches(content(), equals) ? { content: content() } : undefined), timeoutMs)
  },
  // Some other client's awareness state matches `match` (or, with `absent`, none does any more).
  wait_awareness ({ match, absent = false, timeout_ms: timeoutMs }) {
    return waitFor(() => {
      const states = remoteStates()
      const found = states.some((s) => matches(s, match))
      if (found !== absent) return { awareness: states }
    }, timeoutMs)
  },
  wait_livestate ({ liveStateDataId, data, timeout_ms: timeoutMs }) {
    return waitFor(() => {
      const message = livestate.find((m) => m.liveStateDataId === liveStateDataId && (data === undefined || matches(m.data, data)))
      return message && { message }
    }, timeoutMs)
  },
  // The server closed the connection (with `code`, when given).
  wait_closed ({ code, timeout_ms: timeoutMs }) {
    return waitFor(() => closes.find((c) => code === undefined || c.code === code), timeoutMs)
  },
  // Leave as a browser tab does (awareness removal, then a clean close), then end the process.
  exit () {
    leave()
    return {}
  }
}

function answer (body) {
  process.stdout.write(JSON.stringify(body) + '\n')
}

readline.createInterface({ input: process.stdin }).on('line', async (line) => {
  if (!line.trim()) return
  let command
  try {
    command = JSON.parse(line)
  } catch {
    answer({ ok: false, error: 'bad command: ' + line })
    return
  }
  const { id, op } = command
  try {
    if (!ops[op]) throw new Error('unknown op ' + op)
    answer({ id, ok: true, ...(await ops[op](command)) })
  } catch (err) {
    answer({ id, ok: false, error: err.message, state: state() })
  }
}).on('close', leave)

function leave () {
  const ws = provider.ws
  provider.destroy()
  const done = () => process.exit(0)
  // Exit once the close handshake has flushed what destroy() sent; a dead server gets a second.
  if (ws && ws.readyState !== WebSocket.CLOSED) {
    ws.once('close', done)
    setTimeout(done, 1000).unref()
  } else {
    setImmediate(done)
  }
}
